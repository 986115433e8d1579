// The chain store, in the service's own terms. Every read answers `null` for "not found" and lets the
// caller decide what that means. Methods are async so that a networked implementation (PostgreSQL)
// can implement the same interface and pass the same contract suite as the embedded LMDB one.

/** An account as the flat state history keeps it (the storage root lives only in the trie). */
export interface FlatAccount {
  nonce: bigint;
  balance: bigint;
  /** keccak256 of the code; keccak256 of the empty string for accounts without code. */
  codeHash: Uint8Array;
}

/**
 * Synchronous reads of the flat state, for the EVM of src/evm, which runs a transaction without
 * awaiting: a store whose reads are local (LMDB's are synchronous underneath) offers them; one whose
 * reads may need the network (an upstream's) does not, and its callers read through the async methods.
 */
export interface SyncStateReads {
  canonicalHash(number: bigint): Uint8Array | null;
  code(codeHash: Uint8Array): Uint8Array | null;
  /** As `ChainStore.getAccountAt`. */
  accountAt(address: Uint8Array, number: bigint): FlatAccount | null;
  /** As `ChainStore.getStorageAt`. */
  storageAt(address: Uint8Array, slot: Uint8Array, number: bigint): Uint8Array;
}

/**
 * The state of a chain read from another node (upstream mode), pinned to a block hash: what is held
 * here is read synchronously, and what is not is fetched in batches. The EVM of src/evm stops at the
 * first value not held yet, the keys it needs are fetched, and its transaction runs again
 * (src/exec/fetchingState.ts).
 */
export interface FetchedStateReads {
  /** The account at block `blockHash`: undefined when not held here yet, null when absent. */
  accountAt(blockHash: Uint8Array, address: Uint8Array): FlatAccount | null | undefined;
  /** The slot at block `blockHash`: null when not held here yet (an empty array is zero). */
  storageAt(blockHash: Uint8Array, address: Uint8Array, slot: Uint8Array): Uint8Array | null;
  code(codeHash: Uint8Array): Uint8Array | null;
  /** Fetches these accounts (and the slots of each) at block `blockHash`, in one batch, and keeps them. */
  fetch(
    blockHash: Uint8Array,
    keys: ReadonlyArray<{ address: Uint8Array; slots: Uint8Array[] }>,
  ): Promise<void>;
}

export interface BlockRef {
  number: bigint;
  hash: Uint8Array;
}

export interface TxLocation {
  blockHash: Uint8Array;
  blockNumber: bigint;
  index: number;
}

/** Everything one block adds to the store. Written atomically by `commitBlock`. */
export interface BlockWrite {
  number: bigint;
  hash: Uint8Array;
  /** Consensus RLP of the header. */
  header: Uint8Array;
  /** Consensus RLP of the body: [transactions, uncles] or [transactions, uncles, withdrawals]. */
  body: Uint8Array;
  /**
   * Root of the state trie the store holds after this block. Equals the header's state root except
   * for chains imported without state-root verification (dev nodes with non-standard roots).
   */
  stateRoot: Uint8Array;
  txHashes: Uint8Array[];
  /** Consensus encodings (typed-receipt envelope included), one per transaction. */
  receipts: Uint8Array[];
  /** Each receipt rendered as the JSON text `eth_getBlockReceipts` serves, one per transaction. */
  receiptsJson: string[];
  /** Trie nodes created by this block, keyed by node hash. Nodes are never deleted. */
  trieNodes: Array<[Uint8Array, Uint8Array]>;
  /** Contract code first seen in this block, keyed by code hash. */
  code: Array<[Uint8Array, Uint8Array]>;
  /** Final value of every account this block wrote; `null` = the account was deleted. */
  accounts: Array<{ address: Uint8Array; account: FlatAccount | null }>;
  /**
   * Accounts whose whole storage was cleared in this block (self-destruct, deletion). Storage writes
   * of the same block listed in `storage` are the final values and win over the wipe.
   */
  storageWipes: Uint8Array[];
  /** Final value of every storage slot this block wrote; an empty value means zero. */
  storage: Array<{ address: Uint8Array; slot: Uint8Array; value: Uint8Array }>;
  /**
   * Meta records written in the same transaction (`putMeta`'s). Genesis carries the records that say
   * what chain the datadir holds, so that of two processes initialising one datadir at once exactly
   * one makes the chain, and no reader sees a genesis without its records.
   */
  meta?: Array<[string, Uint8Array]>;
}

export interface ChainStore {
  /** The newest block stored, or null for an empty store. */
  getHead(): Promise<BlockRef | null>;
  /**
   * The block a `safe` or `finalized` tag names, for a store whose chain has unfinal blocks (an
   * upstream's); a store without this method has only final blocks, and the tags name its head.
   */
  getTaggedBlock?(tag: 'safe' | 'finalized'): Promise<BlockRef | null>;
  getCanonicalHash(number: bigint): Promise<Uint8Array | null>;
  getBlockNumber(hash: Uint8Array): Promise<bigint | null>;
  getHeader(hash: Uint8Array): Promise<Uint8Array | null>;
  getBody(hash: Uint8Array): Promise<Uint8Array | null>;
  /** The state root the store holds for the state after this block. */
  getStateRoot(hash: Uint8Array): Promise<Uint8Array | null>;
  getTxLocation(txHash: Uint8Array): Promise<TxLocation | null>;
  getReceipts(blockHash: Uint8Array): Promise<Uint8Array[] | null>;
  /**
   * The whole block's receipts as one JSON array, UTF-8 encoded: the bytes a response carries, so
   * serving them needs neither a decode nor a re-encode.
   */
  getBlockReceiptsJson(blockHash: Uint8Array): Promise<Uint8Array | null>;
  /** One receipt's JSON, UTF-8 encoded. */
  getReceiptJson(blockHash: Uint8Array, index: number): Promise<Uint8Array | null>;

  getTrieNode(hash: Uint8Array): Promise<Uint8Array | null>;
  getCode(codeHash: Uint8Array): Promise<Uint8Array | null>;
  /**
   * getTrieNode and getCode without awaiting, for a store whose reads are synchronous (LMDB): the
   * EVM of src/evm reads state synchronously, and import executes on the store's trie. They read the
   * snapshot of the last awaited read (getHead takes the newest).
   */
  getTrieNodeSync?(hash: Uint8Array): Uint8Array | null;
  getCodeSync?(codeHash: Uint8Array): Uint8Array | null;
  /**
   * The account as of the end of block `number` (one range lookup), null if absent then.
   * `blockHash`, when given, is that block's hash: a store reading another node's chain pins the
   * read to that block, so a reorg during a request never mixes two branches.
   */
  getAccountAt(address: Uint8Array, number: bigint, blockHash?: Uint8Array): Promise<FlatAccount | null>;
  /** The storage value as of the end of block `number` (see getAccountAt); an empty array means zero. */
  getStorageAt(
    address: Uint8Array,
    slot: Uint8Array,
    number: bigint,
    blockHash?: Uint8Array,
  ): Promise<Uint8Array>;

  /** The same reads, synchronous, where the store can serve them so (see SyncStateReads). */
  readonly syncReads?: SyncStateReads;
  /** Where state comes from another node: what is held read synchronously, the rest fetched (upstream mode). */
  readonly fetchedReads?: FetchedStateReads;

  getMeta(key: string): Promise<Uint8Array | null>;
  putMeta(key: string, value: Uint8Array): Promise<void>;

  /**
   * Stores one block and everything it produced in one transaction: either all of it is visible
   * afterwards or none of it (also across a crash). The block becomes the head.
   * `number` must be head + 1 (or 0 on an empty store), else it throws.
   */
  commitBlock(write: BlockWrite): Promise<void>;
  /**
   * Stores consecutive blocks in one transaction, as commitBlock would one after another: all of
   * them or none (a group costs one flush to disk instead of one per block; import of a file).
   */
  commitBlocks?(writes: readonly BlockWrite[]): Promise<void>;

  /**
   * Removes every block after `number` and all they wrote (receipts, transaction locations, state
   * history), in one transaction, so `number` becomes the head; a dev chain's evm_revert. Content
   * addressed records (trie nodes, code) stay. Nothing happens when the head is not past `number`.
   */
  unwindTo(number: bigint): Promise<void>;

  close(): Promise<void>;
}

/** A block kept in an upstream cache: what the chain store keeps of an imported block but its state. */
export interface CachedBlock {
  number: bigint;
  hash: Uint8Array;
  header: Uint8Array;
  body: Uint8Array;
  txHashes: Uint8Array[];
}

/**
 * What a datadir keeps of a chain it reads from an upstream node (upstream mode): blocks, receipts
 * and state values, each checked before it is put here, keyed by block hash (a hash names one block,
 * so an entry never goes stale); and which block is canonical at a number, for final blocks only.
 */
export interface UpstreamCache {
  putBlock(block: CachedBlock): Promise<void>;
  putReceipts(blockHash: Uint8Array, receipts: Uint8Array[], receiptsJson: string[]): Promise<void>;
  /** Final blocks only: a number's canonical block never changes once final. */
  putCanonical(number: bigint, hash: Uint8Array): Promise<void>;
  getCachedCanonical(number: bigint): Promise<Uint8Array | null>;
  /** The account at block `blockHash`; `undefined` when not cached, null when cached as absent. */
  getCachedAccount(blockHash: Uint8Array, address: Uint8Array): Promise<FlatAccount | null | undefined>;
  /** The storage value at block `blockHash`; null when not cached (an empty array is zero). */
  getCachedStorage(blockHash: Uint8Array, address: Uint8Array, slot: Uint8Array): Promise<Uint8Array | null>;
  /** getCachedAccount and getCachedStorage without awaiting (LMDB's reads are synchronous underneath). */
  getCachedAccountSync(blockHash: Uint8Array, address: Uint8Array): FlatAccount | null | undefined;
  getCachedStorageSync(blockHash: Uint8Array, address: Uint8Array, slot: Uint8Array): Uint8Array | null;
  putState(
    blockHash: Uint8Array,
    entries: {
      accounts: Array<{ address: Uint8Array; account: FlatAccount | null }>;
      storage: Array<{ address: Uint8Array; slot: Uint8Array; value: Uint8Array }>;
      code: Array<[Uint8Array, Uint8Array]>;
    },
  ): Promise<void>;
  /** Drops the blocks and state kept for these hashes (blocks a reorg removed before they were final). */
  dropBlocks(hashes: Uint8Array[]): Promise<void>;
  /** Closes the datadir: the store this cache shares with its chain store (either one's close does). */
  close(): Promise<void>;
}

/**
 * A datadir in upstream mode, in its two roles over one store: the chain store, whose reads serve
 * the blocks and receipts cached (and whose `close` closes the datadir), and the cache itself.
 */
export interface UpstreamDatadir {
  chain: ChainStore;
  cache: UpstreamCache;
}
