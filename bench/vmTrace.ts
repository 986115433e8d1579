// CPU of a vmTrace replay (trace_replayBlockTransactions ["vmTrace"], and ["trace","vmTrace"]) of a
// mainnet-like block, on src/evm and on the old @ethereumjs path (test/support/ethereumjsOracle, stock: without the
// run-time patches it had in src/), in-process (issue 20).
// Run: npm run bench:vmtrace
// env: BENCH_TXS (transactions in the block, default 200), BENCH_RUNS (replays measured per case and
//      engine, default 5, after one warm-up), BENCH_PROFILE_EVM=1 (src/evm only, answers unchecked:
//      for a CPU profile with node --cpu-prof).
// Both engines' answers are checked to be the same bytes before anything is measured.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { readChainSpec } from '../src/chain/genesis.ts';
import type { TraceTypes } from '../src/core/call.ts';
import { replayJobs } from '../src/exec/jobs/replay.ts';
import { importChain } from '../src/ingest/importer.ts';
import { openLmdbStore } from '../src/store/lmdb/index.ts';
import { tempDir } from '../test/support/cli.ts';
import { openEngineChain } from '../test/support/engineDiff.ts';
import { oracleReplayJobs } from '../test/support/ethereumjsOracle/index.ts';
import { exportChain } from '../test/support/exportChain.ts';
import { buildMainnetChain } from './lib/mainnetBlocks.ts';

const TXS = Number(process.env.BENCH_TXS ?? 200);
const RUNS = Number(process.env.BENCH_RUNS ?? 5);
const EVM_ONLY = process.env.BENCH_PROFILE_EVM === '1';

const work = tempDir('ethtrace-bench-vmtrace-');
try {
  const built = await buildMainnetChain(work.path, { blocks: 1, txsPerBlock: TXS });
  const datadir = join(work.path, 'data');
  try {
    const exported = await exportChain(built.anvil, join(work.path, 'anvil'));
    const store = await openLmdbStore(datadir);
    try {
      await importChain({
        store,
        spec: readChainSpec(exported.genesisPath),
        files: [exported.rlpPath],
        verifyStateRoot: false,
      });
    } finally {
      await store.close();
    }
  } finally {
    await built.anvil.stop();
  }
  const chain = await openEngineChain(datadir);
  try {
    const head = await chain.store.getHead();
    assert.ok(head);
    const block = await chain.chain.block(head.hash);
    assert.ok(block);
    process.stdout.write(`block ${head.number}: ${block.transactions.length} transactions\n`);
    const cases: Array<[string, TraceTypes]> = [
      ['["vmTrace"]', { trace: false, stateDiff: false, vmTrace: true }],
      ['["trace","vmTrace"]', { trace: true, stateDiff: false, vmTrace: true }],
    ];
    for (const [label, types] of cases) {
      const cpu: Record<'evm' | 'ethereumjs', number> = { evm: 0, ethereumjs: 0 };
      const answers: Partial<Record<'evm' | 'ethereumjs', string>> = {};
      for (const engine of EVM_ONLY ? (['evm'] as const) : (['ethereumjs', 'evm'] as const)) {
        const jobs = engine === 'evm' ? replayJobs(chain.chain) : oracleReplayJobs(chain.chain);
        const run = async () =>
          (await jobs.replayBlock({ blockHash: head.hash, types })).map((b) => Buffer.from(b).toString());
        answers[engine] = (await run()).join('\n');
        const start = process.cpuUsage();
        for (let i = 0; i < RUNS; i++) await run();
        const used = process.cpuUsage(start);
        cpu[engine] = (used.user + used.system) / 1000 / RUNS;
      }
      if (!EVM_ONLY)
        assert.equal(answers.evm, answers.ethereumjs, `${label}: the engines answer differently`);
      const bytes = answers.evm?.length ?? 0;
      process.stdout.write(
        `${label}: ${(bytes / 1e6).toFixed(1)} MB; CPU per replay: ethereumjs ${cpu.ethereumjs.toFixed(0)} ms, ` +
          `src/evm ${cpu.evm.toFixed(0)} ms (×${(cpu.ethereumjs / cpu.evm).toFixed(2)} less)\n`,
      );
    }
  } finally {
    await chain.close();
  }
} finally {
  work.cleanup();
}
