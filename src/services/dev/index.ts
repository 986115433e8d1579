import type { Common } from '@ethereumjs/common';
import { createTxFromRLP, TransactionType, type TypedTransaction } from '@ethereumjs/tx';
import { Account, Address } from '@ethereumjs/util';
import { loadPeerDasSetup } from '../../chain/crypto.ts';
import type { DevAccount } from '../../chain/devChain.ts';
import type { CallRequest } from '../../core/call.ts';
import { afterSettled } from '../../core/caught.ts';
import { InvalidArgument, RequestFailed } from '../../core/errors.ts';
import type { LogLine } from '../../core/log.ts';
import type { ChainWriter } from '../../ingest/chainWriter.ts';
import { mineBlock } from '../../ingest/devMiner.ts';
import { toHex } from '../../primitives/hex.ts';
import { StoreWriteRefused } from '../../store/errors.ts';
import type { ChainEvents } from '../events.ts';
import { admit, decodeSent, type Head } from './admission.ts';
import { DevClock, MAX_DEV_TIMESTAMP } from './clock.ts';
import { PoolJournal } from './journal.ts';
import { PendingPool, type Pooled } from './pool.ts';
import { DevSigner } from './signer.ts';
import { Snapshots } from './snapshots.ts';

export { MAX_DEV_TIMESTAMP } from './clock.ts';

/**
 * The most blocks one evm_mine / anvil_mine / hardhat_mine may ask for. Every dev block is executed
 * and stored like an imported one; measured here, 3 to 12 ms (with the machine's load) and about
 * 5 KB of store per empty block. 10,000 blocks is then under two minutes and about 50 MB, enough to
 * pass a timelock or a voting period counted in blocks (an interval moves the time), where
 * 0xffffffffffff blocks would mine for millennia. anvil and Hardhat take any count: they do not
 * store empty blocks one by one.
 */
export const MAX_MINE_BLOCKS = 10_000;

/**
 * The dev chain's writer side: transactions are checked as a node checks them (admission.ts) and
 * enter a pending pool (pool.ts, journaled in the store by journal.ts); blocks are mined from the
 * pool through the chain writer (src/ingest/devMiner.ts), so dev blocks are executed and stored
 * exactly like imported ones. With automine (the default) each transaction whose nonce is next is
 * mined into its own block as it arrives; with a block time, a block of whatever is ready is mined
 * on every tick. Writes are serialised: one block at a time.
 */
export class DevService {
  private queue: Promise<unknown> = Promise.resolve();
  private readonly pool = new PendingPool();
  private readonly journal: PoolJournal;
  private readonly clock = new DevClock();
  private readonly snapshots = new Snapshots();
  private readonly keys: DevSigner;
  private events: ChainEvents | null = null;
  private ticker: NodeJS.Timeout | null = null;
  private blockTime: number | null = null;
  /** Set by stop(): a long evm_mine ends after the block it is writing. */
  private stopping = false;
  /** Whether the last write was refused (a full disk): logged once when it starts and once when it ends. */
  private writeRefused = false;

  constructor(
    private readonly writer: ChainWriter,
    accounts: readonly DevAccount[],
    private readonly log: LogLine = () => {},
  ) {
    this.keys = new DevSigner(accounts);
    this.journal = new PoolJournal(writer.store);
    // The pool journaled by the last run goes back into the pool before any request is served.
    this.queue = this.restorePool().catch((e) =>
      this.log(`pool journal not restored: ${(e as Error).message}`, 'warn'),
    );
  }

  get accounts(): readonly DevAccount[] {
    return this.keys.accounts;
  }

  /** Where new blocks and pending transactions are announced (subscriptions and filters). */
  announceTo(events: ChainEvents): void {
    this.events = events;
  }

  /** Mines a block every `seconds` instead of one per transaction (`--block-time`). */
  startInterval(seconds: number): void {
    this.blockTime = seconds;
    this.ticker = setInterval(() => {
      this.serially(() => this.mineFromPool()).catch((e) =>
        this.log(`mining failed: ${(e as Error).message}`, 'warn'),
      );
    }, seconds * 1000);
  }

  /**
   * Stops the block timer and any evm_mine in progress (after the block being written) and waits
   * for the writes under way. What is pending stays in the pool's journal for the next start.
   */
  async stop(): Promise<void> {
    this.stopping = true;
    if (this.ticker !== null) clearInterval(this.ticker);
    this.ticker = null;
    await this.serially(async () => {});
  }

  get automine(): boolean {
    return this.blockTime === null;
  }

  async sendRawTransaction(raw: Uint8Array): Promise<Uint8Array> {
    // Cell proofs (EIP-7594, what cast sends by default) are checked against the full setup.
    if (raw[0] === TransactionType.BlobEIP4844) await loadPeerDasSetup();
    return this.serially(async () => this.submit(decodeSent(raw, this.nextBlockCommon())));
  }

  /** Signs a call with the dev account it is from and submits it; its fees and gas are filled in. */
  async sendTransaction(call: CallRequest & { gas: bigint }): Promise<Uint8Array> {
    return this.serially(async () => {
      const from = this.keys.signer(call.from).address;
      const nonce = call.nonce ?? (await this.nextNonce(from));
      return this.submit(this.keys.signTransaction(call, nonce, this.nextBlockCommon()));
    });
  }

  /** The dev account that signs for `from`; an error naming it when there is none. */
  signer(from: Uint8Array | undefined): DevAccount {
    return this.keys.signer(from);
  }

  signMessage(address: Uint8Array, message: Uint8Array): Uint8Array {
    return this.keys.signMessage(address, message);
  }

  signTypedData(address: Uint8Array, digest: Uint8Array): Uint8Array {
    return this.keys.signTypedData(address, digest);
  }

  /**
   * The next nonce of `address` counting its pooled transactions (eth_getTransactionCount pending);
   * answered after the sends already received.
   */
  pendingNonce(address: Uint8Array): Promise<bigint> {
    return this.serially(() => this.nextNonce(address));
  }

  /**
   * The pool as txpool_content shows it, after the sends already received: ready transactions are
   * pending, the others queued.
   */
  poolContent(): Promise<{ pending: TypedTransaction[]; queued: TypedTransaction[] }> {
    return this.serially(() => this.pool.content(this.chainNonce));
  }

  /** A pooled transaction by hash (eth_getTransactionByHash answers it with no block). */
  pooledTransaction(hash: Uint8Array): TypedTransaction | null {
    return this.pool.find(hash);
  }

  /**
   * evm_mine / anvil_mine: `count` blocks, each of what the pool has ready (empty when nothing is).
   * `first` is the first block's timestamp; with `interval`, each later block is that many seconds
   * after the one before.
   */
  async mineBlocks(count: number, timing: { first?: bigint; interval?: bigint } = {}): Promise<void> {
    if (!Number.isSafeInteger(count) || count < 0 || count > MAX_MINE_BLOCKS)
      throw new InvalidArgument(`at most ${MAX_MINE_BLOCKS} blocks can be mined at once`);
    await this.serially(async () => {
      if (timing.first !== undefined) this.setNextBlockTimestamp(timing.first);
      if (timing.interval !== undefined && count > 1) {
        const start = this.clock.peek();
        const head = this.writer.headHeader?.timestamp ?? 0n;
        const first = start > head ? start : head + 1n;
        if (first + timing.interval * BigInt(count - 1) > MAX_DEV_TIMESTAMP)
          throw new InvalidArgument(
            `${count} blocks ${timing.interval} s apart would pass the latest timestamp a block may have, ${MAX_DEV_TIMESTAMP}`,
          );
      }
      for (let mined = 0; mined < count; mined++) {
        // Each block is a turn of the event loop: other requests are answered while a long run
        // mines, and a SIGTERM is heard (stop() ends the run).
        if (mined > 0) await new Promise<void>((resolve) => setImmediate(resolve));
        if (this.stopping)
          throw new RequestFailed(`the server is stopping: mined ${mined} of ${count} blocks`);
        await this.mineFromPool();
        const head = this.writer.headHeader;
        // A zero interval still moves time by a second: a block must be later than its parent.
        if (timing.interval !== undefined && head)
          this.clock.setNextUnchecked(head.timestamp + timing.interval);
      }
      if (timing.interval !== undefined) this.clock.setNextUnchecked(null);
    });
  }

  /** evm_snapshot: an id for the chain as it is now (head, pool, clock offset). */
  async snapshot(): Promise<bigint> {
    return this.serially(async () => {
      const head = this.writer.headHeader;
      if (!head) throw new RequestFailed('the chain has no blocks');
      return this.snapshots.take({
        head: head.number,
        pool: this.pool.snapshot(),
        timeOffset: this.clock.offset,
      });
    });
  }

  /**
   * evm_revert: back to the chain of snapshot `id`, whose later blocks are removed from the store;
   * that snapshot and every later one are used up. False for an unknown id.
   */
  async revert(id: bigint): Promise<boolean> {
    return this.serially(async () => {
      const taken = this.snapshots.takeBack(id);
      if (!taken) return false;
      await this.writer.rewindTo(taken.head);
      this.pool.restore(taken.pool);
      this.clock.offset = taken.timeOffset;
      this.clock.setNextUnchecked(null);
      await this.events?.check();
      return true;
    });
  }

  /** evm_increaseTime: moves the clock of later blocks forward; answers the total offset. */
  increaseTime(seconds: bigint): bigint {
    return this.clock.increase(seconds);
  }

  /** evm_setNextBlockTimestamp: the next block's timestamp (it must be after the head's). */
  setNextBlockTimestamp(timestamp: bigint): void {
    this.clock.setNext(timestamp, this.writer.headHeader?.timestamp);
  }

  /**
   * anvil_/hardhat_ setBalance, setNonce, setCode, setStorageAt. The change is written into a new
   * (empty) block, so that it is part of the chain's history like every other change: reads at
   * `latest` see it at once, and older blocks keep their state. (anvil changes state without a block.)
   */
  async setAccount(
    address: Uint8Array,
    change: { balance?: bigint; nonce?: bigint; code?: Uint8Array; slot?: [Uint8Array, Uint8Array] },
  ): Promise<void> {
    await this.serially(async () => {
      const state = this.writer.headState;
      const at = new Address(address);
      const account = (await state.getAccount(at)) ?? new Account();
      if (change.balance !== undefined) account.balance = change.balance;
      if (change.nonce !== undefined) account.nonce = change.nonce;
      await state.putAccount(at, account);
      if (change.code !== undefined) await state.putCode(at, change.code);
      if (change.slot) await state.putStorage(at, change.slot[0], change.slot[1]);
      await this.mineBlock([]);
    });
  }

  /** The sender's nonce on the head state. */
  private readonly chainNonce = async (sender: Address): Promise<bigint> =>
    (await this.writer.headState.getAccount(sender))?.nonce ?? 0n;

  private async nextNonce(address: Uint8Array): Promise<bigint> {
    const at = new Address(address);
    return this.pool.nextFreeNonce(at, await this.chainNonce(at));
  }

  private async submit(tx: TypedTransaction): Promise<Uint8Array> {
    const sender = await admit(tx, this.head());
    this.pool.add(tx, sender);
    this.events?.pending(tx);
    if (this.automine) await this.mineEachReady(tx);
    return tx.hash();
  }

  /**
   * Automine: every ready transaction in a block of its own, oldest first. The one just sent fails
   * its request if it cannot be mined; others that fail are dropped from the pool and logged.
   */
  private async mineEachReady(sent: TypedTransaction): Promise<void> {
    for (
      let next = await this.pool.nextReady(this.chainNonce);
      next !== null;
      next = await this.pool.nextReady(this.chainNonce)
    ) {
      this.pool.remove(next);
      try {
        await this.mineBlock([next.tx]);
      } catch (e) {
        if (next.tx === sent) throw e;
        this.log(`dropped pooled transaction ${toHex(next.tx.hash())}: ${(e as Error).message}`, 'warn');
      }
    }
  }

  /** One block of the ready transactions that fit its gas limit. */
  private async mineFromPool(): Promise<void> {
    const limit = this.writer.headHeader?.gasLimit ?? 30_000_000n;
    const chosen: Pooled[] = await this.pool.readyBatch(this.chainNonce, limit);
    for (const entry of chosen) this.pool.remove(entry);
    try {
      await this.mineBlock(chosen.map((c) => c.tx));
    } catch (e) {
      // A transaction that became invalid while it waited: drop them all rather than stop mining.
      this.log(`dropped ${chosen.length} pooled transactions: ${(e as Error).message}`, 'warn');
      await this.mineBlock([]);
    }
  }

  private async mineBlock(txs: TypedTransaction[]): Promise<void> {
    await mineBlock(this.writer, txs, this.clock.take(this.writer.headHeader?.timestamp));
    await this.events?.check();
  }

  /** The journaled pool, each transaction checked again against the chain (see PoolJournal). */
  private async restorePool(): Promise<void> {
    const journaled = await this.journal.read();
    if (journaled.length === 0) return;
    const common = this.nextBlockCommon();
    let restored = 0;
    for (const raw of journaled) {
      try {
        // Journaled as blocks carry them: a blob transaction without its blobs.
        const tx = createTxFromRLP(raw, { common });
        this.pool.add(tx, await admit(tx, this.head()));
        restored++;
      } catch (e) {
        this.log(`dropped a journaled transaction: ${(e as Error).message}`, 'warn');
      }
    }
    this.pool.version++;
    if (restored > 0) this.log(`restored ${restored} pending transactions from the pool journal`);
  }

  /**
   * A write the store refused (a full disk) is the client's answer in words (-32000), not an
   * internal error: the node is fine, and its chain as it was, but it cannot take new blocks. The
   * log says it once, with the datadir and what to do, when writes start failing and once when they
   * work again.
   */
  private refusedWrite(e: unknown): unknown {
    if (!(e instanceof StoreWriteRefused)) return e;
    if (!this.writeRefused) this.log(`new blocks cannot be stored: ${e.message}`, 'warn');
    this.writeRefused = true;
    return new RequestFailed(`the node cannot store new blocks now: ${e.reason}`);
  }

  /** The chain transactions are checked against: the head, with the next block's rules. */
  private head(): Head {
    return { state: this.writer.headState, header: this.writer.headHeader, common: this.nextBlockCommon() };
  }

  /** The Common of the next block's fork (mining sets it; checks want the same rules). */
  private nextBlockCommon(): Common {
    const common = this.writer.common;
    const header = this.writer.headHeader;
    if (header) {
      common.setHardforkBy({
        blockNumber: header.number + 1n,
        timestamp: BigInt(Math.floor(Date.now() / 1000)),
      });
    }
    return common;
  }

  private serially<T>(work: () => Promise<T>): Promise<T> {
    // The pool's journal is written before the work's answer is given, whether it failed or not.
    const journaled = async () => {
      let result: T;
      try {
        try {
          result = await work();
        } finally {
          await this.journal.write(this.pool);
        }
      } catch (e) {
        throw this.refusedWrite(e);
      }
      // The journal was written: the store takes writes (again).
      if (this.writeRefused) this.log('the chain store takes writes again');
      this.writeRefused = false;
      return result;
    };
    const next = this.queue.then(journaled, journaled);
    this.queue = afterSettled(next);
    return next;
  }
}
