// The LMDB environment a datadir's store lives in: one environment, one named sub-database (table)
// per kind of record, every value carrying a checksum. The chain store (chainStore.ts) and the
// upstream cache (upstreamCache.ts) are two roles over one environment: they share its tables of
// blocks and receipts, the cache adds its own three, and both write through `LmdbEnvironment.write`.

import { existsSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { bytesToHex } from '@ethereumjs/util';
import { type Database, open, type RootDatabase } from 'lmdb';
import { checkFreeSpace, DamagedValueError, StoreUnusableError, storeError } from '../errors.ts';
import { seal, unseal } from './checksum.ts';
import { metaKey } from './keys.ts';
import { checkMetaPages } from './metaPages.ts';

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

export type UpstreamTable = (typeof UPSTREAM_TABLES)[number];

export type Tables = Record<BinaryTable, Table> & {
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

/**
 * Opens the environment at `path` with the chain's tables, and the upstream cache's when `upstream`;
 * a store written without checksums is refused (checkFormat).
 */
export async function openLmdbEnvironment(
  path: string,
  readOnly: boolean,
  upstream: boolean,
): Promise<LmdbEnvironment> {
  // lmdb-js would create the directory even to fail opening it read-only. A data file its writer
  // has created but not yet initialised is no store either: lmdb-js's failed read-only open of one
  // frees its environment twice and ends the process with a segmentation fault.
  if (readOnly && !storeWritten(path)) throw new Error(`no chain store at ${path}`);
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
    return new LmdbEnvironment(env, tables, path);
  } catch (error) {
    await env.close();
    throw storeError(error, path);
  }
}

/** One open environment: its tables, and the one way to write to them. */
export class LmdbEnvironment {
  constructor(
    private readonly env: RootDatabase,
    readonly tables: Tables,
    readonly path: string,
  ) {}

  /**
   * One synchronous write transaction of about `bytes` of values; LMDB's numeric errors (a full
   * disk) become a clear one, and a disk that is nearly full refuses it before LMDB writes anything.
   */
  write(body: () => void, bytes = 0): void {
    checkFreeSpace(this.path, bytes);
    try {
      this.env.transactionSync(body);
    } catch (error) {
      throw storeError(error, this.path);
    }
  }

  /**
   * lmdb-js reuses one read snapshot until its next timer tick; a read that must see the newest
   * commit (also another process's) takes a new one first.
   */
  renewReadSnapshot(): void {
    this.env.resetReadTxn();
  }

  /** Closes the environment, once: the chain store and the upstream cache over it may both close it. */
  close(): Promise<void> {
    this.closing ??= this.env.close();
    return this.closing;
  }

  private closing: Promise<void> | null = null;
}

/** Whether `path` holds an LMDB environment, i.e. a writer has opened a store there. */
export function storeExists(path: string): boolean {
  return existsSync(join(path, DATA_FILE));
}

/** Whether the store's writer has written its data file's first pages (LMDB writes both meta pages at once). */
function storeWritten(path: string): boolean {
  return (statSync(join(path, DATA_FILE), { throwIfNoEntry: false })?.size ?? 0) > 0;
}

function openEnvironment(path: string, readOnly: boolean): RootDatabase {
  // Durability is LMDB's own on purpose. LMDB writes a transaction's pages copy-on-write and then
  // switches a meta page, so a transaction is the unit of recovery: after a crash the store is at
  // its last committed block, never inside one. noSync / mapAsync would let a system crash lose or
  // tear committed transactions and useWritemap lets a stray write corrupt the map.
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
    // lmdb-js's overlapping sync (its default for a writer, never for a read-only open) lays out
    // and picks meta pages in a way of its own; with readers in other processes opened without it
    // (--processes, a server beside an import), the writer crashed in mdb_cursor_put about once in
    // thirty imports. Plain LMDB commits flush within the transaction instead: slower commits, one
    // layout for every process.
    overlappingSync: false,
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
export class Table {
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
