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
