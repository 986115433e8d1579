import type { Block, BlockHeader } from '@ethereumjs/block';
import type { Common } from '@ethereumjs/common';
import { RLP } from '@ethereumjs/rlp';
import { createTxFromBlockBodyData, type TypedTransaction } from '@ethereumjs/tx';
import { type Address, equalsBytes } from '@ethereumjs/util';
import type { BlockSelector } from '../core/blockSelector.ts';
import { HeaderNotFound, RequestFailed } from '../core/errors.ts';
import { bytesKey } from '../primitives/hex.ts';
import { LruCache } from '../primitives/lru.ts';
import type { BlockRef, ChainStore } from '../store/types.ts';
import { Forks } from './forks.ts';
import type { ChainSpec } from './genesis.ts';
import { decodeStoredBlock, decodeStoredHeader, type RulesAt } from './header.ts';

// Decoded blocks are the unit most methods work on; a few hundred cover the hot head of the chain
// and the blocks a client walks through, at a few MB.
const BLOCK_CACHE_SIZE = 256;
const HEADER_CACHE_SIZE = 4096;
// Receipts of the blocks clients keep asking for (the head, blocks being polled) are served from
// memory: no copy out of the store and no garbage per request. A final block's receipts never
// change, and entries are keyed by block hash, so an entry is never stale.
const RECEIPTS_CACHE_BYTES = 128 * 1024 * 1024;

/**
 * Read access to the stored chain in domain terms: resolves block parameters, decodes headers and
 * blocks with the rules of their fork (one Common per fork), and caches what it decoded.
 */
export class ChainReader {
  private readonly forks: Forks;
  private readonly rulesAt: RulesAt = (number, timestamp) => this.forks.commonAt(number, timestamp);
  private readonly headers = new LruCache<string, BlockHeader>(HEADER_CACHE_SIZE);
  private readonly blocks = new LruCache<string, Block>(BLOCK_CACHE_SIZE);
  private readonly receipts = new LruCache<string, Uint8Array>(
    RECEIPTS_CACHE_BYTES,
    (bytes) => bytes.byteLength,
  );

  constructor(
    readonly store: ChainStore,
    readonly spec: ChainSpec,
  ) {
    this.forks = new Forks(spec);
  }

  get chainId(): bigint {
    return this.spec.chainId;
  }

  /** The Common for a block, set to its fork. Shared per fork, never mutated after creation. */
  commonAt(number: bigint, timestamp: bigint): Common {
    return this.forks.commonAt(number, timestamp);
  }

  async head(): Promise<BlockRef> {
    const head = await this.store.getHead();
    if (!head) throw new RequestFailed('the chain is empty: import or start a chain first');
    return head;
  }

  /**
   * The block a parameter names, or null when there is none (a number past the head, an unknown
   * hash). `pending` is the head; so are `safe` and `finalized` on a chain with no unfinal blocks.
   */
  async resolve(selector: BlockSelector): Promise<BlockRef | null> {
    switch (selector.kind) {
      case 'tag': {
        if (selector.tag === 'earliest') {
          const hash = await this.store.getCanonicalHash(0n);
          return hash && { number: 0n, hash };
        }
        if ((selector.tag === 'safe' || selector.tag === 'finalized') && this.store.getTaggedBlock)
          return this.store.getTaggedBlock(selector.tag);
        return this.head();
      }
      case 'number': {
        const hash = await this.store.getCanonicalHash(selector.number);
        return hash && { number: selector.number, hash };
      }
      case 'hash': {
        const number = await this.store.getBlockNumber(selector.hash);
        if (number === null) return null;
        if (selector.requireCanonical) {
          const canonical = await this.store.getCanonicalHash(number);
          if (!canonical || !equalsBytes(canonical, selector.hash)) {
            throw new RequestFailed(`hash ${bytesKey(selector.hash)} is not currently canonical`);
          }
        }
        return { number, hash: selector.hash };
      }
    }
  }

  /**
   * The block whose post-state a state read uses, with geth's errors when there is none: every state
   * method answers a missing block with -32000, never with null.
   */
  async stateBlock(selector: BlockSelector): Promise<BlockRef> {
    const ref = await this.resolve(selector);
    if (ref) return ref;
    throw HeaderNotFound.by(selector.kind === 'hash' ? 'hash' : 'number');
  }

  /**
   * A block parameter of a range query as a number. Numbers past the head are kept, so that the
   * range check can name them; an unknown hash is an error.
   */
  async numberOf(selector: BlockSelector, head: bigint): Promise<bigint> {
    switch (selector.kind) {
      case 'number':
        return selector.number;
      case 'tag':
        return selector.tag === 'earliest' ? 0n : head;
      case 'hash': {
        const ref = await this.resolve(selector);
        if (!ref) throw new RequestFailed('unknown block');
        return ref.number;
      }
    }
  }

  async header(hash: Uint8Array): Promise<BlockHeader | null> {
    const key = bytesKey(hash);
    const cached = this.headers.get(key) ?? this.blocks.get(key)?.header;
    if (cached) return cached;
    const rlp = await this.store.getHeader(hash);
    if (!rlp) return null;
    const header = decodeStoredHeader(rlp, this.rulesAt);
    this.headers.set(key, header);
    return header;
  }

  async block(hash: Uint8Array): Promise<Block | null> {
    const key = bytesKey(hash);
    const cached = this.blocks.get(key);
    if (cached) return cached;
    const [headerRlp, bodyRlp] = await Promise.all([this.store.getHeader(hash), this.store.getBody(hash)]);
    if (!headerRlp || !bodyRlp) return null;
    // Unfrozen, so that each transaction can keep its sender (below).
    const block = decodeStoredBlock(headerRlp, bodyRlp, this.rulesAt, { freeze: false });
    for (const tx of block.transactions) rememberSender(tx);
    this.blocks.set(key, block);
    return block;
  }

  /** A block's receipts as the JSON bytes eth_getBlockReceipts serves, or null for an unknown block. */
  async blockReceiptsJson(hash: Uint8Array): Promise<Uint8Array | null> {
    const key = bytesKey(hash);
    const cached = this.receipts.get(key);
    if (cached) return cached;
    const json = await this.store.getBlockReceiptsJson(hash);
    if (json) this.receipts.set(key, json);
    return json;
  }

  /** The block a parameter names, decoded, or null. */
  async blockAt(selector: BlockSelector): Promise<Block | null> {
    const ref = await this.resolve(selector);
    return ref && this.block(ref.hash);
  }

  /** The block's consensus RLP, spliced from the stored header and body without decoding either. */
  async rawBlock(hash: Uint8Array): Promise<Uint8Array | null> {
    const [header, body] = await Promise.all([this.store.getHeader(hash), this.store.getBody(hash)]);
    if (!header || !body) return null;
    const fields = rlpItem(body, 0);
    const prefix = rlpListPrefix(header.length + fields.end - fields.start);
    const out = new Uint8Array(prefix.length + header.length + fields.end - fields.start);
    out.set(prefix, 0);
    out.set(header, prefix.length);
    out.set(body.subarray(fields.start, fields.end), prefix.length + header.length);
    return out;
  }

  /** Length of the block's consensus RLP (geth's `size`), from the stored lengths alone. */
  async blockSize(hash: Uint8Array): Promise<number | null> {
    const [header, body] = await Promise.all([this.store.getHeader(hash), this.store.getBody(hash)]);
    if (!header || !body) return null;
    const fields = rlpItem(body, 0);
    const payload = header.length + fields.end - fields.start;
    return rlpListPrefix(payload).length + payload;
  }

  /** How many transactions the block holds, counted in the stored body without decoding them. */
  async transactionCount(hash: Uint8Array): Promise<number | null> {
    const cached = this.blocks.get(bytesKey(hash));
    if (cached) return cached.transactions.length;
    const body = await this.store.getBody(hash);
    if (!body) return null;
    let count = 0;
    for (const _ of rlpListItems(body, rlpItem(body, rlpItem(body, 0).start))) count++;
    return count;
  }

  /**
   * The transaction's canonical encoding (typed envelope or legacy RLP) as the body stores it, or null
   * when the block is unknown or has no transaction at that index.
   */
  async rawTransaction(blockHash: Uint8Array, index: number): Promise<Uint8Array | null> {
    const body = await this.store.getBody(blockHash);
    if (!body) return null;
    const item = transactionItem(body, index);
    if (!item) return null;
    // Typed transactions sit in the body as an RLP string wrapping the envelope; legacy ones as a list.
    return item.list ? body.subarray(item.offset, item.end) : body.subarray(item.start, item.end);
  }

  /**
   * One transaction with its block's header. Taken from the decoded block when it is cached; otherwise
   * only this transaction is decoded, so looking up one transaction of a big block stays cheap.
   */
  async transaction(
    blockHash: Uint8Array,
    index: number,
  ): Promise<{ tx: TypedTransaction; header: BlockHeader } | null> {
    const cached = this.blocks.get(bytesKey(blockHash));
    if (cached) {
      const tx = cached.transactions[index];
      return tx ? { tx, header: cached.header } : null;
    }
    const [header, body] = await Promise.all([this.header(blockHash), this.store.getBody(blockHash)]);
    if (!header || !body) return null;
    const item = transactionItem(body, index);
    if (!item) return null;
    const data = item.list
      ? (RLP.decode(body.subarray(item.offset, item.end)) as Uint8Array[])
      : body.subarray(item.start, item.end);
    return { tx: createTxFromBlockBodyData(data, { common: header.common }), header };
  }
}

/** One RLP item at `offset`: whether it is a list, and where its payload starts and the item ends. */
interface RlpItem {
  list: boolean;
  offset: number;
  start: number;
  end: number;
}

function rlpItem(bytes: Uint8Array, offset: number): RlpItem {
  const b = bytes[offset];
  if (b === undefined) throw new Error(`RLP: no item at offset ${offset}`);
  let list = false;
  let start: number;
  let length: number;
  if (b < 0x80) {
    start = offset;
    length = 1;
  } else if (b < 0xb8) {
    start = offset + 1;
    length = b - 0x80;
  } else if (b < 0xc0) {
    start = offset + 1 + (b - 0xb7);
    length = readLength(bytes, offset + 1, b - 0xb7);
  } else if (b < 0xf8) {
    list = true;
    start = offset + 1;
    length = b - 0xc0;
  } else {
    list = true;
    start = offset + 1 + (b - 0xf7);
    length = readLength(bytes, offset + 1, b - 0xf7);
  }
  const end = start + length;
  if (end > bytes.length) throw new Error(`RLP: item at offset ${offset} runs past the end`);
  return { list, offset, start, end };
}

function readLength(bytes: Uint8Array, offset: number, size: number): number {
  let n = 0;
  for (let i = 0; i < size; i++) n = n * 256 + (bytes[offset + i] ?? 0);
  return n;
}

function* rlpListItems(bytes: Uint8Array, list: RlpItem): Generator<RlpItem> {
  for (let at = list.start; at < list.end; ) {
    const item = rlpItem(bytes, at);
    yield item;
    at = item.end;
  }
}

function transactionItem(body: Uint8Array, index: number): RlpItem | null {
  if (index < 0) return null;
  let i = 0;
  for (const item of rlpListItems(body, rlpItem(body, rlpItem(body, 0).start))) {
    if (i++ === index) return item;
  }
  return null;
}

function rlpListPrefix(length: number): Uint8Array {
  if (length < 56) return Uint8Array.of(0xc0 + length);
  const digits: number[] = [];
  for (let n = length; n > 0; n = Math.floor(n / 256)) digits.unshift(n % 256);
  return Uint8Array.of(0xf7 + digits.length, ...digits);
}

/**
 * ethereumjs caches a transaction's public key but derives the address from it again on every
 * `getSenderAddress` (a keccak in JavaScript); a replay asks several times per transaction (about 6%
 * of a 200-transaction replay). The first answer is kept on the instance.
 */
function rememberSender(tx: TypedTransaction): void {
  const derive = tx.getSenderAddress.bind(tx);
  let sender: Address | undefined;
  Object.defineProperty(tx, 'getSenderAddress', { value: () => (sender ??= derive()) });
}
