import {
  DomainError,
  type DomainErrorKind,
  type SimulationFault,
  SimulationRejected,
  UpstreamError,
} from '../core/errors.ts';
import { toHex } from '../primitives/hex.ts';

/**
 * The one mapping from the service's errors (src/core/errors.ts) to JSON-RPC codes (an answer
 * carrying one travels with HTTP 200). Handlers and services throw domain errors; only the envelope and the transport speak
 * in codes, through `toWireError`, so a handler bug becomes -32603 with no stack leaked.
 */

export const PARSE_ERROR = -32700;
export const INVALID_REQUEST = -32600;
export const METHOD_NOT_FOUND = -32601;
export const INVALID_PARAMS = -32602;
export const INTERNAL_ERROR = -32603;
/** Execution and method errors (geth's default code). */
export const SERVER_ERROR = -32000;
/** Infura's "limit exceeded": viem retries it with backoff (`shouldRetry` in its buildRequest). */
export const LIMIT_EXCEEDED = -32005;

/**
 * An error the rpc layer raises itself in protocol terms, for the few answers whose code belongs to
 * the method and not to any domain error (a subscription kind that does not exist: -32601).
 */
export class RpcError extends Error {
  constructor(
    readonly code: number,
    message: string,
  ) {
    super(message);
  }
}

interface WireMapping {
  code: number;
}

const MAPPING: Record<DomainErrorKind, WireMapping> = {
  'invalid argument': { code: INVALID_PARAMS },
  'not found': { code: SERVER_ERROR },
  failed: { code: SERVER_ERROR },
  'limit exceeded': { code: LIMIT_EXCEEDED },
  // -32005 as Infura words its rate limits: clients back off and retry. A timeout stays -32000,
  // which they do not retry: the same trace would only time out again.
  busy: { code: LIMIT_EXCEEDED },
  'execution timeout': { code: SERVER_ERROR },
  // geth's code for a reverted call, with the revert data.
  reverted: { code: 3 },
  // Reth's code for an answer over its size limit (jsonrpsee's "oversized response").
  'response too large': { code: -32008 },
  // Infura's code for a transaction the node refuses (funds, fees).
  'transaction rejected': { code: -32003 },
  // Reth's (jsonrpsee's) code when a connection is over its subscription cap.
  'too many subscriptions': { code: -32006 },
  // EIP-1474's "resource unavailable" (Infura's -32002): a source we depend on cannot answer now.
  unavailable: { code: -32002 },
  // Replaced by the upstream's own code (see toWireError).
  upstream: { code: SERVER_ERROR },
  // Replaced by the fault's code (SIMULATION_CODES).
  'simulation rejected': { code: SERVER_ERROR },
  internal: { code: INTERNAL_ERROR },
};

/** eth_simulateV1's codes, as the execution-apis spec and geth give them. */
const SIMULATION_CODES: Record<SimulationFault, number> = {
  'nonce too low': -38010,
  'nonce too high': -38011,
  'fee cap below base fee': -38012,
  'intrinsic gas': -38013,
  'insufficient funds': -38014,
  'block gas limit reached': -38015,
  'block number order': -38020,
  'block timestamp order': -38021,
  'sender not an account': -38024,
  'init code too large': -38025,
  'client limit': -38026,
  'invalid fee fields': INVALID_PARAMS,
  'invalid transaction': INTERNAL_ERROR,
};

export interface WireError {
  code: number;
  message: string;
  data?: unknown;
}

/**
 * Any thrown value as a JSON-RPC error object. Domain errors keep their message and data (bytes as
 * hex); anything else is a bug, reported to `onInternal` and answered -32603 `internal error`.
 */
export function toWireError(e: unknown, onInternal?: (e: unknown) => void): WireError {
  if (e instanceof RpcError) return { code: e.code, message: e.message };
  if (e instanceof UpstreamError) {
    const { code, message, data } = e.upstream;
    return data === undefined ? { code, message } : { code, message, data };
  }
  if (e instanceof SimulationRejected) return { code: SIMULATION_CODES[e.fault], message: e.message };
  if (e instanceof DomainError && e.kind !== 'internal') {
    const { code } = MAPPING[e.kind];
    if (e.data === undefined) return { code, message: e.message };
    return { code, message: e.message, data: e.data instanceof Uint8Array ? toHex(e.data) : e.data };
  }
  // An internal error made elsewhere (a crashed worker) was logged where it happened, with its cause.
  if (!(e instanceof DomainError)) onInternal?.(e);
  return { code: INTERNAL_ERROR, message: 'internal error' };
}
