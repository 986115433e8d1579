// The chain store over an LMDB environment (environment.ts): reads are synchronous memory-mapped
// lookups wrapped in the async interface; each block is written in one synchronous LMDB
// transaction, so readers (in this or other processes) see whole blocks only.

import { bytesToHex } from '@ethereumjs/util';
import { CommitRejectedError } from '../errors.ts';
import type { BlockRef, BlockWrite, ChainStore, FlatAccount, SyncStateReads, TxLocation } from '../types.ts';
import { sliceChecksum } from './checksum.ts';
import type { LmdbEnvironment, Table, Tables } from './environment.ts';
import {
  addressHistoryKey,
  blockNumberKey,
  blockNumberSuffix,
  historyPrefix,
  metaKey,
  readUint64,
  slotHistoryKey,
} from './keys.ts';
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

/** The chain store's role over an environment: an imported, followed or dev chain, and its state history. */
export class LmdbChainStore implements ChainStore {
  readonly #env: LmdbEnvironment;
  readonly #db: Tables;

  constructor(env: LmdbEnvironment) {
    this.#env = env;
    this.#db = env.tables;
  }

  #write(body: () => void, bytes = 0): void {
    this.#env.write(body, bytes);
  }

  async getHead(): Promise<BlockRef | null> {
    // The head must be the newest one, also when another process has just committed, and later
    // reads of the turn share its snapshot.
    this.#env.renewReadSnapshot();
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
