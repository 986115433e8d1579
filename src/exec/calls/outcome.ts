import { type DomainError, RequestFailed, Reverted } from '../../core/errors.ts';
import { CallValidationError } from '../callValidation.ts';
import { revertReason } from '../revertReason.ts';
import type { SimulatedCall } from '../sessionTypes.ts';
import type { FrameError } from '../tracing/frames.ts';
import { gethErrorText } from '../tracing/geth/errors.ts';

// How geth's call methods word what happened to a call: its failure, its revert, its gas.

/** geth's error for a reverted call: the Error(string)/Panic reason in the message, the output as data. */
export function executionReverted(output: Uint8Array): Reverted {
  const reason = revertReason(output);
  return new Reverted(reason === null ? 'execution reverted' : `execution reverted: ${reason}`, output);
}

/** A call that failed validation, as the method words it (geth wraps these per method). */
export function asCallError(e: unknown, word: (reason: string) => string): unknown {
  return e instanceof CallValidationError ? new RequestFailed(word(e.reason)) : e;
}

/** The error for a call that ran and failed: its revert, or the EVM's error in geth's words. */
export function failure(outcome: SimulatedCall): DomainError {
  return failureOf(outcome) === 'revert'
    ? executionReverted(outcome.output)
    : new RequestFailed(vmError(outcome));
}

/** How the call failed in the EVM, if it did (a failed precompile: out of gas or failed). */
export function failureOf(outcome: SimulatedCall): FrameError | undefined {
  return outcome.failure?.kind;
}

/** Gas used after refunds (and at least EIP-7623's floor): what a receipt would say. */
export function usedGas(outcome: SimulatedCall): bigint {
  return outcome.gasSpent ?? outcome.gasUsed;
}

/** The EVM's error in geth's words (the geth table of tracing/geth/errors.ts, with its details). */
export function vmError(outcome: SimulatedCall): string {
  const failure = outcome.failure;
  if (!failure) return 'execution failed';
  return gethErrorText(failure.kind, failure.failedOp, failure.precompileError);
}
