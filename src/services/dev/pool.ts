import type { TypedTransaction } from '@ethereumjs/tx';
import type { Address } from '@ethereumjs/util';
import { RequestFailed } from '../../core/errors.ts';

/** A transaction waiting in the pool, with the order it arrived in (blocks take the oldest first). */
export interface Pooled {
  tx: TypedTransaction;
  sender: Address;
  arrival: number;
}

/** A replacement must raise both fee fields by this many percent (geth's default price bump). */
const PRICE_BUMP_PERCENT = 10n;

/** What the pool holds at one moment, to go back to (evm_snapshot). */
export type PoolSnapshot = ReadonlyMap<string, ReadonlyMap<bigint, Pooled>>;

/**
 * The dev chain's pending transactions by sender and nonce. A transaction whose nonce is its
 * sender's next is ready; a later one waits ("queued") until the gap is filled. `version` moves with
 * every change, so the journal is written only when there is something new to write.
 */
export class PendingPool {
  private readonly bySender = new Map<string, Map<bigint, Pooled>>();
  private arrivals = 0;
  version = 0;

  /** Adds a checked transaction; a same-nonce replacement must outbid the one it replaces. */
  add(tx: TypedTransaction, sender: Address): void {
    const mine = this.senderPool(sender.toString());
    const replaced = mine.get(tx.nonce);
    if (replaced && !outbids(tx, replaced.tx)) throw new RequestFailed('replacement transaction underpriced');
    mine.set(tx.nonce, { tx, sender, arrival: this.arrivals++ });
    this.version++;
  }

  remove(entry: Pooled): void {
    const key = entry.sender.toString();
    const mine = this.bySender.get(key);
    mine?.delete(entry.tx.nonce);
    if (mine?.size === 0) this.bySender.delete(key);
    this.version++;
  }

  /** The first nonce at or after `next` that the sender has no pooled transaction for. */
  nextFreeNonce(sender: Address, next: bigint): bigint {
    const mine = this.bySender.get(sender.toString());
    let nonce = next;
    while (mine?.has(nonce)) nonce++;
    return nonce;
  }

  /** A pooled transaction by hash (eth_getTransactionByHash answers it with no block). */
  find(hash: Uint8Array): TypedTransaction | null {
    for (const mine of this.bySender.values()) {
      for (const { tx } of mine.values()) if (Buffer.compare(tx.hash(), hash) === 0) return tx;
    }
    return null;
  }

  /** As txpool_content shows it: ready transactions are pending, the others queued, by nonce. */
  async content(
    chainNonce: (sender: Address) => Promise<bigint>,
  ): Promise<{ pending: TypedTransaction[]; queued: TypedTransaction[] }> {
    const pending: TypedTransaction[] = [];
    const queued: TypedTransaction[] = [];
    for (const mine of this.bySender.values()) {
      const first = mine.values().next().value;
      if (!first) continue;
      const next = this.nextFreeNonce(first.sender, await chainNonce(first.sender));
      for (const { tx } of mine.values()) (tx.nonce < next ? pending : queued).push(tx);
    }
    const byNonce = (a: TypedTransaction, b: TypedTransaction) => (a.nonce < b.nonce ? -1 : 1);
    return { pending: pending.sort(byNonce), queued: queued.sort(byNonce) };
  }

  /** The oldest pooled transaction whose nonce is its sender's next, or null. */
  async nextReady(chainNonce: (sender: Address) => Promise<bigint>): Promise<Pooled | null> {
    let best: Pooled | null = null;
    for (const mine of this.bySender.values()) {
      const first = mine.values().next().value;
      if (!first) continue;
      const ready = mine.get(await chainNonce(first.sender));
      if (ready && (best === null || ready.arrival < best.arrival)) best = ready;
    }
    return best;
  }

  /**
   * A block's worth of ready transactions: each sender's in nonce order, senders by arrival, as many
   * as fit `gasLimit` (what does not fit waits for the next block).
   */
  async readyBatch(chainNonce: (sender: Address) => Promise<bigint>, gasLimit: bigint): Promise<Pooled[]> {
    const chosen: Pooled[] = [];
    let gas = 0n;
    const senders = [...this.bySender.values()]
      .map((mine) => [...mine.values()].sort((a, b) => (a.tx.nonce < b.tx.nonce ? -1 : 1)))
      .filter((list) => list.length > 0)
      .sort((a, b) => (a[0] as Pooled).arrival - (b[0] as Pooled).arrival);
    for (const list of senders) {
      let nonce = await chainNonce((list[0] as Pooled).sender);
      for (const entry of list) {
        if (entry.tx.nonce !== nonce || gas + entry.tx.gasLimit > gasLimit) break;
        chosen.push(entry);
        gas += entry.tx.gasLimit;
        nonce++;
      }
    }
    return chosen;
  }

  /** Every pooled transaction, oldest first (what the journal keeps). */
  inArrivalOrder(): TypedTransaction[] {
    return [...this.bySender.values()]
      .flatMap((mine) => [...mine.values()])
      .sort((a, b) => a.arrival - b.arrival)
      .map((entry) => entry.tx);
  }

  snapshot(): PoolSnapshot {
    return new Map([...this.bySender].map(([sender, mine]) => [sender, new Map(mine)]));
  }

  restore(snapshot: PoolSnapshot): void {
    this.bySender.clear();
    for (const [sender, mine] of snapshot) this.bySender.set(sender, new Map(mine));
    this.version++;
  }

  /** The pooled transactions of one sender by nonce, made on first use. */
  private senderPool(sender: string): Map<bigint, Pooled> {
    let mine = this.bySender.get(sender);
    if (!mine) {
      mine = new Map();
      this.bySender.set(sender, mine);
    }
    return mine;
  }
}

/** A replacement for a pooled transaction must raise its fee cap and its tip by the price bump. */
function outbids(tx: TypedTransaction, old: TypedTransaction): boolean {
  const bumped = (v: bigint) => v + (v * PRICE_BUMP_PERCENT) / 100n;
  const cap = (t: TypedTransaction) => ('maxFeePerGas' in t ? t.maxFeePerGas : t.gasPrice);
  const tip = (t: TypedTransaction) => ('maxPriorityFeePerGas' in t ? t.maxPriorityFeePerGas : t.gasPrice);
  return cap(tx) >= bumped(cap(old)) && tip(tx) >= bumped(tip(old));
}
