// The upstream cache over an LMDB environment (environment.ts), beside the chain store of the same
// environment (chainStore.ts): what a datadir keeps of a chain read from an upstream node.

import { RLP } from '@ethereumjs/rlp';
import { concatBytes, equalsBytes } from '@ethereumjs/util';
import { keccak256 } from '../../primitives/keccak.ts';
import type { CachedBlock, FlatAccount, UpstreamCache } from '../types.ts';
import type { LmdbEnvironment, Table, Tables, UpstreamTable } from './environment.ts';
import { blockNumberKey } from './keys.ts';
import {
  decodeAccount,
  decodeTxLocation,
  encodeAccount,
  encodeReceipts,
  encodeTxLocation,
  minimalValue,
  renderReceiptsJson,
} from './values.ts';

/**
 * The upstream cache's role over an environment (upstream mode): blocks and receipts go into the
 * chain's own tables (so the chain store's reads serve them), state values and final hashes into the
 * cache's three (upstreamCanonical, upstreamAccounts, upstreamStorage).
 */
export class LmdbUpstreamCache implements UpstreamCache {
  readonly #env: LmdbEnvironment;
  readonly #db: Tables;
  readonly #upstream: Record<UpstreamTable, Table>;

  constructor(env: LmdbEnvironment) {
    const upstream = env.tables.upstream;
    if (upstream === null) throw new Error('this environment was not opened with the upstream tables');
    this.#env = env;
    this.#db = env.tables;
    this.#upstream = upstream;
  }

  #write(body: () => void): void {
    this.#env.write(body);
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

  async close(): Promise<void> {
    await this.#env.close();
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
