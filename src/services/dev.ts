import type { Common } from '@ethereumjs/common';
import { RLP } from '@ethereumjs/rlp';
import {
  createBlob4844TxFromSerializedNetworkWrapper,
  createMinimal4844TxFromNetworkWrapper,
  createTx,
  createTxFromRLP,
  TransactionType,
  type TypedTransaction,
} from '@ethereumjs/tx';
import { Account, Address, equalsBytes, KECCAK256_NULL } from '@ethereumjs/util';
import secp256k1 from 'secp256k1';
import { loadPeerDasSetup } from '../chain/crypto.ts';
import type { DevAccount } from '../chain/devChain.ts';
import type { CallRequest } from '../core/call.ts';
import { DomainError, InvalidArgument, RequestFailed, TransactionRejected } from '../core/errors.ts';
import type { Importer } from '../ingest/importer.ts';
import { BLOB_GAS_PER_BLOB } from '../primitives/fees.ts';
import { toHex } from '../primitives/hex.ts';
import { keccak256 } from '../primitives/keccak.ts';
import type { ChainEvents } from './events.ts';

/** A transaction waiting in the pool, with the order it arrived in (blocks take the oldest first). */
interface Pooled {
  tx: TypedTransaction;
  sender: Address;
  arrival: number;
}

/** A replacement must raise both fee fields by this many percent (geth's default price bump). */
const PRICE_BUMP_PERCENT = 10n;

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
 * The latest timestamp a dev block may be given. A header's timestamp is a uint64 (geth refuses
 * anything larger, and a dev chain that stored one could no longer run a transaction), and each
 * block must be later than its parent: the last 2^32 seconds are kept for the blocks after it.
 */
export const MAX_DEV_TIMESTAMP = (1n << 64n) - 1n - (1n << 32n);
const MAX_UINT64 = (1n << 64n) - 1n;

/** Where the pending pool is kept in the store, so that it survives a restart and a crash. */
const POOL_JOURNAL_META = 'dev-pool';

/**
 * The dev chain's writer side: transactions are checked as a node checks them and enter a pending
 * pool; blocks are mined from the pool through the importer, so dev blocks are executed and stored
 * exactly like imported ones. With automine (the default) each transaction whose nonce is next is
 * mined into its own block as it arrives; with a block time, a block of whatever is ready is mined
 * on every tick. A transaction with a later nonce waits ("queued") until the gap is filled. Writes
 * are serialised: one block at a time.
 */
export class DevService {
  private queue: Promise<unknown> = Promise.resolve();
  /** Pooled transactions by sender (hex) and nonce. */
  private readonly pool = new Map<string, Map<bigint, Pooled>>();
  private arrivals = 0;
  private events: ChainEvents | null = null;
  private ticker: NodeJS.Timeout | null = null;
  private nextSnapshotId = 1n;
  /** Live evm_snapshot ids, oldest first. */
  private readonly snapshots: Array<{
    id: bigint;
    head: bigint;
    pool: Map<string, Map<bigint, Pooled>>;
    timeOffset: bigint;
  }> = [];
  private blockTime: number | null = null;
  /** Set by stop(): a long evm_mine ends after the block it is writing. */
  private stopping = false;
  /** Bumped by every change to the pool; the journal is rewritten when it moved (see serially). */
  private poolVersion = 0;
  private journaledVersion = 0;
  /** What the journal holds, once read or written. */
  private journal: Uint8Array | null = null;

  constructor(
    private readonly importer: Importer,
    readonly accounts: readonly DevAccount[],
    private readonly log: (line: string) => void = () => {},
  ) {
    // The pool journaled by the last run goes back into the pool before any request is served.
    this.queue = this.restorePool().catch((e) =>
      this.log(`pool journal not restored: ${(e as Error).message}`),
    );
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
        this.log(`mining failed: ${(e as Error).message}`),
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
    return this.serially(async () => {
      const common = this.nextBlockCommon();
      let tx: TypedTransaction;
      try {
        tx =
          raw[0] === TransactionType.BlobEIP4844
            ? blobTransaction(raw, common)
            : createTxFromRLP(raw, { common });
      } catch (e) {
        if (e instanceof DomainError) throw e;
        throw new RequestFailed(`invalid transaction: ${firstLine((e as Error).message)}`);
      }
      return this.submit(tx);
    });
  }

  /** Signs a call with the dev account it is from and submits it; its fees and gas are filled in. */
  async sendTransaction(call: CallRequest & { gas: bigint }): Promise<Uint8Array> {
    return this.serially(async () => {
      const account = this.signer(call.from);
      const common = this.nextBlockCommon();
      const fees =
        call.gasPrice !== undefined
          ? { gasPrice: call.gasPrice, type: 0 }
          : {
              maxPriorityFeePerGas: call.maxPriorityFeePerGas,
              maxFeePerGas: call.maxFeePerGas,
              type: 2,
            };
      let tx: TypedTransaction;
      try {
        tx = createTx(
          {
            nonce: call.nonce ?? (await this.nextNonce(account.address)),
            gasLimit: call.gas,
            ...(call.to ? { to: call.to } : {}),
            value: call.value ?? 0n,
            data: call.data ?? new Uint8Array(),
            chainId: common.chainId(),
            ...fees,
          },
          { common },
        ).sign(account.privateKey);
      } catch (e) {
        throw new RequestFailed(`invalid transaction: ${firstLine((e as Error).message)}`);
      }
      return this.submit(tx);
    });
  }

  /** The dev account that signs for `from`; an error naming it when there is none. */
  signer(from: Uint8Array | undefined): DevAccount {
    if (!from) throw new RequestFailed('unknown account (no from): only the dev accounts can sign');
    return this.account(from);
  }

  /**
   * The next nonce of `address` counting its pooled transactions (eth_getTransactionCount pending);
   * answered after the sends already received.
   */
  pendingNonce(address: Uint8Array): Promise<bigint> {
    return this.serially(() => this.nextNonce(address));
  }

  private async nextNonce(address: Uint8Array): Promise<bigint> {
    const at = new Address(address);
    let nonce = (await this.importer.headState.getAccount(at))?.nonce ?? 0n;
    const mine = this.pool.get(at.toString());
    while (mine?.has(nonce)) nonce++;
    return nonce;
  }

  /**
   * The pool as txpool_content shows it, after the sends already received: ready transactions are
   * pending, the others queued.
   */
  poolContent(): Promise<{ pending: TypedTransaction[]; queued: TypedTransaction[] }> {
    return this.serially(() => this.readPool());
  }

  private async readPool(): Promise<{ pending: TypedTransaction[]; queued: TypedTransaction[] }> {
    const pending: TypedTransaction[] = [];
    const queued: TypedTransaction[] = [];
    for (const mine of this.pool.values()) {
      const first = mine.values().next().value;
      if (!first) continue;
      const next = await this.nextNonce(first.sender.bytes);
      for (const { tx } of mine.values()) (tx.nonce < next ? pending : queued).push(tx);
    }
    const byNonce = (a: TypedTransaction, b: TypedTransaction) => (a.nonce < b.nonce ? -1 : 1);
    return { pending: pending.sort(byNonce), queued: queued.sort(byNonce) };
  }

  /** A pooled transaction by hash (eth_getTransactionByHash answers it with no block). */
  pooledTransaction(hash: Uint8Array): TypedTransaction | null {
    for (const mine of this.pool.values()) {
      for (const { tx } of mine.values()) if (Buffer.compare(tx.hash(), hash) === 0) return tx;
    }
    return null;
  }

  /** The pooled transactions of one sender by nonce, made on first use. */
  private senderPool(sender: string): Map<bigint, Pooled> {
    let mine = this.pool.get(sender);
    if (!mine) {
      mine = new Map();
      this.pool.set(sender, mine);
    }
    return mine;
  }

  private async submit(tx: TypedTransaction): Promise<Uint8Array> {
    const sender = await this.check(tx);
    const key = sender.toString();
    const mine = this.senderPool(key);
    const replaced = mine.get(tx.nonce);
    if (replaced && !outbids(tx, replaced.tx)) {
      throw new RequestFailed('replacement transaction underpriced');
    }
    mine.set(tx.nonce, { tx, sender, arrival: this.arrivals++ });
    this.poolVersion++;
    this.events?.pending(tx);
    if (this.automine) await this.mineEachReady(tx);
    return tx.hash();
  }

  /**
   * Automine: every ready transaction in a block of its own, oldest first. The one just sent fails
   * its request if it cannot be mined; others that fail are dropped from the pool and logged.
   */
  private async mineEachReady(sent: TypedTransaction): Promise<void> {
    for (let next = await this.nextReady(); next !== null; next = await this.nextReady()) {
      this.unpool(next);
      try {
        await this.mineBlock([next.tx]);
      } catch (e) {
        if (next.tx === sent) throw e;
        this.log(`dropped pooled transaction ${toHex(next.tx.hash())}: ${(e as Error).message}`);
      }
    }
  }

  /** The oldest pooled transaction whose nonce is its sender's next, or null. */
  private async nextReady(): Promise<Pooled | null> {
    let best: Pooled | null = null;
    for (const mine of this.pool.values()) {
      const first = mine.values().next().value;
      if (!first) continue;
      const nonce = (await this.importer.headState.getAccount(first.sender))?.nonce ?? 0n;
      const ready = mine.get(nonce);
      if (ready && (best === null || ready.arrival < best.arrival)) best = ready;
    }
    return best;
  }

  /**
   * One block of the ready transactions, each sender's in nonce order, senders by arrival, as many
   * as fit the block's gas limit (what does not fit waits for the next block).
   */
  private async mineFromPool(): Promise<void> {
    const limit = this.importer.headHeader?.gasLimit ?? 30_000_000n;
    const chosen: Pooled[] = [];
    let gas = 0n;
    const senders = [...this.pool.values()]
      .map((mine) => [...mine.values()].sort((a, b) => (a.tx.nonce < b.tx.nonce ? -1 : 1)))
      .filter((list) => list.length > 0)
      .sort((a, b) => (a[0] as Pooled).arrival - (b[0] as Pooled).arrival);
    for (const list of senders) {
      let nonce = (await this.importer.headState.getAccount((list[0] as Pooled).sender))?.nonce ?? 0n;
      for (const entry of list) {
        if (entry.tx.nonce !== nonce || gas + entry.tx.gasLimit > limit) break;
        chosen.push(entry);
        gas += entry.tx.gasLimit;
        nonce++;
      }
    }
    for (const entry of chosen) this.unpool(entry);
    try {
      await this.mineBlock(chosen.map((c) => c.tx));
    } catch (e) {
      // A transaction that became invalid while it waited: drop them all rather than stop mining.
      this.log(`dropped ${chosen.length} pooled transactions: ${(e as Error).message}`);
      await this.mineBlock([]);
    }
  }

  private unpool(entry: Pooled): void {
    const key = entry.sender.toString();
    const mine = this.pool.get(key);
    mine?.delete(entry.tx.nonce);
    if (mine?.size === 0) this.pool.delete(key);
    this.poolVersion++;
  }

  /**
   * Writes the pool to the store (the transactions in arrival order) when it changed since the last
   * write, as geth journals its local transactions. A transaction is acknowledged after this, so a
   * pending one survives SIGTERM and kill -9 alike; one already mined when the journal was last
   * written is dropped on restore as its nonce is used.
   */
  private async journalPool(): Promise<void> {
    if (this.poolVersion === this.journaledVersion) return;
    const version = this.poolVersion;
    const txs = [...this.pool.values()]
      .flatMap((mine) => [...mine.values()])
      .sort((a, b) => a.arrival - b.arrival)
      .map((entry) => entry.tx.serialize());
    const journal = RLP.encode(txs);
    // Automine pools and mines each transaction within one request: the pool is as it was.
    if (this.journal === null || Buffer.compare(journal, this.journal) !== 0) {
      await this.importer.chainStore.putMeta(POOL_JOURNAL_META, journal);
      this.journal = journal;
    }
    this.journaledVersion = version;
  }

  /** The journaled pool, each transaction checked again against the chain (see journalPool). */
  private async restorePool(): Promise<void> {
    const journal = await this.importer.chainStore.getMeta(POOL_JOURNAL_META);
    this.journal = journal;
    if (!journal) return;
    const common = this.nextBlockCommon();
    let restored = 0;
    for (const raw of RLP.decode(journal) as Uint8Array[]) {
      try {
        const tx = createTxFromRLP(raw, { common });
        const sender = await this.check(tx);
        const key = sender.toString();
        const mine = this.senderPool(key);
        mine.set(tx.nonce, { tx, sender, arrival: this.arrivals++ });
        restored++;
      } catch (e) {
        this.log(`dropped a journaled transaction: ${(e as Error).message}`);
      }
    }
    this.poolVersion++;
    if (restored > 0) this.log(`restored ${restored} pending transactions from the pool journal`);
  }

  /** Seconds added to the clock by evm_increaseTime; the next block's timestamp if one was set. */
  private timeOffset = 0n;
  private nextTimestamp: bigint | null = null;

  private async mineBlock(txs: TypedTransaction[]): Promise<void> {
    const timestamp = this.nextTimestamp ?? this.clock();
    const head = this.importer.headHeader;
    // The importer makes a block at least a second later than its parent: past the head room kept
    // above MAX_DEV_TIMESTAMP, that would no longer fit a uint64.
    if (head && head.timestamp >= MAX_UINT64 && timestamp <= head.timestamp) {
      throw new RequestFailed(
        `no block can follow one at timestamp ${head.timestamp}, the last a uint64 holds`,
      );
    }
    this.nextTimestamp = null;
    await this.importer.mine(txs, timestamp);
    await this.events?.check();
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
        const start = this.nextTimestamp ?? this.clock();
        const head = this.importer.headHeader?.timestamp ?? 0n;
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
        const head = this.importer.headHeader;
        // A zero interval still moves time by a second: a block must be later than its parent.
        if (timing.interval !== undefined && head) this.nextTimestamp = head.timestamp + timing.interval;
      }
      if (timing.interval !== undefined) this.nextTimestamp = null;
    });
  }

  /**
   * evm_snapshot: an id for the chain as it is now (head, pool, clock offset). Ids count up from 1,
   * as anvil's and Hardhat's do.
   */
  async snapshot(): Promise<bigint> {
    return this.serially(async () => {
      const head = this.importer.headHeader;
      if (!head) throw new RequestFailed('the chain has no blocks');
      const id = this.nextSnapshotId++;
      const pool = new Map([...this.pool].map(([sender, mine]) => [sender, new Map(mine)]));
      this.snapshots.push({ id, head: head.number, pool, timeOffset: this.timeOffset });
      return id;
    });
  }

  /**
   * evm_revert: back to the chain of snapshot `id`, whose later blocks are removed from the store;
   * that snapshot and every later one are used up (anvil and Hardhat alike). False for an unknown id.
   */
  async revert(id: bigint): Promise<boolean> {
    return this.serially(async () => {
      const at = this.snapshots.findIndex((s) => s.id === id);
      const taken = this.snapshots[at];
      if (!taken) return false;
      this.snapshots.splice(at);
      await this.importer.rewindTo(taken.head);
      this.pool.clear();
      for (const [sender, mine] of taken.pool) this.pool.set(sender, mine);
      this.poolVersion++;
      this.timeOffset = taken.timeOffset;
      this.nextTimestamp = null;
      await this.events?.check();
      return true;
    });
  }

  /** The time of the next block unless one was set: the wall clock moved by evm_increaseTime. */
  private clock(): bigint {
    return BigInt(Math.floor(Date.now() / 1000)) + this.timeOffset;
  }

  /**
   * evm_increaseTime: moves the clock of later blocks forward; answers the total offset. A move
   * that would take the clock past the latest timestamp a block may have is refused.
   */
  increaseTime(seconds: bigint): bigint {
    if (this.clock() + seconds > MAX_DEV_TIMESTAMP) {
      throw new InvalidArgument(
        `increasing the time by ${seconds} s would pass the latest timestamp a block may have, ${MAX_DEV_TIMESTAMP}`,
      );
    }
    this.timeOffset += seconds;
    return this.timeOffset;
  }

  /** evm_setNextBlockTimestamp: the next block's timestamp (it must be after the head's). */
  setNextBlockTimestamp(timestamp: bigint): void {
    if (timestamp > MAX_DEV_TIMESTAMP) {
      throw new InvalidArgument(
        `timestamp ${timestamp} is past the latest a block may have, ${MAX_DEV_TIMESTAMP} (a uint64 with room for the blocks after)`,
      );
    }
    const head = this.importer.headHeader;
    if (head && timestamp <= head.timestamp) {
      throw new RequestFailed(`timestamp ${timestamp} is not after the head block's ${head.timestamp}`);
    }
    this.nextTimestamp = timestamp;
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
      const state = this.importer.headState;
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

  /** personal_sign / eth_sign: EIP-191 signature of `message` by a dev account, as r ‖ s ‖ v. */
  signMessage(address: Uint8Array, message: Uint8Array): Uint8Array {
    const prefix = new TextEncoder().encode(`\x19Ethereum Signed Message:\n${message.length}`);
    return this.signDigest(address, keccak256(Buffer.concat([prefix, message])));
  }

  /** eth_signTypedData_v4: the signature of an EIP-712 digest (see typedDataDigest) by a dev account. */
  signTypedData(address: Uint8Array, digest: Uint8Array): Uint8Array {
    return this.signDigest(address, digest);
  }

  private signDigest(address: Uint8Array, digest: Uint8Array): Uint8Array {
    const { signature, recid } = secp256k1.ecdsaSign(digest, this.account(address).privateKey);
    return Buffer.concat([signature, Uint8Array.of(27 + recid)]);
  }

  private account(address: Uint8Array): DevAccount {
    const account = this.accounts.find(
      (a) => Buffer.compare(Buffer.from(a.address), Buffer.from(address)) === 0,
    );
    if (!account)
      throw new RequestFailed(`unknown account ${toHex(address)}: only the dev accounts can sign`);
    return account;
  }

  /**
   * The checks a node makes before accepting a transaction into its pool, each with a message that
   * says what to fix; answers the sender.
   */
  private async check(tx: TypedTransaction): Promise<Address> {
    const common = this.nextBlockCommon();
    if (tx.supports(155) || tx.type > 0) {
      const chainId = 'chainId' in tx ? (tx.chainId as bigint) : common.chainId();
      if (chainId !== common.chainId()) {
        throw new RequestFailed(
          `invalid chain id: transaction has ${chainId}, this chain is ${common.chainId()}`,
        );
      }
    }
    let sender: Address;
    try {
      sender = tx.getSenderAddress();
    } catch (e) {
      throw new RequestFailed(`invalid sender: ${firstLine((e as Error).message)}`);
    }
    const account = await this.importer.headState.getAccount(sender);
    // EIP-3607: an account with code cannot send (a 7702 delegation excepted). Refused here, as geth's
    // pool does, since the block it would be mined into could not include it.
    if (account && !equalsBytes(account.codeHash, KECCAK256_NULL)) {
      const code = await this.importer.headState.getCode(sender);
      if (!(code.length === 23 && code[0] === 0xef && code[1] === 0x01 && code[2] === 0x00))
        throw new RequestFailed(`sender not an eoa: ${sender} has code`);
    }
    const nonce = account?.nonce ?? 0n;
    if (tx.nonce < nonce) throw new RequestFailed(`nonce too low: next nonce ${nonce}, tx nonce ${tx.nonce}`);
    const header = this.importer.headHeader;
    if (header && tx.gasLimit > header.gasLimit) {
      throw new RequestFailed(
        `exceeds block gas limit: gas ${tx.gasLimit}, block gas limit ${header.gasLimit}`,
      );
    }
    const intrinsic = tx.getIntrinsicGas();
    if (tx.gasLimit < intrinsic)
      throw new RequestFailed(`intrinsic gas too low: gas ${tx.gasLimit}, minimum needed ${intrinsic}`);
    const baseFee = header?.baseFeePerGas !== undefined ? header.calcNextBaseFee() : 0n;
    const feeCap = 'maxFeePerGas' in tx ? tx.maxFeePerGas : tx.gasPrice;
    if (feeCap < baseFee) {
      throw new RequestFailed(
        `max fee per gas less than block base fee: maxFeePerGas ${feeCap}, baseFee ${baseFee}`,
      );
    }
    let blobCost = 0n;
    if ('maxFeePerBlobGas' in tx && header) {
      const blobFee = header.calcNextBlobGasPrice(common);
      if (tx.maxFeePerBlobGas < blobFee) {
        throw new RequestFailed(
          `max fee per blob gas less than block blob gas fee: maxFeePerBlobGas ${tx.maxFeePerBlobGas}, blobBaseFee ${blobFee}`,
        );
      }
      blobCost = BigInt(tx.blobVersionedHashes.length) * BLOB_GAS_PER_BLOB * tx.maxFeePerBlobGas;
    }
    const cost = tx.gasLimit * feeCap + tx.value + blobCost;
    const balance = account?.balance ?? 0n;
    if (balance < cost) {
      throw new TransactionRejected(
        `insufficient funds for gas * price + value: balance ${balance}, tx cost ${cost}`,
      );
    }
    return sender;
  }

  /** The Common of the next block's fork (mining sets it; checks want the same rules). */
  private nextBlockCommon() {
    const common = this.importer.chainCommon;
    const header = this.importer.headHeader;
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
      try {
        return await work();
      } finally {
        await this.journalPool();
      }
    };
    const next = this.queue.then(journaled, journaled);
    this.queue = next.catch(() => {});
    return next;
  }
}

/**
 * A blob transaction as sent: the network form with its blobs, commitments and proofs, which are
 * checked (commitments against the versioned hashes, proofs by KZG) and then left out, as blocks
 * carry the transaction alone. Both proof forms are taken: EIP-4844 blob proofs (what viem and most
 * tools send today) and EIP-7594 cell proofs. A blob transaction without its blobs is refused.
 */
function blobTransaction(raw: Uint8Array, common: Common): TypedTransaction {
  const values = RLP.decode(raw.subarray(1));
  if (!Array.isArray(values) || !Array.isArray(values[0])) {
    throw new RequestFailed(
      'invalid transaction: a blob transaction must be sent with its blobs (network form)',
    );
  }
  const wrapped = createBlob4844TxFromSerializedNetworkWrapper(raw, { common });
  return createMinimal4844TxFromNetworkWrapper(wrapped, { common });
}

/** A replacement for a pooled transaction must raise its fee cap and its tip by the price bump. */
function outbids(tx: TypedTransaction, old: TypedTransaction): boolean {
  const bumped = (v: bigint) => v + (v * PRICE_BUMP_PERCENT) / 100n;
  const cap = (t: TypedTransaction) => ('maxFeePerGas' in t ? t.maxFeePerGas : t.gasPrice);
  const tip = (t: TypedTransaction) => ('maxPriorityFeePerGas' in t ? t.maxPriorityFeePerGas : t.gasPrice);
  return cap(tx) >= bumped(cap(old)) && tip(tx) >= bumped(tip(old));
}

function firstLine(message: string): string {
  return message.split('\n')[0] ?? message;
}
