import type { BlockOverrides, StateOverrides } from './call.ts';

/** geth's struct logger options (eth/tracers/logger.Config); geth's defaults are all false. */
export interface StructLoggerOptions {
  disableStack: boolean;
  disableStorage: boolean;
  enableMemory: boolean;
  enableReturnData: boolean;
  /** Most struct logs recorded; 0 = no limit (geth's `limit`). */
  limit: number;
}

/** Which tracer a debug_trace* request asked for, as plain data (it crosses to the worker). */
export type GethTracerConfig =
  | { tracer: 'structLogger'; options: StructLoggerOptions }
  | { tracer: 'callTracer'; onlyTopCall: boolean; withLog: boolean }
  | { tracer: 'prestateTracer'; diffMode: boolean; disableCode: boolean; disableStorage: boolean }
  | { tracer: 'noopTracer' };

/** A parsed geth TraceConfig: the tracer, and the request's own deadline if it named one. */
export interface TraceOptions {
  tracer: GethTracerConfig;
  /** geth's `timeout`, in ms; the service caps it at its own deadline. */
  timeoutMs?: number;
}

/** debug_traceCall's TraceCallConfig: a TraceConfig plus overrides. */
export interface TraceCallOptions extends TraceOptions {
  stateOverrides?: StateOverrides;
  blockOverrides?: BlockOverrides;
}
