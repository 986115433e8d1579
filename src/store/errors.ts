import { statfsSync } from 'node:fs';
import { constants } from 'node:os';
import { caught } from '../core/caught.ts';
import { UserError } from '../core/errors.ts';

/**
 * `commitBlock` refused a block that does not extend the head (a gap, a repeated number) or that is
 * already stored; nothing of it was written. Ingest treats this as a race or a reorg to resolve.
 */
export class CommitRejectedError extends Error {
  override readonly name = 'CommitRejectedError';
}

/**
 * The store lacks a record that its other records say it has (a canonical block without its hash,
 * say): damage, never an answer to serve. Whoever meets it fails the request as an internal error.
 */
export class StoreInconsistentError extends Error {
  override readonly name: string = 'StoreInconsistentError';
}

/**
 * A stored value that fails its checksum (src/store/lmdb/checksum.ts): a byte of it, or of its key,
 * changed on disk. Met serving a request it fails that request as an internal error, logged with
 * this message; met opening the store, it is a StoreUnusableError (see storeError).
 */
export class DamagedValueError extends StoreInconsistentError {
  override readonly name = 'DamagedValueError';
  constructor(
    datadir: string,
    /** What is damaged: the table and the key. */
    readonly what: string,
  ) {
    super(damagedStore(datadir, what).message);
  }
}

/**
 * The store cannot be used as it is on disk: a datadir that is not a writable directory, a full
 * disk, a damaged file. The message says what is wrong and what to do; the CLI prints it as is.
 */
export class StoreUnusableError extends UserError {
  override name = 'StoreUnusableError';
}

/**
 * The store cannot write now (a full disk, a datadir no longer writable, the map's size limit);
 * what it holds is intact and still readable. `reason` says why in words for a client, without the
 * datadir's path: the service answers a write it refused with it (-32000), not as an internal error.
 */
export class StoreWriteRefused extends StoreUnusableError {
  override name = 'StoreWriteRefused';
  constructor(
    message: string,
    readonly reason: string,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}

// LMDB's own return codes (lmdb.h); lmdb-js puts them, like errno values, in a numeric `code`.
const MDB_MAP_FULL = -30792;
const MDB_INVALID = -30793;
const MDB_VERSION_MISMATCH = -30794;
const MDB_PANIC = -30795;
const MDB_CORRUPTED = -30796;
const MDB_PAGE_NOTFOUND = -30797;
const MDB_BAD_TXN = -30782;

const DAMAGED = new Set([MDB_INVALID, MDB_CORRUPTED, MDB_PAGE_NOTFOUND, MDB_PANIC, MDB_BAD_TXN]);

/** errno name of a code that node:fs gives as a string and lmdb-js as a number. */
function errnoName(code: unknown): string | undefined {
  if (typeof code === 'string') return code;
  if (typeof code !== 'number' || code <= 0) return undefined;
  return Object.entries(constants.errno).find(([, n]) => n === code)?.[0];
}

/**
 * One line for an error met opening, reading or writing the store in `datadir`, naming what is wrong
 * and what to do; anything not recognised is returned as it is (a bug to see with its stack).
 */
export function storeError(error: unknown, datadir: string): unknown {
  if (error instanceof UserError || !(error instanceof Error)) return error;
  if (error instanceof DamagedValueError) return damagedStore(datadir, error.what, error);
  const code = (error as { code?: unknown }).code;
  const fix = (what: string, todo: string) => new StoreUnusableError(`${what}: ${todo}`, { cause: error });
  const refuse = (what: string, todo: string, reason: string) =>
    new StoreWriteRefused(`${what}: ${todo}`, reason, { cause: error });
  if (typeof code === 'number' && DAMAGED.has(code))
    return damagedStore(datadir, `LMDB: ${error.message}`, error);
  if (code === MDB_VERSION_MISMATCH)
    return fix(
      `the chain store in ${datadir} was written by another LMDB version`,
      'open it with the ethtrace that made it, or import the chain again into a new --datadir',
    );
  if (code === MDB_MAP_FULL)
    return refuse(
      `the chain store in ${datadir} reached its size limit`,
      'import into a new --datadir',
      'its chain store reached its size limit',
    );
  switch (errnoName(code)) {
    case 'ENOSPC':
    case 'EDQUOT':
      return refuse(
        `no space left on the disk of ${datadir}`,
        'free some space (what was stored before is kept) and run the command again',
        'no space left on its disk',
      );
    case 'EROFS':
    case 'EACCES':
    case 'EPERM':
      return refuse(
        `${datadir} is not writable`,
        'give a --datadir this user can write to',
        'its data directory is not writable',
      );
    case 'ENOTDIR':
    case 'EEXIST':
      return fix(`${datadir} is not a directory`, 'give --datadir a directory (it is created if missing)');
    case 'EIO':
      // LMDB reports a short write, which is what a full disk gives it, as EIO.
      if ((freeDiskBytes(datadir) ?? Number.POSITIVE_INFINITY) < MIN_FREE_DISK_BYTES)
        return storeError(Object.assign(new Error('disk full'), { code: 'ENOSPC' }), datadir);
      return damagedStore(datadir, `the disk reports an I/O error: ${error.message}`, error);
    default:
      return error;
  }
}

/**
 * The free space the store keeps on its disk: a write that would leave less is refused before LMDB
 * is given it (src/store/lmdb/environment.ts), and below it an I/O error while writing is taken for
 * a full disk (the failed write itself may have taken what was left). A block's write transaction is rarely
 * larger. LMDB meeting a full disk fails inside its commit and prints its own lines (`mdb_page_spill
 * error 5`) on the process's stderr, which is where the JSON log goes: stopping short of the full
 * disk keeps them out of it.
 */
export const MIN_FREE_DISK_BYTES = 16 * 1024 * 1024;

/**
 * Bytes free for this user on the disk of `dir`; null when that cannot be told, which the writes go
 * past unchecked (LMDB still fails a write the disk cannot take): logged once for each directory
 * until statfs answers again, and counted each time.
 */
export function freeDiskBytes(dir: string): number | null {
  try {
    const fs = statfsSync(dir);
    statfsFailing.delete(dir);
    return fs.bavail * fs.bsize;
  } catch (e) {
    caught(
      'disk-free-space',
      `the free space on the disk of ${dir} cannot be told (${(e as Error).message}): the store writes without checking it`,
      { quiet: statfsFailing.has(dir) },
    );
    statfsFailing.add(dir);
    return null;
  }
}

/** Directories whose statfs failed last time asked (logged once until it answers). */
const statfsFailing = new Set<string>();

/**
 * Throws StoreWriteRefused when writing about `bytes` into the store in `datadir` would leave less
 * than MIN_FREE_DISK_BYTES free (copy-on-write pages: each changed page is written anew, twice the
 * data is allowed for).
 */
export function checkFreeSpace(datadir: string, bytes: number): void {
  const free = freeDiskBytes(datadir);
  if (free !== null && free < MIN_FREE_DISK_BYTES + 2 * bytes)
    throw storeError(Object.assign(new Error('disk full'), { code: 'ENOSPC' }), datadir);
}

export function damagedStore(datadir: string, what: string, cause?: unknown): StoreUnusableError {
  return new StoreUnusableError(
    `the chain store in ${datadir} is damaged (${what}): restore the datadir from a backup, or import the chain again into a new --datadir`,
    { cause },
  );
}
