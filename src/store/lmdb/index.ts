// The embedded chain store: one LMDB environment, one named sub-database per kind of record.
// Reads are synchronous memory-mapped lookups wrapped in the async interface; each block is written
// in one synchronous LMDB transaction, so readers (in this or other processes) see whole blocks only.

import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { RLP } from '@ethereumjs/rlp';
import { bytesToHex, concatBytes, equalsBytes } from '@ethereumjs/util';
import { type Database, open, type RootDatabase } from 'lmdb';
import { keccak256 } from '../../primitives/keccak.ts';
import {
  CommitRejectedError,
  checkFreeSpace,
  DamagedValueError,
  StoreUnusableError,
  storeError,
} from '../errors.ts';
import type {
  BlockRef,
  BlockWrite,
  CachedBlock,
  ChainStore,
  FlatAccount,
  SyncStateReads,
  TxLocation,
  UpstreamCache,
} from '../types.ts';
import { seal, sliceChecksum, unseal } from './checksum.ts';
import {
  addressHistoryKey,
  blockNumberKey,
  blockNumberSuffix,
  historyPrefix,
  metaKey,
  readUint64,
  slotHistoryKey,
} from './keys.ts';
import { checkMetaPages } from './metaPages.ts';
import {
  decodeAccount,
  decodeBlockChanges,
  decodeReceipts,
  decodeTxLocation,
  encodeAccount,
  encodeBlockChanges,
  encodeReceipts,
  encodeTxLocation,
  minimalValue,
  type RenderedReceipts,
  receiptByteRange,
  renderReceiptsJson,
} from './values.ts';

type BinaryDb = Database<Uint8Array, Uint8Array>;

/** The LMDB data file in a datadir (the environment is a directory: see openEnvironment). */
const DATA_FILE = 'data.mdb';

const BINARY_TABLES = [
  'headers', // block hash → header RLP
  'bodies', // block hash → body RLP
  'canonical', // number (8, BE) → block hash; its last key is the head
  'blockNumbers', // block hash → number (8, BE)
  'stateRoots', // block hash → state root
  'txIndex', // tx hash → block hash ‖ number ‖ index
  'receipts', // block hash → consensus receipts, length-prefixed
  'receiptBoundaries', // block hash → byte offsets of each receipt in receiptsJson
  'trieNodes', // node hash → node
  'code', // code hash → code
  'accountHistory', // address ‖ number → account after that block, empty = deleted
  'storageHistory', // address ‖ slot ‖ number → minimal value after that block, empty = zero
  'storageWipes', // address ‖ number → empty: the whole storage was cleared in that block
  'meta', // UTF-8 name → value
] as const;

type BinaryTable = (typeof BINARY_TABLES)[number];

// The upstream cache's own tables (see UpstreamCache), opened only by a store opened for one.
const UPSTREAM_TABLES = [
  'upstreamCanonical', // number (8, BE) → hash of a final block
  'upstreamAccounts', // block hash ‖ address → account at that block, empty = absent
  'upstreamStorage', // block hash ‖ address ‖ slot → minimal value at that block, empty = zero
] as const;

type UpstreamTable = (typeof UPSTREAM_TABLES)[number];

type Tables = Record<BinaryTable, Table> & {
  receiptsJson: Table; // block hash → `[r0,r1,...]`, the eth_getBlockReceipts answer
  // number (8, BE) → what the block wrote (tx hashes, accounts, wipes, slots), for unwindTo. Only
  // writers use it: null in a read-only open of a store made before it existed.
  blockChanges: Table | null;
  upstream: Record<UpstreamTable, Table> | null;
};

/**
 * Where the store records that its values carry checksums (checksum.ts), written when a writer
 * first opens an empty store. A store with records but without it was written before checksums
 * were kept: it is refused with one line rather than read unchecked (see checkFormat).
 */
const FORMAT_META = 'store-format';
const FORMAT = 'crc32 of key and value, appended';

/**
 * Address space to reserve, not disk: LMDB grows the file as pages are written. Reserving a lot up
 * front means the map is rarely resized, and every resize makes readers in other processes remap.
 * lmdb-js still grows the map past this if the data ever needs it.
 */
const MAP_SIZE = 2 ** 40;

export async function openLmdbStore(path: string, opts: { readOnly?: boolean } = {}): Promise<ChainStore> {
  return openLmdb(path, opts.readOnly ?? false, false);
}

/** The store of a datadir that caches a chain read from an upstream node (always writable). */
export async function openUpstreamCache(path: string): Promise<ChainStore & UpstreamCache> {
  return openLmdb(path, false, true);
}

async function openLmdb(path: string, readOnly: boolean, upstream: boolean): Promise<LmdbStore> {
  // lmdb-js would create the directory even to fail opening it read-only.
  if (readOnly && !storeExists(path)) throw new Error(`no chain store at ${path}`);
  let env: RootDatabase;
  try {
    if (storeExists(path)) checkMetaPages(join(path, DATA_FILE), path);
    env = openEnvironment(path, readOnly);
  } catch (error) {
    throw storeError(error, path);
  }
  try {
    const tables = openTables(env, readOnly, upstream, path);
    checkFormat(tables, readOnly, path);
    return new LmdbStore(env, tables, path);
  } catch (error) {
    await env.close();
    throw storeError(error, path);
  }
}

/** Whether `path` holds an LMDB environment, i.e. a writer has opened a store there. */
export function storeExists(path: string): boolean {
  return existsSync(join(path, DATA_FILE));
}

function openEnvironment(path: string, readOnly: boolean): RootDatabase {
  // Durability stays at lmdb-js's defaults on purpose. LMDB writes a transaction's pages
  // copy-on-write and then switches a meta page, so a transaction is the unit of recovery: after a
  // crash the store is at its last committed block, never inside one. noSync / mapAsync would let a
  // system crash lose or tear committed transactions and useWritemap lets a stray write corrupt the
  // map. The default overlappingSync flushes after the commit but keeps the last flushed meta page
  // to fall back to, which keeps that guarantee.
  return open(path, {
    readOnly,
    // lmdb-js takes a path with an extension (`dev.1`) for a single-file store; a datadir is always a
    // directory, which also holds the keys file.
    noSubdir: false,
    mapSize: MAP_SIZE,
    maxDbs: BINARY_TABLES.length + UPSTREAM_TABLES.length + 2,
    // Values are hashes, RLP and hex-heavy JSON served as is: decompressing on every read would cost
    // more than the disk it saves.
    compression: false,
  });
}

function openTables(env: RootDatabase, readOnly: boolean, upstream: boolean, path: string): Tables {
  const table = (name: string) => new Table(name, openTable<Uint8Array>(env, name, 'binary'), path);
  const binary = BINARY_TABLES.map((name) => [name, table(name)]);
  const blockChanges = readOnly
    ? env.openDB<Uint8Array, Uint8Array>('blockChanges', { keyEncoding: 'binary', encoding: 'binary' })
    : openTable<Uint8Array>(env, 'blockChanges', 'binary');
  return {
    upstream: upstream
      ? (Object.fromEntries(UPSTREAM_TABLES.map((name) => [name, table(name)])) as Record<
          UpstreamTable,
          Table
        >)
      : null,
    ...(Object.fromEntries(binary) as Record<BinaryTable, Table>),
    receiptsJson: table('receiptsJson'),
    blockChanges: blockChanges === undefined ? null : new Table('blockChanges', blockChanges, path),
  };
}

/**
 * Refuses a store written without checksums (there is no telling damage from data in it), and
 * records in an empty one, opened to write, that its values carry them.
 */
function checkFormat(tables: Tables, readOnly: boolean, path: string): void {
  const key = metaKey(FORMAT_META);
  const stored = tables.meta.db.get(key);
  if (stored !== undefined) {
    const format = unseal(key, stored);
    if (format === null) throw new DamagedValueError(path, 'its format record fails its checksum');
    if (Buffer.from(format).toString() !== FORMAT)
      throw new StoreUnusableError(
        `the chain store in ${path} is in a format this ethtrace does not read (${Buffer.from(format).toString()}): run the ethtrace that made it, or import the chain again into a new --datadir`,
      );
    return;
  }
  const holdsRecords = [tables.meta, tables.headers, tables.canonical].some((table) => !table.isEmpty());
  if (holdsRecords)
    throw new StoreUnusableError(
      `the chain store in ${path} was written by an earlier ethtrace, which kept no checksum with each record, so damage in it could not be told from data: import the chain again into a new --datadir, or run the ethtrace that made it`,
    );
  if (readOnly) return;
  checkFreeSpace(path, 0);
  tables.meta.db.putSync(key, seal(key, Buffer.from(FORMAT)));
}

/**
 * One LMDB table whose values carry a checksum (checksum.ts): written with it, checked on every
 * read, and a value that fails it is a DamagedValueError, never returned.
 */
class Table {
  constructor(
    readonly name: string,
    readonly db: BinaryDb,
    private readonly path: string,
  ) {}

  get(key: Uint8Array): Uint8Array | undefined {
    const stored = this.db.get(key);
    return stored === undefined ? undefined : this.open(key, stored);
  }

  /** The value stored under `key` as read by a cursor or a fast get, checked. */
  open(key: Uint8Array, stored: Uint8Array): Uint8Array {
    const value = unseal(key, stored);
    if (value === null) throw this.damaged(key);
    return value;
  }

  damaged(key: Uint8Array, what = ''): DamagedValueError {
    return new DamagedValueError(
      this.path,
      `its ${this.name} record under ${bytesToHex(key)}${what} fails its checksum`,
    );
  }

  put(key: Uint8Array, value: Uint8Array): void {
    this.db.putSync(key, seal(key, value));
  }

  remove(key: Uint8Array): void {
    this.db.removeSync(key);
  }

  exists(key: Uint8Array): boolean {
    return this.db.doesExist(key);
  }

  isEmpty(): boolean {
    for (const _ of this.db.getKeys({ limit: 1 })) return false;
    return true;
  }

  /** Entries of a range, each value checked against its key. */
  *range(options: {
    start?: Uint8Array;
    end?: Uint8Array;
    reverse?: boolean;
    limit?: number;
  }): Generator<{ key: Uint8Array; value: Uint8Array }> {
    for (const { key, value } of this.db.getRange(options)) yield { key, value: this.open(key, value) };
  }
}

function openTable<V>(
  env: RootDatabase,
  name: string,
  encoding: 'binary' | 'string',
): Database<V, Uint8Array> {
  const table: Database<V, Uint8Array> | undefined = env.openDB<V, Uint8Array>(name, {
    keyEncoding: 'binary',
    encoding,
  });
  // Only a read-only open can miss a table: the environment was not made by this store.
  if (table === undefined) throw new Error(`not a chain store: table ${name} is missing`);
  return table;
}

class LmdbStore implements ChainStore, UpstreamCache {
  readonly #env: RootDatabase;
  readonly #db: Tables;
  readonly #path: string;

  constructor(env: RootDatabase, tables: Tables, path: string) {
    this.#env = env;
    this.#db = tables;
    this.#path = path;
  }

  /**
   * One synchronous write transaction of about `bytes` of values; LMDB's numeric errors (a full
   * disk) become a clear one, and a disk that is nearly full refuses it before LMDB writes anything.
   */
  #write(body: () => void, bytes = 0): void {
    checkFreeSpace(this.#path, bytes);
    try {
      this.#env.transactionSync(body);
    } catch (error) {
      throw storeError(error, this.#path);
    }
  }

  async getHead(): Promise<BlockRef | null> {
    // lmdb-js reuses one read snapshot until its next timer tick; the head must be the newest one,
    // also when another process has just committed, and later reads of the turn share it.
    this.#env.resetReadTxn();
    return this.#readHead();
  }

  async getCanonicalHash(number: bigint): Promise<Uint8Array | null> {
    return this.#db.canonical.get(blockNumberKey(number)) ?? null;
  }

  async getBlockNumber(hash: Uint8Array): Promise<bigint | null> {
    const value = this.#db.blockNumbers.get(hash);
    return value === undefined ? null : readUint64(value);
  }

  async getHeader(hash: Uint8Array): Promise<Uint8Array | null> {
    return this.#db.headers.get(hash) ?? null;
  }

  async getBody(hash: Uint8Array): Promise<Uint8Array | null> {
    return this.#db.bodies.get(hash) ?? null;
  }

  async getStateRoot(hash: Uint8Array): Promise<Uint8Array | null> {
    return this.#db.stateRoots.get(hash) ?? null;
  }

  async getTxLocation(txHash: Uint8Array): Promise<TxLocation | null> {
    const value = this.#db.txIndex.get(txHash);
    return value === undefined ? null : decodeTxLocation(value);
  }

  async getReceipts(blockHash: Uint8Array): Promise<Uint8Array[] | null> {
    const value = this.#db.receipts.get(blockHash);
    return value === undefined ? null : decodeReceipts(value);
  }

  async getBlockReceiptsJson(blockHash: Uint8Array): Promise<Uint8Array | null> {
    // Stored receipt JSON is served as it is (RawJson): its checksum is what keeps a damaged byte
    // from going out as data, or as invalid JSON in a 200 response.
    return this.#db.receiptsJson.get(blockHash) ?? null;
  }

  async getReceiptJson(blockHash: Uint8Array, index: number): Promise<Uint8Array | null> {
    // getBinaryFast lends a buffer that the next read overwrites: take the numbers out first, and
    // copy (and check) only this receipt's bytes rather than the whole block's text.
    const { receiptBoundaries, receiptsJson } = this.#db;
    const boundaries = receiptBoundaries.db.getBinaryFast(blockHash);
    const range =
      boundaries === undefined
        ? null
        : receiptByteRange(receiptBoundaries.open(blockHash, boundaries), index);
    if (range === null) return null;
    const text = receiptsJson.db.getBinaryFast(blockHash);
    if (text === undefined) return null;
    const json: Uint8Array = Uint8Array.prototype.slice.call(text, range.start, range.end);
    if (json.length !== range.end - range.start || sliceChecksum(json) !== range.checksum)
      throw receiptsJson.damaged(blockHash, ` (receipt ${index})`);
    return json;
  }

  async getTrieNode(hash: Uint8Array): Promise<Uint8Array | null> {
    return this.#db.trieNodes.get(hash) ?? null;
  }

  async getCode(codeHash: Uint8Array): Promise<Uint8Array | null> {
    return this.syncReads.code(codeHash);
  }

  getTrieNodeSync(hash: Uint8Array): Uint8Array | null {
    return this.#db.trieNodes.get(hash) ?? null;
  }

  getCodeSync(codeHash: Uint8Array): Uint8Array | null {
    return this.#db.code.get(codeHash) ?? null;
  }

  async getAccountAt(address: Uint8Array, number: bigint): Promise<FlatAccount | null> {
    return this.syncReads.accountAt(address, number);
  }

  async getStorageAt(address: Uint8Array, slot: Uint8Array, number: bigint): Promise<Uint8Array> {
    return this.syncReads.storageAt(address, slot, number);
  }

  /** LMDB reads are synchronous: the EVM of src/evm reads state through these directly. */
  readonly syncReads: SyncStateReads = {
    canonicalHash: (number) => this.#db.canonical.get(blockNumberKey(number)) ?? null,
    code: (codeHash) => this.#db.code.get(codeHash) ?? null,
    accountAt: (address, number) => {
      const entry = latestAtOrBefore(this.#db.accountHistory, addressHistoryKey(address, number));
      return entry === undefined ? null : decodeAccount(entry.value);
    },
    storageAt: (address, slot, number) => {
      // Both lookups run in the same event turn, hence in the same read snapshot.
      const written = latestAtOrBefore(this.#db.storageHistory, slotHistoryKey(address, slot, number));
      if (written === undefined) return new Uint8Array(0);
      const wiped = latestAtOrBefore(this.#db.storageWipes, addressHistoryKey(address, number));
      // A write in the block of the wipe is that block's final value, so only a later wipe hides it.
      if (wiped !== undefined && blockNumberSuffix(wiped.key) > blockNumberSuffix(written.key)) {
        return new Uint8Array(0);
      }
      return written.value;
    },
  };

  async getMeta(key: string): Promise<Uint8Array | null> {
    return this.#db.meta.get(metaKey(key)) ?? null;
  }

  async putMeta(key: string, value: Uint8Array): Promise<void> {
    this.#write(() => this.#db.meta.put(metaKey(key), value), value.length);
  }

  async commitBlock(block: BlockWrite): Promise<void> {
    checkBlockShape(block);
    // Render and encode before taking the write lock, which other writers would wait on.
    const receipts = encodeReceipts(block.receipts);
    const receiptsJson = renderReceiptsJson(block.receiptsJson);
    // Default flags (abortable, synchronous commit flushed before returning): a resolved
    // commitBlock is on disk, and a throw inside aborts the whole block.
    this.#write(
      () => {
        this.#checkExtendsHead(block);
        this.#writeBlock(block, receipts, receiptsJson);
        for (const [key, value] of block.meta ?? []) this.#db.meta.put(metaKey(key), value);
      },
      blockWriteBytes(block, receipts, receiptsJson),
    );
  }

  async commitBlocks(writes: readonly BlockWrite[]): Promise<void> {
    for (const block of writes) checkBlockShape(block);
    const encoded = writes.map((block) => ({
      block,
      receipts: encodeReceipts(block.receipts),
      receiptsJson: renderReceiptsJson(block.receiptsJson),
    }));
    this.#write(
      () => {
        for (const { block, receipts, receiptsJson } of encoded) {
          this.#checkExtendsHead(block);
          this.#writeBlock(block, receipts, receiptsJson);
          for (const [key, value] of block.meta ?? []) this.#db.meta.put(metaKey(key), value);
        }
      },
      encoded.reduce((sum, e) => sum + blockWriteBytes(e.block, e.receipts, e.receiptsJson), 0),
    );
  }

  async unwindTo(number: bigint): Promise<void> {
    if (number < 0n) throw new RangeError(`cannot unwind to block ${number}`);
    this.#write(() => {
      const head = this.#readHead();
      for (let n = head?.number ?? -1n; n > number; n--) this.#removeBlock(n);
    });
  }

  async close(): Promise<void> {
    await this.#env.close();
  }

  get #upstream(): Record<UpstreamTable, Table> {
    const tables = this.#db.upstream;
    if (tables === null) throw new Error('this store was not opened as an upstream cache');
    return tables;
  }

  async putBlock(block: CachedBlock): Promise<void> {
    const db = this.#db;
    this.#write(() => {
      db.headers.put(block.hash, block.header);
      db.bodies.put(block.hash, block.body);
      db.blockNumbers.put(block.hash, blockNumberKey(block.number));
      block.txHashes.forEach((txHash, index) => {
        db.txIndex.put(txHash, encodeTxLocation(block.hash, block.number, index));
      });
    });
  }

  async putReceipts(blockHash: Uint8Array, receipts: Uint8Array[], receiptsJson: string[]): Promise<void> {
    const encoded = encodeReceipts(receipts);
    const rendered = renderReceiptsJson(receiptsJson);
    const db = this.#db;
    this.#write(() => {
      db.receipts.put(blockHash, encoded);
      db.receiptsJson.put(blockHash, rendered.text);
      db.receiptBoundaries.put(blockHash, rendered.boundaries);
    });
  }

  async putCanonical(number: bigint, hash: Uint8Array): Promise<void> {
    const table = this.#upstream.upstreamCanonical;
    this.#write(() => table.put(blockNumberKey(number), hash));
  }

  async getCachedCanonical(number: bigint): Promise<Uint8Array | null> {
    return this.#upstream.upstreamCanonical.get(blockNumberKey(number)) ?? null;
  }

  async getCachedAccount(
    blockHash: Uint8Array,
    address: Uint8Array,
  ): Promise<FlatAccount | null | undefined> {
    return this.getCachedAccountSync(blockHash, address);
  }

  async getCachedStorage(
    blockHash: Uint8Array,
    address: Uint8Array,
    slot: Uint8Array,
  ): Promise<Uint8Array | null> {
    return this.getCachedStorageSync(blockHash, address, slot);
  }

  getCachedAccountSync(blockHash: Uint8Array, address: Uint8Array): FlatAccount | null | undefined {
    const value = this.#upstream.upstreamAccounts.get(concatBytes(blockHash, address));
    return value === undefined ? undefined : decodeAccount(value);
  }

  getCachedStorageSync(blockHash: Uint8Array, address: Uint8Array, slot: Uint8Array): Uint8Array | null {
    return this.#upstream.upstreamStorage.get(concatBytes(blockHash, address, slot)) ?? null;
  }

  async putState(blockHash: Uint8Array, entries: Parameters<UpstreamCache['putState']>[1]): Promise<void> {
    const { upstreamAccounts, upstreamStorage } = this.#upstream;
    const code = this.#db.code;
    this.#write(() => {
      for (const { address, account } of entries.accounts)
        upstreamAccounts.put(concatBytes(blockHash, address), encodeAccount(account));
      for (const { address, slot, value } of entries.storage)
        upstreamStorage.put(concatBytes(blockHash, address, slot), minimalValue(value));
      for (const [codeHash, bytes] of entries.code) code.put(codeHash, bytes);
    });
  }

  async dropBlocks(hashes: Uint8Array[]): Promise<void> {
    const db = this.#db;
    const { upstreamAccounts, upstreamStorage } = this.#upstream;
    this.#write(() => {
      for (const hash of hashes) {
        const body = db.bodies.get(hash);
        for (const table of [
          db.headers,
          db.bodies,
          db.blockNumbers,
          db.receipts,
          db.receiptsJson,
          db.receiptBoundaries,
        ])
          table.remove(hash);
        if (body !== undefined)
          for (const txHash of bodyTxHashes(body)) {
            const location = db.txIndex.get(txHash);
            if (location !== undefined && equalsBytes(decodeTxLocation(location).blockHash, hash))
              db.txIndex.remove(txHash);
          }
        for (const table of [upstreamAccounts, upstreamStorage])
          for (const key of table.db.getKeys({ start: hash, end: prefixEnd(hash) })) table.remove(key);
      }
    });
  }

  #readHead(): BlockRef | null {
    for (const { key, value } of this.#db.canonical.range({ reverse: true, limit: 1 })) {
      return { number: readUint64(key), hash: value };
    }
    return null;
  }

  #checkExtendsHead(block: BlockWrite): void {
    const head = this.#readHead();
    const expected = head === null ? 0n : head.number + 1n;
    if (block.number !== expected) {
      throw new CommitRejectedError(`block ${block.number} does not extend the head: expected ${expected}`);
    }
    if (this.#db.blockNumbers.exists(block.hash)) {
      throw new CommitRejectedError(`block ${bytesToHex(block.hash)} is already stored`);
    }
  }

  #writeBlock(block: BlockWrite, receipts: Uint8Array, receiptsJson: RenderedReceipts): void {
    const db = this.#db;
    const { hash, number } = block;
    db.headers.put(hash, block.header);
    db.bodies.put(hash, block.body);
    db.canonical.put(blockNumberKey(number), hash);
    db.blockNumbers.put(hash, blockNumberKey(number));
    db.stateRoots.put(hash, block.stateRoot);
    block.txHashes.forEach((txHash, index) => {
      db.txIndex.put(txHash, encodeTxLocation(hash, number, index));
    });
    db.receipts.put(hash, receipts);
    db.receiptsJson.put(hash, receiptsJson.text);
    db.receiptBoundaries.put(hash, receiptsJson.boundaries);
    for (const [nodeHash, node] of block.trieNodes) db.trieNodes.put(nodeHash, node);
    for (const [codeHash, code] of block.code) db.code.put(codeHash, code);
    for (const { address, account } of block.accounts) {
      db.accountHistory.put(addressHistoryKey(address, number), encodeAccount(account));
    }
    for (const address of block.storageWipes) {
      db.storageWipes.put(addressHistoryKey(address, number), new Uint8Array(0));
    }
    for (const { address, slot, value } of block.storage) {
      db.storageHistory.put(slotHistoryKey(address, slot, number), minimalValue(value));
    }
    db.blockChanges?.put(
      blockNumberKey(number),
      encodeBlockChanges({
        txHashes: block.txHashes,
        accounts: block.accounts.map((a) => a.address),
        wipes: block.storageWipes,
        slots: block.storage.map((s) => [s.address, s.slot]),
      }),
    );
  }

  /** Deletes block `number` (the head) and what it wrote; see `unwindTo`. */
  #removeBlock(number: bigint): void {
    const db = this.#db;
    const key = blockNumberKey(number);
    const hash = db.canonical.get(key) ?? null;
    const record = db.blockChanges?.get(key);
    if (hash === null) throw new Error(`block ${number} is missing from the canonical chain`);
    if (record === undefined)
      throw new CommitRejectedError(`block ${number} was stored without an undo record`);
    const changes = decodeBlockChanges(record);
    for (const txHash of changes.txHashes) db.txIndex.remove(txHash);
    for (const address of changes.accounts) db.accountHistory.remove(addressHistoryKey(address, number));
    for (const address of changes.wipes) db.storageWipes.remove(addressHistoryKey(address, number));
    for (const [address, slot] of changes.slots) {
      db.storageHistory.remove(slotHistoryKey(address, slot, number));
    }
    for (const table of [
      db.headers,
      db.bodies,
      db.blockNumbers,
      db.stateRoots,
      db.receipts,
      db.receiptsJson,
      db.receiptBoundaries,
    ]) {
      table.remove(hash);
    }
    db.canonical.remove(key);
    db.blockChanges?.remove(key);
  }
}

/**
 * The last entry at or before `key` among the keys sharing its prefix (all of `key` but the block
 * number): the value of one account, slot or wipe history as of that block.
 */
function latestAtOrBefore(db: Table, key: Uint8Array): { key: Uint8Array; value: Uint8Array } | undefined {
  // A reverse range starts at `start` inclusive and stops before `end`.
  for (const entry of db.range({ start: key, end: historyPrefix(key), reverse: true, limit: 1 })) {
    return entry;
  }
  return undefined;
}

/** About what a block's write stores: its values (keys and the tables' own pages aside). */
function blockWriteBytes(block: BlockWrite, receipts: Uint8Array, rendered: RenderedReceipts): number {
  let bytes = block.header.length + block.body.length + receipts.length + rendered.text.length;
  for (const [, node] of block.trieNodes) bytes += node.length;
  for (const [, code] of block.code) bytes += code.length;
  return bytes + 64 * (block.accounts.length + block.storage.length + block.txHashes.length);
}

function checkBlockShape(block: BlockWrite): void {
  const count = block.txHashes.length;
  if (block.receipts.length !== count || block.receiptsJson.length !== count) {
    throw new RangeError(
      `block ${block.number}: ${count} transactions, ${block.receipts.length} receipts, ` +
        `${block.receiptsJson.length} JSON receipts`,
    );
  }
}

/** The first key after every key starting with `prefix` (for a range over one block hash). */
function prefixEnd(prefix: Uint8Array): Uint8Array {
  const end = Uint8Array.from(prefix);
  for (let i = end.length - 1; i >= 0; i--) {
    if ((end[i] as number) < 0xff) {
      end[i] = (end[i] as number) + 1;
      return end.subarray(0, i + 1);
    }
  }
  return Uint8Array.of(0xff, ...prefix);
}

/** The hashes of a stored body's transactions (typed ones are RLP strings wrapping the envelope). */
function bodyTxHashes(body: Uint8Array): Uint8Array[] {
  const [txs] = RLP.decode(body) as unknown as [Array<Uint8Array | Uint8Array[]>];
  return txs.map((tx) => keccak256(tx instanceof Uint8Array ? tx : RLP.encode(tx)));
}
