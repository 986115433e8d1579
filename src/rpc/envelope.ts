import type { Subscriber } from '../services/subscriptions.ts';
import { INVALID_REQUEST, METHOD_NOT_FOUND, PARSE_ERROR, toWireError, type WireError } from './errors.ts';
import type { MethodContext, MethodTable } from './method.ts';
import { RawJson } from './rawJson.ts';

/** The response body as chunks, so pre-rendered results are written without being copied or parsed. */
export type ResponseChunks = Array<string | Uint8Array>;

export interface EnvelopeLimits {
  /** Largest batch answered; a larger one gets a single -32600 error (geth answers the same way). */
  maxBatchSize: number;
}

type Id = string | number | null;

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
      return errorResponse(null, { code: PARSE_ERROR, message: 'parse error' });
    }
    if (!Array.isArray(message)) return this.handleOne(message, context);
    if (message.length === 0) return errorResponse(null, { code: INVALID_REQUEST, message: 'empty batch' });
    if (message.length > this.limits.maxBatchSize) {
      const id = idOf(message[0]);
      return [
        '[',
        ...errorResponse(id, {
          code: INVALID_REQUEST,
          message: `batch too large: ${message.length} requests, at most ${this.limits.maxBatchSize}`,
        }),
        ']',
      ];
    }
    const answers = await Promise.all(message.map((m) => this.handleOne(m, context)));
    const out: ResponseChunks = [];
    for (const answer of answers) {
      if (!answer) continue;
      out.push(out.length === 0 ? '[' : ',', ...answer);
    }
    if (out.length === 0) return null;
    out.push(']');
    return out;
  }

  private async handleOne(request: unknown, context: MethodContext<S>): Promise<ResponseChunks | null> {
    if (typeof request !== 'object' || request === null || Array.isArray(request)) {
      return errorResponse(null, { code: INVALID_REQUEST, message: 'invalid request' });
    }
    const r = request as Record<string, unknown>;
    const isNotification = !('id' in r);
    const id = idOf(r);
    if (r.jsonrpc !== '2.0' || typeof r.method !== 'string' || r.method === '' || !validId(r.id)) {
      return errorResponse(isNotification ? null : id, { code: INVALID_REQUEST, message: 'invalid request' });
    }
    const method = Object.hasOwn(this.methods, r.method) ? this.methods[r.method] : undefined;
    let answer: ResponseChunks;
    if (!method) {
      answer = errorResponse(id, {
        code: METHOD_NOT_FOUND,
        message: `the method ${r.method} does not exist/is not available`,
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
    return isNotification ? null : answer;
  }
}

function validId(id: unknown): boolean {
  return id === undefined || id === null || typeof id === 'string' || typeof id === 'number';
}

function idOf(r: unknown): Id {
  if (typeof r !== 'object' || r === null) return null;
  const id = (r as Record<string, unknown>).id;
  return typeof id === 'string' || typeof id === 'number' ? id : null;
}

function resultResponse(id: Id, result: unknown): ResponseChunks {
  const head = `{"jsonrpc":"2.0","id":${JSON.stringify(id)},"result":`;
  if (result instanceof RawJson) return [head, result.json, '}'];
  return [`${head}${JSON.stringify(result ?? null)}}`];
}

function errorResponse(id: Id, error: WireError): ResponseChunks {
  return [`{"jsonrpc":"2.0","id":${JSON.stringify(id)},"error":${JSON.stringify(error)}}`];
}
