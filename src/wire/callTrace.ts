import { toHex } from '../primitives/hex.ts';

/** One call's outcome as trace_call/trace_callMany show it: JSON-ready trace parts and the output. */
export interface CallTraceParts {
  output: Uint8Array;
  trace: unknown[];
  stateDiff: unknown;
  vmTrace: unknown;
}

/** One trace_call/trace_callMany result: all four keys always present, no transactionHash. */
export function formatCallTrace(t: CallTraceParts): Record<string, unknown> {
  return { output: toHex(t.output), stateDiff: t.stateDiff, trace: t.trace, vmTrace: t.vmTrace };
}
