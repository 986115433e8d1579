import { equalsBytes } from '@ethereumjs/util';
import { HEADER_LOGS_BLOOM } from '../chain/header.ts';
import type { ChainReader } from '../chain/reader.ts';
import type { BlockSelector } from '../core/blockSelector.ts';
import { LimitExceeded, RequestFailed, refusedBy } from '../core/errors.ts';
import { quantityToHex, toHex } from '../primitives/hex.ts';
import { keccak256 } from '../primitives/keccak.ts';
import { LruCache } from '../primitives/lru.ts';
import type { ChainStore } from '../store/types.ts';
import { blockRange } from './blockRange.ts';

// One entry is a block hash and its 256-byte bloom (blocks without logs share one empty marker):
// 32,768 entries are about 15 MB and hold three default-width ranges, so an indexer paging through
// the chain window by window finds every bloom it scans again already decoded.
const BLOOM_CACHE_SIZE = 32_768;

/** What eth_getLogs selects on, in domain terms; the method parses the wire filter into this. */
export interface LogCriteria {
  /** Logs emitted by any of these contracts; empty = any contract. */
  addresses: Uint8Array[];
  /**
   * One entry per topic position: any of the listed values, or null for any value. A log must have at
   * least as many topics as there are positions (geth's rule); positions past the list are free.
   */
  topics: Array<Uint8Array[] | null>;
}

/** Which blocks to search: one block by hash, or a range of canonical blocks. */
export type LogScope = { blockHash: Uint8Array } | { fromBlock: BlockSelector; toBlock: BlockSelector };

export interface LogLimits {
  /** Widest range, in blocks, one query may scan. */
  maxLogsBlockRange: number;
  /** Most logs one answer may carry. */
  maxLogsResults: number;
}

/**
 * A log exactly as the stored receipts JSON holds it (the eth_getBlockReceipts shape: `blockTimestamp`,
 * block-wide `logIndex`, `removed: false`), passed through without being rebuilt.
 */
export interface WireLog {
  address: string;
  topics: string[];
  [field: string]: unknown;
}

interface BloomEntry {
  hash: Uint8Array;
  /** null: the block has no logs at all. */
  bloom: Uint8Array | null;
}

/**
 * The log search behind eth_getLogs. Each block's header bloom is checked first (kept decoded in a
 * compact cache keyed by number and verified against the canonical hash), so blocks that cannot hold
 * a matching log cost one key lookup and a few bit tests; only blocks whose bloom matches have their
 * stored receipts read and their logs matched exactly.
 */
export class LogService {
  private readonly blooms = new LruCache<number, BloomEntry>(BLOOM_CACHE_SIZE);

  constructor(
    private readonly chain: ChainReader,
    private readonly limits: LogLimits,
  ) {}

  private get store(): ChainStore {
    return this.chain.store;
  }

  async getLogs(scope: LogScope, criteria: LogCriteria): Promise<WireLog[]> {
    const filter = new CompiledFilter(criteria);
    if ('blockHash' in scope) return this.blockHashLogs(scope.blockHash, filter);

    const { from, to } = await blockRange(this.chain, scope, {
      max: this.limits.maxLogsBlockRange,
      limit: 'logs_block_range',
    });

    const found: WireLog[] = [];
    for (let n = from; n <= to; n++) {
      const entry = await this.bloomAt(n);
      if (!entry) throw new RequestFailed(`header not found for block ${n}`);
      if (!entry.bloom || !filter.mayMatch(entry.bloom)) continue;
      await this.collect(entry.hash, filter, found);
      if (found.length > this.limits.maxLogsResults) throw this.tooManyResults(from, n);
    }
    return found;
  }

  private async blockHashLogs(hash: Uint8Array, filter: CompiledFilter): Promise<WireLog[]> {
    const number = await this.store.getBlockNumber(hash);
    if (number === null) throw new RequestFailed('unknown block');
    const header = await this.store.getHeader(hash);
    if (!header) throw new RequestFailed('unknown block');
    const bloom = headerBloom(header);
    const found: WireLog[] = [];
    if (bloom && filter.mayMatch(bloom)) await this.collect(hash, filter, found);
    if (found.length > this.limits.maxLogsResults) throw this.tooManyResults(number, number);
    return found;
  }

  /**
   * Every log of a block, with no result limit: subscriptions read a new block's logs once and match
   * them against each subscription's criteria.
   */
  async blockLogs(hash: Uint8Array): Promise<WireLog[]> {
    const found: WireLog[] = [];
    await this.collect(hash, MATCH_ALL, found);
    return found;
  }

  private tooManyResults(from: bigint, at: bigint): LimitExceeded {
    return refusedBy('logs_results', this.tooManyResultsError(from, at));
  }

  private tooManyResultsError(from: bigint, at: bigint): LimitExceeded {
    const limit = this.limits.maxLogsResults;
    // The range up to the block before the one that overflowed is known to fit. Infura words this
    // error the same way, and log-paging tools read the suggested range out of the message.
    if (at > from) {
      return new LimitExceeded(
        `query returned more than ${limit} results. Try with this block range [${quantityToHex(from)}, ${quantityToHex(at - 1n)}].`,
      );
    }
    return new LimitExceeded(
      `query returned more than ${limit} results. Block ${quantityToHex(at)} alone holds more matching logs than that: narrow the filter by address or topics, or read the block with eth_getBlockReceipts.`,
    );
  }

  private async bloomAt(number: bigint): Promise<BloomEntry | null> {
    const hash = await this.store.getCanonicalHash(number);
    if (!hash) return null;
    const key = Number(number);
    const cached = this.blooms.get(key);
    // The number → hash check keeps the cache right across reorgs without any invalidation.
    if (cached && equalsBytes(cached.hash, hash)) return cached;
    const header = await this.store.getHeader(hash);
    if (!header) return null;
    const entry = { hash, bloom: headerBloom(header) };
    this.blooms.set(key, entry);
    return entry;
  }

  private async collect(hash: Uint8Array, filter: CompiledFilter, out: WireLog[]): Promise<void> {
    const json = await this.store.getBlockReceiptsJson(hash);
    if (!json) return;
    const text = Buffer.from(json.buffer, json.byteOffset, json.byteLength).toString('utf8');
    const receipts = JSON.parse(text) as Array<{ logs: WireLog[] }>;
    for (const receipt of receipts) {
      for (const log of receipt.logs) if (filter.matches(log)) out.push(log);
    }
  }
}

/**
 * The header's logs bloom, or null when it is all zero (no logs in the block). The bloom is the
 * seventh field; the six before it are skipped by their RLP lengths rather than decoded, which keeps
 * a cold scan of 10,000 headers from spending most of its time copying hashes it never looks at.
 */
function headerBloom(header: Uint8Array): Uint8Array | null {
  let at = rlpPayloadStart(header, 0);
  for (let field = 0; field < HEADER_LOGS_BLOOM; field++) at = rlpItemEnd(header, at);
  // A 256-byte string is always prefixed 0xb9 0x01 0x00.
  if (header[at] !== 0xb9 || header[at + 1] !== 0x01 || header[at + 2] !== 0x00 || at + 259 > header.length) {
    throw new Error('header without a 256-byte logs bloom');
  }
  const bloom = header.subarray(at + 3, at + 259);
  return bloom.some((b) => b !== 0) ? bloom.slice() : null;
}

function rlpPayloadStart(bytes: Uint8Array, at: number): number {
  const b = bytes[at] ?? 0;
  if (b < 0x80) return at;
  if (b < 0xb8) return at + 1;
  if (b < 0xc0) return at + 1 + (b - 0xb7);
  if (b < 0xf8) return at + 1;
  return at + 1 + (b - 0xf7);
}

function rlpItemEnd(bytes: Uint8Array, at: number): number {
  const b = bytes[at] ?? 0;
  if (b < 0x80) return at + 1;
  if (b < 0xb8) return at + 1 + (b - 0x80);
  if (b >= 0xc0 && b < 0xf8) return at + 1 + (b - 0xc0);
  const size = b < 0xc0 ? b - 0xb7 : b - 0xf7;
  let length = 0;
  for (let i = 1; i <= size; i++) length = length * 256 + (bytes[at + i] ?? 0);
  return at + 1 + size + length;
}

/** The three bloom bits of one value (yellow paper M3:2048) as byte offsets and masks. */
type BloomBits = readonly [number, number, number, number, number, number];

function bloomBits(value: Uint8Array): BloomBits {
  const h = keccak256(value);
  const bits: number[] = [];
  for (let i = 0; i < 6; i += 2) {
    const bit = (((h[i] ?? 0) << 8) | (h[i + 1] ?? 0)) & 2047;
    bits.push(255 - (bit >> 3), 1 << (bit & 7));
  }
  return bits as unknown as BloomBits;
}

function inBloom(bloom: Uint8Array, b: BloomBits): boolean {
  return (
    ((bloom[b[0]] ?? 0) & b[1]) !== 0 &&
    ((bloom[b[2]] ?? 0) & b[3]) !== 0 &&
    ((bloom[b[4]] ?? 0) & b[5]) !== 0
  );
}

/** The criteria prepared once per query: bloom bits for the block check, lowercase hex for the logs. */
export class CompiledFilter {
  private readonly addresses: ReadonlySet<string> | null;
  private readonly topics: Array<ReadonlySet<string> | null>;
  /** Every group must have one value in the bloom: the addresses, then each constrained position. */
  private readonly bloomGroups: BloomBits[][];

  constructor(criteria: LogCriteria) {
    this.addresses = criteria.addresses.length > 0 ? new Set(criteria.addresses.map(toHex)) : null;
    this.topics = criteria.topics.map((t) => (t === null ? null : new Set(t.map(toHex))));
    const groups = [criteria.addresses, ...criteria.topics].filter(
      (g): g is Uint8Array[] => g !== null && g.length > 0,
    );
    this.bloomGroups = groups.map((g) => g.map(bloomBits));
  }

  mayMatch(bloom: Uint8Array): boolean {
    return this.bloomGroups.every((group) => group.some((bits) => inBloom(bloom, bits)));
  }

  matches(log: WireLog): boolean {
    if (this.addresses && !this.addresses.has(log.address.toLowerCase())) return false;
    if (this.topics.length > log.topics.length) return false;
    return this.topics.every((set, i) => set === null || set.has((log.topics[i] ?? '').toLowerCase()));
  }
}

const MATCH_ALL = new CompiledFilter({ addresses: [], topics: [] });
