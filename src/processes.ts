import cluster, { type Worker } from 'node:cluster';
import { metElsewhere } from './core/caught.ts';
import {
  DomainError,
  reviveDomainError,
  type SerializedDomainError,
  serializeDomainError,
} from './core/errors.ts';
import type { LogLine } from './core/log.ts';
import { answerExchange } from './transport/access/ipcCounters.ts';
import { MemoryCounters } from './transport/access/ledger.ts';

/**
 * `ethtrace start --processes N`: N API processes on one port over one datadir, so that a host uses
 * all its cores (the event loop, JSON and the envelope run on one core per process; EVM work already
 * runs in each process's worker threads). Built on node:cluster: the primary binds nothing itself;
 * the API processes' listening sockets are shared through it and connections are spread round-robin.
 *
 * The primary checks the datadir, makes the first key, prints the serving lines, follows the chain
 * into the store with `--follow`, keeps the limits the API processes share (unless they share Redis),
 * reads the upstream for them all in upstream mode (ASK: one read per call in flight for the host),
 * starts a new API process when one dies, and stops them all on SIGTERM/SIGINT.
 */

/** `alone`: one process; `primary` and `api`: the two sides of `--processes N`. */
export type ProcessRole = 'alone' | 'primary' | 'api';

/** This process's role: an API process forked by a primary, the primary of `processes` > 1, or alone. */
export function processRole(processes: number): ProcessRole {
  return cluster.isWorker ? 'api' : processes > 1 ? 'primary' : 'alone';
}

const LISTENING = 'ethtrace:listening';
/** An API process asks for a figure of every API process (metrics, the dashboard's data). */
const GATHER = 'ethtrace:gather';
/** The primary asks each API process for its part, which it answers with COLLECTED. */
const COLLECT = 'ethtrace:collect';
const COLLECTED = 'ethtrace:collected';
/** The primary answers a GATHER with every part. */
const GATHERED = 'ethtrace:gathered';
/** An API process asks the primary to do something for it (upstream mode: read the upstream). */
const ASK = 'ethtrace:ask';
/** The primary's answer to an ASK: its value, or the domain error it met. */
const ANSWER = 'ethtrace:answer';
/** An API process that does not give its part within this is left out (it may be starting or stuck). */
const GATHER_TIMEOUT_MS = 2_000;
/** An API process that dies this soon after it started is not started again (it would die again). */
const MIN_LIFETIME_MS = 5_000;
/** Past their own drain deadline, API processes that have not exited get this long before they are killed. */
const STOP_GRACE_MS = 5_000;

export interface Primary {
  /** The URLs once every API process listens; rejects if one fails to start. */
  listening: Promise<Urls>;
  /** Resolves when the API processes cannot be kept running (one keeps dying): time to stop. */
  failed: Promise<void>;
  /** Stops every API process (each drains its requests within `deadlineMs`) and waits for them. */
  stop(deadlineMs: number): Promise<void>;
  /** Kills every API process at once (a second signal). */
  kill(): void;
}

interface Urls {
  httpUrl: string;
  wsUrl: string;
  metricsUrl: string | null;
}

/**
 * Forks the API processes (this program again, with the same arguments, as cluster workers);
 * `answerAsk` answers their asks (askPrimary).
 */
export function startPrimary(
  count: number,
  keepCounters: boolean,
  log: LogLine,
  answerAsk?: (payload: unknown) => Promise<unknown>,
): Primary {
  return new ApiProcesses(count, keepCounters ? new MemoryCounters() : null, log, answerAsk);
}

/** One gather under way: the parts given so far, and the API processes yet to give theirs. */
interface Gather {
  parts: unknown[];
  waiting: Set<Worker>;
  done: () => void;
}

/** The primary's side of `--processes`: the API processes it forked, kept running, and stopped. */
class ApiProcesses implements Primary {
  readonly listening: Promise<Urls>;
  readonly failed: Promise<void>;
  private readonly started = new Map<Worker, number>();
  private stopping = false;
  private resolveListening!: (urls: Urls) => void;
  private rejectListening!: (e: Error) => void;
  private resolveFailed!: () => void;
  private up = 0;
  private allUp = false;
  private nextGather = 0;
  private readonly gathers = new Map<number, Gather>();

  constructor(
    private readonly count: number,
    private readonly counters: MemoryCounters | null,
    private readonly log: LogLine,
    private readonly answerAsk: ((payload: unknown) => Promise<unknown>) | undefined,
  ) {
    this.listening = new Promise<Urls>((resolve, reject) => {
      this.resolveListening = resolve;
      this.rejectListening = reject;
    });
    metElsewhere(this.listening);
    this.failed = new Promise<void>((resolve) => {
      this.resolveFailed = resolve;
    });
    for (let i = 0; i < count; i++) this.fork(i);
  }

  kill(): void {
    this.stopping = true;
    for (const w of this.started.keys()) if (!w.isDead()) w.process.kill('SIGKILL');
  }

  async stop(deadlineMs: number): Promise<void> {
    this.stopping = true;
    const workers = [...this.started.keys()];
    const exited = Promise.all(
      workers.map((w) =>
        w.isDead() ? Promise.resolve() : new Promise((resolve) => w.once('exit', resolve)),
      ),
    );
    const deadline = setTimeout(() => this.kill(), deadlineMs + STOP_GRACE_MS);
    deadline.unref();
    for (const w of workers) if (!w.isDead()) w.process.kill('SIGTERM');
    await exited;
    clearTimeout(deadline);
  }

  private fork(index: number): void {
    const worker = cluster.fork({ ETHTRACE_PROCESS_INDEX: String(index) });
    this.started.set(worker, Date.now());
    worker.on('message', (message: unknown) => this.onMessage(worker, message));
    worker.once('exit', (code, signal) => this.onExit(worker, index, code, signal));
  }

  private onMessage(worker: Worker, message: unknown): void {
    const answer = this.counters && answerExchange(this.counters, message);
    if (answer) {
      if (worker.isConnected()) worker.send(answer);
      return;
    }
    const m = message as {
      kind?: unknown;
      id?: unknown;
      what?: unknown;
      arg?: unknown;
      part?: unknown;
    } | null;
    if (m?.kind === GATHER && typeof m.id === 'number' && typeof m.what === 'string') {
      this.gather(worker, m.what, m.arg, m.id);
      return;
    }
    if (m?.kind === ASK && typeof m.id === 'number') {
      this.answer(worker, m.id, m.arg);
      return;
    }
    if (m?.kind === COLLECTED && typeof m.id === 'number') {
      const entry = this.gathers.get(m.id);
      if (entry?.waiting.delete(worker)) {
        entry.parts.push(m.part);
        if (entry.waiting.size === 0) entry.done();
      }
      return;
    }
    if (isListening(message) && !this.allUp && ++this.up === this.count) {
      this.allUp = true;
      this.resolveListening({
        httpUrl: message.httpUrl,
        wsUrl: message.wsUrl,
        metricsUrl: message.metricsUrl,
      });
    }
  }

  /** Answers an API process's ask (askPrimary) with its value or the error met. */
  private answer(worker: Worker, id: number, arg: unknown): void {
    const send = (reply: object): void => {
      if (worker.isConnected()) worker.send({ kind: ANSWER, id, ...reply });
    };
    (this.answerAsk ?? (() => Promise.reject(new Error('the primary answers no asks'))))(arg).then(
      (value) => send({ ok: true, value }),
      (e: unknown) => send({ ok: false, error: serializeAsked(e) }),
    );
  }

  /** Asks every API process for its part of `what`, and answers the one that asked with all of them. */
  private gather(asker: Worker, what: string, arg: unknown, askerId: number): void {
    const id = ++this.nextGather;
    const workers = [...this.started.keys()].filter((w) => w.isConnected());
    const entry: Gather = {
      parts: [],
      waiting: new Set(workers),
      done: () => {
        clearTimeout(timer);
        this.gathers.delete(id);
        if (asker.isConnected()) asker.send({ kind: GATHERED, id: askerId, parts: entry.parts });
      },
    };
    const timer = setTimeout(entry.done, GATHER_TIMEOUT_MS);
    this.gathers.set(id, entry);
    for (const w of workers) w.send({ kind: COLLECT, id, what, arg });
    if (workers.length === 0) entry.done();
  }

  /** An API process died: the start fails, or it is started again unless it died young. */
  private onExit(worker: Worker, index: number, code: number | null, signal: string | null): void {
    const lived = Date.now() - (this.started.get(worker) ?? 0);
    this.started.delete(worker);
    if (this.stopping) return;
    const how = signal ? `signal ${signal}` : `status ${code}`;
    if (!this.allUp) {
      // Its own error is on stderr already (the API processes share it).
      this.rejectListening(new StartFailure(code ?? 1, `an API process exited at start (${how})`));
      return;
    }
    if (lived < MIN_LIFETIME_MS) {
      this.log(`API process ${index} exited (${how}) ${lived} ms after it started: stopping`, 'warn');
      process.exitCode = 1;
      this.resolveFailed();
      return;
    }
    this.log(`API process ${index} exited (${how}): starting another`, 'warn');
    this.fork(index);
  }
}

/** An API process that could not start: the primary exits with its status (2 for a user error). */
export class StartFailure extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

/** An API process tells the primary it listens. */
export function announceListening(urls: Urls): void {
  process.send?.({ kind: LISTENING, httpUrl: urls.httpUrl, wsUrl: urls.wsUrl, metricsUrl: urls.metricsUrl });
}

/**
 * When an API process stops: on SIGTERM from the primary, or when the primary is gone (its IPC
 * channel closes); a second SIGTERM exits at once. SIGINT is ignored: a Ctrl-C in a terminal reaches the whole process group, and the
 * primary, which got it too, sends the SIGTERM; taken here as well, it would be a second signal.
 */
export function apiProcessStop(): Promise<void> {
  process.on('SIGINT', () => {});
  return new Promise<void>((resolve) => {
    const first = () => {
      process.off('SIGTERM', first);
      process.once('SIGTERM', () => process.exit(143));
      resolve();
    };
    process.on('SIGTERM', first);
    process.once('disconnect', () => resolve());
  });
}

/**
 * What an API process gives when the primary gathers `what` from all of them (src/app.ts registers
 * its metrics and the dashboard's data).
 */
const providers = new Map<string, (arg: unknown) => Promise<unknown>>();
let collecting = false;

export function provide(what: string, part: (arg: unknown) => Promise<unknown>): void {
  providers.set(what, part);
  if (collecting || !cluster.isWorker) return;
  collecting = true;
  process.on('message', (message: unknown) => {
    const m = message as { kind?: unknown; id?: unknown; what?: unknown; arg?: unknown } | null;
    if (m?.kind !== COLLECT || typeof m.id !== 'number' || typeof m.what !== 'string') return;
    const id = m.id;
    const provider = providers.get(m.what);
    if (!provider) return;
    provider(m.arg).then(
      (part) => process.send?.({ kind: COLLECTED, id, part }),
      () => process.send?.({ kind: COLLECTED, id, part: null }),
    );
  });
}

let nextAsk = 0;
const asked = new Map<number, (parts: unknown[]) => void>();
let hearing = false;

/** Every API process's part of `what` (this one's included; `arg` is given to each), through the primary. */
export function gatherFromAll(what: string, arg: unknown = null): Promise<unknown[]> {
  if (!cluster.isWorker || !process.send) throw new Error('gatherFromAll: not an API process of --processes');
  if (!hearing) {
    hearing = true;
    process.on('message', (message: unknown) => {
      const m = message as { kind?: unknown; id?: unknown; parts?: unknown } | null;
      if (m?.kind !== GATHERED || typeof m.id !== 'number' || !Array.isArray(m.parts)) return;
      asked.get(m.id)?.(m.parts.filter((p) => p !== null));
      asked.delete(m.id);
    });
  }
  const id = ++nextAsk;
  return new Promise((resolve) => {
    asked.set(id, resolve);
    process.send?.({ kind: GATHER, id, what, arg });
  });
}

let nextAskId = 0;
const asks = new Map<number, { resolve: (value: unknown) => void; reject: (reason: unknown) => void }>();
let answering = false;

/**
 * Asks the primary (startPrimary's `answerAsk`) from an API process: its answer, or the domain error
 * it met as its own class again. Pending asks fail when the primary goes away.
 */
export function askPrimary(payload: unknown): Promise<unknown> {
  if (!cluster.isWorker || !process.send) throw new Error('askPrimary: not an API process of --processes');
  if (!answering) {
    answering = true;
    process.on('message', (message: unknown) => {
      const m = message as {
        kind?: unknown;
        id?: unknown;
        ok?: unknown;
        value?: unknown;
        error?: unknown;
      } | null;
      if (m?.kind !== ANSWER || typeof m.id !== 'number') return;
      const waiter = asks.get(m.id);
      if (waiter === undefined) return;
      asks.delete(m.id);
      if (m.ok === true) waiter.resolve(m.value);
      else waiter.reject(revivedAsked(m.error));
    });
    process.once('disconnect', () => {
      for (const waiter of asks.values()) waiter.reject(new Error('the primary process is gone'));
      asks.clear();
    });
  }
  const id = ++nextAskId;
  return new Promise((resolve, reject) => {
    asks.set(id, { resolve, reject });
    process.send?.({ kind: ASK, id, arg: payload });
  });
}

/** An error as it crosses to the asking process: a domain error whole, anything else as its message. */
function serializeAsked(e: unknown): { domain: SerializedDomainError } | { message: string } {
  if (e instanceof DomainError) return { domain: serializeDomainError(e) };
  return { message: e instanceof Error ? e.message : String(e) };
}

function revivedAsked(error: unknown): Error {
  const e = error as { domain?: SerializedDomainError; message?: unknown } | null;
  if (e?.domain !== undefined) return reviveDomainError(e.domain);
  return new Error(typeof e?.message === 'string' ? e.message : 'the primary failed to answer');
}

function isListening(message: unknown): message is Urls {
  const m = message as { kind?: unknown; httpUrl?: unknown } | null;
  return typeof m === 'object' && m !== null && m.kind === LISTENING && typeof m.httpUrl === 'string';
}
