/**
 * JSON-RPC errors. Each class carries its wire code; `toWireError` is the one place that turns any
 * thrown value into `{code, message, data}`, so a handler bug becomes -32603 with no stack leaked.
 */
export class RpcError extends Error {
  constructor(
    readonly code: number,
    message: string,
    readonly data?: unknown,
  ) {
    super(message);
  }
}

export const PARSE_ERROR = -32700;
export const INVALID_REQUEST = -32600;
export const METHOD_NOT_FOUND = -32601;
export const INVALID_PARAMS = -32602;
export const INTERNAL_ERROR = -32603;
/** Execution and method errors (geth's default code). */
export const SERVER_ERROR = -32000;
export const LIMIT_EXCEEDED = -32005;
/** An answer over the server's size limit: Reth's code (jsonrpsee's "oversized response"). */
export const RESPONSE_TOO_LARGE = -32008;

export class InvalidParams extends RpcError {
  constructor(message: string) {
    super(INVALID_PARAMS, message);
  }
}

/** A request the method cannot serve: unknown block for a state read, range too large, … */
export class ServerError extends RpcError {
  constructor(message: string, data?: unknown) {
    super(SERVER_ERROR, message, data);
  }
}

/**
 * An answer larger than the server sends (`limit` bytes). Raised in a worker as soon as a tracer's
 * output passes the limit, so the trace stops growing, or by the envelope for a whole batch.
 */
export class ResponseTooLarge extends RpcError {
  constructor(readonly limit: number) {
    super(
      RESPONSE_TOO_LARGE,
      `response too large: the answer would exceed ${limit} bytes; ask for less (fewer calls or blocks, no vmTrace, a struct logger limit)`,
    );
  }
}

/** Most characters of an error logged: its stack, or a message quoting a client's megabyte number. */
const MAX_LOGGED_CHARS = 2_000;

/** An error as a log line: its stack, cut to a bounded length. */
export function describeForLog(e: unknown): string {
  const text = e instanceof Error ? (e.stack ?? `${e.name}: ${e.message}`) : String(e);
  return text.length <= MAX_LOGGED_CHARS
    ? text
    : `${text.slice(0, MAX_LOGGED_CHARS)}… (${text.length} chars)`;
}

export interface WireError {
  code: number;
  message: string;
  data?: unknown;
}

export function toWireError(e: unknown, onInternal?: (e: unknown) => void): WireError {
  if (e instanceof RpcError) {
    return e.data === undefined
      ? { code: e.code, message: e.message }
      : { code: e.code, message: e.message, data: e.data };
  }
  onInternal?.(e);
  return { code: INTERNAL_ERROR, message: 'internal error' };
}
