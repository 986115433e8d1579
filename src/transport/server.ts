import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import { type WebSocket, WebSocketServer } from 'ws';
import type { ResponseChunks } from '../rpc/envelope.ts';
import type { KeyRing } from './apiKeys.ts';

export interface TransportLimits {
  /** Largest request body (HTTP) or message (WebSocket) accepted; geth's default is 5 MiB. */
  maxBodyBytes: number;
}

export interface TransportOptions {
  host: string;
  port: number;
  /** null = `--no-auth`: any key, and also `/`, is served. */
  keys: KeyRing | null;
  limits: TransportLimits;
  /** `connection` is the WebSocket a message came on; null for HTTP. */
  handle(body: string, connection: Connection | null): Promise<ResponseChunks | null>;
}

/** One WebSocket connection, as subscriptions see it. */
export interface Connection {
  /** Sends an `eth_subscription` notification (dropped once the socket is closed). */
  notify(subscription: string, result: unknown): void;
  onClose(fn: () => void): void;
}

export interface Listening {
  httpUrl: string;
  wsUrl: string;
  address: AddressInfo;
}

// Infura's answers for key problems: plain text with HTTP 401, on HTTP and at the WebSocket upgrade.
const KEY_MISSING = 'project id required in the url\n';
const KEY_INVALID = 'invalid project id\n';
const JSON_TYPES = new Set(['application/json', 'application/json-rpc', 'application/jsonrequest']);

type Route = { ok: true } | { ok: false; status: number; text: string; headers?: Record<string, string> };

/**
 * HTTP `POST /v3/<key>` and WebSocket `/ws/v3/<key>`, Infura's URL shapes, in front of one JSON-RPC
 * handler. JSON-RPC errors travel with HTTP 200; only transport problems change the status.
 */
export class RpcServer {
  private readonly http: Server;
  private readonly wss: WebSocketServer;

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
    for (const client of this.wss.clients) client.terminate();
    await new Promise<void>((resolve) => this.wss.close(() => resolve()));
    this.http.closeAllConnections();
    await new Promise<void>((resolve) => this.http.close(() => resolve()));
  }

  private route(url: string | undefined, prefix: '/v3/' | '/ws/v3/'): Route {
    const path = (url ?? '/').split('?')[0] ?? '/';
    if (this.opts.keys === null && (path === '/' || (prefix === '/ws/v3/' && path === '/ws')))
      return { ok: true };
    if (!path.startsWith(prefix)) return { ok: false, status: 404, text: 'not found\n' };
    const key = path.slice(prefix.length);
    if (key === '' || key.includes('/')) return { ok: false, status: 401, text: KEY_MISSING };
    if (this.opts.keys !== null && !this.opts.keys.accepts(key)) {
      return {
        ok: false,
        status: 401,
        text: KEY_INVALID,
        headers: { 'www-authenticate': 'Basic realm="Auth failure, invalid project id"' },
      };
    }
    return { ok: true };
  }

  private async onRequest(req: IncomingMessage, res: ServerResponse): Promise<void> {
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
    const route = this.route(req.url, '/v3/');
    if (!route.ok) return plain(res, route.status, route.text, route.headers);
    if (req.method !== 'POST') return plain(res, 405, 'method not allowed\n', { allow: 'POST, OPTIONS' });
    const type = (req.headers['content-type'] ?? '').split(';')[0]?.trim().toLowerCase() ?? '';
    if (!JSON_TYPES.has(type))
      return plain(res, 415, 'invalid content type, only application/json is supported\n');
    const declared = Number(req.headers['content-length'] ?? 0);
    const limit = this.opts.limits.maxBodyBytes;
    if (declared > limit) return plain(res, 413, `content length too large (${declared}>${limit})\n`);
    const body = await readBody(req, limit);
    if (body === null) return plain(res, 413, `content length too large (>${limit})\n`);
    const answer = await this.opts.handle(body, null);
    if (answer === null) {
      res.writeHead(200, { 'content-length': '0' });
      res.end();
      return;
    }
    const buffers = answer.map((c) => (typeof c === 'string' ? Buffer.from(c) : c));
    const length = buffers.reduce((n, b) => n + b.byteLength, 0);
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': String(length) });
    // One writev for headers and all chunks instead of a syscall per chunk.
    res.socket?.cork();
    for (const b of buffers) res.write(b);
    res.end();
    process.nextTick(() => res.socket?.uncork());
  }

  private onUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void {
    const route = this.route(req.url, '/ws/v3/');
    if (!route.ok) {
      const headers = Object.entries(route.headers ?? {})
        .map(([k, v]) => `${k}: ${v}\r\n`)
        .join('');
      socket.end(
        `HTTP/1.1 ${route.status} ${route.status === 401 ? 'Unauthorized' : 'Not Found'}\r\n` +
          `content-type: text/plain; charset=utf-8\r\ncontent-length: ${Buffer.byteLength(route.text)}\r\n${headers}connection: close\r\n\r\n${route.text}`,
      );
      return;
    }
    this.wss.handleUpgrade(req, socket, head, (ws) => this.serveSocket(ws));
  }

  private serveSocket(ws: WebSocket): void {
    // Answers are sent in the order requests finish, as JSON-RPC over WebSocket allows; each
    // message is independent, and a malformed one gets its error without closing the socket.
    const connection: Connection = {
      notify: (subscription, result) => {
        if (ws.readyState !== ws.OPEN) return;
        ws.send(
          JSON.stringify({ jsonrpc: '2.0', method: 'eth_subscription', params: { subscription, result } }),
        );
      },
      onClose: (fn) => ws.once('close', fn),
    };
    ws.on('message', (message, isBinary) => {
      const text = isBinary ? Buffer.from(message as Buffer).toString('utf8') : message.toString();
      this.opts
        .handle(text, connection)
        .then((answer) => {
          if (answer && ws.readyState === ws.OPEN) {
            // A text frame: strict clients (alloy, web3.js, the WHATWG WebSocket) refuse binary answers.
            ws.send(Buffer.concat(answer.map((c) => (typeof c === 'string' ? Buffer.from(c) : c))), {
              binary: false,
            });
          }
        })
        .catch(() => ws.close(1011, 'internal error'));
    });
    ws.on('error', () => ws.terminate());
  }
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

/** The body as text, or null once it exceeds `limit` bytes (the rest is drained, not buffered). */
function readBody(req: IncomingMessage, limit: number): Promise<string | null> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let tooLarge = false;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) tooLarge = true;
      if (!tooLarge) chunks.push(chunk);
    });
    req.on('end', () => resolve(tooLarge ? null : Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}
