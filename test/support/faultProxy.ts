import http from 'node:http';
import net from 'node:net';

/**
 * A real HTTP server in front of a JSON-RPC node (anvil, ethtrace) that forwards what it is sent
 * and can be told to misbehave the way upstream nodes and the networks before them do: answer late,
 * rate limit (429 with Retry-After, or -32005), fail (503), drop or hold the connection, answer with
 * the wrong ids or not JSON, or stop listening and come back on the same port. WebSocket upgrades
 * are piped through to the node untouched (delayed by `delayMs` too), so a WebSocket client can be
 * cut off (`dropConnections`) or find the port closed.
 *
 * `delayMs` adds latency to every request (a benchmark's simulated round trip); the counters say
 * what reached the proxy, for tests that check a client's limits without timing assertions.
 */

export type Fault =
  /** Waits `ms` before forwarding (on top of `delayMs`). */
  | { kind: 'delay'; ms: number }
  /** Answers this HTTP status (429, 503) itself, with a Retry-After header and a body when given. */
  | { kind: 'status'; status: number; retryAfter?: string; body?: string }
  /** Answers each call with this JSON-RPC error (-32005: rate limited), with HTTP 200. */
  | { kind: 'rpcError'; code: number; message?: string; data?: unknown }
  /** Destroys the connection without answering. */
  | { kind: 'drop' }
  /** Never answers (the request is cut when the proxy stops or closes). */
  | { kind: 'hang' }
  /** Forwards, then changes the answer's ids (a batch's first one): not the answer asked for. */
  | { kind: 'wrongIds' }
  /** Answers 200 with an HTML page. */
  | { kind: 'notJson' }
  /**
   * Forwards, then gives the node's answer (parsed JSON, one answer or a batch's array) to `edit`
   * and sends what it returns: a node that answers wrongly (a tampered receipt, a bad proof). Only
   * requests whose body `when` matches (default: all) meet it and use up a time.
   */
  | {
      kind: 'rewrite';
      edit: (answer: unknown, request: unknown) => unknown;
      when?: (request: unknown) => boolean;
    };

export interface ReceivedCall {
  request: number;
  method: string;
  params: unknown;
}

export interface FaultProxyCounters {
  /** HTTP requests received. */
  requests: number;
  /** JSON-RPC calls in them (a batch counts its length). */
  calls: number;
  /** Requests forwarded to the node. */
  forwarded: number;
  /** Requests met by a fault other than a delay. */
  faulted: number;
  /** Requests received and not yet answered (or cut). */
  inFlight: number;
  /** The most requests in flight at once. */
  maxInFlight: number;
  /** WebSocket connections piped through. */
  wsUpgrades: number;
}

export interface FaultProxy {
  /** http://127.0.0.1:port */
  readonly url: string;
  /** ws://127.0.0.1:port */
  readonly wsUrl: string;
  readonly port: number;
  /** Latency added to every request and every WebSocket frame towards the node; may be changed. */
  delayMs: number;
  readonly counters: Readonly<FaultProxyCounters>;
  /** performance.now() of each request's arrival. */
  readonly arrivals: readonly number[];
  /**
   * Each JSON-RPC call received (a batch's one by one), in order: what was asked of the node, and
   * the request that carried it (its index in `arrivals`).
   */
  readonly calls: ReadonlyArray<ReceivedCall>;
  /** The next `times` requests meet `fault` (after faults injected before); Infinity: until clear(). */
  inject(fault: Fault, times?: number): void;
  /** No more faults. */
  clear(): void;
  resetCounters(): void;
  /** Destroys every open connection (kept-alive HTTP, WebSockets, requests held by `hang`). */
  dropConnections(): void;
  /** Stops listening and drops every connection: the port refuses connections. */
  stop(): Promise<void>;
  /** Listens again on the same port. */
  restart(): Promise<void>;
  close(): Promise<void>;
}

export interface FaultProxyOptions {
  delayMs?: number;
}

const NOT_JSON = '<html><body><h1>502 Bad Gateway</h1></body></html>';

export async function startFaultProxy(target: string, options: FaultProxyOptions = {}): Promise<FaultProxy> {
  const upstream = new URL(target);
  const agent = new http.Agent({ keepAlive: true });
  const sockets = new Set<net.Socket>();
  const queue: Array<{ fault: Fault; times: number }> = [];
  const counters: FaultProxyCounters = {
    requests: 0,
    calls: 0,
    forwarded: 0,
    faulted: 0,
    inFlight: 0,
    maxInFlight: 0,
    wsUpgrades: 0,
  };
  const arrivals: number[] = [];
  const calls: ReceivedCall[] = [];
  let listening = false;

  const nextFault = (body: Buffer): Fault | undefined => {
    const head = queue[0];
    if (head === undefined) return undefined;
    if (head.fault.kind === 'rewrite' && head.fault.when && !head.fault.when(parse(body))) return undefined;
    if (--head.times <= 0) queue.shift();
    return head.fault;
  };

  const track = (socket: net.Socket): void => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  };

  const server = http.createServer((req, res) => {
    counters.requests++;
    counters.inFlight++;
    counters.maxInFlight = Math.max(counters.maxInFlight, counters.inFlight);
    arrivals.push(performance.now());
    const request = arrivals.length - 1;
    res.once('close', () => counters.inFlight--);
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.once('end', () => {
      const body = Buffer.concat(chunks);
      const ids = requestIds(body);
      counters.calls += ids?.length ?? 1;
      const parsed = parse(body);
      for (const call of (Array.isArray(parsed) ? parsed : [parsed]) as Array<{
        method?: unknown;
        params?: unknown;
      } | null>)
        calls.push({ request, method: String(call?.method), params: call?.params });
      const fault = nextFault(body);
      if (fault !== undefined && fault.kind !== 'delay') counters.faulted++;
      const extra = fault?.kind === 'delay' ? fault.ms : 0;
      later(proxy.delayMs + extra, () => {
        if (res.destroyed) return;
        switch (fault?.kind) {
          case 'status': {
            const headers: http.OutgoingHttpHeaders = { 'content-type': 'text/plain' };
            if (fault.retryAfter !== undefined) headers['retry-after'] = fault.retryAfter;
            res.writeHead(fault.status, headers).end(fault.body ?? http.STATUS_CODES[fault.status] ?? '');
            return;
          }
          case 'rpcError': {
            const error = {
              code: fault.code,
              message: fault.message ?? 'rate limited',
              ...(fault.data === undefined ? {} : { data: fault.data }),
            };
            const answers = (ids ?? [null]).map((id) => ({ jsonrpc: '2.0', id, error }));
            const answer = isBatch(body) ? answers : answers[0];
            res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(answer));
            return;
          }
          case 'drop':
            req.socket.destroy();
            return;
          case 'hang':
            return;
          case 'notJson':
            res.writeHead(200, { 'content-type': 'text/html' }).end(NOT_JSON);
            return;
          default:
            forward(req, res, body, (text) => {
              if (fault?.kind === 'wrongIds') return withWrongIds(text);
              if (fault?.kind === 'rewrite')
                return JSON.stringify(fault.edit(parse(Buffer.from(text)), parse(body)));
              return text;
            });
        }
      });
    });
  });

  const forward = (
    req: http.IncomingMessage,
    res: http.ServerResponse,
    body: Buffer,
    alter: (answer: string) => string,
  ) => {
    counters.forwarded++;
    const out = http.request(
      {
        host: upstream.hostname,
        port: upstream.port,
        path: `${upstream.pathname}${upstream.search}`,
        method: req.method,
        headers: { 'content-type': req.headers['content-type'] ?? 'application/json' },
        agent,
      },
      (answer) => {
        const parts: Buffer[] = [];
        answer.on('data', (chunk: Buffer) => parts.push(chunk));
        answer.once('end', () => {
          const text = alter(Buffer.concat(parts).toString());
          if (res.destroyed) return;
          res
            .writeHead(answer.statusCode ?? 502, {
              'content-type': answer.headers['content-type'] ?? 'application/json',
            })
            .end(text);
        });
        answer.once('error', () => res.destroy());
      },
    );
    out.once('error', () => {
      if (!res.headersSent) res.writeHead(502, { 'content-type': 'text/plain' }).end('node unreachable');
      else res.destroy();
    });
    out.end(body);
  };

  server.on('connection', track);
  server.on('upgrade', (req: http.IncomingMessage, client: net.Socket, head: Buffer) => {
    counters.wsUpgrades++;
    const node = net.connect(Number(upstream.port), upstream.hostname);
    track(node);
    const close = (): void => {
      client.destroy();
      node.destroy();
    };
    client.once('error', close).once('close', close);
    node.once('error', close).once('close', close);
    const headers = Object.entries(req.headers)
      .map(([name, value]) => `${name}: ${Array.isArray(value) ? value.join(', ') : value}`)
      .join('\r\n');
    const send = (chunk: Buffer | string): void => {
      later(proxy.delayMs, () => {
        if (!node.destroyed) node.write(chunk);
      });
    };
    send(`${req.method} ${req.url} HTTP/1.1\r\n${headers}\r\n\r\n`);
    if (head.length > 0) send(head);
    client.on('data', send);
    node.pipe(client);
  });

  const listen = (port: number): Promise<void> =>
    new Promise((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => {
        server.off('error', reject);
        listening = true;
        resolve();
      });
    });

  const dropConnections = (): void => {
    for (const socket of sockets) socket.destroy();
  };

  const stop = async (): Promise<void> => {
    if (!listening) return;
    listening = false;
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    dropConnections();
    await closed;
  };

  await listen(0);
  const port = (server.address() as net.AddressInfo).port;
  const proxy: FaultProxy = {
    url: `http://127.0.0.1:${port}`,
    wsUrl: `ws://127.0.0.1:${port}`,
    port,
    delayMs: options.delayMs ?? 0,
    counters,
    arrivals,
    calls,
    inject(fault, times = 1) {
      queue.push({ fault, times });
    },
    clear() {
      queue.length = 0;
    },
    resetCounters() {
      Object.assign(counters, {
        requests: 0,
        calls: 0,
        forwarded: 0,
        faulted: 0,
        maxInFlight: counters.inFlight,
        wsUpgrades: 0,
      });
      arrivals.length = 0;
      calls.length = 0;
    },
    dropConnections,
    stop,
    restart: () => (listening ? Promise.resolve() : listen(port)),
    async close() {
      await stop();
      agent.destroy();
    },
  };
  return proxy;
}

/** Runs `fn` after `ms` (at once for 0); timers are unref'd so a forgotten proxy ends no test late. */
function later(ms: number, fn: () => void): void {
  if (ms <= 0) fn();
  else setTimeout(fn, ms).unref();
}

function isBatch(body: Buffer): boolean {
  return body.toString().trimStart().startsWith('[');
}

/** The ids of a request body (null for a call without one), or undefined when it is not JSON. */
function requestIds(body: Buffer): unknown[] | undefined {
  try {
    const parsed = JSON.parse(body.toString()) as unknown;
    const calls = Array.isArray(parsed) ? parsed : [parsed];
    return calls.map((call) => (call as { id?: unknown } | null)?.id ?? null);
  } catch {
    return undefined;
  }
}

function withWrongIds(text: string): string {
  try {
    const parsed = JSON.parse(text) as { id?: unknown } | Array<{ id?: unknown }>;
    const first = Array.isArray(parsed) ? parsed[0] : parsed;
    if (first !== undefined) first.id = typeof first.id === 'number' ? first.id + 1_000_000 : 'wrong';
    return JSON.stringify(parsed);
  } catch {
    return text;
  }
}

function parse(body: Buffer): unknown {
  try {
    return JSON.parse(body.toString());
  } catch {
    return undefined;
  }
}
