import type { CallTrace } from '../../exec/executor.ts';
import { toHex } from '../../primitives/hex.ts';

/** One trace_call/trace_callMany result: all four keys always present, no transactionHash. */
export function formatCallTrace(t: CallTrace): Record<string, unknown> {
  return { output: toHex(t.output), stateDiff: t.stateDiff, trace: t.trace, vmTrace: t.vmTrace };
}
