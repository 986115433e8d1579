import { type DomainError, RequestFailed, Reverted } from '../../core/errors.ts';
import { CallValidationError } from '../callValidation.ts';
import { precompileFailure } from '../precompileFailure.ts';
import { revertReason } from '../revertReason.ts';
import type { SimulatedCall } from '../session.ts';
import { gethErrorText } from '../tracing/geth/errors.ts';
import { type FrameError, failedOpOf, normaliseError } from '../tracing/hooks.ts';

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

/**
 * How the call failed in the EVM, if it did. A call to a precompile that failed is out of gas or a
 * failed precompile, whatever ethereumjs named it (it names a bad BN254 point a revert, and an
 * operand past EIP-7823's bound out of gas).
 */
export function failureOf(outcome: SimulatedCall): FrameError | undefined {
  const error = outcome.result?.execResult.exceptionError;
  if (!error) return undefined;
  const precompile = precompileFailure(error);
  if (precompile) return precompile.outOfGas ? 'out of gas' : 'precompile failed';
  return normaliseError(error.error);
}

/** Gas used after refunds (and at least EIP-7623's floor): what a receipt would say. */
export function usedGas(outcome: SimulatedCall): bigint {
  return outcome.result?.totalGasSpent ?? outcome.gasUsed;
}

/** The EVM's error in geth's words (the geth table of tracing/geth/errors.ts, with its details). */
export function vmError(outcome: SimulatedCall): string {
  const exceptionError = outcome.result?.execResult.exceptionError;
  const kind = failureOf(outcome);
  if (!exceptionError || kind === undefined) return 'execution failed';
  const precompile = precompileFailure(exceptionError);
  if (precompile) return precompile.text;
  return gethErrorText(kind, failedOpOf(kind, outcome.result?.execResult.runState));
}
