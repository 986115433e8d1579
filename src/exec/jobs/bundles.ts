// Bundles of calls or signed transactions simulated in order on one block's state, each seeing what
// the ones before it left: debug_traceCallMany and eth_callMany (calls with eth_call's semantics),
// eth_callBundle (signed transactions applied as a block applies them).

import type { TypedTransaction } from '@ethereumjs/tx';
import { toChecksumAddress } from '@ethereumjs/util';
import type { ChainReader } from '../../chain/reader.ts';
import { decodeSignedTransaction } from '../../chain/signedTransaction.ts';
import type { CallLimits } from '../../config/limits.ts';
import type { BlockOverrides, CallBundle, CallRequest, StateOverrides } from '../../core/call.ts';
import { InvalidArgument, RequestFailed } from '../../core/errors.ts';
import type { GethTracerConfig } from '../../core/traceConfig.ts';
import type { EvmTracer, FrameEnd } from '../../evm/hooks.ts';
import { InvalidTransaction, type TransactionResult } from '../../evm/transaction.ts';
import { toHex } from '../../primitives/hex.ts';
import { keccak256 } from '../../primitives/keccak.ts';
import { failure } from '../calls/outcome.ts';
import { CallValidationError } from '../callValidation.ts';
import { EvmCallSession } from '../evmSession.ts';
import { clampGas } from '../message.ts';
import { gethErrorText } from '../tracing/geth/errors.ts';
import { createEvmGethTracer, type EvmGethTracer } from '../tracing/geth/evm.ts';
import { callContext } from './debug.ts';

/** debug_traceCallMany and eth_callMany. */
export interface CallBundlesJob {
  /** The block whose environment the calls see. */
  blockHash: Uint8Array;
  /**
   * Run the calls after only this many of the block's transactions (on its parent's state, the
   * `parentHash` here, where they are read ahead); absent: after all of them (the block's state).
   */
  before?: { count: number; parentHash: Uint8Array };
  bundles: CallBundle[];
  /** Applied once, before the first call (after the block's transactions). */
  stateOverrides?: StateOverrides;
  /** Each bundle after the first runs one block later and this many seconds later. */
  bundleSeconds: bigint;
  /** debug_traceCallMany: each call's trace by this tracer; eth_callMany (absent): its output or error. */
  tracer?: GethTracerConfig;
}

/** eth_callBundle: signed transactions on top of one block's state, in the environment of a later block. */
export interface SignedBundleJob {
  /** The block whose state the bundle runs on. */
  blockHash: Uint8Array;
  /** Signed transactions, as sent (EIP-2718 envelopes). */
  txs: Uint8Array[];
  /** What each transaction calls, for the read-ahead (decoded on the main thread). */
  calls: CallRequest[];
  /** The simulated block: number, time, coinbase, gas limit, difficulty, base fee. */
  blockOverrides: BlockOverrides;
}

export function bundleJobs(chain: ChainReader, limits: CallLimits) {
  return {
    callBundles: (job: CallBundlesJob): Promise<Uint8Array> => runCallBundles(chain, limits, job),
    signedBundle: (job: SignedBundleJob): Promise<Uint8Array> => runSignedBundle(chain, limits, job),
  };
}

async function runCallBundles(
  chain: ChainReader,
  limits: CallLimits,
  job: CallBundlesJob,
): Promise<Uint8Array> {
  const session = await EvmCallSession.openAt(chain, job.blockHash, {
    gasCap: limits.gasCap,
    ...(job.stateOverrides ? { stateOverrides: job.stateOverrides } : {}),
    ...(job.before ? { before: job.before.count } : {}),
  });
  const answer: unknown[][] = [];
  let index = 0;
  for (const [b, bundle] of job.bundles.entries()) {
    // The first bundle without overrides sees the block as debug_traceCall and eth_call would.
    if (b > 0 || bundle.blockOverrides) session.moveTo(b, job.bundleSeconds, bundle.blockOverrides);
    const results: unknown[] = [];
    for (const call of bundle.calls) {
      try {
        results.push(
          job.tracer
            ? await traced(session, limits, job.blockHash, call, index, job.tracer)
            : await outcome(session, limits, call, index),
        );
      } catch (e) {
        // A call that fails validation fails the request, in geth's words (as Erigon and Reth answer).
        if (e instanceof CallValidationError) throw new RequestFailed(e.reason);
        throw e;
      }
      index++;
    }
    answer.push(results);
  }
  return Buffer.from(JSON.stringify(answer));
}

/** One call traced as debug_traceCall traces it, on the session's state as the calls before left it. */
async function traced(
  session: EvmCallSession,
  limits: CallLimits,
  blockHash: Uint8Array,
  call: CallRequest,
  index: number,
  config: GethTracerConfig,
): Promise<unknown> {
  const context = await callContext({ blockHash, call, config }, limits, session, session.coinbase);
  let tracer: EvmGethTracer | null = null;
  const run = await session.simulate(
    context.call,
    index,
    (world, rules) => {
      tracer = createEvmGethTracer(config, context.tx, world, rules);
      return tracer.tracer;
    },
    { dialect: 'geth' },
  );
  const done = tracer as EvmGethTracer | null;
  if (!done) throw new Error('debug_traceCallMany: a call never ran');
  done.finish();
  return done.result({ gasUsed: run.gasSpent ?? run.gasUsed });
}

/** One call as eth_call runs it: its output, or its failure in eth_call's words (Reth's eth_callMany). */
async function outcome(
  session: EvmCallSession,
  limits: CallLimits,
  call: CallRequest,
  index: number,
): Promise<{ value: string } | { error: string }> {
  const run = await session.simulate({ ...call, gas: clampGas(call.gas, limits.gasCap) }, index, null, {
    dialect: 'geth',
  });
  return run.failed ? { error: failure(run).message } : { value: toHex(run.output) };
}

/**
 * eth_callBundle, as Flashbots' relay and Reth answer it: each transaction applied with every check
 * a block makes, what it paid the coinbase (fees and direct payments) measured on the coinbase's
 * balance. A transaction the block would refuse fails the request.
 */
async function runSignedBundle(
  chain: ChainReader,
  limits: CallLimits,
  job: SignedBundleJob,
): Promise<Uint8Array> {
  const session = await EvmCallSession.openAt(chain, job.blockHash, {
    gasCap: limits.gasCap,
    blockOverrides: job.blockOverrides,
  });
  const header = session.header;
  const common = chain.commonAt(header.number, header.timestamp);
  const txs = job.txs.map((raw, i) => {
    try {
      return decodeSignedTransaction(raw, common);
    } catch (e) {
      throw new InvalidArgument(`invalid argument 0: txs[${i}]: ${(e as Error).message.split('\n')[0]}`);
    }
  });
  const coinbase = session.coinbase;
  const baseFee = session.baseFee ?? 0n;
  const initial = await session.balance(coinbase);
  let balance = initial;
  let totalGas = 0n;
  let totalFees = 0n;
  const results: Record<string, unknown>[] = [];
  for (const tx of txs) {
    const hash = tx.hash();
    let end: FrameEnd | null = null;
    const top: EvmTracer = {
      frameEnd: (e) => {
        if (e.depth === 0) end = e;
      },
    };
    let result: TransactionResult;
    try {
      result = await session.apply(tx, top);
    } catch (e) {
      // Flashbots' relay words it so, naming the transaction.
      if (e instanceof InvalidTransaction)
        throw new RequestFailed(`err: ${await gethWords(session, tx, e)}; txhash ${toHex(hash)}`);
      throw e;
    }
    const after = await session.balance(coinbase);
    const tip = effectiveTip(tx, baseFee);
    const gasFees = result.gasUsed * tip;
    const coinbaseDiff = after > balance ? after - balance : 0n;
    balance = after;
    totalGas += result.gasUsed;
    totalFees += gasFees;
    results.push({
      coinbaseDiff: coinbaseDiff.toString(),
      ethSentToCoinbase: (coinbaseDiff > gasFees ? coinbaseDiff - gasFees : 0n).toString(),
      fromAddress: toHex(tx.getSenderAddress().bytes),
      gasFees: gasFees.toString(),
      gasPrice: tip.toString(),
      gasUsed: Number(result.gasUsed),
      toAddress: tx.to ? toHex(tx.to.bytes) : null,
      txHash: toHex(hash),
      ...(result.success ? { value: toHex(result.output) } : failed(result, end)),
    });
  }
  const coinbaseDiff = balance > initial ? balance - initial : 0n;
  return Buffer.from(
    JSON.stringify({
      bundleGasPrice: (totalGas === 0n ? 0n : coinbaseDiff / totalGas).toString(),
      bundleHash: toHex(keccak256(Buffer.concat(txs.map((tx) => tx.hash())))),
      coinbaseDiff: coinbaseDiff.toString(),
      ethSentToCoinbase: (coinbaseDiff > totalFees ? coinbaseDiff - totalFees : 0n).toString(),
      gasFees: totalFees.toString(),
      results,
      stateBlockNumber: Number(header.number),
      totalGasUsed: Number(totalGas),
    }),
  );
}

/** The commonest refusals in geth's words (core/error.go), which bundle clients match on; others as the EVM words them. */
async function gethWords(
  session: EvmCallSession,
  tx: TypedTransaction,
  e: InvalidTransaction,
): Promise<string> {
  const from = tx.getSenderAddress();
  const sender = await session.account(from.bytes);
  const address = toChecksumAddress(from.toString());
  const feeCap = 'maxFeePerGas' in tx ? tx.maxFeePerGas : tx.gasPrice;
  switch (e.code) {
    case 'NONCE_MISMATCH_TOO_LOW':
      return `nonce too low: address ${address}, tx: ${tx.nonce} state: ${sender.nonce}`;
    case 'NONCE_MISMATCH_TOO_HIGH':
      return `nonce too high: address ${address}, tx: ${tx.nonce} state: ${sender.nonce}`;
    case 'INSUFFICIENT_MAX_FEE_PER_GAS':
      return `max fee per gas less than block base fee: address ${address}, maxFeePerGas: ${feeCap}, baseFee: ${session.baseFee ?? 0n}`;
    case 'INSUFFICIENT_ACCOUNT_FUNDS':
      return `insufficient funds for gas * price + value: address ${address} have ${sender.balance} want ${tx.gasLimit * feeCap + tx.value}`;
    default:
      return e.message;
  }
}

/** What the coinbase earns per gas: the tip over the base fee (EIP-1559's effective priority fee). */
function effectiveTip(tx: TypedTransaction, baseFee: bigint): bigint {
  if ('maxFeePerGas' in tx) {
    const room = tx.maxFeePerGas - baseFee;
    if (room < tx.maxPriorityFeePerGas) return room;
    return tx.maxPriorityFeePerGas;
  }
  return tx.gasPrice - baseFee;
}

/** A failed transaction's error in geth's words, and its revert data when it reverted with some. */
function failed(result: TransactionResult, end: FrameEnd | null): { error: string; revert?: string } {
  if (result.error === 'revert')
    return {
      error: 'execution reverted',
      ...(result.output.length > 0 ? { revert: toHex(result.output) } : {}),
    };
  const last = end as FrameEnd | null;
  if (!last?.error) return { error: 'execution failed' };
  return { error: gethErrorText(last.error, last.failedOp, last.precompileError) };
}
