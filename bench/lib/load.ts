import { fork } from 'node:child_process';
import { Agent, request } from 'node:http';
import { connect, type Socket } from 'node:net';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { cpuSeconds, ROOT } from './process.ts';
import { type LatencySummary, summarize } from './stats.ts';

/**
 * A closed-loop HTTP load generator: `connections` workers over keep-alive connections, each
 * sending the same JSON-RPC POST as soon as its previous answer has been read whole. Answers are
 * counted, not parsed; each must be exactly as long as the reference answer, which catches errors
 * and truncation for free.
 *
 * Two clients. `raw` (the default) writes the request bytes on a socket and reads the answer by its
 * Content-Length: measured here on a 400 KB answer it costs ~130 µs of CPU per request, against
 * ~370 µs for `node-http` (node:http with a keep-alive Agent, maxSockets = connections), whose
 * stream machinery would otherwise be the bottleneck when the server answers in well under a
 * millisecond and both share a small machine. `node-http` stays for comparison.
 */

export type ClientKind = 'raw' | 'node-http';

export interface LoadOptions {
  url: string;
  body: string;
  connections: number;
  /** Measured window. */
  durationMs: number;
  /** Unmeasured run first, so JIT, caches and sockets are warm. */
  warmupMs: number;
  /** Byte length every answer body must have (the reference answer's). */
  expectBytes: number;
  /** Stops the window early once this many answers are in, for servers too slow to fill it sensibly. */
  maxRequests?: number;
  /** Per request; a server that stalls this long is broken, not slow. */
  timeoutMs?: number;
  /** The server's process, to report how busy it was: a saturated generator would skew the figures. */
  serverPid?: number | null;
  client?: ClientKind;
}

export interface LoadResult {
  connections: number;
  client: ClientKind;
  requests: number;
  seconds: number;
  requestsPerSecond: number;
  /** Milliseconds. */
  latency: LatencySummary;
  bytesPerAnswer: number;
  /** CPU used during the measured window, in cores (1 = one core busy throughout); null if unknown. */
  cpu: { generator: number; server: number | null };
}

const DEFAULT_TIMEOUT_MS = 30_000;
/** More than this many failed requests means the numbers would describe failures: stop. */
const MAX_ERRORS = 10;

/** Sends one request and resolves with the answer body's byte length once it has been read whole. */
interface Connection {
  send(): Promise<number>;
  close(): void;
}

/**
 * HTTP/1.1 over one socket, requests one at a time. Only what the servers measured here send is
 * understood (a status line, headers with Content-Length, the body); anything else is an error.
 */
class RawConnection implements Connection {
  private socket: Socket | undefined;
  private readonly request: Buffer;
  private head: Buffer = Buffer.alloc(0);
  /** Body bytes still to come; -1 while the head is being read. */
  private remaining = -1;
  private bodyBytes = 0;
  private status = 0;
  private closeAfter = false;
  private pending: { resolve: (bytes: number) => void; reject: (e: Error) => void } | undefined;

  constructor(
    private readonly url: URL,
    body: string,
    private readonly timeoutMs: number,
  ) {
    const path = url.pathname + url.search;
    this.request = Buffer.from(
      `POST ${path} HTTP/1.1\r\nhost: ${url.host}\r\ncontent-type: application/json\r\n` +
        `content-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
    );
  }

  send(): Promise<number> {
    return new Promise((resolve, reject) => {
      this.pending = { resolve, reject };
      this.head = Buffer.alloc(0);
      this.remaining = -1;
      this.socket ??= this.open();
      this.socket.write(this.request);
    });
  }

  close(): void {
    this.socket?.destroy();
    this.socket = undefined;
  }

  private open(): Socket {
    const socket = connect(Number(this.url.port || 80), this.url.hostname);
    socket.setNoDelay(true);
    // A socket closed on purpose still reports; only the current one may fail the pending request.
    const current = () => this.socket === socket;
    socket.setTimeout(this.timeoutMs, () => {
      if (current() && this.pending) this.fail(new Error(`no answer within ${this.timeoutMs} ms`));
    });
    socket.on('data', (chunk: Buffer) => current() && this.onData(chunk));
    socket.on('error', (e) => current() && this.fail(e));
    socket.on(
      'close',
      () => current() && this.fail(new Error('connection closed before the answer was complete')),
    );
    return socket;
  }

  private onData(chunk: Buffer): void {
    try {
      this.read(chunk);
    } catch (e) {
      this.fail(e as Error);
    }
  }

  private read(chunk: Buffer): void {
    if (this.pending === undefined) throw new Error('bytes arrived with no request pending');
    let body = chunk;
    if (this.remaining < 0) {
      this.head = this.head.length === 0 ? chunk : Buffer.concat([this.head, chunk]);
      const end = this.head.indexOf('\r\n\r\n');
      if (end < 0) return;
      const head = this.head.subarray(0, end).toString('latin1');
      body = this.head.subarray(end + 4);
      const length = /\r\ncontent-length:\s*(\d+)/i.exec(head);
      if (length?.[1] === undefined) throw new Error(`answer without content-length:\n${head}`);
      this.status = Number(head.slice(9, 12));
      this.closeAfter = /\r\nconnection:\s*close/i.test(head);
      this.remaining = Number(length[1]);
      this.bodyBytes = this.remaining;
    }
    this.remaining -= body.length;
    if (this.remaining > 0) return;
    if (this.remaining < 0) throw new Error('more bytes than the content-length');
    const { resolve, reject } = this.pending;
    this.pending = undefined;
    if (this.closeAfter) this.close();
    if (this.status !== 200) reject(new Error(`HTTP ${this.status}`));
    else resolve(this.bodyBytes);
  }

  private fail(e: Error): void {
    const pending = this.pending;
    this.pending = undefined;
    this.close();
    pending?.reject(e);
  }
}

/** node:http with a shared keep-alive Agent. */
class NodeHttpConnection implements Connection {
  constructor(
    private readonly agent: Agent,
    private readonly url: URL,
    private readonly body: string,
    private readonly timeoutMs: number,
  ) {}

  send(): Promise<number> {
    return new Promise((resolve, reject) => {
      const req = request(
        {
          agent: this.agent,
          host: this.url.hostname,
          port: this.url.port,
          path: this.url.pathname + this.url.search,
          method: 'POST',
          headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(this.body) },
          timeout: this.timeoutMs,
        },
        (res) => {
          let bytes = 0;
          res.on('data', (chunk: Buffer) => {
            bytes += chunk.length;
          });
          res.on('end', () => {
            if (res.statusCode !== 200) reject(new Error(`HTTP ${res.statusCode}`));
            else resolve(bytes);
          });
          res.on('error', reject);
        },
      );
      req.on('timeout', () => req.destroy(new Error(`no answer within ${this.timeoutMs} ms`)));
      req.on('error', reject);
      req.end(this.body);
    });
  }

  close(): void {}
}

/** The whole answer as text, over a fresh connection: for reference answers, not for timing. */
export async function fetchText(url: string, body: string): Promise<string> {
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
  if (!res.ok) throw new Error(`${url}: HTTP ${res.status}`);
  return res.text();
}

export async function runLoad(opts: LoadOptions): Promise<LoadResult> {
  const url = new URL(opts.url);
  const kind = opts.client ?? 'raw';
  const timeoutMs = opts.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const agent = new Agent({ keepAlive: true, maxSockets: opts.connections });
  const connections: Connection[] = Array.from({ length: opts.connections }, () =>
    kind === 'raw'
      ? new RawConnection(url, opts.body, timeoutMs)
      : new NodeHttpConnection(agent, url, opts.body, timeoutMs),
  );
  let errors = 0;
  let firstError: unknown;
  const samples: number[] = [];

  const phase = async (durationMs: number, record: boolean, maxRequests = Number.POSITIVE_INFINITY) => {
    const deadline = performance.now() + durationMs;
    const worker = async (connection: Connection) => {
      while (performance.now() < deadline && samples.length < maxRequests && errors < MAX_ERRORS) {
        const start = performance.now();
        try {
          const bytes = await connection.send();
          if (bytes !== opts.expectBytes)
            throw new Error(`answer of ${bytes} bytes, expected ${opts.expectBytes}`);
          if (record) samples.push(performance.now() - start);
        } catch (e) {
          errors++;
          firstError ??= e;
        }
      }
    };
    const started = performance.now();
    await Promise.all(connections.map(worker));
    return (performance.now() - started) / 1000;
  };

  try {
    await phase(opts.warmupMs, false);
    const pid = opts.serverPid ?? null;
    const serverBefore = pid === null ? null : cpuSeconds(pid);
    const generatorBefore = process.cpuUsage();
    const seconds = await phase(opts.durationMs, true, opts.maxRequests);
    const generator = process.cpuUsage(generatorBefore);
    const serverAfter = pid === null ? null : cpuSeconds(pid);
    if (errors > 0) {
      throw new Error(`${errors} failed requests to ${opts.url}; first: ${(firstError as Error)?.message}`);
    }
    return {
      connections: opts.connections,
      client: kind,
      requests: samples.length,
      seconds,
      requestsPerSecond: samples.length / seconds,
      latency: summarize(samples),
      bytesPerAnswer: opts.expectBytes,
      cpu: {
        generator: (generator.user + generator.system) / 1e6 / seconds,
        server: serverBefore === null || serverAfter === null ? null : (serverAfter - serverBefore) / seconds,
      },
    };
  } finally {
    for (const c of connections) c.close();
    agent.destroy();
  }
}

/**
 * runLoad in a fresh process of its own: the generator then shares neither an event loop nor a
 * heap with the code that built the chain (a large heap made its collections, and so the measured
 * latencies, several times longer here).
 */
export async function runLoadInChild(opts: LoadOptions): Promise<LoadResult> {
  const child = fork(fileURLToPath(new URL('./loadChild.ts', import.meta.url)), [], {
    cwd: ROOT,
    execArgv: ['--import', 'tsx'],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  try {
    return await new Promise<LoadResult>((resolve, reject) => {
      child.once('message', (m: { result?: LoadResult; error?: string }) =>
        m.result ? resolve(m.result) : reject(new Error(`load generator: ${m.error}`)),
      );
      child.once('exit', (code) =>
        reject(new Error(`load generator exited (code ${code}) without a result`)),
      );
      child.once('error', reject);
      child.send(opts);
    });
  } finally {
    child.kill();
  }
}
