// The replay methods side by side with anvil, in one run (issue 5). Run: npm run bench:replay
//  1. trace_replayBlockTransactions(["trace"]) on a 200-transaction block at 1 and 16 connections,
//     with ethtrace's replay cache switched off (--trace-cache-mb 0): every request re-executes the
//     block, so this compares execution with execution.
//     The same with the cache on (the default) is reported too: what repeated requests cost.
//  2. trace_block on a block already traced once, at 1 and 16 connections (ethtrace's cache on):
//     what repeated requests for a final block cost.
// (env: BENCH_SECONDS, BENCH_WARMUP_SECONDS)
import { tempDir } from '../test/support/cli.ts';
import { bigBlockChain } from './lib/bigBlock.ts';
import type { LoadResult } from './lib/load.ts';
import { startEthtrace } from './lib/process.ts';
import {
  load,
  machineLine,
  post,
  progressLog,
  RESULT_HEADER,
  resultRow,
  rpcBody,
  SECONDS,
  WARMUP_SECONDS,
} from './lib/rpc.ts';

const log = progressLog();

const row = resultRow;
const HEADER = RESULT_HEADER;

async function main(): Promise<void> {
  const work = tempDir('ethtrace-bench-replay-');
  const stops: Array<() => Promise<void>> = [];
  const lines: string[] = [HEADER];
  try {
    log(machineLine());
    const { anvil, number, datadir } = await bigBlockChain(work.path, log);
    stops.push(() => anvil.stop());
    const block = `0x${number.toString(16)}`;

    const replayBody = rpcBody('trace_replayBlockTransactions', [block, ['trace']]);
    const blockBody = rpcBody('trace_block', [block]);
    const theirs = JSON.parse(await post(anvil.url, replayBody)).result as unknown[];

    const uncached = await startEthtrace(datadir, ['--trace-cache-mb', '0']);
    stops.push(uncached.stop);
    const ours = JSON.parse(await post(uncached.url, replayBody)).result as unknown[];
    if (ours.length !== theirs.length)
      throw new Error(`ethtrace replayed ${ours.length} transactions, anvil ${theirs.length}`);
    const replay: Record<string, LoadResult> = {};
    for (const connections of [1, 16]) {
      replay[`anvil${connections}`] = await load(anvil.url, replayBody, connections, null);
      replay[`ours${connections}`] = await load(
        uncached.url,
        replayBody,
        connections,
        uncached.process.pid ?? null,
      );
      lines.push(
        row('replayBlockTransactions, anvil', replay[`anvil${connections}`] as LoadResult),
        row('replayBlockTransactions, ethtrace (no cache)', replay[`ours${connections}`] as LoadResult),
      );
    }
    await uncached.stop();

    const cached = await startEthtrace(datadir);
    stops.push(cached.stop);
    await post(cached.url, blockBody);
    // The default server caches replays of final blocks: what a client repeating a request sees.
    for (const connections of [1, 16]) {
      lines.push(
        row(
          'replayBlockTransactions, ethtrace (cached)',
          await load(cached.url, replayBody, connections, cached.process.pid ?? null),
        ),
      );
    }
    const traceBlock: Record<string, LoadResult> = {};
    for (const connections of [1, 16]) {
      traceBlock[`anvil${connections}`] = await load(anvil.url, blockBody, connections, null);
      traceBlock[`ours${connections}`] = await load(
        cached.url,
        blockBody,
        connections,
        cached.process.pid ?? null,
      );
      lines.push(
        row('trace_block, anvil', traceBlock[`anvil${connections}`] as LoadResult),
        row('trace_block, ethtrace (traced once)', traceBlock[`ours${connections}`] as LoadResult),
      );
    }
    for (const connections of [1, 16]) {
      const r =
        (replay[`ours${connections}`] as LoadResult).requestsPerSecond /
        (replay[`anvil${connections}`] as LoadResult).requestsPerSecond;
      const b =
        (traceBlock[`ours${connections}`] as LoadResult).requestsPerSecond /
        (traceBlock[`anvil${connections}`] as LoadResult).requestsPerSecond;
      lines.push(
        `  ${connections} conn: replay ×${r.toFixed(2)} (target ≥ ×1): ${r >= 1 ? 'met' : 'NOT met'}; trace_block ×${b.toFixed(1)} (target ≥ ×20): ${b >= 20 ? 'met' : 'NOT met'}`,
      );
    }
  } finally {
    for (const stop of stops.reverse()) await stop().catch(() => {});
    work.cleanup();
  }
  console.log(
    `\nreplay benchmark (${SECONDS} s per cell after ${WARMUP_SECONDS} s warm-up)\n${lines.join('\n')}`,
  );
}

await main();
