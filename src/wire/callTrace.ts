import { toHex } from '../primitives/hex.ts';

/** One call's outcome as trace_call/trace_callMany show it: JSON-ready trace parts and the output. */
export interface CallTraceParts {
  output: Uint8Array;
  trace: unknown[];
  stateDiff: unknown;
}

/**
 * One trace_call/trace_callMany result as JSON bytes: all four keys always present (output,
 * stateDiff, trace, vmTrace, in that order), no transactionHash. The vmTrace comes as JSON bytes, as
 * src/evm's tracer renders it (src/exec/tracing/evmVmTrace.ts).
 */
export function callTraceJson(t: CallTraceParts, vmTraceJson: Uint8Array): Buffer {
  const head = JSON.stringify({ output: toHex(t.output), stateDiff: t.stateDiff, trace: t.trace });
  return Buffer.concat([Buffer.from(`${head.slice(0, -1)},"vmTrace":`), vmTraceJson, CLOSE]);
}

const CLOSE = Buffer.from('}');
