import { ResponseTooLarge } from '../core/errors.ts';
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
    private readonly context: Omit<MethodContext<S>, 'subscriber'>,
    private readonly limits: EnvelopeLimits,
    private readonly onInternalError: (e: unknown, method: string) => void,
  ) {}

  /** `subscriber` is the WebSocket connection the body came on (null over HTTP). */
  async handle(body: string, subscriber: Subscriber | null = null): Promise<ResponseChunks | null> {
    const context = { ...this.context, subscriber };
    let message: unknown;
    try {
      message = JSON.parse(body);
    } catch {
      return errorResponse(NULL_ID, { code: PARSE_ERROR, message: 'parse error' });
    }
    // Numeric ids do not survive JSON.parse exactly (1e400, 30-digit integers): echo their source.
    const raw = hasNumericId(message) ? rawIds(body) : undefined;
    if (!Array.isArray(message)) {
      const answer = await this.handleOne(message, context, typeof raw === 'string' ? raw : undefined);
      return answer && this.bounded(answer.chunks, answer.id);
    }
    const raws = Array.isArray(raw) ? raw : [];
    if (message.length === 0)
      return errorResponse(NULL_ID, { code: INVALID_REQUEST, message: 'empty batch' });
    if (message.length > this.limits.maxBatchSize) {
      return [
        '[',
        ...errorResponse(idJson(message[0], raws[0]), {
          code: INVALID_REQUEST,
          message: `batch too large: ${message.length} requests, at most ${this.limits.maxBatchSize}`,
        }),
        ']',
      ];
    }
    const limit = this.limits.maxResponseBytes ?? Number.POSITIVE_INFINITY;
    let total = 0;
    const run = () =>
      Promise.all(
        message.map(async (m, i) => {
          const answer = await this.handleOne(m, context, raws[i]);
          if (!answer) return null;
          // Counted as each answer completes: the first to take the batch past the limit, and all
          // after it, are replaced, so the body stays bounded whatever order they finish in.
          const size = chunksLength(answer.chunks);
          if (total + size > limit) return tooLarge(answer.id, limit);
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
    if (out.length === 0) return null;
    out.push(']');
    return out;
  }

  private bounded(chunks: ResponseChunks, id: IdJson): ResponseChunks {
    const limit = this.limits.maxResponseBytes;
    return limit !== undefined && chunksLength(chunks) > limit ? tooLarge(id, limit) : chunks;
  }

  private async handleOne(
    request: unknown,
    context: MethodContext<S>,
    rawId: string | undefined,
  ): Promise<{ id: IdJson; chunks: ResponseChunks } | null> {
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
    if (!method) {
      answer = errorResponse(id, {
        code: METHOD_NOT_FOUND,
        message: `the method ${boundedText(r.method)} does not exist/is not available`,
      });
    } else if (tooDeep(r.params, MAX_PARAMS_DEPTH)) {
      answer = errorResponse(id, {
        code: INVALID_PARAMS,
        message: `invalid params: nested more than ${MAX_PARAMS_DEPTH} levels deep`,
      });
    } else {
      try {
        answer = resultResponse(id, await method.run(r.params, context));
      } catch (e) {
        answer = errorResponse(
          id,
          toWireError(e, (err) => this.onInternalError(err, r.method as string)),
        );
      }
    }
    return isNotification ? null : { id, chunks: answer };
  }
}

function validId(id: unknown): boolean {
  return id === undefined || id === null || typeof id === 'string' || typeof id === 'number';
}

function hasNumericId(message: unknown): boolean {
  const numeric = (r: unknown) =>
    typeof r === 'object' && r !== null && typeof (r as Record<string, unknown>).id === 'number';
  return Array.isArray(message) ? message.some(numeric) : numeric(message);
}

/** The id to echo: as sent when it is a number (its source text), else as parsed; null if invalid. */
function idJson(r: unknown, raw: string | undefined): IdJson {
  if (typeof r !== 'object' || r === null) return NULL_ID;
  const id = (r as Record<string, unknown>).id;
  if (typeof id === 'number') return raw ?? JSON.stringify(id);
  return typeof id === 'string' ? JSON.stringify(id) : NULL_ID;
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
