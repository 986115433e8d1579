import type { BlockHeader } from '@ethereumjs/block';
import type { Common } from '@ethereumjs/common';
import type { ChainReader } from '../chain/reader.ts';
import { RequestFailed } from '../core/errors.ts';
import type { FrameEnd, FrameError } from './tracing/frames.ts';
import type { ParityTraces } from './tracing/traceTypes.ts';

// What a call session (src/exec/evmSession.ts) answers, and what it checks of block overrides.

/** What a stretch of execution read and changed, as `accessKeys` names the pieces of state. */
export interface StateAccess {
  reads: string[];
  writes: string[];
}

/** One call's outcome in the shape trace_callMany serves (domain values; formatted at the edge). */
export interface CallTrace extends ParityTraces {
  output: Uint8Array;
}

export interface SimulatedCall {
  output: Uint8Array;
  /** Gas the call used including intrinsic gas, before refunds (what a gas estimate builds on). */
  gasUsed: bigint;
  /** Gas used after refunds (at least EIP-7623's floor): what a receipt would say; null if it never ran. */
  gasSpent: bigint | null;
  failed: boolean;
  /** How the call failed in the EVM, when it ran and failed. */
  failure?: CallFailure;
}

/** A failed call's error, with what geth's words for it need (tracing/geth/errors.ts gethErrorText). */
export interface CallFailure {
  kind: FrameError;
  failedOp?: FrameEnd['failedOp'];
  /** A precompile's own failure, in geth's words. */
  precompileError?: string;
}

/**
 * Sees each opcode before it runs (createAccessList's recorder): the op, the account whose code
 * runs (its storage's owner), and the stack as `stack[0..sp)` with its top at `sp − 1`.
 */
export type OpListener = (op: number, address: bigint, stack: readonly bigint[], sp: number) => void;

/**
 * A block override's number and time must leave the block in its fork: the session runs the
 * block's fork rules, and running another fork's block under them would answer wrongly. The
 * parameters are well-formed, so this is the server declining (RequestFailed), not a bad parameter.
 */
export function checkSameFork(
  chain: ChainReader,
  header: BlockHeader,
  common: Common,
  number: bigint,
  time: bigint,
) {
  let fork: string;
  try {
    fork = chain.commonAt(number, time).hardfork();
  } catch (e) {
    throw new RequestFailed(
      `block overrides: number ${number} and time ${time} name no valid fork (${e instanceof Error ? e.message : String(e)})`,
    );
  }
  if (fork !== common.hardfork()) {
    throw new RequestFailed(
      `block overrides: number ${number} and time ${time} are in fork ${fork}, block ${header.number} is in ${common.hardfork()}; overrides may not change the fork`,
    );
  }
}
