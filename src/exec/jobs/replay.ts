// The trace_ replay methods' EVM work. Every job re-executes a whole block (a transaction's state
// depends on every transaction before it) and answers in pieces the main thread can cache and slice
// without parsing: one JSON text per transaction, or per flat trace entry.

import type { Block } from '@ethereumjs/block';
import type { ChainReader } from '../../chain/reader.ts';
import type { TraceTypes } from '../../core/call.ts';
import { ChainRewound } from '../../core/errors.ts';
import { toHex } from '../../primitives/hex.ts';
import { type ReplayedTx, replayBlock } from '../replay.ts';
import { ConflictBoard, type PartBoard, PartConflict, type PartResult } from '../speculation.ts';
import { vmTraceJson } from '../tracing/evmVmTrace.ts';
import type { ParityTrace } from '../tracing/parity.ts';
import { blockRewards } from '../tracing/rewards.ts';

export interface ReplayBlockJob {
  blockHash: Uint8Array;
  types: TraceTypes;
}

/** trace_replayBlockTransactions of one block: each transaction's result as encoded JSON, in order. */
export type ReplayedBlockJson = Uint8Array[];

/** Some of a block's transactions replayed speculatively (exec/replay.ts ReplayPart). */
export interface ReplayPartJob extends ReplayBlockJob, Partial<PartBoard> {
  indices: number[];
}

/** One entry of trace_block, with what trace_transaction, trace_get and trace_filter look up. */
export interface FlatEntry {
  /** The entry as trace_block serves it (with blockHash, blockNumber, transactionHash, …). */
  json: string;
  /** Position of its transaction in the block; -1 for a reward. */
  tx: number;
  /** traceAddress joined with ','. */
  path: string;
  /** The addresses trace_filter's `fromAddress`/`toAddress` test (OpenEthereum's choice per type). */
  from: string | null;
  to: string | null;
}

export interface FlatBlockTraces {
  blockHash: string;
  blockNumber: number;
  /** Entries of transaction i are `entries[txStart[i]] … entries[txStart[i + 1] - 1]`; rewards last. */
  txStart: number[];
  entries: FlatEntry[];
}

const FLAT_TYPES: TraceTypes = { trace: true, stateDiff: false, vmTrace: false };

/** The replay jobs. */
export function replayJobs(chain: ChainReader) {
  return {
    replayBlock: (job: ReplayBlockJob): Promise<ReplayedBlockJson> => replayBlockJson(chain, job),
    flatTraces: (job: { blockHash: Uint8Array }): Promise<FlatBlockTraces> =>
      flatTraces(chain, job.blockHash),
    replayBlockPart: (job: ReplayPartJob): Promise<PartResult> => replayPart(chain, job),
  };
}

async function replayPart(chain: ChainReader, job: ReplayPartJob): Promise<PartResult> {
  try {
    const { txs, access } = await replayBlock(chain, job.blockHash, job.types, {
      indices: job.indices,
      ...(job.board === undefined ? {} : { board: new ConflictBoard(job.board, job.part ?? 0) }),
    });
    return { results: txs.map(replayJson), access };
  } catch (e) {
    // A transaction invalid on this part's state (it needed another part's effects, say): the
    // main thread sees the part as unfinished and replays the block whole. Anything else is a
    // failure of the request, not of the speculation.
    if (e instanceof PartConflict) return { results: [], access: [] };
    throw e;
  }
}

/** One replayed transaction's answer; the tests' oracle (test/support/ethereumjsOracle) renders its own with it. */
export function replayJson(
  tx: Pick<ReplayedTx, 'hash' | 'output' | 'stateDiff' | 'trace'> & { vmTrace: object | null },
): Uint8Array {
  // The vmTrace may be JSON text already (src/exec/tracing/evmVmTrace.ts): spliced in, in its place.
  const head = JSON.stringify({ output: toHex(tx.output), stateDiff: tx.stateDiff, trace: tx.trace });
  return Buffer.concat([
    Buffer.from(`${head.slice(0, -1)},"vmTrace":`),
    vmTraceJson(tx.vmTrace),
    Buffer.from(`,"transactionHash":"${toHex(tx.hash)}"}`),
  ]);
}

async function replayBlockJson(chain: ChainReader, job: ReplayBlockJob): Promise<ReplayedBlockJson> {
  if (await isGenesis(chain, job.blockHash)) return [];
  const { txs } = await replayBlock(chain, job.blockHash, job.types);
  return txs.map(replayJson);
}

/**
 * trace_block's entries of a block, its transactions replayed by `replay` (src/exec/replay.ts's
 * replayBlock here; the tests' oracle passes its own).
 */
export async function flatTraces(
  chain: ChainReader,
  blockHash: Uint8Array,
  replay: (
    chain: ChainReader,
    blockHash: Uint8Array,
    types: TraceTypes,
  ) => Promise<{ block: Block; txs: ReadonlyArray<Pick<ReplayedTx, 'hash' | 'trace'>> }> = replayBlock,
): Promise<FlatBlockTraces> {
  const hash = toHex(blockHash);
  const number = await chain.store.getBlockNumber(blockHash);
  if (number === null) throw ChainRewound.during(hash);
  const blockNumber = Number(number);
  // Genesis runs no transactions and pays no reward: nothing to trace, and nothing to replay on.
  if (number === 0n) return { blockHash: hash, blockNumber, txStart: [0], entries: [] };
  const { block, txs } = await replay(chain, blockHash, FLAT_TYPES);
  const entries: FlatEntry[] = [];
  const txStart: number[] = [];
  for (const [position, tx] of txs.entries()) {
    txStart.push(entries.length);
    const transactionHash = toHex(tx.hash);
    for (const trace of tx.trace) {
      const { action, type, ...rest } = trace;
      entries.push({
        json: JSON.stringify({
          action,
          blockHash: hash,
          blockNumber,
          ...rest,
          transactionHash,
          transactionPosition: position,
          type,
        }),
        tx: position,
        path: (trace.traceAddress as number[]).join(','),
        ...filterAddresses(trace),
      });
    }
  }
  txStart.push(entries.length);
  const common = chain.commonAt(block.header.number, block.header.timestamp);
  for (const reward of blockRewards(block, common)) {
    const author = toHex(reward.author);
    entries.push({
      json: JSON.stringify({
        action: { author, rewardType: reward.rewardType, value: `0x${reward.value.toString(16)}` },
        blockHash: hash,
        blockNumber,
        result: null,
        subtraces: 0,
        traceAddress: [],
        // OpenEthereum, Erigon and Reth all print the keys, as null: a reward belongs to no transaction.
        transactionHash: null,
        transactionPosition: null,
        type: 'reward',
      }),
      tx: -1,
      path: '',
      from: null,
      to: author,
    });
  }
  return { blockHash: hash, blockNumber, txStart, entries };
}

/**
 * OpenEthereum's addresses for trace_filter: a call is from its caller to its callee, a creation
 * from its creator to the created address (none when it failed), a self-destruct from the
 * destroyed contract to the beneficiary; a reward (added by the caller) has no sender.
 */
function filterAddresses(trace: ParityTrace): { from: string | null; to: string | null } {
  const action = trace.action as Record<string, unknown>;
  const result = trace.result as Record<string, unknown> | null | undefined;
  switch (trace.type) {
    case 'call':
      return { from: action.from as string, to: action.to as string };
    case 'create':
      return { from: action.from as string, to: (result?.address as string | undefined) ?? null };
    case 'suicide':
      return { from: action.address as string, to: action.refundAddress as string };
    default:
      return { from: null, to: null };
  }
}

export async function isGenesis(chain: ChainReader, blockHash: Uint8Array): Promise<boolean> {
  return (await chain.store.getBlockNumber(blockHash)) === 0n;
}
