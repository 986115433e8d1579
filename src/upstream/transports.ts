import WebSocket from 'ws';
import { metElsewhere } from '../core/caught.ts';

/**
 * How a request body reaches one upstream URL and its answer comes back: an HTTP POST (Node's
 * fetch, whose connections are kept alive and pooled per origin) or a message on one persistent
 * WebSocket per URL. A transport only moves bytes and says what failed; deciding what an answer
 * means (rate limited, malformed, a fault) is the client's.
 */

/** A body and the ids it carries (a WebSocket answer is matched to its request by them). */
export interface Exchange {
  body: string;
  ids: readonly number[];
}

export interface Reply {
  /** The HTTP status; 200 for a WebSocket message. */
  status: number;
  statusText: string;
  /** The parsed answer, or the start of a body that is not JSON. */
  body: { json: unknown } | { notJson: string };
  /** The Retry-After header, in seconds. */
  retryAfterSeconds: number | undefined;
}

/** The request did not get an answer: the connection failed, closed, or the answer was unreadable. */
export class TransportFault extends Error {
  override name = 'TransportFault';
}

export interface Transport {
  /**
   * Sends `exchange` and resolves with the answer, or rejects with a TransportFault, or with
   * `signal.reason` once the signal aborts. `onSent` runs when the request leaves (a round trip).
   */
  send(exchange: Exchange, signal: AbortSignal, onSent: () => void): Promise<Reply>;
  close(): Promise<void>;
}

export function transportFor(url: string, limits: { timeoutMs: number }): Transport {
  const protocol = new URL(url).protocol;
  if (protocol === 'http:' || protocol === 'https:') return new HttpTransport(url);
  if (protocol === 'ws:' || protocol === 'wss:') return new WsTransport(url, limits.timeoutMs);
  throw new TypeError(`upstream URL ${url}: the scheme must be http, https, ws or wss`);
}

/** The start of a body that is not JSON, on one line, for an error message. */
function snippet(text: string): string {
  const line = text.replace(/\s+/g, ' ').trim();
  return line.length <= 80 ? JSON.stringify(line) : `${JSON.stringify(line.slice(0, 80))}…`;
}

function parseBody(text: string): Reply['body'] {
  try {
    return { json: JSON.parse(text) as unknown };
  } catch {
    return { notJson: snippet(text) };
  }
}

/**
 * A network error as a short cause: `connect ECONNREFUSED`, `other side closed`. fetch wraps the
 * cause in `TypeError: fetch failed`; the address at the end is the URL's, which is named anyway.
 */
export function describeNetworkError(e: unknown): string {
  let error = e;
  if (error instanceof TypeError && error.cause !== undefined) error = error.cause;
  if (error instanceof AggregateError && error.errors.length > 0) error = error.errors[0];
  const message =
    error instanceof Error ? error.message || (error as { code?: string }).code || error.name : String(error);
  return message.replace(/ (\[[0-9a-f:.]+\]|[0-9a-f:.]+):\d+$/i, '');
}

class HttpTransport implements Transport {
  private readonly target: string;
  private readonly headers: Record<string, string> = { 'content-type': 'application/json' };

  constructor(url: string) {
    // fetch refuses a URL with credentials in it: they travel as a Basic authorization instead.
    const parsed = new URL(url);
    if (parsed.username !== '' || parsed.password !== '') {
      const user = decodeURIComponent(parsed.username);
      const password = decodeURIComponent(parsed.password);
      this.headers.authorization = `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;
      parsed.username = '';
      parsed.password = '';
    }
    this.target = parsed.href;
  }

  async send(exchange: Exchange, signal: AbortSignal, onSent: () => void): Promise<Reply> {
    onSent();
    let text: string;
    let response: Response;
    try {
      response = await fetch(this.target, {
        method: 'POST',
        headers: this.headers,
        body: exchange.body,
        signal,
      });
      text = await response.text();
    } catch (e) {
      if (signal.aborted) throw signal.reason;
      throw new TransportFault(describeNetworkError(e));
    }
    const retryAfter = response.headers.get('retry-after');
    return {
      status: response.status,
      statusText: response.statusText,
      body: parseBody(text),
      retryAfterSeconds: retryAfter === null ? undefined : parseRetryAfter(retryAfter),
    };
  }

  async close(): Promise<void> {
    // Idle pooled connections do not keep the process alive (undici unrefs them).
  }
}

/** A Retry-After header in seconds: delta-seconds or an HTTP date. */
export function parseRetryAfter(header: string, now = Date.now()): number | undefined {
  const trimmed = header.trim();
  if (/^\d+(\.\d+)?$/.test(trimmed)) return Number(trimmed);
  const date = Date.parse(trimmed);
  return Number.isNaN(date) ? undefined : Math.max(0, (date - now) / 1000);
}

/** Largest WebSocket message accepted: a block with its receipts, traced, stays far below. */
const WS_MAX_PAYLOAD = 256 * 1024 * 1024;

interface WsWaiter {
  socket: WebSocket;
  resolve: (value: unknown) => void;
  reject: (reason: unknown) => void;
}

/**
 * One WebSocket per URL, opened on first use and again on the first use after it closes. Requests
 * are matched to answers by id (a batch by the ids of its answers); answers nobody waits for any
 * more (their attempt timed out) and subscription notifications are dropped.
 */
class WsTransport implements Transport {
  private socket: WebSocket | undefined;
  private opened: Promise<WebSocket> | undefined;
  private readonly waiters = new Map<number, WsWaiter>();
  private closed = false;

  constructor(
    private readonly url: string,
    private readonly handshakeTimeoutMs: number,
  ) {}

  async send(exchange: Exchange, signal: AbortSignal, onSent: () => void): Promise<Reply> {
    const socket = await untilAborted(this.connect(), signal);
    const json = await new Promise<unknown>((resolve, reject) => {
      const done = (): void => {
        for (const id of exchange.ids) if (this.waiters.get(id) === waiter) this.waiters.delete(id);
        signal.removeEventListener('abort', onAbort);
      };
      const waiter: WsWaiter = {
        socket,
        resolve: (value) => {
          done();
          resolve(value);
        },
        reject: (reason) => {
          done();
          reject(reason);
        },
      };
      const onAbort = (): void => waiter.reject(signal.reason);
      if (signal.aborted) return reject(signal.reason);
      if (socket.readyState !== WebSocket.OPEN) return reject(new TransportFault('connection closed'));
      signal.addEventListener('abort', onAbort, { once: true });
      for (const id of exchange.ids) this.waiters.set(id, waiter);
      onSent();
      socket.send(exchange.body, (err) => {
        if (err) waiter.reject(new TransportFault(`send failed: ${describeNetworkError(err)}`));
      });
    });
    return { status: 200, statusText: '', body: { json }, retryAfterSeconds: undefined };
  }

  async close(): Promise<void> {
    this.closed = true;
    const socket = this.socket;
    if (socket === undefined || socket.readyState === WebSocket.CLOSED) return;
    const gone = new Promise<void>((resolve) => socket.once('close', () => resolve()));
    socket.terminate();
    await gone;
  }

  private connect(): Promise<WebSocket> {
    if (this.closed) return Promise.reject(new TransportFault('client closed'));
    if (this.opened !== undefined) return this.opened;
    const socket = new WebSocket(this.url, {
      perMessageDeflate: false,
      handshakeTimeout: this.handshakeTimeoutMs,
      maxPayload: WS_MAX_PAYLOAD,
    });
    this.socket = socket;
    let failure: string | undefined;
    const opened = new Promise<WebSocket>((resolve, reject) => {
      socket.once('open', () => resolve(socket));
      socket.on('error', (e) => {
        failure ??= describeNetworkError(e);
      });
      socket.once('close', (code, reason) => {
        const why =
          failure ?? `connection closed (code ${code}${reason.length > 0 ? `: ${reason.toString()}` : ''})`;
        reject(new TransportFault(why));
        if (this.socket === socket) {
          this.socket = undefined;
          this.opened = undefined;
        }
        for (const waiter of new Set(this.waiters.values())) {
          if (waiter.socket === socket) waiter.reject(new TransportFault(why));
        }
      });
    });
    socket.on('message', (data, isBinary) => {
      const text = isBinary ? undefined : rawText(data);
      let value: unknown;
      try {
        value = text === undefined ? undefined : JSON.parse(text);
      } catch {
        value = undefined;
      }
      if (value === undefined) {
        failure = `malformed answer: a message that is not JSON (${snippet(text ?? '<binary>')})`;
        socket.terminate();
        return;
      }
      this.route(value);
    });
    // Attempts waiting for the connection see its failure; with none waiting it is not an error.
    metElsewhere(opened);
    this.opened = opened;
    return opened;
  }

  private route(value: unknown): void {
    const items = Array.isArray(value) ? value : [value];
    for (const item of items) {
      const id = typeof item === 'object' && item !== null ? (item as { id?: unknown }).id : undefined;
      const waiter = typeof id === 'number' ? this.waiters.get(id) : undefined;
      if (waiter !== undefined) {
        waiter.resolve(value);
        return;
      }
    }
  }
}

function rawText(data: WebSocket.RawData): string {
  if (Array.isArray(data)) return Buffer.concat(data).toString();
  return Buffer.isBuffer(data) ? data.toString() : Buffer.from(data).toString();
}

/** `promise`, or `signal.reason` once the signal aborts first. */
function untilAborted<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = (): void => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (e: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(e);
      },
    );
  });
}
