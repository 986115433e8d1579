import { isLimitName, type LimitName } from '../config/limits.ts';
import type { Caller } from '../core/caller.ts';
import { DomainError, ResponseTooLarge } from '../core/errors.ts';
import { RawJson } from '../core/rawJson.ts';
import type { Subscriber } from '../core/subscriber.ts';
import {
  INVALID_PARAMS,
  INVALID_REQUEST,
  METHOD_NOT_FOUND,
  PARSE_ERROR,
  toWireError,
  type WireError,
} from './errors.ts';
import type { MethodContext, MethodTable } from './method.ts';
import { rawIds } from './rawId.ts';

/** The response body as chunks, so pre-rendered results are written without being copied or parsed. */
export type ResponseChunks = Array<string | Uint8Array>;

export interface EnvelopeLimits {
  /** Largest batch answered; a larger one gets a single -32600 error (geth answers the same way). */
  maxBatchSize: number;
  /**
   * Bytes one answer, and all the answers of one batch together, may take. A single answer over it
   * is -32008 (Reth's code for the same limit); in a batch, the answers that would take the total
   * past it are -32008 each, as geth does with its batch response limit, so the client still learns
   * which requests were answered.
   */
  maxResponseBytes?: number;
  /**
   * Runs the requests of one batch inside a shared budget (the execution pool's: one deadline and a
   * bound on how many of its EVM jobs run at once), so one batch cannot hold every worker for a
   * thousand deadlines. The envelope knows no pool; the app supplies this.
   */
  batchScope?: <T>(work: () => Promise<T>) => Promise<T>;
}

/**
 * How deeply params may nest. JSON.parse copes with any depth, but the recursive steps after it
 * (JSON.stringify in an error message, structured clone to a worker) overflow the stack somewhere
 * past a few thousand levels. The deepest legitimate params (state overrides, trace_callMany, typed
 * data) nest under ten levels.
 */
export const MAX_PARAMS_DEPTH = 100;

/**
 * Longest error message sent: a backstop, since the parameter parsers already cut what they quote of
 * a client's value (params.ts `quoted`). Long enough for any revert reason a contract means to
 * show; short enough that a message quoting a megabyte the client sent does not send it back.
 */
const MAX_ERROR_MESSAGE_CHARS = 16 * 1024;

/** One call of a body, as the gate sees it (params unparsed: methods parse their own). */
export interface CallInfo {
  method: string;
  params: unknown;
}

/** A gate's refusal of a whole body: every request in it is answered with `error`. */
export interface Refusal {
  /** The HTTP status of the answer (429, 403); over WebSocket only the error travels. */
  httpStatus: number;
  error: WireError;
  /** Extra HTTP headers (Retry-After). */
  headers?: Record<string, string>;
}

/**
 * What the transport puts around one body: its access policy (keys, credits, allow-lists) decides on
 * the calls before any runs, and its metrics and logs hear how each call ended. The envelope knows
 * no keys or metrics; src/app.ts supplies this per request.
 */
export interface CallGate {
  /** Before anything runs, with the body's well-formed calls in order; a refusal answers the body. */
  admit?(calls: readonly CallInfo[]): Refusal | null | Promise<Refusal | null>;
  /**
   * Once per answered call (notifications included): null for a result, else the error's code.
   * `refused`: another gate refused the body (src/transport/gate.ts), so the call never ran.
   */
  answered?(call: CallInfo, code: number | null, ms: number, refused?: boolean): void;
  /** An abuse limit (src/config/limits.ts) refused the body or one of its calls; once per refusal. */
  limited?(limit: LimitName): void;
}

/** The answer to a body: `chunks` null means "send no body"; the HTTP status is 200 unless refused. */
export interface EnvelopeAnswer {
  chunks: ResponseChunks | null;
  httpStatus: number;
  headers?: Record<string, string>;
}

/** An id as it goes on the wire: its JSON text. */
type IdJson = string;
const NULL_ID: IdJson = 'null';

/**
 * The JSON-RPC 2.0 envelope shared by HTTP and WebSocket. It never throws: every request gets an
 * answer, notifications none; `null` means "send no body".
 */
export class RpcEnvelope<S> {
  constructor(
    private readonly methods: MethodTable<S>,
    private readonly context: Omit<MethodContext<S>, 'subscriber' | 'caller'>,
    private readonly limits: EnvelopeLimits,
    private readonly onInternalError: (e: unknown, method: string) => void,
  ) {}

  /**
   * `subscriber` is the WebSocket connection the body came on (null over HTTP); `gate` the
   * transport's policy and observers for this body; `caller` who sent it (key and connection).
   */
  async handle(
    body: string,
    subscriber: Subscriber | null = null,
    gate: CallGate | null = null,
    caller: Caller | null = null,
  ): Promise<EnvelopeAnswer> {
    const context = { ...this.context, subscriber, caller };
    let message: unknown;
    try {
      message = JSON.parse(body);
    } catch {
      return ok(errorResponse(NULL_ID, { code: PARSE_ERROR, message: 'parse error' }));
    }
    // Ids are echoed as their source text (README: "exactly as sent"), which JSON.parse loses for
    // numbers (1e400, 30-digit integers) and for strings with escapes (`"\u0041"` reads as "A").
    const raw = needsRawIds(message, body) ? rawIds(body) : undefined;
    if (!Array.isArray(message)) {
      const refusal = await this.admit(gate, [message]);
      if (refusal) return refused(refusal, [message], [typeof raw === 'string' ? raw : undefined], false);
      const answer = await this.handleOne(message, context, typeof raw === 'string' ? raw : undefined, gate);
      return ok(answer && this.bounded(answer.chunks, answer.id, gate));
    }
    const raws = Array.isArray(raw) ? raw : [];
    if (message.length === 0)
      return ok(errorResponse(NULL_ID, { code: INVALID_REQUEST, message: 'empty batch' }));
    if (message.length > this.limits.maxBatchSize) {
      gate?.limited?.('batch_size');
      return ok([
        '[',
        ...errorResponse(idJson(message[0], raws[0]), {
          code: INVALID_REQUEST,
          message: `batch too large: ${message.length} requests, at most ${this.limits.maxBatchSize}`,
        }),
        ']',
      ]);
    }
    const refusal = await this.admit(gate, message);
    if (refusal) return refused(refusal, message, raws, true);
    const limit = this.limits.maxResponseBytes ?? Number.POSITIVE_INFINITY;
    let total = 0;
    const run = () =>
      Promise.all(
        message.map(async (m, i) => {
          const answer = await this.handleOne(m, context, raws[i], gate);
          if (!answer) return null;
          // Counted as each answer completes: the first to take the batch past the limit, and all
          // after it, are replaced, so the body stays bounded whatever order they finish in.
          const size = chunksLength(answer.chunks);
          if (total + size > limit) {
            gate?.limited?.('response_bytes');
            return tooLarge(answer.id, limit);
          }
          total += size;
          return answer.chunks;
        }),
      );
    const answers = this.limits.batchScope ? await this.limits.batchScope(run) : await run();
    const out: ResponseChunks = [];
    for (const answer of answers) {
      if (!answer) continue;
      out.push(out.length === 0 ? '[' : ',', ...answer);
    }
    if (out.length === 0) return ok(null);
    out.push(']');
    return ok(out);
  }

  /** The gate's word on the body's well-formed calls (malformed ones are answered as such, free). */
  private async admit(gate: CallGate | null, requests: readonly unknown[]): Promise<Refusal | null> {
    if (!gate?.admit) return null;
    const calls: CallInfo[] = [];
    for (const r of requests) {
      const call = wellFormed(r);
      if (call) calls.push(call);
    }
    return calls.length === 0 ? null : gate.admit(calls);
  }

  private bounded(chunks: ResponseChunks, id: IdJson, gate: CallGate | null): ResponseChunks {
    const limit = this.limits.maxResponseBytes;
    if (limit === undefined || chunksLength(chunks) <= limit) return chunks;
    gate?.limited?.('response_bytes');
    return tooLarge(id, limit);
  }

  private async handleOne(
    request: unknown,
    context: MethodContext<S>,
    rawId: string | undefined,
    gate: CallGate | null,
  ): Promise<{ id: IdJson; chunks: ResponseChunks } | null> {
    const started = gate?.answered ? performance.now() : 0;
    if (typeof request !== 'object' || request === null || Array.isArray(request)) {
      return {
        id: NULL_ID,
        chunks: errorResponse(NULL_ID, { code: INVALID_REQUEST, message: 'invalid request' }),
      };
    }
    const r = request as Record<string, unknown>;
    const isNotification = !('id' in r);
    const id = idJson(r, rawId);
    if (r.jsonrpc !== '2.0' || typeof r.method !== 'string' || r.method === '' || !validId(r.id)) {
      const answerId = isNotification ? NULL_ID : id;
      return {
        id: answerId,
        chunks: errorResponse(answerId, { code: INVALID_REQUEST, message: 'invalid request' }),
      };
    }
    const method = Object.hasOwn(this.methods, r.method) ? this.methods[r.method] : undefined;
    let answer: ResponseChunks;
    let code: number | null = null;
    if (!method) {
      code = METHOD_NOT_FOUND;
      answer = errorResponse(id, {
        code,
        message: `the method ${boundedText(r.method)} does not exist/is not available`,
      });
    } else if (tooDeep(r.params, MAX_PARAMS_DEPTH)) {
      code = INVALID_PARAMS;
      answer = errorResponse(id, {
        code,
        message: `invalid params: nested more than ${MAX_PARAMS_DEPTH} levels deep`,
      });
    } else {
      try {
        answer = resultResponse(id, await method.run(r.params, context));
      } catch (e) {
        const limit = limitOf(e);
        if (limit !== null) gate?.limited?.(limit);
        const error = toWireError(e, (err) => this.onInternalError(err, r.method as string));
        code = error.code;
        answer = errorResponse(id, error);
      }
    }
    gate?.answered?.({ method: r.method, params: r.params }, code, performance.now() - started);
    return isNotification ? null : { id, chunks: answer };
  }
}

/** The abuse limit a method's error is the refusal of, if any (counted by name: README, Limits). */
function limitOf(e: unknown): LimitName | null {
  if (!(e instanceof DomainError)) return null;
  if (e.abuseLimit !== undefined) return isLimitName(e.abuseLimit) ? e.abuseLimit : null;
  switch (e.kind) {
    case 'response too large':
      return 'response_bytes';
    case 'busy':
      return 'pool_queue';
    case 'execution timeout':
      return 'batch_work';
    case 'too many subscriptions':
      return 'ws_subscriptions';
    default:
      return null;
  }
}

function ok(chunks: ResponseChunks | null): EnvelopeAnswer {
  return { chunks, httpStatus: 200 };
}

/** Every request of the body answered with the refusal's error (notifications with nothing). */
function refused(
  refusal: Refusal,
  requests: readonly unknown[],
  raws: ReadonlyArray<string | undefined>,
  batch: boolean,
): EnvelopeAnswer {
  const answers: ResponseChunks[] = [];
  for (const [i, r] of requests.entries()) {
    const isNotification = typeof r === 'object' && r !== null && !Array.isArray(r) && !('id' in r);
    if (!isNotification) answers.push(errorResponse(idJson(r, raws[i]), refusal.error));
  }
  const chunks: ResponseChunks | null =
    answers.length === 0
      ? null
      : batch
        ? ['[', ...answers.flatMap((a, i) => (i === 0 ? a : [',', ...a])), ']']
        : (answers[0] ?? null);
  return { chunks, httpStatus: refusal.httpStatus, ...(refusal.headers && { headers: refusal.headers }) };
}

/** A request that will reach a method (or method-not-found): a JSON-RPC 2.0 object with a method name. */
function wellFormed(request: unknown): CallInfo | null {
  if (typeof request !== 'object' || request === null || Array.isArray(request)) return null;
  const r = request as Record<string, unknown>;
  if (r.jsonrpc !== '2.0' || typeof r.method !== 'string' || r.method === '' || !validId(r.id)) return null;
  return { method: r.method, params: r.params };
}

function validId(id: unknown): boolean {
  return id === undefined || id === null || typeof id === 'string' || typeof id === 'number';
}

/**
 * Whether an id's source text may differ from what JSON.stringify writes of its parsed value: any
 * number may; a string only when the body has a backslash, since a JSON string without escapes holds
 * neither control characters nor quotes and is written back the same (UTF-8 decoding leaves no lone
 * surrogate for JSON.stringify to escape). The common body, with a plain id, is never scanned.
 */
function needsRawIds(message: unknown, body: string): boolean {
  let strings = false;
  const check = (r: unknown): boolean => {
    if (typeof r !== 'object' || r === null) return false;
    const id = (r as Record<string, unknown>).id;
    if (typeof id === 'string') strings = true;
    return typeof id === 'number';
  };
  const numeric = Array.isArray(message) ? message.some(check) : check(message);
  return numeric || (strings && body.includes('\\'));
}

/** The id to echo: its source text when known, else as parsed; null if it is not a valid id. */
function idJson(r: unknown, raw: string | undefined): IdJson {
  if (typeof r !== 'object' || r === null) return NULL_ID;
  const id = (r as Record<string, unknown>).id;
  if (typeof id === 'number' || typeof id === 'string') return raw ?? JSON.stringify(id);
  return NULL_ID;
}

/** Whether `value` nests deeper than `max` arrays/objects, walked without recursion. */
function tooDeep(value: unknown, max: number): boolean {
  if (typeof value !== 'object' || value === null) return false;
  const stack: Array<[object, number]> = [[value, 1]];
  for (let top = stack.pop(); top !== undefined; top = stack.pop()) {
    const [node, depth] = top;
    if (depth > max) return true;
    for (const child of Object.values(node)) {
      if (typeof child === 'object' && child !== null) stack.push([child, depth + 1]);
    }
  }
  return false;
}

function boundedText(text: string): string {
  return text.length <= MAX_ERROR_MESSAGE_CHARS ? text : `${text.slice(0, MAX_ERROR_MESSAGE_CHARS)}…`;
}

function chunksLength(chunks: ResponseChunks): number {
  let n = 0;
  // A string's UTF-8 length is at most three bytes per UTF-16 unit; ASCII JSON is one. Counting
  // exactly would mean encoding every string here, on the event loop.
  for (const c of chunks) n += typeof c === 'string' ? c.length : c.byteLength;
  return n;
}

function tooLarge(id: IdJson, limit: number): ResponseChunks {
  return errorResponse(id, toWireError(new ResponseTooLarge(limit)));
}

function resultResponse(id: IdJson, result: unknown): ResponseChunks {
  const head = `{"jsonrpc":"2.0","id":${id},"result":`;
  if (result instanceof RawJson) return [head, ...result.chunks(), '}'];
  return [`${head}${JSON.stringify(result ?? null)}}`];
}

function errorResponse(id: IdJson, error: WireError): ResponseChunks {
  const bounded = { ...error, message: boundedText(error.message) };
  return [`{"jsonrpc":"2.0","id":${id},"error":${JSON.stringify(bounded)}}`];
}
