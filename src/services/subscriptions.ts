import { randomBytes } from 'node:crypto';
import { setImmediate as yieldToLoop } from 'node:timers/promises';
import type { TypedTransaction } from '@ethereumjs/tx';
import type { ChainReader } from '../chain/reader.ts';
import { describeForLog, TooManySubscriptions } from '../core/errors.ts';
import type { LogLine } from '../core/log.ts';
import type { Subscriber } from '../core/subscriber.ts';
import { bytesKey, toHex } from '../primitives/hex.ts';
import type { BlockRef } from '../store/types.ts';
import { formatHeader } from '../wire/block.ts';
import { formatTransaction } from '../wire/transaction.ts';
import { type ChainEvents, REORG_WINDOW } from './events.ts';
import { CompiledFilter, type LogCriteria, type LogService, type WireLog } from './logs.ts';

export type SubscriptionKind =
  | { kind: 'newHeads' }
  | { kind: 'logs'; criteria: LogCriteria }
  /** `full`: the transaction objects rather than their hashes (geth's second parameter). */
  | { kind: 'newPendingTransactions'; full: boolean };

/** Reth's default cap (--rpc.max-subscriptions-per-connection). */
export const MAX_SUBSCRIPTIONS_PER_CONNECTION = 1024;
// Notifications sent between turns of the event loop during a block's fan-out, so thousands of
// subscriptions delay other requests by a few milliseconds rather than for the whole fan-out.
const FANOUT_YIELD_EVERY = 256;

/** geth's subscription ids: 16 random bytes in hex. */
export function newId(): string {
  return toHex(randomBytes(16));
}

interface Subscription {
  id: string;
  subscriber: Subscriber;
  kind: SubscriptionKind['kind'];
  /** `logs`: the criteria, prepared once. */
  filter?: CompiledFilter;
  /** `newPendingTransactions`: whole transactions rather than hashes. */
  full?: boolean;
}

/**
 * eth_subscribe over WebSocket: `newHeads` sends each new block's header, `logs` each matching log
 * of each new block (in block order), `newPendingTransactions` each pending transaction's hash (or
 * the transaction itself).
 *
 * Each event is read and serialized once, whatever the number of subscriptions, and the fan-out
 * yields to the event loop as it goes: subscriptions cost one send each, not one render each.
 */
export class SubscriptionService {
  private readonly bySubscriber = new Map<Subscriber, Map<string, Subscription>>();
  private readonly heads = new Set<Subscription>();
  private readonly logs = new Set<Subscription>();
  private readonly pending = new Set<Subscription>();
  /** The logs of recent blocks by hash (see deliverRemoved). */
  private readonly recentLogs = new Map<string, WireLog[]>();
  /** Blocks are delivered one after another, so every subscription sees them in order. */
  private delivered: Promise<void> = Promise.resolve();

  constructor(
    events: ChainEvents,
    private readonly chain: ChainReader,
    private readonly logService: LogService,
    private readonly maxPerConnection = MAX_SUBSCRIPTIONS_PER_CONNECTION,
    private readonly log: LogLine = () => {},
  ) {
    events.onBlock((block) => {
      if (this.heads.size === 0 && this.logs.size === 0) return;
      // A block that cannot be read (a damaged record) loses its notifications, not the later blocks'.
      this.delivered = this.delivered
        .then(() => this.deliverBlock(block))
        .catch((e) =>
          this.log(`notifications of block ${block.number} failed: ${describeForLog(e)}`, 'warn'),
        );
    });
    events.onRemoved((block) => {
      if (this.logs.size === 0) return;
      this.delivered = this.delivered
        .then(() => this.deliverRemoved(block))
        .catch((e) => this.log(`removed logs of block ${block.number} failed: ${describeForLog(e)}`, 'warn'));
    });
    events.onPendingTransaction((tx) => this.deliverPending(tx));
  }

  subscribe(subscriber: Subscriber, what: SubscriptionKind): string {
    let mine = this.bySubscriber.get(subscriber);
    if (mine && mine.size >= this.maxPerConnection) {
      throw new TooManySubscriptions(
        `too many subscriptions on this connection (at most ${this.maxPerConnection}): eth_unsubscribe some first`,
      );
    }
    if (!mine) {
      const created = new Map<string, Subscription>();
      this.bySubscriber.set(subscriber, created);
      subscriber.onClose(() => {
        for (const sub of created.values()) this.setOf(sub.kind).delete(sub);
        this.bySubscriber.delete(subscriber);
      });
      mine = created;
    }
    const id = newId();
    const sub: Subscription = { id, subscriber, kind: what.kind };
    if (what.kind === 'logs') sub.filter = new CompiledFilter(what.criteria);
    if (what.kind === 'newPendingTransactions') sub.full = what.full;
    mine.set(id, sub);
    this.setOf(sub.kind).add(sub);
    return id;
  }

  /** True if the subscription existed on this connection (ids of other connections are not touched). */
  unsubscribe(subscriber: Subscriber, id: string): boolean {
    const mine = this.bySubscriber.get(subscriber);
    const sub = mine?.get(id);
    if (!mine || !sub) return false;
    mine.delete(id);
    this.setOf(sub.kind).delete(sub);
    return true;
  }

  private setOf(kind: SubscriptionKind['kind']): Set<Subscription> {
    return kind === 'logs' ? this.logs : kind === 'newPendingTransactions' ? this.pending : this.heads;
  }

  private async deliverBlock(block: BlockRef): Promise<void> {
    let sent = 0;
    // Past FANOUT_YIELD_EVERY sends, lets other work run; subscriptions removed meanwhile are skipped.
    const pace = async () => {
      if (++sent % FANOUT_YIELD_EVERY === 0) await yieldToLoop();
    };
    if (this.heads.size > 0) {
      const header = await this.chain.header(block.hash);
      if (header) {
        const json = JSON.stringify(formatHeader(header));
        for (const sub of [...this.heads]) {
          if (!this.heads.has(sub)) continue;
          this.notify(sub, json);
          await pace();
        }
      }
    }
    if (this.logs.size > 0) {
      const logs = await this.logService.blockLogs(block.hash);
      this.remember(block, logs);
      if (logs.length === 0) return;
      const texts: Array<string | undefined> = [];
      for (const sub of [...this.logs]) {
        for (let i = 0; i < logs.length; i++) {
          if (!this.logs.has(sub)) break;
          const log = logs[i];
          if (!log || !sub.filter?.matches(log)) continue;
          texts[i] ??= JSON.stringify(log);
          this.notify(sub, texts[i] as string);
          await pace();
        }
      }
    }
  }

  /**
   * A block a reorg (or an evm_revert) removed: its logs go again to the subscriptions they matched,
   * with `removed: true`, as geth sends them. They are the ones sent when the block came (its
   * records may be gone from the store by now).
   */
  private async deliverRemoved(block: BlockRef): Promise<void> {
    const key = bytesKey(block.hash);
    const logs = this.recentLogs.get(key) ?? [];
    this.recentLogs.delete(key);
    const texts: Array<string | undefined> = [];
    for (const sub of [...this.logs]) {
      for (let i = 0; i < logs.length; i++) {
        const log = logs[i];
        if (!this.logs.has(sub) || !log || !sub.filter?.matches(log)) continue;
        texts[i] ??= JSON.stringify({ ...log, removed: true });
        this.notify(sub, texts[i] as string);
      }
    }
  }

  /** The logs of the blocks lately announced, for the notifications of their removal. */
  private remember(block: BlockRef, logs: WireLog[]): void {
    this.recentLogs.set(bytesKey(block.hash), logs);
    if (this.recentLogs.size > REORG_WINDOW) {
      const oldest = this.recentLogs.keys().next().value;
      if (oldest !== undefined) this.recentLogs.delete(oldest);
    }
  }

  /** One subscriber's failure to take a notification is logged and stops no one else's. */
  private notify(sub: Subscription, resultJson: string): void {
    try {
      sub.subscriber.notify(sub.id, resultJson);
    } catch (e) {
      this.log(`notification to subscription ${sub.id} failed: ${describeForLog(e)}`, 'warn');
    }
  }

  private deliverPending(tx: TypedTransaction): void {
    if (this.pending.size === 0) return;
    let hash: string | undefined;
    let full: string | undefined;
    for (const sub of this.pending) {
      if (sub.full) {
        full ??= JSON.stringify(formatTransaction(tx, null));
        this.notify(sub, full);
      } else {
        hash ??= JSON.stringify(toHex(tx.hash()));
        this.notify(sub, hash);
      }
    }
  }
}
