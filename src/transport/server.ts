import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { type AddressInfo, Server as NetServer, type Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { type WebSocket, WebSocketServer } from 'ws';
import type { LimitName, WebSocketLimits } from '../config/limits.ts';
import type { Subscriber } from '../core/subscriber.ts';
import { requestIdOf } from '../observe/log.ts';
import type { EnvelopeAnswer } from '../rpc/envelope.ts';
import { KEY_RELOAD_MS, type KeyRing } from './apiKeys.ts';

export interface TransportLimits {
  /** Largest request body (HTTP) or message (WebSocket) accepted; geth's default is 5 MiB. */
  maxBodyBytes: number;
  /** Time to send a request's headers, and then its body (src/config/limits.ts RequestLimits). */
  headerTimeoutMs: number;
  bodyTimeoutMs: number;
  /** Open HTTP connections from one address (src/config/limits.ts RequestLimits). */
  maxHttpConnectionsPerIp: number;
  webSocket: WebSocketLimits;
}

/**
 * RFC 6455 1008 (policy violation): the generic code for a server policy (a buffer cap, a revoked key)
 * when no specific code fits; 1009 is for messages received too big, 1011 for server faults.
 */
export const CLOSE_POLICY_VIOLATION = 1008;
export const CLOSE_REASON_SLOW = 'output buffer full: the client does not read its messages';
export const CLOSE_REASON_REVOKED = 'API key revoked';
/** RFC 6455 1001 (going away): the server is stopping; a client reconnects elsewhere or later. */
export const CLOSE_GOING_AWAY = 1001;
export const CLOSE_REASON_STOPPING = 'server stopping';
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
  /**
   * `connection` is the WebSocket a message came on; null for HTTP. `requestId` names this body in
   * logs (an HTTP request's is also its `x-request-id` answer header).
   */
  handle(
    body: string,
    connection: Subscriber | null,
    request: RequestInfo,
    requestId: string,
  ): Promise<EnvelopeAnswer>;
  /** The access policy's word on open WebSockets (src/transport/access/control.ts); none without keys. */
  sockets?: SocketPolicy;
  /**
   * Plain GET pages served before any key is looked at (`/health`, `/ready`, `/metrics`), by path.
   * They are for supervisors and scrapers, which hold no API key.
   */
  pages?: Record<string, () => Promise<Page>>;
  /** Hears connections and limit refusals (the metrics, src/observe/metrics.ts). */
  observer?: TransportObserver;
  /**
   * Routes other than JSON-RPC, asked first (the operator dashboard, src/transport/dashboard/http.ts):
   * true when it has taken the request.
   */
  routes?: (req: IncomingMessage, res: ServerResponse) => boolean;
}

export interface Page {
  status: number;
  contentType: string;
  body: string;
}

export interface TransportObserver {
  limitRefused(limit: LimitName): void;
  connectionOpened(transport: 'http' | 'ws'): void;
  connectionClosed(transport: 'http' | 'ws'): void;
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
  /** The connection: the HTTP request's socket, or the WebSocket. Identity only (bounds per connection). */
  connection: object;
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
  408: 'Request Timeout',
  429: 'Too Many Requests',
  503: 'Service Unavailable',
};
/**
 * How often Node looks for requests past their header or body time. Its default (30 s) is why a
 * trickling client held a socket for 80 s; each look walks the open connections, cheap at 1 s.
 */
const TIMEOUT_CHECK_MS = 1_000;

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
  /** Open HTTP connections by client address, for the per-address cap. */
  private readonly httpByAddress = new Map<string, number>();
  /** Connections refused at the door: anything their client sends is not served. */
  private readonly refusedSockets = new WeakSet<Duplex>();
  /** Open WebSockets by the key that opened them, so revoking a key closes them. */
  private readonly byKey = new Map<string, Set<WebSocket>>();
  private keyCheck: NodeJS.Timeout | null = null;
  private stopKeyWatch: (() => void) | null = null;
  /** Bodies being answered (HTTP requests and WebSocket messages), which a graceful stop waits for. */
  private inFlight = 0;
  /** Told when a body is answered or a new connection sends its request or goes: a stop looks again. */
  private idle: (() => void) | null = null;
  private draining = false;
  /** Resolved once a stop has closed the listener (`stopAccepting`, `close`). */
  private listenerClosed: Promise<void> | null = null;
  private allClosed: Promise<void> = Promise.resolve();
  /** False once a stop has closed the listener. */
  private accepting = true;
  /** Connections taken so far: a stop takes those already queued before it closes the listener. */
  private accepted = 0;
  /**
   * Connections that have not yet sent a request: a stop waits for it (their client has usually
   * sent it already, and it is still in the socket's buffer), for at most FIRST_REQUEST_GRACE_MS.
   */
  private readonly fresh = new Set<Socket>();
  /** HTTP answers not yet written: a stop makes them say `connection: close`. */
  private readonly answering = new Set<ServerResponse>();
  /** Sockets whose request headers are in: a timeout there is the body's, else the headers'. */
  private readonly receivingBody = new WeakSet<Socket>();

  constructor(private readonly opts: TransportOptions) {
    const { headerTimeoutMs, bodyTimeoutMs } = opts.limits;
    this.http = createServer(
      {
        headersTimeout: headerTimeoutMs,
        // Node's bound on the whole request, headers and body; it must exceed the headers' one.
        requestTimeout: headerTimeoutMs + bodyTimeoutMs,
        connectionsCheckingInterval: Math.min(TIMEOUT_CHECK_MS, headerTimeoutMs),
      },
      (req, res) => {
        // Refused at the door (a 429 already written): nothing its client sends is served.
        if (this.refusedSockets.has(req.socket)) return;
        this.receivingBody.add(req.socket);
        // Under way until the answer has been handed to the socket (or the connection is gone): a
        // stop that cut it earlier would lose the end of an answer already written.
        this.inFlight++;
        this.sentRequest(req.socket);
        this.answering.add(res);
        res.once('close', () => {
          this.answering.delete(res);
          this.settled();
        });
        this.onRequest(req, res).catch((e) => {
          if (!res.headersSent) res.writeHead(500, { 'content-type': 'text/plain' });
          res.end(`internal error: ${(e as Error).message}\n`);
        });
      },
    );
    this.http.keepAliveTimeout = 65_000;
    this.http.on('connection', (socket: Socket) => {
      this.accepted++;
      if (!this.admitConnection(socket)) return;
      this.fresh.add(socket);
      socket.once('close', () => this.sentRequest(socket));
      const observer = this.opts.observer;
      if (!observer) return;
      observer.connectionOpened('http');
      // An upgraded socket is counted as a WebSocket from then on (serveSocket).
      socket.once('close', () => {
        if (!upgraded.has(socket)) observer.connectionClosed('http');
      });
    });
    this.http.on('clientError', (error: NodeJS.ErrnoException, socket: Duplex) =>
      this.onClientError(error, socket),
    );
    this.wss = new WebSocketServer({ noServer: true, maxPayload: opts.limits.webSocket.maxMessageBytes });
    this.http.on('upgrade', (req, socket, head) => this.onUpgrade(req, socket, head));
    const keys = opts.keys;
    if (keys !== null) {
      // Requests check their key as they come, but a subscriber may send nothing while notifications
      // keep flowing: sockets of revoked keys are looked for as often as the keys file is.
      this.keyCheck = setInterval(() => this.closeRevoked(keys), KEY_RELOAD_MS);
      this.keyCheck.unref();
      // Keys from the shared database arrive as they change: their sockets are closed then, not at the next check.
      this.stopKeyWatch = keys.onChange(() => this.closeRevoked(keys));
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

  /** Whether a stop has begun: `/ready` then answers 503, so that a load balancer sends no more. */
  get stopping(): boolean {
    return this.draining;
  }

  /**
   * The first part of a stop, at once: answers not yet written, and every answer from now on, say
   * `connection: close`; WebSocket upgrades are refused; the connections already queued on the
   * listener are taken (for at most `deadlineMs`), and then it is closed, so that only connections
   * made after that are refused (a connection the kernel had accepted and the listener dropped
   * would be reset, its request sent and lost). `close` goes on from there.
   */
  stopAccepting(options: { deadlineMs: number }): void {
    if (this.listenerClosed !== null) return;
    this.draining = true;
    if (this.keyCheck !== null) clearInterval(this.keyCheck);
    this.stopKeyWatch?.();
    for (const res of this.answering) if (!res.headersSent) res.shouldKeepAlive = false;
    // Emitted once the listener is closed and the last connection has ended.
    this.allClosed = new Promise((resolve) => this.http.once('close', () => resolve()));
    const closeListener = () => {
      // Only the listener: http.Server's close also drops every connection without a request under
      // way, and with them the requests that have arrived but are not read yet.
      NetServer.prototype.close.call(this.http);
      this.accepting = false;
      this.idle?.();
    };
    this.listenerClosed =
      options.deadlineMs > 0
        ? this.takeQueued(performance.now() + options.deadlineMs).then(closeListener)
        : Promise.resolve(closeListener());
  }

  /**
   * Stops: no new connections or WebSocket upgrades (`stopAccepting`); the bodies being answered,
   * and the requests of connections taken but not yet read, get until `deadlineMs` to finish
   * (answers then go out with `connection: close`); then each WebSocket gets a close frame (1001,
   * going away) and what is left is cut. 0 cuts at once.
   */
  async close(options: { deadlineMs?: number } = {}): Promise<void> {
    const deadline = options.deadlineMs ?? 0;
    const started = performance.now();
    this.stopAccepting({ deadlineMs: deadline });
    if (deadline > 0) await this.settle(started + deadline);
    const sockets = [...this.wss.clients];
    for (const ws of sockets) ws.close(CLOSE_GOING_AWAY, CLOSE_REASON_STOPPING);
    // A client answers a close frame at once; one that does not is not waited for past the deadline.
    const left = Math.max(0, deadline - (performance.now() - started));
    if (sockets.length > 0 && left > 0) {
      await Promise.race([
        Promise.all(sockets.map((ws) => new Promise((resolve) => ws.once('close', resolve)))),
        new Promise((resolve) => setTimeout(resolve, Math.min(left, CLOSE_FRAME_WAIT_MS)).unref()),
      ]);
    }
    for (const ws of this.wss.clients) ws.terminate();
    await new Promise<void>((resolve) => this.wss.close(() => resolve()));
    await this.listenerClosed;
    this.http.closeAllConnections();
    // The listener is closed already: this stops http.Server's timer over its connections.
    this.http.close();
    await this.allClosed;
  }

  /**
   * Takes the connections queued on the listener before it is closed, until `until` (a
   * performance.now() time) at the latest. The event loop takes one queued connection per turn, so
   * two turns in a row without a new one mean the queue is empty.
   */
  private async takeQueued(until: number): Promise<void> {
    let seen = this.accepted;
    let quiet = 0;
    while (quiet < 2 && performance.now() < until) {
      await nextTurn();
      if (this.accepted === seen) quiet++;
      else {
        seen = this.accepted;
        quiet = 0;
      }
    }
  }

  /**
   * Waits, until `deadline` (a performance.now() time), for the listener to be closed, the bodies
   * under way to be answered, and the connections taken without a request yet to send one (for at
   * most FIRST_REQUEST_GRACE_MS). Before it ends, two turns of the event loop let requests that have
   * arrived be read: each then counts as under way.
   */
  private async settle(deadline: number): Promise<void> {
    const graceEnds = performance.now() + FIRST_REQUEST_GRACE_MS;
    const busy = () =>
      this.accepting || this.inFlight > 0 || (this.fresh.size > 0 && performance.now() < graceEnds);
    for (;;) {
      const left = deadline - performance.now();
      if (left <= 0) return;
      if (!busy()) {
        await nextTurn();
        await nextTurn();
        if (!busy()) return;
      }
      await new Promise<void>((resolve) => {
        const untilGrace = graceEnds - performance.now();
        const timer = setTimeout(resolve, untilGrace > 0 ? Math.min(left, untilGrace) : left);
        this.idle = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      this.idle = null;
    }
  }

  /** A connection has sent its first request, or has closed: a stop no longer waits for it. */
  private sentRequest(socket: Socket): void {
    if (this.fresh.delete(socket)) this.idle?.();
  }

  /** One body answered: a graceful stop waiting for the last one goes on. */
  private settled(): void {
    this.inFlight--;
    if (this.inFlight === 0) this.idle?.();
  }

  /**
   * A connection's error before a request reached the handler. Past the header or body time, Node
   * asks for a 408 here: it is sent, counted under its limit, and the connection cut.
   */
  private onClientError(error: NodeJS.ErrnoException, socket: Duplex): void {
    // As Node does without a listener: nothing is written into an answer already under way (a 413
    // whose body is being drained); the connection is only cut.
    const answering =
      (socket as { _httpMessage?: { headersSent?: boolean } })._httpMessage?.headersSent === true;
    if (error.code === 'ERR_HTTP_REQUEST_TIMEOUT') {
      const limit = this.receivingBody.has(socket as Socket) ? 'body_timeout' : 'header_timeout';
      this.opts.observer?.limitRefused(limit);
      if (socket.writable && !answering)
        socket.end('HTTP/1.1 408 Request Timeout\r\ncontent-length: 0\r\nconnection: close\r\n\r\n');
      socket.destroy();
      return;
    }
    // Node's own answer to a malformed request (400, 431), as when nobody listens for these.
    if (socket.writable && !answering && !(error.code === 'ECONNRESET' || error.code === 'EPIPE')) {
      const status =
        error.code === 'HPE_HEADER_OVERFLOW' ? '431 Request Header Fields Too Large' : '400 Bad Request';
      socket.end(`HTTP/1.1 ${status}\r\nconnection: close\r\n\r\n`);
    }
    socket.destroy();
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

  /** Counts a new connection against its address's cap; past it, a 429 and the connection closed. */
  private admitConnection(socket: Socket): boolean {
    const address = addressOf(socket);
    const open = this.httpByAddress.get(address) ?? 0;
    const max = this.opts.limits.maxHttpConnectionsPerIp;
    if (open >= max) {
      this.refusedSockets.add(socket);
      this.opts.observer?.limitRefused('http_connections_per_ip');
      refuse(socket, 429, `too many connections from ${address} (at most ${max})\n`);
      return false;
    }
    this.httpByAddress.set(address, open + 1);
    socket.once('close', () => {
      const left = (this.httpByAddress.get(address) ?? 1) - 1;
      if (left <= 0) this.httpByAddress.delete(address);
      else this.httpByAddress.set(address, left);
    });
    return true;
  }

  private async onRequest(req: IncomingMessage, res: ServerResponse): Promise<void> {
    // Before the JSON-RPC routes and their open CORS: the dashboard is for its operator's browser only.
    if (this.opts.routes?.(req, res)) return;
    // Browsers call Infura directly from dapps, so cross-origin requests are allowed as Infura does.
    res.setHeader('access-control-allow-origin', '*');
    // A stopping server answers what it was sent and then closes the connection.
    if (this.draining) res.shouldKeepAlive = false;
    const requestId = requestIdOf(req.headers['x-request-id']);
    res.setHeader('x-request-id', requestId);
    res.once('finish', () => this.receivingBody.delete(req.socket));
    const page = req.method === 'GET' ? this.opts.pages?.[(req.url ?? '/').split('?')[0] ?? '/'] : undefined;
    if (page) {
      const { status, contentType, body } = await page();
      res.writeHead(status, { 'content-type': contentType, 'cache-control': 'no-store' });
      res.end(body);
      return;
    }
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
    if (declared > limit) {
      this.opts.observer?.limitRefused('body_bytes');
      return refuseBody(req, res, `content length too large (${declared}>${limit})\n`);
    }
    const body = await readBody(req, limit);
    if (body === null) {
      this.opts.observer?.limitRefused('body_bytes');
      return refuseBody(req, res, `content length too large (>${limit})\n`);
    }
    this.receivingBody.delete(req.socket);
    const answer = await this.opts.handle(
      body,
      null,
      {
        transport: 'http',
        key: route.key,
        address: clientAddress(req),
        headers: req.headers,
        connection: req.socket,
      },
      requestId,
    );
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
    this.sentRequest(socket as Socket);
    if (this.draining) {
      refuse(socket, 503, 'server stopping\n');
      return;
    }
    const route = this.route(req, '/ws/v3/');
    if (!route.ok) {
      refuse(socket, route.status, route.text, route.headers);
      return;
    }
    const address = clientAddress(req);
    const { maxConnectionsPerIp, maxConnectionsPerKey } = this.opts.limits.webSocket;
    const open = this.byAddress.get(address);
    // Sockets already closing do not count: their client has said goodbye.
    if (open && countOpen(open) >= maxConnectionsPerIp) {
      this.opts.observer?.limitRefused('connections_per_ip');
      refuse(
        socket,
        429,
        `too many WebSocket connections from ${address} (at most ${maxConnectionsPerIp})\n`,
      );
      return;
    }
    const ofKey = route.key === null ? undefined : this.byKey.get(route.key);
    if (ofKey && countOpen(ofKey) >= maxConnectionsPerKey) {
      this.opts.observer?.limitRefused('connections_per_key');
      // The key is not repeated back: it may be read from a log of answers.
      refuse(socket, 429, `too many WebSocket connections with this key (at most ${maxConnectionsPerKey})\n`);
      return;
    }
    this.wss.handleUpgrade(req, socket, head, (ws) =>
      this.serveSocket(
        ws,
        { transport: 'ws', key: route.key, address, headers: req.headers, connection: ws },
        socket,
      ),
    );
  }

  private serveSocket(ws: WebSocket, request: RequestInfo, socket: Duplex): void {
    const { address, key } = request;
    track(this.byAddress, address, ws);
    if (key !== null) track(this.byKey, key, ws);
    const observer = this.opts.observer;
    if (observer) {
      upgraded.add(socket);
      observer.connectionClosed('http');
      observer.connectionOpened('ws');
      ws.once('close', () => observer.connectionClosed('ws'));
    }
    let messages = 0;
    const connectionId = requestIdOf(undefined);
    const { maxBufferedBytes } = this.opts.limits.webSocket;
    const send = (data: string | Buffer): void => {
      if (ws.readyState !== ws.OPEN) return;
      if (ws.bufferedAmount > maxBufferedBytes) {
        // The close frame queues behind the unsent output, so a client that is slow but reading
        // learns why; one that never reads is destroyed. Nothing more is queued meanwhile.
        this.opts.observer?.limitRefused('ws_buffered_bytes');
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
      this.inFlight++;
      this.opts
        .handle(text, connection, request, `${connectionId}/${++messages}`)
        .then(({ chunks }) => {
          if (chunks) send(Buffer.concat(chunks.map((c) => (typeof c === 'string' ? Buffer.from(c) : c))));
        })
        .catch(() => ws.close(1011, 'internal error'))
        .finally(() => this.settled());
    });
    ws.on('error', (error: Error & { code?: string }) => {
      if (error.code === 'WS_ERR_UNSUPPORTED_MESSAGE_LENGTH')
        this.opts.observer?.limitRefused('ws_message_bytes');
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

/** Sockets upgraded to WebSockets: counted as such, not as HTTP connections, once upgraded. */
const upgraded = new WeakSet<Duplex>();

/**
 * How long a stop waits for clients to answer their close frames (within its deadline): a client
 * answers at once, so this only bounds a stalled one.
 */
const CLOSE_FRAME_WAIT_MS = 2_000;
/**
 * How long a stop waits for a connection it took to send its first request. A client sends its
 * request as soon as it is connected, so it is usually in the socket's buffer already; a connection
 * that has sent nothing after this (a browser's spare connection, a stalled client) is closed.
 */
const FIRST_REQUEST_GRACE_MS = 5_000;

/** After the I/O of the event loop's next turn (setImmediate runs after its poll phase). */
function nextTurn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
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
  return addressOf(req.socket);
}

function addressOf(socket: Socket | Duplex): string {
  const address = (socket as Socket).remoteAddress ?? 'unknown';
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
    // Cut before its end (the client gone, or past the body time): no answer is owed.
    req.on('close', () => {
      if (!req.complete) reject(new Error('the request was cut before its body ended'));
    });
  });
}
