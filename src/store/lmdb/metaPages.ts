// LMDB trusts the two meta pages at the start of data.mdb: the one with the higher transaction id
// names the root pages of every tree, and a damaged one makes lmdb-js crash the process (a flipped
// magic number in page 0 is a segmentation fault, not an error). So they are checked here, from the
// file, before LMDB maps it. The layout is that of the LMDB lmdb-js builds (its mdb.c: MDB_page
// header, then MDB_meta); a store made by another build fails the version check, as it would in LMDB.

import { closeSync, fstatSync, openSync, readSync } from 'node:fs';
import { damagedStore, StoreUnusableError } from '../errors.ts';

const META_PAGES = 2;
/** Bytes read per meta page: header and MDB_meta fit well within the smallest page size. */
const META_READ_BYTES = 256;
const P_META = 0x08;
const TREE_PAGE = 0x01 | 0x02; // P_BRANCH | P_LEAF
const MDB_MAGIC = 0xbeefc0de;
const MDB_DATA_VERSION = 2;
const P_INVALID = 0xffffffffffffffffn;
// Offsets in a meta page: MDB_page header (pgno 8, txnid 8, pad 2, flags 2, lower/upper 4), then
// MDB_meta (magic 4, version 4, address 8, mapsize 8, two MDB_db of 48 bytes, last page 8, txnid 8).
const FLAGS_AT = 18;
const META_AT = 24;
const MAGIC_AT = META_AT;
const VERSION_AT = META_AT + 4;
const DBS_AT = META_AT + 24;
const DB_SIZE = 48;
const DB_ROOT_IN_DB = 40;
const PAGE_SIZE_AT = DBS_AT; // md_pad of the free-space DB holds the page size
const LAST_PAGE_AT = DBS_AT + 2 * DB_SIZE;
const MIN_PAGE_SIZE = 512;
const MAX_PAGE_SIZE = 65536;

/** Throws a StoreUnusableError when `file` (a data.mdb) has a meta page LMDB must not be given. */
export function checkMetaPages(file: string, datadir: string): void {
  const fd = openSync(file, 'r');
  try {
    const size = fstatSync(fd).size;
    if (size === 0) return; // made but never written: LMDB initialises it
    const first = readAt(fd, 0);
    const pageSize = first.readUInt32LE(PAGE_SIZE_AT);
    const bad = (what: string) => damagedStore(datadir, `${what} in ${file}`);
    if (!(pageSize >= MIN_PAGE_SIZE && pageSize <= MAX_PAGE_SIZE && (pageSize & (pageSize - 1)) === 0))
      throw bad('meta page 0 gives no valid page size');
    if (size < META_PAGES * pageSize) throw bad('the file is shorter than its meta pages');
    const pages = BigInt(Math.floor(size / pageSize));
    for (let i = 0; i < META_PAGES; i++) {
      const page = i === 0 ? first : readAt(fd, i * pageSize);
      const where = `meta page ${i}`;
      if ((page.readUInt16LE(FLAGS_AT) & P_META) === 0) throw bad(`${where} is not marked as one`);
      if (page.readUInt32LE(MAGIC_AT) !== MDB_MAGIC) throw bad(`${where} has no LMDB magic number`);
      if ((page.readUInt32LE(VERSION_AT) & 0xffff) !== MDB_DATA_VERSION)
        throw new StoreUnusableError(
          `${file} is not a chain store this ethtrace can read (LMDB data version ${page.readUInt32LE(VERSION_AT) & 0xffff}): use the ethtrace that made it, or import the chain into a new --datadir`,
        );
      if (page.readUInt32LE(PAGE_SIZE_AT) !== pageSize) throw bad(`${where} gives another page size`);
      const lastPage = page.readBigUInt64LE(LAST_PAGE_AT);
      for (let db = 0; db < 2; db++) {
        const root = page.readBigUInt64LE(DBS_AT + db * DB_SIZE + DB_ROOT_IN_DB);
        if (root === P_INVALID) continue;
        if (root > lastPage || root >= pages || root < META_PAGES)
          throw bad(`${where} names a root page outside the file`);
        // Every page starts with its own number: a root that does not is not the tree's root.
        const rootPage = readAt(fd, Number(root) * pageSize);
        if (rootPage.readBigUInt64LE(0) !== root || (rootPage.readUInt16LE(FLAGS_AT) & TREE_PAGE) === 0)
          throw bad(`${where} names a root page ${root} that is not one`);
      }
    }
  } finally {
    closeSync(fd);
  }
}

function readAt(fd: number, position: number): Buffer {
  const buffer = Buffer.alloc(META_READ_BYTES);
  readSync(fd, buffer, 0, META_READ_BYTES, position);
  return buffer;
}
