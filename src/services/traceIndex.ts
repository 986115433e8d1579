import type { FlatBlockTraces } from '../exec/api.ts';
import { LruCache } from '../primitives/lru.ts';

/**
 * trace_filter's index: for every block whose traces have been built, the addresses its trace
 * entries name as sender and as recipient (the `from`/`to` trace_filter tests: internal calls,
 * created contracts, self-destruct beneficiaries and reward authors included). A block whose sets
 * hold none of the filter's addresses cannot match and is skipped without tracing it again, even
 * after its traces have left the (much larger) trace cache.
 *
 * Why not pre-filter from the block alone: a transaction's `from`/`to` and the logs bloom miss
 * every internal call that emits no log (a plain value transfer from a contract, a STATICCALL, a
 * self-destruct), so only the traces themselves say which addresses a block touches.
 */
export class TraceIndex {
  private readonly blocks: LruCache<string, { from: Set<string>; to: Set<string> }>;

  constructor(capacityBytes: number) {
    // ~40 bytes of hex plus Set overhead per address; the sets stay small for typical blocks.
    this.blocks = new LruCache(capacityBytes, (e) => 128 + (e.from.size + e.to.size) * 100);
  }

  add(traces: FlatBlockTraces): void {
    const from = new Set<string>();
    const to = new Set<string>();
    for (const entry of traces.entries) {
      if (entry.from !== null) from.add(entry.from);
      if (entry.to !== null) to.add(entry.to);
    }
    this.blocks.set(traces.blockHash, { from, to });
  }

  /**
   * false only when the block is indexed and no entry of it can match; true when it may match or
   * when the block has not been traced yet.
   */
  mayMatch(blockHash: string, filter: AddressFilter): boolean {
    if (filter.from.size === 0 && filter.to.size === 0) return true;
    const sets = this.blocks.get(blockHash);
    if (!sets) return true;
    const anyIn = (wanted: Set<string>, present: Set<string>) => {
      for (const a of wanted) if (present.has(a)) return true;
      return false;
    };
    return combine(filter, anyIn(filter.from, sets.from), anyIn(filter.to, sets.to));
  }
}

export interface AddressFilter {
  /** Lower-case 0x-prefixed addresses; an empty set matches every entry. */
  from: Set<string>;
  to: Set<string>;
  /**
   * How the two lists combine when both are given. `union` (the default of Erigon, Reth and
   * anvil): an entry matching either list. `intersection` (OpenEthereum's only rule): both. With
   * one list given, both modes mean that list; with none, every entry.
   */
  mode: 'union' | 'intersection';
}

/** Whether one entry passes; an entry without the address (a reward's sender) never matches a list. */
export function entryMatches(entry: { from: string | null; to: string | null }, f: AddressFilter): boolean {
  return combine(f, entry.from !== null && f.from.has(entry.from), entry.to !== null && f.to.has(entry.to));
}

function combine(f: AddressFilter, fromHit: boolean, toHit: boolean): boolean {
  const anyFrom = f.from.size > 0;
  const anyTo = f.to.size > 0;
  if (anyFrom && anyTo) return f.mode === 'union' ? fromHit || toHit : fromHit && toHit;
  if (anyFrom) return fromHit;
  if (anyTo) return toHit;
  return true;
}
