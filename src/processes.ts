import cluster, { type Worker } from 'node:cluster';
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
 * starts a new API process when one dies, and stops them all on SIGTERM/SIGINT.
 */

/** `alone`: one process; `primary` and `api`: the two sides of `--processes N`. */
export type ProcessRole = 'alone' | 'primary' | 'api';

const LISTENING = 'ethtrace:listening';
/** An API process that dies this soon after it started is not started again (it would die again). */
const MIN_LIFETIME_MS = 5_000;
/** A second SIGTERM, or this long after the first, and the API processes are killed. */
const STOP_DEADLINE_MS = 60_000;

export interface Primary {
  /** The URLs once every API process listens; rejects if one fails to start. */
  listening: Promise<{ httpUrl: string; wsUrl: string }>;
  /** Resolves when the API processes cannot be kept running (one keeps dying): time to stop. */
  failed: Promise<void>;
  /** Stops every API process (each drains its requests) and waits for them. */
  stop(): Promise<void>;
}

/** Forks the API processes (this program again, with the same arguments, as cluster workers). */
export function startPrimary(count: number, keepCounters: boolean, log: (line: string) => void): Primary {
  const counters = keepCounters ? new MemoryCounters() : null;
  const started = new Map<Worker, number>();
  let stopping = false;
  let resolveListening!: (urls: { httpUrl: string; wsUrl: string }) => void;
  let rejectListening!: (e: Error) => void;
  const listening = new Promise<{ httpUrl: string; wsUrl: string }>((resolve, reject) => {
    resolveListening = resolve;
    rejectListening = reject;
  });
  listening.catch(() => {});
  let resolveFailed!: () => void;
  const failed = new Promise<void>((resolve) => {
    resolveFailed = resolve;
  });
  let up = 0;
  let allUp = false;

  const fork = (index: number): void => {
    const worker = cluster.fork({ ETHTRACE_PROCESS_INDEX: String(index) });
    started.set(worker, Date.now());
    worker.on('message', (message: unknown) => {
      const answer = counters && answerExchange(counters, message);
      if (answer) {
        if (worker.isConnected()) worker.send(answer);
        return;
      }
      if (isListening(message) && !allUp && ++up === count) {
        allUp = true;
        resolveListening({ httpUrl: message.httpUrl, wsUrl: message.wsUrl });
      }
    });
    worker.once('exit', (code, signal) => {
      const lived = Date.now() - (started.get(worker) ?? 0);
      started.delete(worker);
      if (stopping) return;
      const how = signal ? `signal ${signal}` : `status ${code}`;
      if (!allUp) {
        // Its own error is on stderr already (the API processes share it).
        rejectListening(new StartFailure(code ?? 1, `an API process exited at start (${how})`));
        return;
      }
      if (lived < MIN_LIFETIME_MS) {
        log(`API process ${index} exited (${how}) ${lived} ms after it started: stopping`);
        process.exitCode = 1;
        resolveFailed();
        return;
      }
      log(`API process ${index} exited (${how}): starting another`);
      fork(index);
    });
  };
  for (let i = 0; i < count; i++) fork(i);

  const stop = async (): Promise<void> => {
    stopping = true;
    const workers = [...started.keys()];
    const exited = Promise.all(
      workers.map((w) =>
        w.isDead() ? Promise.resolve() : new Promise((resolve) => w.once('exit', resolve)),
      ),
    );
    const kill = () => {
      for (const w of workers) if (!w.isDead()) w.process.kill('SIGKILL');
    };
    // A second signal: everything stops at once.
    process.once('SIGINT', kill);
    process.once('SIGTERM', kill);
    const deadline = setTimeout(kill, STOP_DEADLINE_MS);
    deadline.unref();
    for (const w of workers) if (!w.isDead()) w.process.kill('SIGTERM');
    await exited;
    clearTimeout(deadline);
    process.off('SIGINT', kill);
    process.off('SIGTERM', kill);
  };
  return { listening, failed, stop };
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
export function announceListening(urls: { httpUrl: string; wsUrl: string }): void {
  process.send?.({ kind: LISTENING, httpUrl: urls.httpUrl, wsUrl: urls.wsUrl });
}

/**
 * When an API process stops: on SIGTERM from the primary, or when the primary is gone (its IPC
 * channel closes). SIGINT is ignored: a Ctrl-C in a terminal reaches the whole process group, and the
 * primary, which got it too, sends the SIGTERM; taken here as well, it would be a second signal.
 */
export function apiProcessStop(): Promise<void> {
  process.on('SIGINT', () => {});
  return new Promise<void>((resolve) => {
    process.once('SIGTERM', () => resolve());
    process.once('disconnect', () => resolve());
  });
}

function isListening(message: unknown): message is { httpUrl: string; wsUrl: string } {
  const m = message as { kind?: unknown; httpUrl?: unknown } | null;
  return typeof m === 'object' && m !== null && m.kind === LISTENING && typeof m.httpUrl === 'string';
}
