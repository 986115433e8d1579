import { RequestFailed } from '../core/errors.ts';

/** Why a call failed validation, for callers that treat some failures differently (gas estimation). */
export type CallFault = 'intrinsic gas' | 'insufficient funds' | 'invalid';

/** A call that fails validation fails the whole request, naming the call (docs/tracing.md). */
export class CallValidationError extends RequestFailed {
  constructor(
    readonly index: number,
    /** The failure without the call's index, as geth words it where geth has the same check. */
    readonly reason: string,
    readonly fault: CallFault = 'invalid',
  ) {
    super(`call ${index}: ${reason}`);
  }
}
