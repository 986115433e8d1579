// A pool of worker threads for EVM work, so that a heavy trace never stalls the event loop that
// answers cheap methods. Each worker serves one request at a time; the rest wait in a bounded FIFO
// queue; every request has a deadline, past which the worker running it is terminated (a JS loop
// cannot be interrupted any other way) and replaced.
//
// Workers start lazily, when a request finds no idle worker, because building the app must stay
// cheap and free of threads (tests build many apps, `import` never traces). But a start is not free:
// about 0.15 s for tsx alone and 0.7–0.9 s for a worker that loads ethereumjs and opens the store
// (measured here; see `stats().lastStartMs`), so a server calls `warm()` at boot: that pays it up
// front, surfaces a worker that cannot start (no store, …) before the first request, and from then
// on a worker terminated or crashed is replaced at once rather than by the next request to need it.
//
// The deadline runs from `run()`, so time in the queue counts: the client waits for the whole, and
// under overload queued requests expire instead of piling up behind slow ones. It bounds execution,
// not what a job waits for from the main thread (the `answer` option: upstream mode's reads): while
// a job waits for an answer its deadline stands still, and the main thread's work has its own bound.

import { AsyncLocalStorage } from 'node:async_hooks';
import { type ResourceLimits, Worker, type WorkerOptions } from 'node:worker_threads';
import { DEFAULT_LIMITS } from '../../config/limits.ts';
import { afterSettled, metElsewhere } from '../../core/caught.ts';
import {
  Busy,
  DomainError,
  describeForLog,
  ExecutionTimeout,
  InternalError,
  reviveDomainError,
  serializeDomainError,
} from '../../core/errors.ts';
import type { LogLine } from '../../core/log.ts';
import { workerEntryBeside } from '../../core/modules.ts';
import type { AnswerMessage, BootData, FromWorker, RunMessage, SerializedError } from './protocol.ts';

export type { Handlers } from './protocol.ts';

/**
 * How long a worker may take to start before it counts as failed. Starts measure 0.7–1.6 s here for
 * a worker that loads ethereumjs and opens the store; a first run transforms every source file with
 * esbuild and a cold page cache slows LMDB, so the margin is wide. It exists so that an init that
 * hangs cannot hold a slot, and the requests waiting on it, for ever.
 */
export const DEFAULT_START_TIMEOUT_MS = 30_000;

/** As geth's "execution aborted (timeout = 5s)"; the wording is this service's own. */
export const TIMEOUT_MESSAGE = 'execution timeout';

/**
 * A full queue: worded after Infura's own rate-limit answers ("daily request count exceeded, request
 * rate limited"), since a client should do what it does there: back off and retry.
 */
export const BUSY_MESSAGE = 'too many concurrent executions, request rate limited';

const BOOTSTRAP = workerEntryBeside(import.meta.url, './worker', './bootstrap.mjs');

export interface WorkerPoolOptions {
  /** A module exporting `init(workerData): Promise<Handlers>` (see protocol.ts). */
  workerModule: URL;
  /** Given to every worker's `init`; structured-cloned. */
  workerData?: unknown;
  /** Workers, and so requests running at once. */
  size?: number;
  /** Requests that may wait beyond the `size` running; more are refused (Busy). */
  maxQueue?: number;
  /** Default deadline of a request, queue wait included. */
  deadlineMs?: number;
  /** How long a worker may take from `new Worker` to ready before it counts as failed. */
  startTimeoutMs?: number;
  /** Bytes a job's answer may take; none if absent (see RunMessage.maxBytes). */
  maxResultBytes?: number;
  /** Heap caps per worker: a runaway request then kills its worker (an internal error), not the process. */
  resourceLimits?: ResourceLimits;
  /** Where internal errors (handler bugs, crashes, workers that fail to start) are reported. */
  log?: LogLine;
  /**
   * Answers what a worker asks of the main thread (WorkerContext.ask), in the async context of the
   * run() of the job that asks, so what the caller set up for the request (a budget) applies. The
   * job's deadline stands still until the answer is sent.
   */
  answer?: (payload: unknown) => Promise<unknown>;
}

export interface RunOptions {
  /** This request's deadline, in place of the pool's. */
  deadlineMs?: number;
  /** Aborting drops a waiting request, or terminates (and replaces) the worker running it. */
  signal?: AbortSignal;
}

export interface PoolStats {
  size: number;
  /** Started or starting. */
  workers: number;
  busy: number;
  queued: number;
  /** Workers that became ready, and how long the last one took from `new Worker` to ready. */
  starts: number;
  lastStartMs: number | null;
  timeouts: number;
  crashes: number;
}

/**
 * Jobs started together as one unit of client work (a JSON-RPC batch): they share one deadline,
 * counted from the unit's start, and at most `limit` of them are in the pool (queued or running) at
 * once; the rest wait here, outside the queue, so one batch of a thousand traces neither fills the
 * queue (other clients would be refused as busy) nor holds the workers for a thousand deadlines.
 */
interface Scope {
  readonly deadlineAt: number;
  readonly limit: number;
  admitted: number;
  readonly waiting: Job[];
}

interface Job {
  readonly id: number;
  readonly scope: Scope | undefined;
  /** In the pool's queue or on a worker (as opposed to waiting in its scope). */
  admitted: boolean;
  readonly kind: string;
  readonly payload: unknown;
  readonly resolve: (value: unknown) => void;
  readonly reject: (error: unknown) => void;
  timer: NodeJS.Timeout | undefined;
  /** Of the deadline, what was left when the timer last started, and when that was. */
  leftMs: number;
  timerStartedAt: number;
  /** Asks of the main thread awaiting their answer: while any is, the deadline stands still. */
  asking: number;
  done: boolean;
  /** The async context of run(), for the answers to its asks. */
  context: (<R>(fn: () => R) => R) | undefined;
  signal: AbortSignal | undefined;
  onAbort: (() => void) | undefined;
  slot: Slot | null;
}

interface Slot {
  readonly worker: Worker;
  readonly spawnedAt: number;
  readonly ready: Promise<void>;
  readonly settleReady: (error?: Error) => void;
  startTimer: NodeJS.Timeout | undefined;
  state: 'starting' | 'idle' | 'busy' | 'gone';
  job: Job | null;
}

export class PoolClosedError extends Error {
  override name = 'PoolClosedError';
  constructor() {
    super('the worker pool is closed');
  }
}

export class WorkerPool {
  readonly size: number;
  readonly maxQueue: number;
  readonly deadlineMs: number;
  readonly startTimeoutMs: number;
  readonly maxResultBytes: number | undefined;
  private readonly boot: BootData;
  private readonly scopes = new AsyncLocalStorage<Scope>();
  private readonly resourceLimits: ResourceLimits | undefined;
  private readonly log: LogLine;
  private readonly answer: ((payload: unknown) => Promise<unknown>) | undefined;
  private readonly slots: Slot[] = [];
  private readonly queue: Job[] = [];
  private readonly exiting = new Set<Promise<unknown>>();
  private nextId = 1;
  private closed = false;
  private closing: Promise<void> | null = null;
  /** Workers to keep running even with nothing queued: 0 until warm(), then `size`. */
  private keepWarm = 0;
  private counters = { starts: 0, lastStartMs: null as number | null, timeouts: 0, crashes: 0 };

  constructor(options: WorkerPoolOptions) {
    this.size = positiveInteger('size', options.size ?? DEFAULT_LIMITS.pool.workers);
    this.maxQueue = nonNegativeInteger('maxQueue', options.maxQueue ?? DEFAULT_LIMITS.pool.maxQueue);
    this.deadlineMs = positiveNumber('deadlineMs', options.deadlineMs ?? DEFAULT_LIMITS.pool.deadlineMs);
    this.startTimeoutMs = positiveNumber(
      'startTimeoutMs',
      options.startTimeoutMs ?? DEFAULT_START_TIMEOUT_MS,
    );
    if (options.maxResultBytes !== undefined) positiveInteger('maxResultBytes', options.maxResultBytes);
    this.maxResultBytes = options.maxResultBytes;
    this.boot = { moduleUrl: options.workerModule.href, data: options.workerData };
    this.resourceLimits = options.resourceLimits;
    this.log = options.log ?? ((line) => process.stderr.write(`${line}\n`));
    this.answer = options.answer;
  }

  /**
   * Runs `kind` with `payload` on a worker. Rejects with the handler's DomainError as it was thrown,
   * ExecutionTimeout past the deadline, Busy when the queue is full, and InternalError for any
   * other failure (the cause is logged and kept as `cause`).
   */
  run<T = unknown>(kind: string, payload: unknown, options: RunOptions = {}): Promise<T> {
    if (this.closed) return Promise.reject(new PoolClosedError());
    const { signal } = options;
    if (signal?.aborted) return Promise.reject(signal.reason);
    const scope = this.scopes.getStore();
    const parked = scope !== undefined && scope.admitted >= scope.limit;
    if (!parked && this.full()) return Promise.reject(new Busy(BUSY_MESSAGE));
    let deadlineMs = options.deadlineMs ?? this.deadlineMs;
    if (!(Number.isFinite(deadlineMs) && deadlineMs > 0)) {
      return Promise.reject(new RangeError('deadlineMs must be a positive number'));
    }
    if (scope !== undefined) {
      const left = scope.deadlineAt - performance.now();
      if (left <= 0) {
        this.counters.timeouts++;
        return Promise.reject(new ExecutionTimeout(TIMEOUT_MESSAGE));
      }
      deadlineMs = Math.min(deadlineMs, left);
    }
    return new Promise<T>((resolve, reject) => {
      const job: Job = {
        id: this.nextId++,
        scope,
        admitted: false,
        kind,
        payload,
        resolve: resolve as (value: unknown) => void,
        reject,
        timer: undefined,
        leftMs: deadlineMs,
        timerStartedAt: performance.now(),
        asking: 0,
        done: false,
        context: this.answer === undefined ? undefined : AsyncLocalStorage.snapshot(),
        signal,
        onAbort: undefined,
        slot: null,
      };
      job.timer = setTimeout(() => this.expire(job), deadlineMs);
      if (signal !== undefined) {
        job.onAbort = () => this.abort(job, signal.reason);
        signal.addEventListener('abort', job.onAbort, { once: true });
      }
      if (parked) scope.waiting.push(job);
      else this.admit(job);
    });
  }

  /**
   * Runs `work` as one unit (a JSON-RPC batch): the jobs it starts share one deadline, the pool's,
   * from now, and at most `size` of them are in the pool at once (see Scope).
   */
  batch<T>(work: () => Promise<T>): Promise<T> {
    const scope: Scope = {
      deadlineAt: performance.now() + this.deadlineMs,
      limit: this.size,
      admitted: 0,
      waiting: [],
    };
    return this.scopes.run(scope, work);
  }

  private full(): boolean {
    return this.queue.length + this.busyCount() >= this.size + this.maxQueue;
  }

  /** Into the queue, or refused (busy) if it is full. */
  private admit(job: Job): void {
    if (this.full()) {
      this.settle(job, new Busy(BUSY_MESSAGE));
      return;
    }
    job.admitted = true;
    if (job.scope) job.scope.admitted++;
    this.queue.push(job);
    this.dispatch();
  }

  /** Starts every worker now; rejects with the first start failure (e.g. the store cannot be opened). */
  async warm(): Promise<void> {
    if (this.closed) throw new PoolClosedError();
    this.keepWarm = this.size;
    while (this.slots.length < this.size) this.spawn();
    await Promise.all(this.slots.map((slot) => slot.ready));
  }

  stats(): PoolStats {
    return {
      size: this.size,
      workers: this.slots.length,
      busy: this.busyCount(),
      queued: this.queue.length,
      ...this.counters,
    };
  }

  /** Fails every waiting and running request and resolves once every worker thread has exited. */
  close(): Promise<void> {
    if (this.closing !== null) return this.closing;
    this.closed = true;
    for (const job of this.queue.splice(0)) this.settle(job, new PoolClosedError());
    for (const slot of [...this.slots]) {
      if (slot.job !== null) this.settle(slot.job, new PoolClosedError());
      this.retire(slot, new PoolClosedError());
    }
    this.closing = Promise.all(this.exiting).then(() => undefined);
    return this.closing;
  }

  /** Started workers with nothing to do and no queued request waiting for them. */
  spareWorkers(): number {
    let idle = 0;
    for (const slot of this.slots) if (slot.state === 'idle') idle++;
    return Math.max(0, idle - this.queue.length);
  }

  private busyCount(): number {
    let busy = 0;
    for (const slot of this.slots) if (slot.job !== null) busy++;
    return busy;
  }

  /** Hands waiting requests to idle workers, and starts workers for the ones left over. */
  private dispatch(): void {
    if (this.closed) return;
    for (const slot of this.slots) {
      const job = slot.state === 'idle' ? this.queue.shift() : undefined;
      if (job !== undefined) this.assign(slot, job);
    }
    let starting = 0;
    for (const slot of this.slots) if (slot.state === 'starting') starting++;
    const forQueue = Math.min(this.queue.length - starting, this.size - this.slots.length);
    const wanted = Math.max(forQueue, this.keepWarm - this.slots.length);
    for (let i = 0; i < wanted; i++) this.spawn();
  }

  private assign(slot: Slot, job: Job): void {
    slot.state = 'busy';
    slot.job = job;
    job.slot = slot;
    slot.worker.ref();
    const message: RunMessage = { type: 'run', id: job.id, kind: job.kind, payload: job.payload };
    if (this.maxResultBytes !== undefined) message.maxBytes = this.maxResultBytes;
    try {
      slot.worker.postMessage(message);
    } catch (cloneError) {
      // A payload that cannot cross threads: the caller's bug, and the worker is untouched.
      this.release(slot);
      this.settle(job, this.internal(cloneError, `cannot send '${job.kind}' to a worker`));
    }
  }

  private release(slot: Slot): void {
    if (slot.job !== null) slot.job.slot = null;
    slot.job = null;
    slot.state = 'idle';
    // An idle pool must not keep the process alive: a CLI run that never closes it can still exit.
    slot.worker.unref();
  }

  private spawn(): Slot {
    const options: WorkerOptions = { workerData: this.boot };
    if (this.resourceLimits !== undefined) options.resourceLimits = this.resourceLimits;
    const worker = new Worker(BOOTSTRAP, options);
    let settleReady: (error?: Error) => void = () => {};
    const ready = new Promise<void>((resolve, reject) => {
      settleReady = (error) => (error === undefined ? resolve() : reject(error));
    });
    // Only warm() awaits readiness; a failed start is otherwise reported through the queued requests.
    metElsewhere(ready);
    const slot: Slot = {
      worker,
      spawnedAt: performance.now(),
      ready,
      settleReady,
      startTimer: undefined,
      state: 'starting',
      job: null,
    };
    slot.startTimer = setTimeout(() => {
      if (slot.state === 'starting') {
        this.startFailed(slot, new Error(`the worker did not start within ${this.startTimeoutMs} ms`));
      }
    }, this.startTimeoutMs);
    this.slots.push(slot);
    worker.on('message', (message: FromWorker) => this.onMessage(slot, message));
    worker.on('error', (error) => this.onDeath(slot, error));
    worker.on('exit', (code) => this.onDeath(slot, new Error(`worker thread exited with code ${code}`)));
    worker.on('messageerror', (error) => this.onDeath(slot, error));
    return slot;
  }

  private onMessage(slot: Slot, message: FromWorker): void {
    if (slot.state === 'gone') return;
    switch (message.type) {
      case 'ready': {
        clearTimeout(slot.startTimer);
        const startMs = performance.now() - slot.spawnedAt;
        this.counters.starts++;
        this.counters.lastStartMs = Math.round(startMs * 10) / 10;
        slot.settleReady();
        this.release(slot);
        this.dispatch();
        return;
      }
      case 'initError':
        this.startFailed(
          slot,
          message.error.domain ? reviveDomainError(message.error.error) : revive(message.error),
        );
        return;
      case 'ask':
        this.onAsk(slot, message.id, message.payload);
        return;
      case 'result':
      case 'error': {
        const job = slot.job;
        if (job === null || job.id !== message.id) return;
        this.release(slot);
        if (message.type === 'result') this.settle(job, null, message.value);
        else this.settle(job, this.toCallerError(message.error, job.kind));
        this.dispatch();
        return;
      }
    }
  }

  /** Answers a worker's ask; its job's deadline stands still meanwhile. */
  private onAsk(slot: Slot, id: number, payload: unknown): void {
    const job = slot.job;
    const answer = this.answer;
    if (answer === undefined) {
      this.reply(slot, {
        type: 'answer',
        id,
        ok: false,
        error: errorForWorker(new Error('this pool answers no asks')),
      });
      return;
    }
    if (job !== null) this.pause(job);
    let answering: Promise<unknown>;
    try {
      answering = job?.context ? job.context(() => answer(payload)) : answer(payload);
    } catch (e) {
      answering = Promise.reject(e);
    }
    answering
      .then(
        (value) => this.reply(slot, { type: 'answer', id, ok: true, value }),
        (e: unknown) => this.reply(slot, { type: 'answer', id, ok: false, error: errorForWorker(e) }),
      )
      .finally(() => {
        if (job !== null) this.resume(job);
      });
  }

  private reply(slot: Slot, message: AnswerMessage): void {
    if (slot.state === 'gone') return;
    try {
      slot.worker.postMessage(message);
    } catch (cloneError) {
      slot.worker.postMessage({
        type: 'answer',
        id: message.id,
        ok: false,
        error: errorForWorker(cloneError),
      } satisfies AnswerMessage);
    }
  }

  private pause(job: Job): void {
    if (job.asking++ > 0 || job.timer === undefined) return;
    clearTimeout(job.timer);
    job.timer = undefined;
    job.leftMs -= performance.now() - job.timerStartedAt;
  }

  private resume(job: Job): void {
    if (--job.asking > 0 || job.done) return;
    job.timerStartedAt = performance.now();
    job.timer = setTimeout(() => this.expire(job), Math.max(0, job.leftMs));
  }

  /** An uncaught error, an exit we did not ask for, or a message that could not be read. */
  private onDeath(slot: Slot, error: Error): void {
    if (slot.state === 'gone') return;
    if (slot.state === 'starting') {
      this.startFailed(slot, error);
      return;
    }
    const job = slot.job;
    this.retire(slot, error);
    if (job !== null) {
      this.counters.crashes++;
      this.settle(job, this.internal(error, `worker crashed running '${job.kind}'`));
    } else {
      this.log(`worker pool: an idle worker died: ${describe(error)}`, 'warn');
    }
    this.dispatch();
  }

  /**
   * A worker that cannot start almost always means one that never will (a missing store, a broken
   * module): fail the waiting requests now, and stop keeping the pool warm, rather than start worker
   * after worker in a loop. The next run() or warm() tries again.
   */
  private startFailed(slot: Slot, error: Error): void {
    this.keepWarm = 0;
    this.retire(slot, error);
    slot.settleReady(error);
    const failure = this.internal(error, 'worker pool: a worker failed to start');
    for (const job of this.queue.splice(0)) this.settle(job, failure);
  }

  private expire(job: Job): void {
    job.timer = undefined;
    this.counters.timeouts++;
    this.drop(job, new ExecutionTimeout(TIMEOUT_MESSAGE));
  }

  private abort(job: Job, reason: unknown): void {
    job.onAbort = undefined;
    this.drop(job, reason);
  }

  /** Ends a request before its answer: out of the queue, or by terminating the worker running it. */
  private drop(job: Job, error: unknown): void {
    const slot = job.slot;
    if (!job.admitted) {
      const index = job.scope?.waiting.indexOf(job) ?? -1;
      if (index === -1) return;
      job.scope?.waiting.splice(index, 1);
    } else if (slot === null) {
      const index = this.queue.indexOf(job);
      if (index === -1) return;
      this.queue.splice(index, 1);
    } else {
      slot.job = null;
      this.retire(slot, error);
    }
    this.settle(job, error);
    this.dispatch();
  }

  private retire(slot: Slot, reason: unknown): void {
    slot.state = 'gone';
    clearTimeout(slot.startTimer);
    const index = this.slots.indexOf(slot);
    if (index !== -1) this.slots.splice(index, 1);
    slot.settleReady(reason instanceof Error ? reason : new Error(String(reason)));
    // Waited for at close; a worker whose terminate fails has exited all the same.
    const exited = afterSettled(slot.worker.terminate());
    this.exiting.add(exited);
    void exited.then(() => this.exiting.delete(exited));
  }

  private settle(job: Job, error: unknown, value?: unknown): void {
    job.done = true;
    if (job.timer !== undefined) clearTimeout(job.timer);
    job.timer = undefined;
    if (job.onAbort !== undefined) job.signal?.removeEventListener('abort', job.onAbort);
    job.onAbort = undefined;
    if (error === null) job.resolve(value);
    else job.reject(error);
    const scope = job.scope;
    if (scope !== undefined && job.admitted) {
      job.admitted = false;
      scope.admitted--;
      if (this.closed) {
        for (const waiting of scope.waiting.splice(0)) this.settle(waiting, new PoolClosedError());
      } else {
        // The unit's next jobs take the place this one leaves (one, unless the queue refuses it).
        while (scope.admitted < scope.limit) {
          const next = scope.waiting.shift();
          if (next === undefined) break;
          this.admit(next);
        }
      }
    }
  }

  private toCallerError(error: SerializedError, kind: string): Error {
    if (error.domain) return reviveDomainError(error.error);
    return this.internal(revive(error), `'${kind}' failed in a worker`);
  }

  /** Logged here, with its cause; the caller gets an InternalError that says nothing more. */
  private internal(cause: unknown, context: string): InternalError {
    this.log(`${context}: ${describe(cause)}`, 'warn');
    return new InternalError('internal error', { cause });
  }
}

/** An error met answering an ask, as the worker rebuilds it (a domain error keeps its class). */
function errorForWorker(e: unknown): SerializedError {
  if (e instanceof DomainError) return { domain: true, error: serializeDomainError(e) };
  const error = e instanceof Error ? e : new Error(String(e));
  return { domain: false, name: error.name, message: error.message };
}

/** Rebuilds an error that is not a domain error (a bug in a handler) for the log. */
function revive(error: Extract<SerializedError, { domain: false }>): Error {
  const revived = new Error(error.message);
  revived.name = error.name;
  if (error.stack !== undefined) revived.stack = error.stack;
  return revived;
}

function describe(error: unknown): string {
  return describeForLog(error);
}

function positiveInteger(name: string, value: number): number {
  if (!Number.isInteger(value) || value < 1) throw new RangeError(`${name} must be a positive integer`);
  return value;
}

function nonNegativeInteger(name: string, value: number): number {
  if (!Number.isInteger(value) || value < 0) throw new RangeError(`${name} must be a non-negative integer`);
  return value;
}

function positiveNumber(name: string, value: number): number {
  if (!Number.isFinite(value) || value <= 0) throw new RangeError(`${name} must be a positive number`);
  return value;
}
