import type { KeyLimits } from './bucket.ts';
import type { ExchangeAsk, ExchangeResult, MemoryCounters, SharedCounters } from './ledger.ts';

/**
 * Shared counters kept by the primary process of `ethtrace start --processes N` (src/processes.ts):
 * each API process asks it over the cluster's IPC channel, and the primary answers from one
 * MemoryCounters. Exchanges are rare (one per lease, see ledger.ts), so a round trip over the
 * channel is paid by few bodies.
 */

const KIND = 'ethtrace:counters';

interface ExchangeMessage {
  kind: typeof KIND;
  id: number;
  keyId: string;
  ask: ExchangeAsk;
  limits: KeyLimits;
}

interface ResultMessage {
  kind: typeof KIND;
  id: number;
  result?: ExchangeResult;
  error?: string;
}

/** The IPC channel of a cluster worker (`process`), or anything shaped like it in tests. */
export interface Channel {
  send?(message: unknown): unknown;
  on(event: 'message', listener: (message: unknown) => void): unknown;
}

/** A key's exchange would wait forever on a primary that is gone; past this it fails (and is logged). */
const EXCHANGE_TIMEOUT_MS = 5_000;

/** The worker's side: exchanges sent to the primary. */
export class IpcCounters implements SharedCounters {
  readonly description = 'the primary process';
  private nextId = 0;
  private readonly waiting = new Map<
    number,
    { resolve: (r: ExchangeResult) => void; reject: (e: Error) => void; timer: NodeJS.Timeout }
  >();

  constructor(private readonly channel: Channel) {
    channel.on('message', (message) => {
      if (!isResult(message)) return;
      const waiter = this.waiting.get(message.id);
      if (!waiter) return;
      this.waiting.delete(message.id);
      clearTimeout(waiter.timer);
      if (message.result) waiter.resolve(message.result);
      else waiter.reject(new Error(`shared limits: ${message.error ?? 'no answer'}`));
    });
  }

  exchange(keyId: string, ask: ExchangeAsk, limits: KeyLimits): Promise<ExchangeResult> {
    const id = ++this.nextId;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiting.delete(id);
        reject(
          new Error(`shared limits: the primary process did not answer within ${EXCHANGE_TIMEOUT_MS} ms`),
        );
      }, EXCHANGE_TIMEOUT_MS);
      timer.unref();
      this.waiting.set(id, { resolve, reject, timer });
      const message: ExchangeMessage = { kind: KIND, id, keyId, ask, limits };
      if (!this.channel.send) reject(new Error('shared limits: this process has no primary'));
      else this.channel.send(message);
    });
  }
}

/**
 * The primary's side: the answer to one message from a worker, or null when the message is not an
 * exchange (the cluster's channel carries other messages too).
 */
export function answerExchange(counters: MemoryCounters, message: unknown): ResultMessage | null {
  if (!isExchange(message)) return null;
  try {
    return {
      kind: KIND,
      id: message.id,
      result: counters.exchangeNow(message.keyId, message.ask, message.limits),
    };
  } catch (e) {
    return { kind: KIND, id: message.id, error: (e as Error).message };
  }
}

function isExchange(message: unknown): message is ExchangeMessage {
  const m = message as Partial<ExchangeMessage> | null;
  return typeof m === 'object' && m !== null && m.kind === KIND && typeof m.keyId === 'string' && !!m.ask;
}

function isResult(message: unknown): message is ResultMessage {
  const m = message as Partial<ResultMessage> | null;
  return (
    typeof m === 'object' &&
    m !== null &&
    m.kind === KIND &&
    typeof m.id === 'number' &&
    !('keyId' in m) &&
    (m.result !== undefined || m.error !== undefined)
  );
}
