// The execution jobs behind eth_call and trace_callMany, in this process (no HTTP, no worker
// thread), on the 200-transaction block of bench/lib/bigBlock.ts: what one answer costs the EVM
// layer alone. Per job, CPU microseconds:
//   eth_call        a token transfer of the block, as an eth_call on its parent
//   trace_callMany  the block's first 10 transactions as calls on the parent, `trace`
// each on src/evm with the reads of the block kept between jobs (src/exec/evmEngine.ts BlockReads:
// what a stream of requests on one block sees), on src/evm with them dropped before every job (a
// block seen for the first time), and on @ethereumjs/vm as the tests' oracle runs it
// (test/support/ethereumjsOracle: the path src/evm replaced, without the run-time patches it had
// in src/, so slower than that path was). anvil's
// row is its server's CPU per answer over HTTP, its whole cost, for scale: ours over HTTP, with the
// worker hop, is bench:mixed's eth_call row.
// Run: npm run bench:call-job   (BENCH_JOBS=N jobs per cell, default 2000)

import { ChainReader } from '../src/chain/reader.ts';
import { readStoredSpec } from '../src/chain/storedSpec.ts';
import { DEFAULT_LIMITS } from '../src/config/limits.ts';
import { BlockReads } from '../src/exec/evmEngine.ts';
import { runCallMany } from '../src/exec/jobs/callMany.ts';
import { callJobs } from '../src/exec/jobs/calls.ts';
import { openLmdbStore } from '../src/store/lmdb/index.ts';
import { tempDir } from '../test/support/cli.ts';
import { oracleCallJobs, oracleRunCallMany } from '../test/support/ethereumjsOracle/index.ts';
import { bigBlockChain } from './lib/bigBlock.ts';
import { childPid, cpuSeconds } from './lib/process.ts';
import { machineLine, post, progressLog, rpcBody } from './lib/rpc.ts';

const JOBS = Number(process.env.BENCH_JOBS ?? 2000);
const log = progressLog();
const hex = (n: bigint) => `0x${n.toString(16)}`;
const toHex = (b: Uint8Array) => `0x${Buffer.from(b).toString('hex')}`;

/** CPU microseconds per run of `job`, after a warm-up of a tenth as many. */
async function cpuPerJob(job: () => Promise<unknown>, before: () => void = () => {}): Promise<number> {
  for (let i = 0; i < JOBS / 10; i++) {
    before();
    await job();
  }
  const start = process.cpuUsage();
  for (let i = 0; i < JOBS; i++) {
    before();
    await job();
  }
  const used = process.cpuUsage(start);
  return (used.user + used.system) / JOBS;
}

const work = tempDir('ethtrace-bench-calljob-');
const { anvil, number, datadir } = await bigBlockChain(work.path, log);
try {
  const store = await openLmdbStore(datadir, { readOnly: true });
  const spec = await readStoredSpec(store);
  if (spec === null) throw new Error('no chain imported');
  const chain = new ChainReader(store, spec);
  const busy = await chain.block((await store.getCanonicalHash(number)) as Uint8Array);
  const parentHash = (await store.getCanonicalHash(number - 1n)) as Uint8Array;
  if (!busy) throw new Error('no busy block');
  const calls = busy.transactions.slice(0, 10).map((tx) => ({
    from: tx.getSenderAddress().bytes,
    to: tx.to?.bytes ?? null,
    gas: tx.gasLimit,
    value: tx.value,
    data: tx.data,
  }));
  const first = calls[0];
  if (!first) throw new Error('the busy block has no transactions');
  const traced = calls.map((call) => ({ call, types: { trace: true, stateDiff: false, vmTrace: false } }));
  const rows: Array<[string, number | null, number | null, number | null]> = [];
  const limits = DEFAULT_LIMITS.calls;
  const evm = {
    call: () => callJobs(chain, limits).call({ blockHash: parentHash, call: first, overrides: {} }),
    callMany: () => runCallMany(chain, limits, { blockHash: parentHash, calls: traced, single: false }),
  };
  const ejs = {
    call: () => oracleCallJobs(chain, limits).call({ blockHash: parentHash, call: first, overrides: {} }),
    callMany: () => oracleRunCallMany(chain, limits, { blockHash: parentHash, calls: traced, single: false }),
  };
  for (const [name, kind] of [
    ['eth_call', 'call'],
    ['trace_callMany (10 calls)', 'callMany'],
  ] as const) {
    log(`${name}: src/evm, the ethereumjs oracle`);
    const kept = await cpuPerJob(evm[kind]);
    const cold = await cpuPerJob(evm[kind], () => BlockReads.clear());
    const old = await cpuPerJob(ejs[kind]);
    rows.push([name, kept, cold, old]);
  }
  await store.close();

  log('anvil over HTTP');
  const anvilPid = childPid('anvil');
  if (anvilPid === null) throw new Error('no /proc entry for anvil');
  const json = (c: (typeof calls)[number]) => ({
    from: toHex(c.from),
    to: c.to && toHex(c.to),
    gas: hex(c.gas),
    value: hex(c.value),
    data: toHex(c.data),
  });
  const anvilRows: Array<[string, string]> = [
    ['eth_call', rpcBody('eth_call', [json(first), hex(number - 1n)])],
    [
      'trace_callMany (10 calls)',
      rpcBody('trace_callMany', [calls.map((c) => [json(c), ['trace']]), hex(number - 1n)]),
    ],
  ];
  const anvilCpu = new Map<string, number>();
  for (const [name, body] of anvilRows) {
    // anvil serves no trace_callMany: its cell stays empty.
    const answer = await post(anvil.url, body).catch((e: Error) => `"error": ${e.message}`);
    if (answer.includes('"error"')) {
      log(`anvil ${name}: ${answer.slice(0, 200)}`);
      continue;
    }
    const n = Math.min(JOBS, 1000);
    for (let i = 0; i < n / 10; i++) await post(anvil.url, body);
    const before = cpuSeconds(anvilPid) ?? 0;
    for (let i = 0; i < n; i++) await post(anvil.url, body);
    anvilCpu.set(name, (((cpuSeconds(anvilPid) ?? 0) - before) * 1e6) / n);
  }

  const cell = (v: number | null) => (v === null ? '—' : v.toFixed(0)).padStart(12);
  console.log(`\n${machineLine()}; ${JOBS} jobs per cell; CPU µs per job`);
  console.log(
    `${'job'.padEnd(28)}${'evm kept'.padStart(12)}${'evm cold'.padStart(12)}${'ejs oracle'.padStart(12)}${'anvil HTTP'.padStart(12)}`,
  );
  for (const [name, kept, cold, old] of rows) {
    console.log(
      `${name.padEnd(28)}${cell(kept)}${cell(cold)}${cell(old)}${cell(anvilCpu.get(name) ?? null)}`,
    );
  }
} finally {
  await anvil.stop();
  work.cleanup();
}
