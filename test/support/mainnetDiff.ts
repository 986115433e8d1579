import { isDeepStrictEqual } from 'node:util';
import { asCall, normaliseAnvilEntry, type TraceEntry } from './anvilTraces.ts';

/**
 * One block's answers from our server against anvil's, as bench/mainnet.ts checks them before it
 * times anything and test/diff/mainnetBlock.test.ts asserts them:
 *  - trace_replayBlockTransactions ["trace"], entry by entry (anvil's documented deviations brought
 *    to our profile by normaliseAnvilEntry);
 *  - trace_callMany of the block's transactions on its parent, with the block's number, time and
 *    prevRandao as block overrides (a searcher simulating the next block sends them; the pair of
 *    bench/contracts/Mainnet.sol records block.timestamp, so the parent's would show in outputs),
 *    against anvil's replay of the block (anvil has no trace_callMany);
 *  - debug_traceBlockByNumber with callTracer, frame by frame, with anvil's known differences from
 *    geth normalised: the top frame's `gas` after intrinsic gas (docs/tracing.md), the top frame's
 *    `gasUsed` as the block's cumulative gas (error texts, EIP-2200's SSTORE sentry among them, are
 *    compared as they are);
 *  - stateDiff only counted: anvil's stateDiff deviations are those test/diff/traceReplay.test.ts
 *    normalises, not repeated here.
 */
export interface AnvilComparison {
  problems: string[];
  summary: string;
  /** callTracer answers with a frame stopped at EIP-2200's SSTORE sentry (compared as they are). */
  sentries: number;
}

// How geth (and anvil) word an SSTORE stopped with 2300 gas or less left; counted in the summary.
const SENTRY = 'out of gas: not enough gas for reentrancy sentry';

export async function compareWithAnvil(
  ourUrl: string,
  anvilUrl: string,
  number: bigint,
): Promise<AnvilComparison> {
  const block = `0x${number.toString(16)}`;
  const full = await rpc<{
    transactions: Array<Record<string, unknown>>;
    number: string;
    timestamp: string;
    mixHash: string;
  }>(anvilUrl, 'eth_getBlockByNumber', [block, true]);
  const calls = full.transactions.map((tx) => [asCall(tx), ['trace']]);
  const env = { number: full.number, time: full.timestamp, prevRandao: full.mixHash };
  const parent = `0x${(number - 1n).toString(16)}`;

  const theirs = await rpc<Array<{ trace: TraceEntry[] }>>(anvilUrl, 'trace_replayBlockTransactions', [
    block,
    ['trace'],
  ]);
  const replayed = await rpc<Array<{ trace: TraceEntry[] }>>(ourUrl, 'trace_replayBlockTransactions', [
    block,
    ['trace'],
  ]);
  const called = await rpc<Array<{ trace: TraceEntry[] }>>(ourUrl, 'trace_callMany', [
    calls,
    parent,
    { blockOverrides: env },
  ]);
  const problems: string[] = [];
  if (replayed.length !== theirs.length || called.length !== theirs.length) {
    problems.push(
      `anvil replayed ${theirs.length} txs; we replayed ${replayed.length}, called ${called.length}`,
    );
  }
  for (const [i, tx] of theirs.entries()) {
    for (const [what, ours] of [
      ['replay', replayed[i]?.trace ?? []],
      ['callMany', called[i]?.trace ?? []],
    ] as const) {
      const normalised = tx.trace.map((e, j) => normaliseAnvilEntry(e, ours[j]));
      if (!isDeepStrictEqual(ours, normalised))
        problems.push(`${what} tx ${i}: ${firstDifference(ours, normalised)}`);
    }
  }

  const config = { tracer: 'callTracer' };
  const ourFrames = await rpc<Array<{ result?: Record<string, unknown> }>>(
    ourUrl,
    'debug_traceBlockByNumber',
    [block, config],
  );
  const anvilFrames = await rpc<Array<{ result?: Record<string, unknown> }>>(
    anvilUrl,
    'debug_traceBlockByNumber',
    [block, config],
  );
  let cumulative = 0n;
  let sentries = 0;
  for (const [i, entry] of anvilFrames.entries()) {
    const ours = ourFrames[i];
    cumulative += BigInt(String(ours?.result?.gasUsed ?? '0x0'));
    const frame = entry.result ? { ...entry, result: { ...entry.result } } : entry;
    if (frame.result) {
      frame.result.gas = ours?.result?.gas;
      if (BigInt(String(frame.result.gasUsed)) === cumulative) frame.result.gasUsed = ours?.result?.gasUsed;
    }
    if (JSON.stringify(ours?.result ?? {}).includes(SENTRY)) sentries++;
    if (!isDeepStrictEqual(ours, frame)) problems.push(`callTracer tx ${i}: ${firstDifference(ours, frame)}`);
  }

  const ourDiffs = await rpc<Array<{ stateDiff: unknown }>>(ourUrl, 'trace_replayBlockTransactions', [
    block,
    ['trace', 'stateDiff'],
  ]);
  const anvilDiffs = await rpc<Array<{ stateDiff: unknown }>>(anvilUrl, 'trace_replayBlockTransactions', [
    block,
    ['trace', 'stateDiff'],
  ]);
  const sameDiffs = anvilDiffs.filter((d, i) =>
    isDeepStrictEqual(ourDiffs[i]?.stateDiff, d.stateDiff),
  ).length;
  return {
    problems,
    sentries,
    summary:
      `${theirs.length} trace replays, callMany traces and callTracer frames equal anvil's ` +
      `(${sentries} stopped at EIP-2200's SSTORE sentry); stateDiff identical for ${sameDiffs}/${anvilDiffs.length} ` +
      '(the rest not normalised here)',
  };
}

/** Where two JSON values first differ, as a path and both values: enough to start looking. */
export function firstDifference(ours: unknown, theirs: unknown, path = ''): string {
  if (typeof ours === 'object' && ours !== null && typeof theirs === 'object' && theirs !== null) {
    const keys = new Set([...Object.keys(ours), ...Object.keys(theirs)]);
    for (const key of keys) {
      const a = (ours as Record<string, unknown>)[key];
      const b = (theirs as Record<string, unknown>)[key];
      if (!isDeepStrictEqual(a, b)) return firstDifference(a, b, `${path}.${key}`);
    }
    return `${path}: equal`;
  }
  return `${path}: ours ${JSON.stringify(ours)?.slice(0, 300)}, anvil ${JSON.stringify(theirs)?.slice(0, 300)}`;
}

let nextId = 1;

async function rpc<T>(url: string, method: string, params: unknown[]): Promise<T> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: nextId++, method, params }),
  });
  const body = (await res.json()) as { result?: T; error?: { message: string } };
  if (body.error) throw new Error(`${url} ${method}: ${body.error.message}`);
  return body.result as T;
}
