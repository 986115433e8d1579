import type { TypedTransaction } from '@ethereumjs/tx';
import { equalsBytes } from '@ethereumjs/util';
import { afterSettled } from '../core/caught.ts';
import { describeForLog } from '../core/errors.ts';
import type { LogLine } from '../core/log.ts';
import type { BlockRef, ChainStore } from '../store/types.ts';

/** How often the store's head is read for blocks another process (an `import`) committed. */
export const HEAD_POLL_MS = 250;

type Listener<T> = (value: T) => void;

/** How many announced blocks are remembered to recognise a reorg and name the blocks it removed. */
export const REORG_WINDOW = 128;

/**
 * New canonical blocks and pending transactions, for subscriptions and filters. Blocks are noticed
 * by reading the store's head: at once when this process mined them (the dev chain calls `check`),
 * within HEAD_POLL_MS when another process committed them (or the upstream's head moved). Each new
 * block is announced once, in order. When the head leaves the blocks announced (a reorg, an
 * evm_revert), the blocks it left are announced as removed, newest first, down to the common
 * ancestor, then the new branch's blocks; a reorg deeper than REORG_WINDOW starts over at the head.
 */
export class ChainEvents {
  /** The announced blocks, contiguous, newest last (at most REORG_WINDOW of them). */
  private announced: BlockRef[] = [];
  private readonly removedListeners = new Set<Listener<BlockRef>>();
  private checking: Promise<void> = Promise.resolve();
  private readonly blockListeners = new Set<Listener<BlockRef>>();
  private readonly pendingListeners = new Set<Listener<TypedTransaction>>();
  private readonly rewindListeners = new Set<Listener<bigint>>();
  private timer: NodeJS.Timeout | null = null;
  /** Whether the last poll failed: a failing store is logged once, and again when it recovers. */
  private failing = false;

  constructor(
    private readonly store: ChainStore,
    private readonly log: LogLine = () => {},
  ) {}

  /** Starts watching the head (the first read sets the starting point; nothing before it is announced). */
  async start(): Promise<void> {
    await this.check();
    this.timer = setInterval(() => void this.poll(), HEAD_POLL_MS);
    this.timer.unref();
  }

  private async poll(): Promise<void> {
    try {
      await this.check();
      if (this.failing) this.log('head poll recovered: new blocks are announced again');
      this.failing = false;
    } catch (e) {
      if (!this.failing)
        this.log(`head poll failed (logged once until it recovers): ${describeForLog(e)}`, 'warn');
      this.failing = true;
    }
  }

  stop(): void {
    if (this.timer !== null) clearInterval(this.timer);
    this.timer = null;
  }

  /** Announces the blocks committed since the last check; concurrent checks run one after another. */
  check(): Promise<void> {
    const run = this.checking.then(() => this.announceNewBlocks());
    // A failed read must not stop later checks.
    this.checking = afterSettled(run);
    return run;
  }

  onBlock(listener: Listener<BlockRef>): () => void {
    this.blockListeners.add(listener);
    return () => this.blockListeners.delete(listener);
  }

  /** A block announced before is no longer canonical (a reorg, an evm_revert); newest first. */
  onRemoved(listener: Listener<BlockRef>): () => void {
    this.removedListeners.add(listener);
    return () => this.removedListeners.delete(listener);
  }

  /** The head moved back to this block (evm_revert, a reorg); later blocks will be announced anew. */
  onRewind(listener: Listener<bigint>): () => void {
    this.rewindListeners.add(listener);
    return () => this.rewindListeners.delete(listener);
  }

  onPendingTransaction(listener: Listener<TypedTransaction>): () => void {
    this.pendingListeners.add(listener);
    return () => this.pendingListeners.delete(listener);
  }

  /** A transaction entered the pending pool. */
  pending(tx: TypedTransaction): void {
    for (const listener of this.pendingListeners) this.deliver(listener, tx);
  }

  /** One listener's failure is its own: logged, and the others still hear of the event. */
  private deliver<T>(listener: Listener<T>, value: T): void {
    try {
      listener(value);
    } catch (e) {
      this.log(`a chain event listener failed: ${describeForLog(e)}`, 'warn');
    }
  }

  private async announceNewBlocks(): Promise<void> {
    const head = await this.store.getHead();
    if (head === null) return;
    const tip = this.announced.at(-1);
    if (tip === undefined) {
      this.announced = [head];
      return;
    }
    if (equalsBytes(tip.hash, head.hash)) return;
    // The usual case: the head extends what was announced, which is still canonical.
    if (
      head.number > tip.number &&
      equalsBytes((await this.store.getCanonicalHash(tip.number)) ?? EMPTY, tip.hash)
    ) {
      for (let number = tip.number + 1n; number <= head.number; number++) {
        const hash = number === head.number ? head.hash : await this.store.getCanonicalHash(number);
        if (hash === null) break;
        this.announce({ number, hash });
      }
      return;
    }
    await this.reorganise(head);
  }

  /** The head left the announced blocks: remove them down to the common ancestor, then announce the new branch. */
  private async reorganise(head: BlockRef): Promise<void> {
    const branch: BlockRef[] = [];
    const oldest = this.announced[0]?.number ?? 0n;
    let cursor: BlockRef | null = head;
    while (cursor !== null && !this.wasAnnounced(cursor)) {
      // Below every block remembered: the common ancestor is further back than REORG_WINDOW.
      if (cursor.number < oldest) {
        cursor = null;
        break;
      }
      branch.push(cursor);
      cursor = cursor.number === 0n ? null : await this.parentOf(cursor);
    }
    const ancestor =
      cursor === null ? -1 : this.announced.findIndex((b) => equalsBytes(b.hash, (cursor as BlockRef).hash));
    const removed = ancestor === -1 ? [...this.announced] : this.announced.slice(ancestor + 1);
    for (const block of removed.reverse())
      for (const listener of this.removedListeners) this.deliver(listener, block);
    if (ancestor === -1) {
      // Deeper than remembered: start over at the head, as on a first look.
      for (const listener of this.rewindListeners) this.deliver(listener, head.number);
      this.announced = [head];
      return;
    }
    this.announced = this.announced.slice(0, ancestor + 1);
    const base = this.announced.at(-1) as BlockRef;
    for (const listener of this.rewindListeners) this.deliver(listener, base.number);
    for (const block of branch.reverse()) this.announce(block);
  }

  private announce(block: BlockRef): void {
    this.announced.push(block);
    if (this.announced.length > REORG_WINDOW) this.announced.shift();
    for (const listener of this.blockListeners) this.deliver(listener, block);
  }

  private wasAnnounced(block: BlockRef): boolean {
    return this.announced.some((b) => b.number === block.number && equalsBytes(b.hash, block.hash));
  }

  private async parentOf(block: BlockRef): Promise<BlockRef | null> {
    const header = await this.store.getHeader(block.hash);
    if (header === null) return null;
    return { number: block.number - 1n, hash: parentHashOf(header) };
  }
}

/** A header's parent hash, read from its RLP without decoding the rest. */
function parentHashOf(header: Uint8Array): Uint8Array {
  const list = header[0] ?? 0;
  const at = list >= 0xf8 ? 1 + (list - 0xf7) : 1;
  if (header[at] !== 0xa0) throw new Error('a header whose first field is not a 32-byte hash');
  return header.subarray(at + 1, at + 33);
}

const EMPTY = new Uint8Array();
