// The differential EVM fuzzer in CI: generated programs and transactions on every fork
// (test/fuzz/evmGen.ts) run on src/evm and on @ethereumjs/vm (test/fuzz/evmDiff.ts), and nothing may
// differ but the known differences the runner lists with their reasons.
//
// FUZZ_SEED picks the run (FUZZ_SEED=random draws one and prints it), FUZZ_CASES sizes it (the
// default keeps it near a minute of CPU); FUZZ_FORK keeps one fork. A long run:
//   FUZZ_SEED=random FUZZ_CASES=20000 node --import tsx --test test/fuzz/evm.test.ts

import assert from 'node:assert/strict';
import { it } from 'node:test';
import { forkByName } from '../../src/evm/forks.ts';
import { type Difference, describe as describeDifference, runCase } from './evmDiff.ts';
import { FUZZ_FORKS, generateCase } from './evmGen.ts';

const DEFAULT_SEED = 20_2611_27;
const SEED =
  process.env.FUZZ_SEED === 'random'
    ? Math.floor(Math.random() * 2 ** 31)
    : Number(process.env.FUZZ_SEED ?? DEFAULT_SEED);
const CASES = Number(process.env.FUZZ_CASES ?? 500);
const FORK = process.env.FUZZ_FORK ? forkByName(process.env.FUZZ_FORK) : null;
if (!Number.isSafeInteger(SEED) || SEED < 0) throw new Error(`FUZZ_SEED must be 'random' or an integer ≥ 0`);
if (!Number.isSafeInteger(CASES) || CASES < 1) throw new Error('FUZZ_CASES must be a positive integer');
if (process.env.FUZZ_FORK && (FORK === null || !FUZZ_FORKS.includes(FORK)))
  throw new Error(`FUZZ_FORK must be one of ${FUZZ_FORKS.join(', ')} (or another name of one)`);

it(`src/evm and @ethereumjs/vm agree on ${CASES} generated cases (FUZZ_SEED=${SEED})`, async () => {
  const perFork = new Map<string, number>(FUZZ_FORKS.map((f) => [f, 0]));
  const known = new Map<string, number>();
  const seen = new Map<string, number>();
  const differences: Difference[] = [];
  let txs = 0;
  const started = process.cpuUsage();
  for (let i = 0; i < CASES; i++) {
    // Forks in turn, so every one gets its share whatever the size of the run.
    const fork = FORK ?? FUZZ_FORKS[i % FUZZ_FORKS.length];
    const c = generateCase(SEED, i, fork);
    const report = await runCase(c);
    perFork.set(c.fork, (perFork.get(c.fork) ?? 0) + 1);
    txs += report.txs;
    for (const [name, n] of report.known) known.set(name, (known.get(name) ?? 0) + n);
    for (const [name, n] of report.seen) seen.set(name, (seen.get(name) ?? 0) + n);
    differences.push(...report.differences);
  }
  const cpu = process.cpuUsage(started);
  const forks = [...perFork].filter(([, n]) => n > 0).map(([f, n]) => `${f} ${n}`);
  const skipped = [...known].map(([name, n]) => `${name} ×${n}`).join(', ') || 'none';
  process.stdout.write(
    `evm fuzz: FUZZ_SEED=${SEED} ${CASES} cases, ${txs} transactions (${forks.join(', ')}); ` +
      `${differences.length} differences; known differences skipped: ${skipped}; ` +
      `${((cpu.user + cpu.system) / 1e6).toFixed(1)} s CPU\n`,
  );
  const coverage = [...seen].sort(([a], [b]) => (a < b ? -1 : 1)).map(([k, n]) => `${k} ${n}`);
  process.stdout.write(`evm fuzz coverage: ${coverage.join(', ')}\n`);
  for (const d of differences.slice(0, 20)) process.stdout.write(`  ${describeDifference(d, SEED)}\n`);
  assert.equal(differences.length, 0, differences.map((d) => describeDifference(d, SEED)).join('\n'));
});
