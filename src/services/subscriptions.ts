import { randomBytes } from 'node:crypto';
import { toHex } from '../primitives/hex.ts';
import { formatHeader } from '../rpc/format/block.ts';
import { formatTransaction } from '../rpc/format/transaction.ts';
import type { BlockRef } from '../store/types.ts';
import type { ChainService } from './chain.ts';
import type { ChainEvents } from './events.ts';
import type { LogCriteria, LogService } from './logs.ts';

/** Where a subscription's notifications go: one WebSocket connection. */
export interface Subscriber {
  notify(subscription: string, result: unknown): void;
  /** Runs `fn` once the connection is gone, so its subscriptions end with it. */
  onClose(fn: () => void): void;
}

export type SubscriptionKind =
  | { kind: 'newHeads' }
  | { kind: 'logs'; criteria: LogCriteria }
  /** `full`: the transaction objects rather than their hashes (geth's second parameter). */
  | { kind: 'newPendingTransactions'; full: boolean };

/** geth's subscription ids: 16 random bytes in hex. */
export function newId(): string {
  return toHex(randomBytes(16));
}

/**
 * eth_subscribe over WebSocket: `newHeads` sends each new block's header, `logs` each matching log
 * of each new block (in block order), `newPendingTransactions` each pending transaction's hash (or
 * the transaction itself).
 */
export class SubscriptionService {
  private readonly bySubscriber = new Map<Subscriber, Map<string, () => void>>();

  constructor(
    private readonly events: ChainEvents,
    private readonly chain: ChainService,
    private readonly logs: LogService,
  ) {}

  subscribe(subscriber: Subscriber, what: SubscriptionKind): string {
    const id = newId();
    let mine = this.bySubscriber.get(subscriber);
    if (!mine) {
      const created = new Map<string, () => void>();
      this.bySubscriber.set(subscriber, created);
      subscriber.onClose(() => {
        for (const stop of created.values()) stop();
        this.bySubscriber.delete(subscriber);
      });
      mine = created;
    }
    mine.set(
      id,
      this.listen(what, (result) => subscriber.notify(id, result)),
    );
    return id;
  }

  /** True if the subscription existed on this connection (ids of other connections are not touched). */
  unsubscribe(subscriber: Subscriber, id: string): boolean {
    const stop = this.bySubscriber.get(subscriber)?.get(id);
    if (!stop) return false;
    stop();
    this.bySubscriber.get(subscriber)?.delete(id);
    return true;
  }

  private listen(what: SubscriptionKind, send: (result: unknown) => void): () => void {
    if (what.kind === 'newPendingTransactions') {
      const full = what.full;
      return this.events.onPendingTransaction((tx) =>
        send(full ? formatTransaction(tx, null) : toHex(tx.hash())),
      );
    }
    // Blocks are rendered one after another so notifications keep block order.
    let delivered: Promise<void> = Promise.resolve();
    const deliver =
      what.kind === 'newHeads'
        ? async (block: BlockRef) => {
            const header = await this.chain.header(block.hash);
            if (header) send(formatHeader(header));
          }
        : async (block: BlockRef) => {
            for (const log of await this.logs.getLogs({ blockHash: block.hash }, what.criteria)) send(log);
          };
    let active = true;
    const stop = this.events.onBlock((block) => {
      delivered = delivered.then(() => (active ? deliver(block) : undefined)).catch(() => {});
    });
    return () => {
      active = false;
      stop();
    };
  }
}
