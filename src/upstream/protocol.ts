/**
 * JSON-RPC 2.0 as the upstream client speaks it: request bodies with our own numeric ids, and the
 * check that an answer is the one asked for (every id answered once, nothing else) before any of it
 * is believed.
 */

export interface RpcCall {
  method: string;
  params: unknown[];
}

export interface RpcErrorObject {
  code: number;
  message: string;
  data?: unknown;
}

export type RpcOutcome = { ok: true; result: unknown } | { ok: false; error: RpcErrorObject };

/** EIP-1474's "limit exceeded", which Infura and others answer when a client goes over its rate. */
export const RATE_LIMITED_CODE = -32005;

/** One call is sent as a plain request (an upstream need not support batches), more as a batch. */
export function requestBody(calls: readonly RpcCall[], ids: readonly number[]): string {
  const requests = calls.map((call, i) => ({
    jsonrpc: '2.0',
    id: ids[i],
    method: call.method,
    params: call.params,
  }));
  return JSON.stringify(requests.length === 1 ? requests[0] : requests);
}

export type Reading =
  /** An outcome for each id, in the order of the ids asked. */
  | { kind: 'answers'; outcomes: RpcOutcome[] }
  /** One error answered for a whole batch (geth's "batch too large", a rate limiter's -32005). */
  | { kind: 'rejected'; error: RpcErrorObject }
  | { kind: 'malformed'; reason: string };

/** Reads an answer to the request `requestBody` made for `ids`. */
export function readAnswer(value: unknown, ids: readonly number[]): Reading {
  return ids.length === 1 ? readSingle(value, ids[0] as number) : readBatch(value, ids);
}

function readSingle(value: unknown, id: number): Reading {
  const answer = readResponse(value);
  if (typeof answer === 'string') return { kind: 'malformed', reason: answer };
  // A server that could not read a request answers its error with id null (JSON-RPC 2.0, 5.).
  if (answer.id === id || (answer.id === null && !answer.outcome.ok)) {
    return { kind: 'answers', outcomes: [answer.outcome] };
  }
  return { kind: 'malformed', reason: `answer id ${JSON.stringify(answer.id)}, expected ${id}` };
}

function readBatch(value: unknown, ids: readonly number[]): Reading {
  if (!Array.isArray(value)) {
    const answer = readResponse(value);
    if (typeof answer !== 'string' && answer.id === null && !answer.outcome.ok) {
      return { kind: 'rejected', error: answer.outcome.error };
    }
    return { kind: 'malformed', reason: 'a batch answered with something other than an array' };
  }
  const position = new Map(ids.map((id, i) => [id, i]));
  const outcomes: Array<RpcOutcome | undefined> = new Array(ids.length);
  for (const item of value) {
    const answer = readResponse(item);
    if (typeof answer === 'string') return { kind: 'malformed', reason: answer };
    const i = typeof answer.id === 'number' ? position.get(answer.id) : undefined;
    if (i === undefined) {
      return { kind: 'malformed', reason: `batch answer id ${JSON.stringify(answer.id)} was not asked` };
    }
    if (outcomes[i] !== undefined) {
      return { kind: 'malformed', reason: `batch answer id ${answer.id} answered twice` };
    }
    outcomes[i] = answer.outcome;
  }
  const missing = ids.filter((_, i) => outcomes[i] === undefined);
  if (missing.length > 0) {
    return {
      kind: 'malformed',
      reason: `batch answer lacks ${missing.length} of ${ids.length} ids (first ${missing[0]})`,
    };
  }
  return { kind: 'answers', outcomes: outcomes as RpcOutcome[] };
}

/** A response object's id and outcome, or why it is not one. */
function readResponse(value: unknown): { id: unknown; outcome: RpcOutcome } | string {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return 'an answer that is not a JSON-RPC response object';
  }
  const response = value as { id?: unknown; result?: unknown; error?: unknown };
  const id = response.id ?? null;
  if (response.error !== undefined && response.error !== null) {
    const error = readError(response.error);
    if (error === undefined) return `an answer whose error is not a JSON-RPC error object`;
    return { id, outcome: { ok: false, error } };
  }
  if (!('result' in response)) return 'an answer with neither result nor error';
  return { id, outcome: { ok: true, result: response.result } };
}

function readError(value: unknown): RpcErrorObject | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const { code, message, data } = value as { code?: unknown; message?: unknown; data?: unknown };
  if (typeof code !== 'number' || !Number.isInteger(code)) return undefined;
  const text = typeof message === 'string' ? message : '';
  return data === undefined ? { code, message: text } : { code, message: text, data };
}

/**
 * How long a rate limiter asks us to wait, from its -32005 error's data: `retryAfter`/`retry_after`
 * /`retryAfterSeconds` (seconds), or Infura's `{rate: {backoff_seconds}}` / `backoff_seconds`.
 */
export function retryAfterOfData(data: unknown): number | undefined {
  if (typeof data !== 'object' || data === null) return undefined;
  const d = data as Record<string, unknown>;
  const rate = typeof d.rate === 'object' && d.rate !== null ? (d.rate as Record<string, unknown>) : {};
  for (const v of [
    d.retryAfterSeconds,
    d.retryAfter,
    d.retry_after,
    d.backoff_seconds,
    rate.backoff_seconds,
  ]) {
    const seconds = typeof v === 'string' ? Number(v) : v;
    if (typeof seconds === 'number' && Number.isFinite(seconds) && seconds >= 0) return seconds;
  }
  return undefined;
}
