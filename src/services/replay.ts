import type { ChainReader } from '../chain/reader.ts';
import type { ReplayLimits } from '../config/limits.ts';
import type { BlockSelector } from '../core/blockSelector.ts';
import type { TraceTypes } from '../core/call.ts';
import { RequestFailed } from '../core/errors.ts';
import { RawJson } from '../core/rawJson.ts';
import {
  type FlatBlockTraces,
  type FlatEntry,
  partitionBySender,
  type ReplayBlockJob,
  type ReplayedBlockJson,
  type SpeculationStats,
  speculate,
} from '../exec/api.ts';
import type { ExecutionClient } from '../exec/client.ts';
import { toHex } from '../primitives/hex.ts';
import { LruCache } from '../primitives/lru.ts';
import { blockRange } from './blockRange.ts';
import { type AddressFilter, entryMatches, TraceIndex } from './traceIndex.ts';

// Object and array headers around the JSON text of a cached answer, per piece (an estimate: the
// bound is on the order of magnitude, not on the byte).
const PIECE_OVERHEAD_BYTES = 96;

export interface TraceFilter {
  fromBlock?: BlockSelector;
  toBlock?: BlockSelector;
  fromAddress: Uint8Array[];
  toAddress: Uint8Array[];
  mode: 'union' | 'intersection';
  after?: number;
  count?: number;
}

type Cached =
  | { kind: 'replay'; bytes: number; txs: ReplayedBlockJson }
  | { kind: 'flat'; bytes: number; traces: FlatBlockTraces };

/**
 * The trace_ replay methods: mined transactions re-executed and traced in the execution layer. Every answer is
 * derived from one of two per-block products, computed once per block and kept in a byte-bounded
 * LRU keyed by block hash (and trace types): the block's replay results, one JSON text per
 * transaction, and its flat trace entries. Requests that arrive while the same product is being
 * computed wait for that execution instead of starting another.
 *
 * trace_filter is served from those flat entries plus an address index (TraceIndex): a bounded
 * range (-32005 beyond `maxFilterBlocks`, like eth_getLogs) is walked block by block; a block the
 * index shows cannot match is skipped, a cached one is filtered in memory, and only blocks never
 * traced (or evicted and not ruled out) are replayed, several at once. An index kept
 * only for blocks already traced stays exact: it is built from the same entries it filters.
 *
 * Genesis has nothing to trace: its answers are `[]`. Unknown blocks are null (as Reth answers,
 * and as eth_getBlockReceipts does here).
 */
export class ReplayService {
  private readonly cache: LruCache<string, Cached>;
  /** trace_block's encoded answer per cached block result; it goes when the result leaves the cache. */
  private readonly blockAnswers = new WeakMap<FlatBlockTraces, Uint8Array>();
  private readonly inFlight = new Map<string, Promise<Cached>>();
  private readonly index: TraceIndex;
  private executions = 0;
  private hits = 0;

  constructor(
    readonly chain: ChainReader,
    readonly exec: ExecutionClient,
    readonly limits: ReplayLimits,
  ) {
    this.cache = new LruCache(limits.cacheBytes, (v) => v.bytes);
    this.index = new TraceIndex(limits.indexBytes);
  }

  /** trace_replayBlockTransactions; null for an unknown block (as Reth answers). */
  async replayBlockTransactions(selector: BlockSelector, types: TraceTypes): Promise<RawJson | null> {
    const ref = await this.chain.resolve(selector);
    if (!ref) return null;
    const txs = await this.replayed(ref.hash, types);
    return RawJson.array(txs);
  }

  /**
   * trace_replayTransaction; an unknown transaction is -32000 `transaction not found`, as Reth
   * answers (its trace_transaction and trace_get answer null, and so do ours).
   */
  async replayTransaction(txHash: Uint8Array, types: TraceTypes): Promise<RawJson> {
    const location = await this.chain.store.getTxLocation(txHash);
    if (!location) throw new RequestFailed('transaction not found');
    const json = (await this.replayed(location.blockHash, types))[location.index];
    if (json === undefined)
      throw new Error(`replay of block ${location.blockNumber} lacks tx ${location.index}`);
    return new RawJson(json);
  }

  /** trace_block; null for an unknown block. */
  async block(selector: BlockSelector): Promise<RawJson | null> {
    const ref = await this.chain.resolve(selector);
    if (!ref) return null;
    const traces = await this.flat(ref.hash);
    // A final block's whole answer is encoded once; repeated requests write the same bytes.
    let bytes = this.blockAnswers.get(traces);
    if (!bytes) {
      bytes = Buffer.from(joined(traces.entries).json as string);
      this.blockAnswers.set(traces, bytes);
    }
    return new RawJson(bytes);
  }

  /** trace_transaction; null for an unknown transaction. */
  async transaction(txHash: Uint8Array): Promise<RawJson | null> {
    const found = await this.txEntries(txHash);
    return found && joined(found);
  }

  /** trace_get: the entry whose traceAddress is `indices` (OpenEthereum's rule), else null. */
  async get(txHash: Uint8Array, indices: number[]): Promise<RawJson | null> {
    const found = await this.txEntries(txHash);
    const path = indices.join(',');
    const entry = found?.find((e) => e.path === path);
    return entry ? new RawJson(entry.json) : null;
  }

  /**
   * trace_filter over at most `maxFilterBlocks` blocks. Each block's entries come from the trace
   * cache, or are built once (in parallel, up to the execution layer's size) and then cached; blocks the
   * address index proves irrelevant are not traced at all.
   */
  async filter(f: TraceFilter): Promise<RawJson> {
    const { from, to } = await blockRange(this.chain, f, {
      max: this.limits.maxFilterBlocks,
      limit: 'trace_filter_blocks',
    });
    const filter: AddressFilter = {
      from: new Set(f.fromAddress.map((a) => toHex(a))),
      to: new Set(f.toAddress.map((a) => toHex(a))),
      mode: f.mode,
    };
    let skip = f.after ?? 0;
    const count = f.count ?? Number.POSITIVE_INFINITY;
    const out: string[] = [];
    if (count <= 0) return new RawJson('[]');
    const window = Math.max(1, this.exec.size);
    for (let start = from; start <= to; start += BigInt(window)) {
      const numbers: bigint[] = [];
      for (let n = start; n <= to && n < start + BigInt(window); n++) numbers.push(n);
      // Started together so that uncached blocks replay on every worker at once; read in order.
      const blocks = await Promise.all(numbers.map((n) => this.filterBlock(n, filter)));
      for (const traces of blocks) {
        for (const entry of traces?.entries ?? []) {
          if (!entryMatches(entry, filter)) continue;
          if (skip > 0) {
            skip--;
            continue;
          }
          out.push(entry.json);
          if (out.length >= count) return new RawJson(`[${out.join(',')}]`);
        }
      }
    }
    return new RawJson(`[${out.join(',')}]`);
  }

  private async filterBlock(number: bigint, filter: AddressFilter): Promise<FlatBlockTraces | null> {
    const hash = await this.chain.store.getCanonicalHash(number);
    if (!hash) throw new RequestFailed(`header not found for block ${number}`);
    if (!this.index.mayMatch(toHex(hash), filter)) return null;
    return this.flat(hash);
  }

  private async txEntries(txHash: Uint8Array): Promise<FlatEntry[] | null> {
    const location = await this.chain.store.getTxLocation(txHash);
    if (!location) return null;
    const { txStart, entries } = await this.flat(location.blockHash);
    return entries.slice(txStart[location.index] ?? 0, txStart[location.index + 1] ?? 0);
  }

  private async replayed(blockHash: Uint8Array, types: TraceTypes): Promise<ReplayedBlockJson> {
    const key = `${toHex(blockHash)}:${types.trace ? 't' : ''}${types.stateDiff ? 's' : ''}${types.vmTrace ? 'v' : ''}`;
    const value = await this.memo(key, async () => {
      const job: ReplayBlockJob = { blockHash, types };
      // The receipts a speculation splits the block by (its senders) are read beside what the
      // execution layer reads ahead, not after it (a round trip saved where the chain is far away).
      if (!types.stateDiff) this.chain.store.getBlockReceiptsJson(blockHash).catch(() => null);
      // The deadline bounds execution: what is read ahead first is not counted against it.
      await this.exec.prepare('replayBlock', job);
      const started = performance.now();
      const speculated = await this.speculate(job);
      if (speculated !== null) return { kind: 'replay', bytes: weighPieces(speculated), txs: speculated };
      // After a failed speculation the serial run gets only what is left of the deadline.
      const deadlineMs = Math.max(1, this.exec.deadlineMs - (performance.now() - started));
      const txs = await this.exec.run('replayBlock', job, { deadlineMs });
      return { kind: 'replay', bytes: weighPieces(txs), txs };
    });
    if (value.kind !== 'replay') throw new Error(`cache entry ${key} is not a replay`);
    return value.txs;
  }

  private async flat(blockHash: Uint8Array): Promise<FlatBlockTraces> {
    const key = `${toHex(blockHash)}:flat`;
    const value = await this.memo(key, async () => {
      const traces = await this.exec.run('flatTraces', { blockHash });
      this.index.add(traces);
      const bytes = weighPieces(traces.entries.map((e) => e.json)) + traces.entries.length * 2 * 42;
      return { kind: 'flat', bytes, traces };
    });
    if (value.kind !== 'flat') throw new Error(`cache entry ${key} is not flat traces`);
    return value.traces;
  }

  /**
   * A block replayed in parts on idle workers (services/parallelCalls.ts), or null when it is not
   * worth it or not possible: few transactions or senders, no idle workers, a stateDiff (each
   * transaction's coinbase balance depends on every fee before it), a coinbase that also sends
   * transactions, or a part that read what another part changed.
   */
  private async speculate(job: ReplayBlockJob): Promise<ReplayedBlockJson | null> {
    if (job.types.stateDiff) return null;
    const spare = this.exec.spareWorkers();
    if (spare < 2) return null;
    const [header, receipts] = await Promise.all([
      this.chain.header(job.blockHash),
      this.chain.store.getBlockReceiptsJson(job.blockHash),
    ]);
    if (!header || !receipts) return null;
    // The stored receipts name each sender: no signature recovery on this thread.
    const senders = (JSON.parse(Buffer.from(receipts).toString('utf8')) as Array<{ from: string }>).map(
      (r) => r.from,
    );
    if (senders.length < this.limits.parallelMinTxs) return null;
    if (senders.includes(toHex(header.coinbase.bytes))) return null;
    const parts = partitionBySender(senders, spare);
    if (parts === null) return null;
    return speculate(
      parts,
      senders.length,
      (indices, board) => this.exec.run('replayBlockPart', { ...job, indices, ...board }),
      this.parallelStats,
    );
  }

  /** How speculation went: block replays run in parts, and how many of those fell back to serial. */
  readonly parallelStats: SpeculationStats = { speculated: 0, fellBack: 0 };

  /** The cached value, or the one being computed, or a new computation shared by all who ask. */
  private memo(key: string, compute: () => Promise<Cached>): Promise<Cached> {
    const hit = this.cache.get(key);
    if (hit) {
      this.hits++;
      return Promise.resolve(hit);
    }
    const running = this.inFlight.get(key);
    if (running) return running;
    this.executions++;
    const started = compute().then(
      (value) => {
        this.inFlight.delete(key);
        this.cache.set(key, value);
        return value;
      },
      (e: unknown) => {
        // Failures (a timeout, a busy pool) are not answers: the next request tries again.
        this.inFlight.delete(key);
        throw e;
      },
    );
    this.inFlight.set(key, started);
    return started;
  }

  /**
   * Counters for tests and metrics: executions started (cache misses), cache hits, products cached,
   * executions running.
   */
  stats(): { executions: number; hits: number; cached: number; inFlight: number } {
    return {
      executions: this.executions,
      hits: this.hits,
      cached: this.cache.size,
      inFlight: this.inFlight.size,
    };
  }
}

function joined(entries: readonly FlatEntry[]): RawJson {
  return new RawJson(`[${entries.map((e) => e.json).join(',')}]`);
}

function weighPieces(parts: readonly (string | Uint8Array)[]): number {
  let bytes = 0;
  for (const p of parts) bytes += (typeof p === 'string' ? p.length : p.byteLength) + PIECE_OVERHEAD_BYTES;
  return bytes;
}
