import type { TypedTransaction } from '@ethereumjs/tx';
import {
  bigIntToBytes,
  bigIntToUnpaddedBytes,
  eoaCode7702RecoverAuthority,
  generateAddress,
} from '@ethereumjs/util';
import type { ChainReader } from '../../chain/reader.ts';
import type { CallLimits } from '../../config/limits.ts';
import type { BlockOverrides, CallRequest, StateOverrides } from '../../core/call.ts';
import { toHex } from '../../primitives/hex.ts';
import { defaultEngine, type Engine } from '../evmEngine.ts';
import { replayOnEvm } from '../evmReplay.ts';
import { EvmCallSession } from '../evmSession.ts';
import { callMessage } from '../message.ts';
import { replayBlock } from '../replay.ts';
import { CallSession } from '../session.ts';
import { createEvmGethTracer, type EvmGethTracer } from '../tracing/geth/evm.ts';
import {
  createGethTracer,
  type GethTracer,
  type GethTracerConfig,
  type TxContext,
} from '../tracing/geth/index.ts';
import type { TxOutcome } from '../tracing/geth/types.ts';

/** debug_traceBlockBy* and debug_traceTransaction: a mined block replayed, one transaction or all traced. */
export interface DebugTraceBlockJob {
  blockHash: Uint8Array;
  config: GethTracerConfig;
  /** Only this transaction (debug_traceTransaction): the answer is its result alone. */
  txIndex?: number;
}

/** debug_traceCall: one call on top of a block, with geth's eth_call semantics (message and fees). */
export interface DebugTraceCallJob {
  blockHash: Uint8Array;
  call: CallRequest;
  config: GethTracerConfig;
  stateOverrides?: StateOverrides;
  blockOverrides?: BlockOverrides;
}

const NO_PARITY_TRACES = { trace: false, stateDiff: false, vmTrace: false };
const ZERO_ADDRESS = new Uint8Array(20);
const IDLE = { frameStart() {}, frameEnd() {} };

/**
 * geth's debug_trace* methods. Answers are encoded JSON. They run on `engine` where it can run them
 * (see replayOnEvm and EvmCallSession.openAt), else on ethereumjs.
 */
export function debugJobs(chain: ChainReader, limits: CallLimits, engine: Engine = defaultEngine()) {
  return {
    debugTraceBlock: async (job: DebugTraceBlockJob): Promise<Uint8Array> =>
      (engine === 'evm' ? await traceBlockOnEvm(chain, job) : null) ?? traceBlock(chain, job),
    debugTraceCall: async (job: DebugTraceCallJob): Promise<Uint8Array> =>
      (engine === 'evm' ? await traceCallOnEvm(chain, limits, job) : null) ?? traceCall(chain, limits, job),
  };
}

/** traceBlock on src/evm; null where it cannot run the block (ethereumjs answers then). */
export async function traceBlockOnEvm(
  chain: ChainReader,
  job: DebugTraceBlockJob,
): Promise<Uint8Array | null> {
  const block = await chain.block(job.blockHash);
  // A missing block or the genesis: ethereumjs's path words the refusal.
  if (!block || block.header.number === 0n) return null;
  const coinbase = block.header.coinbase.bytes;
  const tracers: Array<EvmGethTracer | undefined> = [];
  const replayed = await replayOnEvm(chain, block, NO_PARITY_TRACES, undefined, (tx, index, world, rules) => {
    if (job.txIndex !== undefined && job.txIndex !== index) return null;
    const tracer = createEvmGethTracer(job.config, txContext(tx, coinbase), world, rules);
    tracers[index] = tracer;
    return tracer;
  });
  if (!replayed) return null;
  return blockAnswer(chain, job, replayed.txs, (index, outcome) => tracers[index]?.result(outcome));
}

/** The answer of a block's traces: one transaction's result, or each with its hash. */
async function blockAnswer(
  chain: ChainReader,
  job: DebugTraceBlockJob,
  txs: ReadonlyArray<{ hash: Uint8Array }>,
  result: (index: number, outcome: TxOutcome) => Promise<unknown> | undefined,
): Promise<Uint8Array> {
  const gasUsed = await receiptGasUsed(chain, job.blockHash);
  if (job.txIndex !== undefined) {
    const answer = result(job.txIndex, { gasUsed: gasUsed[job.txIndex] ?? 0n });
    if (!answer) throw new Error(`transaction ${job.txIndex} was not replayed`);
    return Buffer.from(JSON.stringify(await answer));
  }
  const results: unknown[] = [];
  for (const [index, tx] of txs.entries()) {
    const answer = result(index, { gasUsed: gasUsed[index] ?? 0n });
    if (!answer) throw new Error(`transaction ${index} was not traced`);
    results.push({ txHash: toHex(tx.hash), result: await answer });
  }
  return Buffer.from(JSON.stringify(results));
}

async function traceBlock(chain: ChainReader, job: DebugTraceBlockJob): Promise<Uint8Array> {
  const block = await chain.block(job.blockHash);
  const coinbase = block?.header.coinbase.bytes ?? ZERO_ADDRESS;
  const tracers: Array<GethTracer | undefined> = [];
  const replaying = replayBlock(chain, job.blockHash, NO_PARITY_TRACES, (tx, index, evm) => {
    if (job.txIndex !== undefined && job.txIndex !== index) return IDLE;
    const tracer = createGethTracer(job.config, txContext(tx, coinbase));
    tracer.attach(evm);
    tracers[index] = tracer;
    return {
      frameStart: (f) => tracer.frameStart(f),
      frameEnd: (e) => tracer.frameEnd(e),
      selfDestruct: (s) => tracer.selfDestruct?.(s),
      // Right after the transaction, before the next one changes the state the tracer reads.
      finish: () => tracer.detach(),
    };
  });
  let replayed: Awaited<typeof replaying>;
  try {
    replayed = await replaying;
  } catch (e) {
    // A transaction that failed mid-way never reached `finish`: leave the reused EVM as it was.
    for (const tracer of tracers) tracer?.detach();
    throw e;
  }
  return blockAnswer(chain, job, replayed.txs, (index, outcome) => tracers[index]?.result(outcome));
}

/** traceCall on src/evm; null where it cannot run the call (ethereumjs answers then). */
export async function traceCallOnEvm(
  chain: ChainReader,
  limits: CallLimits,
  job: DebugTraceCallJob,
): Promise<Uint8Array | null> {
  if (job.call.blobVersionedHashes !== undefined) return null;
  const session = await EvmCallSession.openAt(chain, job.blockHash, {
    gasCap: limits.gasCap,
    ...(job.stateOverrides ? { stateOverrides: job.stateOverrides } : {}),
    ...(job.blockOverrides ? { blockOverrides: job.blockOverrides } : {}),
  });
  if (!session) return null;
  const context = await callContext(job, limits, session, session.header.coinbase.bytes);
  // Made for each run of the call (a run stopped for missing state is run again from the start).
  let tracer: EvmGethTracer | null = null;
  const outcome = await session.simulate(
    context.call,
    0,
    (world, rules) => {
      tracer = createEvmGethTracer(job.config, context.tx, world, rules);
      return tracer.tracer;
    },
    { dialect: 'geth' },
  );
  const traced = tracer as EvmGethTracer | null;
  if (!traced) throw new Error('debug_traceCall: the call never ran');
  traced.finish();
  return Buffer.from(JSON.stringify(await traced.result({ gasUsed: outcome.gasSpent ?? outcome.gasUsed })));
}

/**
 * The message eth_call would run (geth's debug_traceCall builds it the same way), and what the
 * tracer is told before the call starts; the session builds the same message again to run it.
 */
async function callContext(
  job: DebugTraceCallJob,
  limits: CallLimits,
  session: { baseFee: bigint | undefined; account(address: Uint8Array): Promise<{ nonce: bigint }> },
  coinbase: Uint8Array,
): Promise<{ call: CallRequest & { gas: bigint }; tx: TxContext }> {
  const call = callMessage(job.call, session.baseFee, limits.gasCap, 'geth');
  const from = call.from ?? ZERO_ADDRESS;
  const creation = call.to === undefined || call.to === null;
  const sender = await session.account(from);
  const tx: TxContext = {
    from,
    to: creation ? generateAddress(from, bigIntToBytes(sender.nonce)) : (call.to as Uint8Array),
    creation,
    value: call.value ?? 0n,
    gasLimit: call.gas,
    coinbase: job.blockOverrides?.feeRecipient ?? coinbase,
    authorities: recovered(
      (call.authorizationList ?? []).map((a) => [
        bigIntToUnpaddedBytes(a.chainId),
        a.address,
        bigIntToUnpaddedBytes(a.nonce),
        bigIntToUnpaddedBytes(a.yParity),
        bigIntToUnpaddedBytes(a.r),
        bigIntToUnpaddedBytes(a.s),
      ]),
    ),
  };
  return { call, tx };
}

async function traceCall(
  chain: ChainReader,
  limits: CallLimits,
  job: DebugTraceCallJob,
): Promise<Uint8Array> {
  const { session, header } = await CallSession.openAt(chain, job.blockHash, {
    gasCap: limits.gasCap,
    ...(job.stateOverrides ? { stateOverrides: job.stateOverrides } : {}),
    ...(job.blockOverrides ? { blockOverrides: job.blockOverrides } : {}),
  });
  try {
    const { call, tx } = await callContext(job, limits, session, header.coinbase.bytes);
    const tracer = createGethTracer(job.config, tx);
    tracer.attach(session.evm);
    let gasUsed: bigint;
    try {
      const outcome = await session.simulate(call, 0, tracer, { dialect: 'geth' });
      gasUsed = outcome.gasSpent ?? outcome.gasUsed;
    } finally {
      tracer.detach();
    }
    return Buffer.from(JSON.stringify(await tracer.result({ gasUsed })));
  } finally {
    session.close();
  }
}

function txContext(tx: TypedTransaction, coinbase: Uint8Array): TxContext {
  const from = tx.getSenderAddress().bytes;
  const creation = tx.to === undefined;
  return {
    from,
    to: tx.to?.bytes ?? generateAddress(from, bigIntToBytes(tx.nonce)),
    creation,
    value: tx.value,
    gasLimit: tx.gasLimit,
    coinbase,
    authorities: authorities(tx),
  };
}

function authorities(tx: TypedTransaction): Uint8Array[] {
  if (!('authorizationList' in tx)) return [];
  return recovered(tx.authorizationList as Authorization[]);
}

type Authorization = Parameters<typeof eoaCode7702RecoverAuthority>[0];

/** The authorities of an authorization list, as geth's OnTxStart hands them to the tracer. */
function recovered(list: Authorization[]): Uint8Array[] {
  return list.flatMap((auth) => {
    try {
      return [eoaCode7702RecoverAuthority(auth).bytes];
    } catch {
      // geth skips authorizations whose signature does not recover.
      return [];
    }
  });
}

/** Each transaction's gas used, from the receipts stored at import (cumulative gas differences). */
async function receiptGasUsed(chain: ChainReader, blockHash: Uint8Array): Promise<bigint[]> {
  const json = await chain.blockReceiptsJson(blockHash);
  if (!json) return [];
  const receipts = JSON.parse(Buffer.from(json).toString('utf8')) as Array<{ gasUsed: string }>;
  return receipts.map((r) => BigInt(r.gasUsed));
}
