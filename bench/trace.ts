// trace_callMany side by side with anvil, in one run (issue 4). Run: npm run bench:trace
//  1. The seed example (two value transfers, ["trace"], latest) on the conformance chain: p50 at one
//     connection and requests/s at 16.
//  2. The 200 transactions of a 200-transaction block, traced by our trace_callMany on its parent,
//     against anvil's trace_replayBlockTransactions(["trace"]) of that block: requests/s at 1 and 16.
//  3. eth_chainId latency at one connection while 16 of those heavy traces run.
// (env: BENCH_SECONDS, BENCH_WARMUP_SECONDS)
import { join } from 'node:path';
import { runCli, tempDir } from '../test/support/cli.ts';
import { bigBlockChain } from './lib/bigBlock.ts';
import type { LoadResult } from './lib/load.ts';
import { CLI, startEthtrace } from './lib/process.ts';
import {
  load,
  machineLine,
  ms,
  post,
  progressLog,
  RESULT_HEADER,
  resultRow,
  rpcBody,
  SECONDS,
  WARMUP_SECONDS,
} from './lib/rpc.ts';
import { seedCalls } from './lib/seed.ts';

const CONFORMANCE = join(import.meta.dirname, '..', '..', 'shared', 'conformance', 'execution-apis');

const log = progressLog();

const row = resultRow;
const HEADER = RESULT_HEADER;

async function main(): Promise<void> {
  const work = tempDir('ethtrace-bench-trace-');
  const stops: Array<() => Promise<void>> = [];
  const lines: string[] = [];
  try {
    log(machineLine());

    // 1. The seed example on the conformance chain.
    const conformance = join(work.path, 'conformance');
    const imported = await runCli([
      'import',
      '--datadir',
      conformance,
      '--genesis',
      join(CONFORMANCE, 'genesis.json'),
      join(CONFORMANCE, 'chain.rlp'),
    ]);
    if (imported.code !== 0) throw new Error(imported.stderr);
    const seedServer = await startEthtrace(conformance);
    stops.push(seedServer.stop);
    const seedBody = rpcBody('trace_callMany', [seedCalls().map((call) => [call, ['trace']]), 'latest']);
    const seed1 = await load(seedServer.url, seedBody, 1, seedServer.process.pid);
    const seed16 = await load(seedServer.url, seedBody, 16, seedServer.process.pid);
    lines.push(HEADER, row('seed example, ethtrace', seed1), row('seed example, ethtrace', seed16));
    lines.push(
      `  seed p50 ${ms(seed1.latency.p50)} ms (target ≤ 2 ms): ${seed1.latency.p50 <= 2 ? 'met' : 'NOT met'}; ` +
        `${seed16.requestsPerSecond.toFixed(0)} req/s at 16 (target ≥ 1000): ${seed16.requestsPerSecond >= 1000 ? 'met' : 'NOT met'}`,
    );
    await seedServer.stop();

    // 2. A 200-transaction block: our callMany on its parent against anvil's replay of the block.
    const { anvil, number, datadir } = await bigBlockChain(work.path, log);
    stops.push(() => anvil.stop());
    const server = await startEthtrace(datadir);
    stops.push(server.stop);
    const block = await anvil.rpc<{ transactions: Array<Record<string, unknown>> }>('eth_getBlockByNumber', [
      `0x${number.toString(16)}`,
      true,
    ]);
    // No fee fields: the calls run in the parent's environment (see test/diff/traceCallMany.test.ts).
    const calls = block.transactions.map((tx) => [
      { from: tx.from, to: tx.to, gas: tx.gas, value: tx.value, input: tx.input },
      ['trace'],
    ]);
    const ourBody = rpcBody('trace_callMany', [calls, `0x${(number - 1n).toString(16)}`]);
    const anvilBody = rpcBody('trace_replayBlockTransactions', [`0x${number.toString(16)}`, ['trace']]);
    const ours = JSON.parse(await post(server.url, ourBody)).result as Array<{ trace: unknown[] }>;
    const theirs = JSON.parse(await post(anvil.url, anvilBody)).result as Array<{ trace: unknown[] }>;
    if (ours.length !== theirs.length)
      throw new Error(`ethtrace traced ${ours.length} calls, anvil ${theirs.length}`);
    const anvilPid = Number(anvil.url.split(':').pop()) && null;
    const results: Record<string, LoadResult> = {};
    for (const connections of [1, 16]) {
      results[`anvil${connections}`] = await load(anvil.url, anvilBody, connections, anvilPid);
      results[`ours${connections}`] = await load(server.url, ourBody, connections, server.process.pid);
      lines.push(
        row('200-tx block, anvil replay', results[`anvil${connections}`] as LoadResult),
        row('200-tx block, ethtrace callMany', results[`ours${connections}`] as LoadResult),
      );
    }
    for (const connections of [1, 16]) {
      const a = results[`anvil${connections}`] as LoadResult;
      const o = results[`ours${connections}`] as LoadResult;
      const ratio = o.requestsPerSecond / a.requestsPerSecond;
      lines.push(
        `  ${connections} conn: ethtrace/anvil req/s ×${ratio.toFixed(2)} (target ≥ ×1): ${ratio >= 1 ? 'met' : 'NOT met'}`,
      );
    }

    // 3. eth_chainId while 16 heavy traces run.
    const [heavy, chainId] = await Promise.all([
      load(server.url, ourBody, 16, server.process.pid),
      load(server.url, rpcBody('eth_chainId', []), 1, server.process.pid),
    ]);
    lines.push(row('heavy traces (background)', heavy), row('eth_chainId during heavy traces', chainId));
    lines.push(
      `  eth_chainId p99 ${ms(chainId.latency.p99)} ms (target < 50 ms): ${chainId.latency.p99 < 50 ? 'met' : 'NOT met'}`,
    );
  } finally {
    for (const stop of stops.reverse()) await stop().catch(() => {});
    work.cleanup();
  }
  console.log(
    `\ntrace benchmark (${SECONDS} s per cell after ${WARMUP_SECONDS} s warm-up; ${CLI})\n${lines.join('\n')}`,
  );
}

await main();
