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
import { NotFound, RequestFailed } from '../../core/errors.ts';
import { toHex } from '../../primitives/hex.ts';
import { replayOnEvm } from '../evmReplay.ts';
import { EvmCallSession } from '../evmSession.ts';
import { callMessage } from '../message.ts';
import { createEvmGethTracer, type EvmGethTracer } from '../tracing/geth/evm.ts';
import type { GethTracerConfig, TxContext, TxOutcome } from '../tracing/geth/types.ts';

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

/** geth's debug_trace* methods, on src/evm. Answers are encoded JSON. */
export function debugJobs(chain: ChainReader, limits: CallLimits) {
  return {
    debugTraceBlock: (job: DebugTraceBlockJob): Promise<Uint8Array> => traceBlock(chain, job),
    debugTraceCall: (job: DebugTraceCallJob): Promise<Uint8Array> => traceCall(chain, limits, job),
  };
}

/** A block's transactions (or one of them) replayed and traced by a geth tracer. */
async function traceBlock(chain: ChainReader, job: DebugTraceBlockJob): Promise<Uint8Array> {
  const block = await chain.block(job.blockHash);
  if (!block) throw new NotFound(`block ${toHex(job.blockHash)} not found`);
  if (block.header.number === 0n) throw new RequestFailed('genesis is not traceable');
  const coinbase = block.header.coinbase.bytes;
  const tracers: Array<EvmGethTracer | undefined> = [];
  const replayed = await replayOnEvm(chain, block, NO_PARITY_TRACES, undefined, (tx, index, world, rules) => {
    if (job.txIndex !== undefined && job.txIndex !== index) return null;
    const tracer = createEvmGethTracer(job.config, txContext(tx, coinbase), world, rules);
    tracers[index] = tracer;
    return tracer;
  });
  return blockAnswer(chain, job, replayed.txs, (index, outcome) => tracers[index]?.result(outcome));
}

/** The answer of a block's traces: one transaction's result, or each with its hash (the tests' oracle's too). */
export async function blockAnswer(
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

/** One call traced by a geth tracer, with geth's eth_call semantics. */
async function traceCall(
  chain: ChainReader,
  limits: CallLimits,
  job: DebugTraceCallJob,
): Promise<Uint8Array> {
  const session = await EvmCallSession.openAt(chain, job.blockHash, {
    gasCap: limits.gasCap,
    ...(job.stateOverrides ? { stateOverrides: job.stateOverrides } : {}),
    ...(job.blockOverrides ? { blockOverrides: job.blockOverrides } : {}),
  });
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
export async function callContext(
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

export function txContext(tx: TypedTransaction, coinbase: Uint8Array): TxContext {
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
