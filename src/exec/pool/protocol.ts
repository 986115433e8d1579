import type { SerializedDomainError } from '../../core/errors.ts';

// The messages between the pool (main thread) and its workers. Everything here crosses a thread
// boundary by structured clone, so it is plain data: errors travel as fields and are rebuilt.

/**
 * One kind of work a worker serves. The payload and the result are structured-cloned: class
 * instances arrive as plain objects, a Buffer as a Uint8Array. Return large results as JSON already
 * encoded to bytes: a Uint8Array at the top level, in a top-level array, or in an array field of a
 * top-level object is transferred, not copied, so the main thread neither copies nor encodes it.
 */
// `never` lets a module declare each handler with its own payload type and still form a Handlers.
export type Handler = (payload: never) => unknown;

export type Handlers = Record<string, Handler>;

/**
 * What a worker's module may ask of the main thread while a job runs (the pool's `answer` option):
 * the answer, or the error the main thread met, rebuilt (a domain error as its own class). The job's
 * deadline stands still while it waits: the deadline bounds execution, and what the main thread
 * does for it has its own bound there.
 */
export interface WorkerContext {
  ask(payload: unknown): Promise<unknown>;
}

/** What the pool's `workerModule` exports. `init` runs once per worker, before its first request. */
export interface WorkerModule {
  init(workerData: unknown, context: WorkerContext): Promise<Handlers> | Handlers;
}

/** The worker's own `workerData`: which module to serve and the data to give its `init`. */
export interface BootData {
  moduleUrl: string;
  data: unknown;
}

export interface RunMessage {
  type: 'run';
  id: number;
  kind: string;
  payload: unknown;
  /**
   * The most bytes the answer may take (strings counted by length, byte arrays by size): past it the
   * job fails with ResponseTooLarge, and tracers stop as soon as their output passes it.
   */
  maxBytes?: number;
}

export type FromWorker =
  | { type: 'ready' }
  | { type: 'initError'; error: SerializedError }
  | { type: 'result'; id: number; value: unknown }
  | { type: 'error'; id: number; error: SerializedError }
  /** A question of the running job for the main thread (WorkerContext.ask), numbered by the worker. */
  | { type: 'ask'; id: number; payload: unknown };

/** The main thread's answer to an ask. */
export type AnswerMessage =
  | { type: 'answer'; id: number; ok: true; value: unknown }
  | { type: 'answer'; id: number; ok: false; error: SerializedError };

/** What the pool sends a worker. */
export type ToWorker = RunMessage | AnswerMessage;

/** A domain error as its kind and fields (rebuilt as its class); anything else as a bug to log. */
export type SerializedError =
  | { domain: true; error: SerializedDomainError }
  | { domain: false; name: string; message: string; stack?: string };
