// The worker side of the pool (loaded by bootstrap.mjs once tsx is registered): initialise the
// served module once, then answer one request at a time. The pool never sends a second request
// before the first is answered, so there is no queue here.

import { getHeapSpaceStatistics, setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { type MessagePort, parentPort, workerData } from 'node:worker_threads';
import { DomainError, ResponseTooLarge, reviveDomainError, serializeDomainError } from '../../core/errors.ts';
import { limitOutput, OutputLimitExceeded } from '../responseLimit.ts';
import type {
  AnswerMessage,
  BootData,
  FromWorker,
  Handlers,
  RunMessage,
  SerializedError,
  ToWorker,
  WorkerContext,
  WorkerModule,
} from './protocol.ts';

type AnyHandler = (payload: unknown) => unknown;

/**
 * A young-generation collection, run between jobs once the young generation holds a lot. A big EVM
 * job allocates tens of megabytes; left to itself V8 scavenges in the middle of the next one,
 * copying everything that job holds (measured: 10–20 ms pauses, the slow tail of a 200-call trace).
 * Between jobs almost nothing is live, and the next job starts with an empty young generation.
 * Small jobs skip it: a collection has a fixed cost of about a millisecond. Null if this V8 does not
 * allow it.
 */
const collectYoung = ((): (() => void) | null => {
  try {
    setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as (options: { type: 'minor' }) => void;
    return () => {
      if (youngBytesUsed() >= COLLECT_YOUNG_ABOVE_BYTES) gc({ type: 'minor' });
    };
  } catch {
    return null;
  }
})();

/** Well below a big job's allocation (a 200-call trace allocates about 40 MB), far above a small one's. */
const COLLECT_YOUNG_ABOVE_BYTES = 16 * 1024 * 1024;

function youngBytesUsed(): number {
  for (const space of getHeapSpaceStatistics())
    if (space.space_name === 'new_space') return space.space_used_size;
  return 0;
}

function requireParentPort(): MessagePort {
  if (parentPort === null) throw new Error('src/exec/pool/worker.ts runs only inside a WorkerPool thread');
  return parentPort;
}

const port = requireParentPort();
const boot = workerData as BootData;

function post(message: FromWorker, transfer: ArrayBuffer[] = []): void {
  port.postMessage(message, transfer);
}

function serializeError(e: unknown): SerializedError {
  if (e instanceof DomainError) return { domain: true, error: serializeDomainError(e) };
  if (e instanceof Error) {
    return e.stack === undefined
      ? { domain: false, name: e.name, message: e.message }
      : { domain: false, name: e.name, message: e.message, stack: e.stack };
  }
  return { domain: false, name: 'Error', message: `non-error thrown: ${String(e)}` };
}

function postError(id: number, e: unknown): void {
  try {
    post({ type: 'error', id, error: serializeError(e) });
  } catch (cloneError) {
    // A DomainError whose `data` cannot be cloned: the request still gets an answer.
    post({ type: 'error', id, error: serializeError(cloneError) });
  }
}

function postResult(id: number, value: unknown): void {
  const transfer: ArrayBuffer[] = [];
  post({ type: 'result', id, value: transferable(value, transfer) }, transfer);
}

/**
 * `value` with its byte arrays made transferable (see Handler): those at the top level, in a
 * top-level array, or in an array field of a top-level object. Transferring detaches the whole
 * ArrayBuffer, so an array that is a view into something larger (a pooled Buffer, a slice of a page)
 * is copied first, which also keeps structured clone from copying the rest of its backing buffer.
 */
function transferable(value: unknown, transfer: ArrayBuffer[]): unknown {
  if (value instanceof Uint8Array) {
    const owned =
      value.buffer instanceof ArrayBuffer &&
      value.byteOffset === 0 &&
      value.byteLength === value.buffer.byteLength &&
      !transfer.includes(value.buffer)
        ? value
        : new Uint8Array(value);
    transfer.push(owned.buffer as ArrayBuffer);
    return owned;
  }
  if (Array.isArray(value)) {
    return value.some((v) => v instanceof Uint8Array) ? value.map((v) => transferable(v, transfer)) : value;
  }
  if (typeof value === 'object' && value !== null && Object.getPrototypeOf(value) === Object.prototype) {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) out[k] = Array.isArray(v) ? transferable(v, transfer) : v;
    return out;
  }
  return value;
}

/**
 * The bytes an answer takes: its strings (by length: the JSON rendered here is ASCII but for quoted
 * user strings) and byte arrays, a few levels down, where the handlers put their rendered JSON.
 */
function answerBytes(value: unknown, depth = 0): number {
  if (typeof value === 'string') return value.length;
  if (value instanceof Uint8Array) return value.byteLength;
  if (depth >= 3 || typeof value !== 'object' || value === null) return 0;
  let n = 0;
  for (const v of Array.isArray(value) ? value : Object.values(value)) n += answerBytes(v, depth + 1);
  return n;
}

async function serve(handlers: Handlers, message: RunMessage): Promise<void> {
  try {
    const handler = Object.hasOwn(handlers, message.kind) ? handlers[message.kind] : undefined;
    if (handler === undefined) throw new Error(`the worker module has no handler for '${message.kind}'`);
    limitOutput(message.maxBytes);
    const value = await (handler as AnyHandler)(message.payload);
    if (message.maxBytes !== undefined && answerBytes(value) > message.maxBytes) {
      throw new ResponseTooLarge(message.maxBytes);
    }
    try {
      postResult(message.id, value);
    } catch (cloneError) {
      postError(message.id, cloneError);
    }
  } catch (e) {
    postError(message.id, e instanceof OutputLimitExceeded ? new ResponseTooLarge(e.limit) : e);
  }
  // After this job's values are out of scope; before the next job if one is already waiting.
  if (collectYoung) setImmediate(collectYoung);
}

/** Asks of the main thread awaiting their answer, by number. */
const asking = new Map<number, { resolve: (value: unknown) => void; reject: (reason: unknown) => void }>();
let nextAsk = 1;

const context: WorkerContext = {
  ask(payload: unknown): Promise<unknown> {
    const id = nextAsk++;
    return new Promise((resolve, reject) => {
      asking.set(id, { resolve, reject });
      post({ type: 'ask', id, payload });
    });
  },
};

function answered(message: AnswerMessage): void {
  const waiter = asking.get(message.id);
  if (waiter === undefined) return;
  asking.delete(message.id);
  if (message.ok) {
    waiter.resolve(message.value);
    return;
  }
  const error = message.error;
  if (error.domain) {
    waiter.reject(reviveDomainError(error.error));
    return;
  }
  const revived = new Error(error.message);
  revived.name = error.name;
  waiter.reject(revived);
}

async function start(): Promise<void> {
  let handlers: Handlers | undefined;
  // Listening from the start: an init may ask of the main thread too. Jobs come only after 'ready'.
  const listener = (message: ToWorker): void => {
    if (message.type === 'answer') answered(message);
    else if (handlers !== undefined) void serve(handlers, message);
  };
  port.on('message', listener);
  try {
    const module = (await import(boot.moduleUrl)) as Partial<WorkerModule>;
    if (typeof module.init !== 'function') throw new Error(`${boot.moduleUrl} exports no init(workerData)`);
    handlers = await module.init(boot.data, context);
  } catch (e) {
    // With no message listener nothing keeps this thread alive: it ends after this reaches the pool.
    port.off('message', listener);
    post({ type: 'initError', error: serializeError(e) });
    return;
  }
  post({ type: 'ready' });
}

await start();
