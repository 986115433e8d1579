import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import { type WebSocket, WebSocketServer } from 'ws';
import type { WebSocketLimits } from '../config/limits.ts';
import type { Subscriber } from '../core/subscriber.ts';
import type { EnvelopeAnswer } from '../rpc/envelope.ts';
import { KEY_RELOAD_MS, type KeyRing } from './apiKeys.ts';

export interface TransportLimits {
  /** Largest request body (HTTP) or message (WebSocket) accepted; geth's default is 5 MiB. */
  maxBodyBytes: number;
  webSocket: WebSocketLimits;
}

/**
 * RFC 6455 1008 (policy violation): the generic code for a server policy (a buffer cap, a revoked key)
 * when no specific code fits; 1009 is for messages received too big, 1011 for server faults.
 */
export const CLOSE_POLICY_VIOLATION = 1008;
export const CLOSE_REASON_SLOW = 'output buffer full: the client does not read its messages';
export const CLOSE_REASON_REVOKED = 'API key revoked';
// After the close frame of a slow client, how long it has to answer before its socket is destroyed
// (ws itself waits 30 s). A client that never reads never answers, and its unsent output is held until
// then; geth gives a stalled write 10 s.
const SLOW_CLIENT_CLOSE_MS = 10_000;

export interface TransportOptions {
  host: string;
  port: number;
  /** null = `--no-auth`: any key, and also `/`, is served. */
  keys: KeyRing | null;
  limits: TransportLimits;
  /** `connection` is the WebSocket a message came on; null for HTTP. */
  handle(body: string, connection: Subscriber | null, request: RequestInfo): Promise<EnvelopeAnswer>;
  /** The access policy's word on open WebSockets (src/transport/access/control.ts); none without keys. */
  sockets?: SocketPolicy;
  /**
   * Routes other than JSON-RPC, asked first (the operator dashboard, src/transport/dashboard/http.ts):
   * true when it has taken the request.
   */
  routes?: (req: IncomingMessage, res: ServerResponse) => boolean;
}

/** What the access policy decides about open WebSockets; a returned reason closes the socket (1008). */
export interface SocketPolicy {
  /** Why the sockets of `key` must close now (its day spent), or null; asked once a second. */
  closeReason(key: string): string | null;
  /** Hears every notification before it is sent on a socket opened with `request`. */
  notifying(request: RequestInfo, subscription: string, resultJson: string): string | null;
}

/** Who sent a body, for the access policy, metrics and logs (src/app.ts). */
export interface RequestInfo {
  transport: 'http' | 'ws';
  /** The API key of the URL; null when the server runs without keys. */
  key: string | null;
  /** The client's address (IPv4-mapped IPv6 written as IPv4). */
  address: string;
  /** The HTTP request, or the WebSocket's upgrade request: its headers (Origin, User-Agent, Authorization). */
  headers: IncomingMessage['headers'];
}

export interface Listening {
  httpUrl: string;
  wsUrl: string;
  address: AddressInfo;
}

// Infura's answers for key problems: plain text with HTTP 401, on HTTP and at the WebSocket upgrade.
const KEY_MISSING = 'project id required in the url\n';
const KEY_INVALID = 'invalid project id\n';
const SECRET_INVALID = 'invalid project id or project secret\n';
const JSON_TYPES = new Set(['application/json', 'application/json-rpc', 'application/jsonrequest']);
const STATUS_TEXT: Record<number, string> = {
  401: 'Unauthorized',
  404: 'Not Found',
  429: 'Too Many Requests',
};

/** `key`: the API key the URL names, null when the server runs without keys. */
type Route =
  | { ok: true; key: string | null }
  | { ok: false; status: number; text: string; headers?: Record<string, string> };

/**
 * HTTP `POST /v3/<key>` and WebSocket `/ws/v3/<key>`, Infura's URL shapes, in front of one JSON-RPC
 * handler. JSON-RPC errors travel with HTTP 200; only transport problems change the status.
 */
export class RpcServer {
  private readonly http: Server;
  private readonly wss: WebSocketServer;
  /** Open WebSockets by client address, for the per-address cap. */
  private readonly byAddress = new Map<string, Set<WebSocket>>();
  /** Open WebSockets by the key that opened them, so revoking a key closes them. */
  private readonly byKey = new Map<string, Set<WebSocket>>();
  private keyCheck: NodeJS.Timeout | null = null;

  constructor(private readonly opts: TransportOptions) {
    this.http = createServer((req, res) => {
      this.onRequest(req, res).catch((e) => {
        if (!res.headersSent) res.writeHead(500, { 'content-type': 'text/plain' });
        res.end(`internal error: ${(e as Error).message}\n`);
      });
    });
    this.http.keepAliveTimeout = 65_000;
    this.wss = new WebSocketServer({ noServer: true, maxPayload: opts.limits.maxBodyBytes });
    this.http.on('upgrade', (req, socket, head) => this.onUpgrade(req, socket, head));
    const keys = opts.keys;
    if (keys !== null) {
      // Requests check their key as they come, but a subscriber may send nothing while notifications
      // keep flowing: sockets of revoked keys are looked for as often as the keys file is.
      this.keyCheck = setInterval(() => this.closeRevoked(keys), KEY_RELOAD_MS);
      this.keyCheck.unref();
    }
  }

  async listen(): Promise<Listening> {
    await new Promise<void>((resolve, reject) => {
      this.http.once('error', reject);
      this.http.listen(this.opts.port, this.opts.host, () => {
        this.http.off('error', reject);
        resolve();
      });
    });
    const address = this.http.address() as AddressInfo;
    const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
    return { address, httpUrl: `http://${host}:${address.port}`, wsUrl: `ws://${host}:${address.port}` };
  }

  async close(): Promise<void> {
    if (this.keyCheck !== null) clearInterval(this.keyCheck);
    for (const client of this.wss.clients) client.terminate();
    await new Promise<void>((resolve) => this.wss.close(() => resolve()));
    this.http.closeAllConnections();
    await new Promise<void>((resolve) => this.http.close(() => resolve()));
  }

  private route(req: IncomingMessage, prefix: '/v3/' | '/ws/v3/'): Route {
    const path = (req.url ?? '/').split('?')[0] ?? '/';
    if (this.opts.keys === null && (path === '/' || (prefix === '/ws/v3/' && path === '/ws')))
      return { ok: true, key: null };
    if (!path.startsWith(prefix)) return { ok: false, status: 404, text: 'not found\n' };
    // `/v3/<key>/` is served as `/v3/<key>`, as Infura does (some clients append the slash).
    const rest = path.slice(prefix.length);
    const key = rest.endsWith('/') ? rest.slice(0, -1) : rest;
    if (key === '' || key.includes('/')) return { ok: false, status: 401, text: KEY_MISSING };
    const check = this.opts.keys?.check(key, req.headers.authorization);
    if (check && !check.ok) {
      // Infura's wording: a missing or wrong secret says so, and a client knows to send one.
      const secret = check.problem === 'secret';
      return {
        ok: false,
        status: 401,
        text: secret ? SECRET_INVALID : KEY_INVALID,
        headers: {
          'www-authenticate': `Basic realm="Auth failure, invalid project id${secret ? ' or project secret' : ''}"`,
        },
      };
    }
    return { ok: true, key: this.opts.keys === null ? null : key };
  }

  private async onRequest(req: IncomingMessage, res: ServerResponse): Promise<void> {
    // Before the JSON-RPC routes and their open CORS: the dashboard is for its operator's browser only.
    if (this.opts.routes?.(req, res)) return;
    // Browsers call Infura directly from dapps, so cross-origin requests are allowed as Infura does.
    res.setHeader('access-control-allow-origin', '*');
    if (req.method === 'OPTIONS') {
      res.writeHead(204, {
        'access-control-allow-methods': 'POST, OPTIONS',
        'access-control-allow-headers': 'content-type, authorization',
        'access-control-max-age': '86400',
      });
      res.end();
      return;
    }
    const route = this.route(req, '/v3/');
    if (!route.ok) return plain(res, route.status, route.text, route.headers);
    if (req.method !== 'POST') return plain(res, 405, 'method not allowed\n', { allow: 'POST, OPTIONS' });
    const type = (req.headers['content-type'] ?? '').split(';')[0]?.trim().toLowerCase() ?? '';
    if (!JSON_TYPES.has(type))
      return plain(res, 415, 'invalid content type, only application/json is supported\n');
    const declared = Number(req.headers['content-length'] ?? 0);
    const limit = this.opts.limits.maxBodyBytes;
    if (declared > limit) return refuseBody(req, res, `content length too large (${declared}>${limit})\n`);
    const body = await readBody(req, limit);
    if (body === null) return refuseBody(req, res, `content length too large (>${limit})\n`);
    const answer = await this.opts.handle(body, null, {
      transport: 'http',
      key: route.key,
      address: clientAddress(req),
      headers: req.headers,
    });
    if (answer.chunks === null) {
      res.writeHead(answer.httpStatus, { ...answer.headers, 'content-length': '0' });
      res.end();
      return;
    }
    const buffers = answer.chunks.map((c) => (typeof c === 'string' ? Buffer.from(c) : c));
    const length = buffers.reduce((n, b) => n + b.byteLength, 0);
    res.writeHead(answer.httpStatus, {
      ...answer.headers,
      'content-type': 'application/json',
      'content-length': String(length),
    });
    // One writev for headers and all chunks instead of a syscall per chunk.
    res.socket?.cork();
    for (const b of buffers) res.write(b);
    res.end();
    process.nextTick(() => res.socket?.uncork());
  }

  private onUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void {
    const route = this.route(req, '/ws/v3/');
    if (!route.ok) {
      refuse(socket, route.status, route.text, route.headers);
      return;
    }
    const address = clientAddress(req);
    const open = this.byAddress.get(address);
    const max = this.opts.limits.webSocket.maxConnectionsPerIp;
    // Sockets already closing do not count: their client has said goodbye.
    if (open && countOpen(open) >= max) {
      refuse(socket, 429, `too many WebSocket connections from ${address} (at most ${max})\n`);
      return;
    }
    this.wss.handleUpgrade(req, socket, head, (ws) =>
      this.serveSocket(ws, { transport: 'ws', key: route.key, address, headers: req.headers }),
    );
  }

  private serveSocket(ws: WebSocket, request: RequestInfo): void {
    const { address, key } = request;
    track(this.byAddress, address, ws);
    if (key !== null) track(this.byKey, key, ws);
    const { maxBufferedBytes } = this.opts.limits.webSocket;
    const send = (data: string | Buffer): void => {
      if (ws.readyState !== ws.OPEN) return;
      if (ws.bufferedAmount > maxBufferedBytes) {
        // The close frame queues behind the unsent output, so a client that is slow but reading
        // learns why; one that never reads is destroyed. Nothing more is queued meanwhile.
        ws.close(CLOSE_POLICY_VIOLATION, CLOSE_REASON_SLOW);
        setTimeout(() => ws.terminate(), SLOW_CLIENT_CLOSE_MS).unref();
        return;
      }
      // A text frame: strict clients (alloy, web3.js, the WHATWG WebSocket) refuse binary answers.
      ws.send(data, { binary: false });
    };
    // Answers are sent in the order requests finish, as JSON-RPC over WebSocket allows; each
    // message is independent, and a malformed one gets its error without closing the socket.
    const connection: Subscriber = {
      notify: (subscription, resultJson) => {
        const closing = this.opts.sockets?.notifying(request, subscription, resultJson) ?? null;
        if (closing !== null) {
          ws.close(CLOSE_POLICY_VIOLATION, closing);
          return;
        }
        // Subscription ids are hex (services/subscriptions.ts), so they splice in without escaping.
        send(
          `{"jsonrpc":"2.0","method":"eth_subscription","params":{"subscription":"${subscription}","result":${resultJson}}}`,
        );
      },
      onClose: (fn) => ws.once('close', fn),
    };
    ws.on('message', (message, isBinary) => {
      if (key !== null && !this.opts.keys?.accepts(key)) {
        ws.close(CLOSE_POLICY_VIOLATION, CLOSE_REASON_REVOKED);
        return;
      }
      const text = isBinary ? Buffer.from(message as Buffer).toString('utf8') : message.toString();
      this.opts
        .handle(text, connection, request)
        .then(({ chunks }) => {
          if (chunks) send(Buffer.concat(chunks.map((c) => (typeof c === 'string' ? Buffer.from(c) : c))));
        })
        .catch(() => ws.close(1011, 'internal error'));
    });
    ws.on('error', () => {
      // On a protocol error (1009 for a message over the limit) ws has already sent its close frame:
      // cutting the socket now would lose it, and the client would see only 1006.
      if (ws.readyState === ws.CLOSING) setTimeout(() => ws.terminate(), SLOW_CLIENT_CLOSE_MS).unref();
      else ws.terminate();
    });
  }

  /**
   * Closes the sockets opened with keys that are no longer accepted (revoked with `ethtrace keys`)
   * or that the access policy closes (a spent day).
   */
  private closeRevoked(keys: KeyRing): void {
    if (this.byKey.size === 0) return;
    keys.refresh();
    for (const [key, sockets] of this.byKey) {
      const reason = keys.accepts(key) ? (this.opts.sockets?.closeReason(key) ?? null) : CLOSE_REASON_REVOKED;
      if (reason === null) continue;
      for (const ws of sockets) ws.close(CLOSE_POLICY_VIOLATION, reason);
    }
  }
}

/** Adds `ws` to the set kept under `name`, removed (with the set once empty) when the socket closes. */
function track(index: Map<string, Set<WebSocket>>, name: string, ws: WebSocket): void {
  let set = index.get(name);
  if (!set) {
    set = new Set();
    index.set(name, set);
  }
  const mine = set;
  mine.add(ws);
  ws.once('close', () => {
    mine.delete(ws);
    if (mine.size === 0 && index.get(name) === mine) index.delete(name);
  });
}

function countOpen(sockets: Set<WebSocket>): number {
  let n = 0;
  for (const ws of sockets) if (ws.readyState === ws.OPEN) n++;
  return n;
}

/** The peer's address, with IPv4-mapped IPv6 (`::ffff:1.2.3.4`) written as IPv4. */
function clientAddress(req: IncomingMessage): string {
  const address = req.socket.remoteAddress ?? 'unknown';
  return address.startsWith('::ffff:') && address.includes('.') ? address.slice(7) : address;
}

/** Answers an upgrade request with a plain-text HTTP error and closes the socket. */
function refuse(socket: Duplex, status: number, text: string, headers: Record<string, string> = {}): void {
  const extra = Object.entries(headers)
    .map(([k, v]) => `${k}: ${v}\r\n`)
    .join('');
  socket.end(
    `HTTP/1.1 ${status} ${STATUS_TEXT[status] ?? 'Error'}\r\n` +
      `content-type: text/plain; charset=utf-8\r\ncontent-length: ${Buffer.byteLength(text)}\r\n${extra}connection: close\r\n\r\n${text}`,
  );
}

function plain(
  res: ServerResponse,
  status: number,
  text: string,
  headers: Record<string, string> = {},
): void {
  res.writeHead(status, { 'content-type': 'text/plain; charset=utf-8', ...headers });
  res.end(text);
}

/**
 * After a 413, the rest of a body is read and dropped for at most this many bytes and this long. A
 * client that writes its whole body before it reads (Node's fetch does) must still see the 413:
 * closing with its data unread sends a reset that destroys the answer on the way. Past either bound
 * the connection is cut, so an endless body holds nothing (nginx's lingering close, 30 s there).
 */
const LINGER_BYTES = 32 * 1024 * 1024;
const LINGER_MS = 5_000;

/** Answers 413 at once, then drains the refused body within the linger bounds. */
function refuseBody(req: IncomingMessage, res: ServerResponse, text: string): void {
  // Kept alive rather than `connection: close`: Node destroys a closing socket as soon as the answer
  // is written, unread data and all. A body that ends within the bounds leaves the connection usable.
  plain(res, 413, text);
  let drained = 0;
  const cut = () => req.socket.destroy();
  const timer = setTimeout(cut, LINGER_MS);
  timer.unref();
  req.on('data', (chunk: Buffer) => {
    drained += chunk.length;
    if (drained > LINGER_BYTES) cut();
  });
  req.once('end', () => clearTimeout(timer));
  req.once('close', () => clearTimeout(timer));
  req.resume();
}

/**
 * The body as text, or null as soon as it exceeds `limit` bytes: reading stops there, since a chunked
 * body (no content-length) may never end, and the caller answers 413 and closes the connection.
 */
function readBody(req: IncomingMessage, limit: number): Promise<string | null> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size <= limit) {
        chunks.push(chunk);
        return;
      }
      req.off('data', onData);
      chunks.length = 0;
      resolve(null);
    };
    req.on('data', onData);
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}
