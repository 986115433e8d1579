// The embedded chain store: one LMDB environment, one named sub-database per kind of record.
// Reads are synchronous memory-mapped lookups wrapped in the async interface; each block is written
// in one synchronous LMDB transaction, so readers (in this or other processes) see whole blocks only.

import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { RLP } from '@ethereumjs/rlp';
import { bytesToHex, concatBytes, equalsBytes } from '@ethereumjs/util';
import { type Database, open, type RootDatabase } from 'lmdb';
import { keccak256 } from '../../primitives/keccak.ts';
import { CommitRejectedError, damagedStore, storeError } from '../errors.ts';
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
  plainBytes,
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

type Tables = Record<BinaryTable, BinaryDb> & {
  receiptsJson: BinaryDb; // block hash → `[r0,r1,...]`, the eth_getBlockReceipts answer
  // number (8, BE) → what the block wrote (tx hashes, accounts, wipes, slots), for unwindTo. Only
  // writers use it: null in a read-only open of a store made before it existed.
  blockChanges: BinaryDb | null;
  upstream: Record<UpstreamTable, BinaryDb> | null;
};

/**
 * Address space to reserve, not disk: LMDB grows the file as pages are written. Reserving a lot up
 * front means the map is rarely resized, and every resize makes readers in other processes remap.
 * lmdb-js still grows the map past this if the data ever needs it.
 */
const MAP_SIZE = 2 ** 40;

// Blocks remembered as having valid receipt JSON: more than a getLogs range touches at once, and at
// ~70 bytes a key small enough to keep (the set is emptied when full rather than kept in LRU order).
const CHECKED_RECEIPTS_KEPT = 16_384;
const JSON_DECODER = new TextDecoder('utf-8', { fatal: true });

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
    return new LmdbStore(env, openTables(env, readOnly, upstream), path);
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

function openTables(env: RootDatabase, readOnly: boolean, upstream: boolean): Tables {
  const binary = BINARY_TABLES.map((name) => [name, openTable<Uint8Array>(env, name, 'binary')]);
  return {
    upstream: upstream
      ? (Object.fromEntries(
          UPSTREAM_TABLES.map((name) => [name, openTable<Uint8Array>(env, name, 'binary')]),
        ) as Record<UpstreamTable, BinaryDb>)
      : null,
    ...(Object.fromEntries(binary) as Record<BinaryTable, BinaryDb>),
    receiptsJson: openTable<Uint8Array>(env, 'receiptsJson', 'binary'),
    blockChanges: readOnly
      ? (env.openDB<Uint8Array, Uint8Array>('blockChanges', { keyEncoding: 'binary', encoding: 'binary' }) ??
        null)
      : openTable<Uint8Array>(env, 'blockChanges', 'binary'),
  };
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
  /** Blocks whose stored receipt JSON parsed, so that each is parsed once, not on every request. */
  readonly #checkedReceipts = new Set<string>();

  constructor(env: RootDatabase, tables: Tables, path: string) {
    this.#env = env;
    this.#db = tables;
    this.#path = path;
  }

  /** One synchronous write transaction; LMDB's numeric errors (a full disk) become a clear one. */
  #write(body: () => void): void {
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
    return bytesOrNull(this.#db.canonical.get(blockNumberKey(number)));
  }

  async getBlockNumber(hash: Uint8Array): Promise<bigint | null> {
    const value = this.#db.blockNumbers.get(hash);
    return value === undefined ? null : readUint64(value);
  }

  async getHeader(hash: Uint8Array): Promise<Uint8Array | null> {
    return bytesOrNull(this.#db.headers.get(hash));
  }

  async getBody(hash: Uint8Array): Promise<Uint8Array | null> {
    return bytesOrNull(this.#db.bodies.get(hash));
  }

  async getStateRoot(hash: Uint8Array): Promise<Uint8Array | null> {
    return bytesOrNull(this.#db.stateRoots.get(hash));
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
    const json = bytesOrNull(this.#db.receiptsJson.get(blockHash));
    if (json === null) return null;
    const key = bytesToHex(blockHash);
    if (!this.#checkedReceipts.has(key)) {
      this.#checkJson(json, `the JSON receipts of block ${key}`);
      if (this.#checkedReceipts.size >= CHECKED_RECEIPTS_KEPT) this.#checkedReceipts.clear();
      this.#checkedReceipts.add(key);
    }
    return json;
  }

  async getReceiptJson(blockHash: Uint8Array, index: number): Promise<Uint8Array | null> {
    // getBinaryFast lends a buffer that the next read overwrites: take the numbers out first, and
    // decode only this receipt's bytes rather than the whole block's text.
    const boundaries = this.#db.receiptBoundaries.getBinaryFast(blockHash);
    const range = boundaries === undefined ? null : receiptByteRange(boundaries, index);
    if (range === null) return null;
    const text = this.#db.receiptsJson.getBinaryFast(blockHash);
    if (text === undefined) return null;
    const json: Uint8Array = Uint8Array.prototype.slice.call(text, range[0], range[1]);
    this.#checkJson(json, `the JSON receipt ${index} of block ${bytesToHex(blockHash)}`);
    return json;
  }

  /**
   * Stored receipt JSON is served as it is (RawJson); a damaged byte must become an error answer,
   * never invalid JSON in a 200 response.
   */
  #checkJson(json: Uint8Array, what: string): void {
    try {
      JSON.parse(JSON_DECODER.decode(json));
    } catch {
      throw damagedStore(this.#path, `${what} is not valid JSON`);
    }
  }

  async getTrieNode(hash: Uint8Array): Promise<Uint8Array | null> {
    return bytesOrNull(this.#db.trieNodes.get(hash));
  }

  async getCode(codeHash: Uint8Array): Promise<Uint8Array | null> {
    return this.syncReads.code(codeHash);
  }

  async getAccountAt(address: Uint8Array, number: bigint): Promise<FlatAccount | null> {
    return this.syncReads.accountAt(address, number);
  }

  async getStorageAt(address: Uint8Array, slot: Uint8Array, number: bigint): Promise<Uint8Array> {
    return this.syncReads.storageAt(address, slot, number);
  }

  /** LMDB reads are synchronous: the EVM of src/evm reads state through these directly. */
  readonly syncReads: SyncStateReads = {
    canonicalHash: (number) => bytesOrNull(this.#db.canonical.get(blockNumberKey(number))),
    code: (codeHash) => bytesOrNull(this.#db.code.get(codeHash)),
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
      return plainBytes(written.value);
    },
  };

  async getMeta(key: string): Promise<Uint8Array | null> {
    return bytesOrNull(this.#db.meta.get(metaKey(key)));
  }

  async putMeta(key: string, value: Uint8Array): Promise<void> {
    this.#write(() => this.#db.meta.putSync(metaKey(key), value));
  }

  async commitBlock(block: BlockWrite): Promise<void> {
    checkBlockShape(block);
    // Render and encode before taking the write lock, which other writers would wait on.
    const receipts = encodeReceipts(block.receipts);
    const receiptsJson = renderReceiptsJson(block.receiptsJson);
    // Default flags (abortable, synchronous commit flushed before returning): a resolved
    // commitBlock is on disk, and a throw inside aborts the whole block.
    this.#write(() => {
      this.#checkExtendsHead(block);
      this.#writeBlock(block, receipts, receiptsJson);
      for (const [key, value] of block.meta ?? []) this.#db.meta.putSync(metaKey(key), value);
    });
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

  get #upstream(): Record<UpstreamTable, BinaryDb> {
    const tables = this.#db.upstream;
    if (tables === null) throw new Error('this store was not opened as an upstream cache');
    return tables;
  }

  async putBlock(block: CachedBlock): Promise<void> {
    const db = this.#db;
    this.#write(() => {
      db.headers.putSync(block.hash, block.header);
      db.bodies.putSync(block.hash, block.body);
      db.blockNumbers.putSync(block.hash, blockNumberKey(block.number));
      block.txHashes.forEach((txHash, index) => {
        db.txIndex.putSync(txHash, encodeTxLocation(block.hash, block.number, index));
      });
    });
  }

  async putReceipts(blockHash: Uint8Array, receipts: Uint8Array[], receiptsJson: string[]): Promise<void> {
    const encoded = encodeReceipts(receipts);
    const rendered = renderReceiptsJson(receiptsJson);
    const db = this.#db;
    this.#write(() => {
      db.receipts.putSync(blockHash, encoded);
      db.receiptsJson.putSync(blockHash, rendered.text);
      db.receiptBoundaries.putSync(blockHash, rendered.boundaries);
    });
  }

  async putCanonical(number: bigint, hash: Uint8Array): Promise<void> {
    const table = this.#upstream.upstreamCanonical;
    this.#write(() => table.putSync(blockNumberKey(number), hash));
  }

  async getCachedCanonical(number: bigint): Promise<Uint8Array | null> {
    return bytesOrNull(this.#upstream.upstreamCanonical.get(blockNumberKey(number)));
  }

  async getCachedAccount(
    blockHash: Uint8Array,
    address: Uint8Array,
  ): Promise<FlatAccount | null | undefined> {
    const value = this.#upstream.upstreamAccounts.get(concatBytes(blockHash, address));
    return value === undefined ? undefined : decodeAccount(value);
  }

  async getCachedStorage(
    blockHash: Uint8Array,
    address: Uint8Array,
    slot: Uint8Array,
  ): Promise<Uint8Array | null> {
    return bytesOrNull(this.#upstream.upstreamStorage.get(concatBytes(blockHash, address, slot)));
  }

  async putState(blockHash: Uint8Array, entries: Parameters<UpstreamCache['putState']>[1]): Promise<void> {
    const { upstreamAccounts, upstreamStorage } = this.#upstream;
    const code = this.#db.code;
    this.#write(() => {
      for (const { address, account } of entries.accounts)
        upstreamAccounts.putSync(concatBytes(blockHash, address), encodeAccount(account));
      for (const { address, slot, value } of entries.storage)
        upstreamStorage.putSync(concatBytes(blockHash, address, slot), minimalValue(value));
      for (const [codeHash, bytes] of entries.code) code.putSync(codeHash, bytes);
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
          table.removeSync(hash);
        if (body !== undefined)
          for (const txHash of bodyTxHashes(body)) {
            const location = db.txIndex.get(txHash);
            if (location !== undefined && equalsBytes(decodeTxLocation(location).blockHash, hash))
              db.txIndex.removeSync(txHash);
          }
        for (const table of [upstreamAccounts, upstreamStorage])
          for (const key of table.getKeys({ start: hash, end: prefixEnd(hash) })) table.removeSync(key);
      }
    });
  }

  #readHead(): BlockRef | null {
    for (const { key, value } of this.#db.canonical.getRange({ reverse: true, limit: 1 })) {
      return { number: readUint64(key), hash: plainBytes(value) };
    }
    return null;
  }

  #checkExtendsHead(block: BlockWrite): void {
    const head = this.#readHead();
    const expected = head === null ? 0n : head.number + 1n;
    if (block.number !== expected) {
      throw new CommitRejectedError(`block ${block.number} does not extend the head: expected ${expected}`);
    }
    if (this.#db.blockNumbers.doesExist(block.hash)) {
      throw new CommitRejectedError(`block ${bytesToHex(block.hash)} is already stored`);
    }
  }

  #writeBlock(block: BlockWrite, receipts: Uint8Array, receiptsJson: RenderedReceipts): void {
    const db = this.#db;
    const { hash, number } = block;
    db.headers.putSync(hash, block.header);
    db.bodies.putSync(hash, block.body);
    db.canonical.putSync(blockNumberKey(number), hash);
    db.blockNumbers.putSync(hash, blockNumberKey(number));
    db.stateRoots.putSync(hash, block.stateRoot);
    block.txHashes.forEach((txHash, index) => {
      db.txIndex.putSync(txHash, encodeTxLocation(hash, number, index));
    });
    db.receipts.putSync(hash, receipts);
    db.receiptsJson.putSync(hash, receiptsJson.text);
    db.receiptBoundaries.putSync(hash, receiptsJson.boundaries);
    for (const [nodeHash, node] of block.trieNodes) db.trieNodes.putSync(nodeHash, node);
    for (const [codeHash, code] of block.code) db.code.putSync(codeHash, code);
    for (const { address, account } of block.accounts) {
      db.accountHistory.putSync(addressHistoryKey(address, number), encodeAccount(account));
    }
    for (const address of block.storageWipes) {
      db.storageWipes.putSync(addressHistoryKey(address, number), new Uint8Array(0));
    }
    for (const { address, slot, value } of block.storage) {
      db.storageHistory.putSync(slotHistoryKey(address, slot, number), minimalValue(value));
    }
    db.blockChanges?.putSync(
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
    const hash = bytesOrNull(db.canonical.get(key));
    const record = db.blockChanges?.get(key);
    if (hash === null) throw new Error(`block ${number} is missing from the canonical chain`);
    if (record === undefined)
      throw new CommitRejectedError(`block ${number} was stored without an undo record`);
    const changes = decodeBlockChanges(record);
    for (const txHash of changes.txHashes) db.txIndex.removeSync(txHash);
    for (const address of changes.accounts) db.accountHistory.removeSync(addressHistoryKey(address, number));
    for (const address of changes.wipes) db.storageWipes.removeSync(addressHistoryKey(address, number));
    for (const [address, slot] of changes.slots) {
      db.storageHistory.removeSync(slotHistoryKey(address, slot, number));
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
      table.removeSync(hash);
    }
    db.canonical.removeSync(key);
    db.blockChanges?.removeSync(key);
  }
}

/**
 * The last entry at or before `key` among the keys sharing its prefix (all of `key` but the block
 * number): the value of one account, slot or wipe history as of that block.
 */
function latestAtOrBefore(db: BinaryDb, key: Uint8Array): { key: Uint8Array; value: Uint8Array } | undefined {
  // A reverse range starts at `start` inclusive and stops before `end`.
  for (const entry of db.getRange({ start: key, end: historyPrefix(key), reverse: true, limit: 1 })) {
    return entry;
  }
  return undefined;
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

function bytesOrNull(value: Uint8Array | undefined): Uint8Array | null {
  return value === undefined ? null : plainBytes(value);
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
