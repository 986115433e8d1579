import type { ChainReader } from '../chain/reader.ts';
import { DEFAULT_LIMITS, type FilterLimits, type LimitName } from '../config/limits.ts';
import type { BlockSelector } from '../core/blockSelector.ts';
import type { Caller } from '../core/caller.ts';
import { LimitExceeded, RequestFailed, refusedBy } from '../core/errors.ts';
import { toHex } from '../primitives/hex.ts';
import type { ChainEvents } from './events.ts';
import type { LogCriteria, LogScope, LogService, WireLog } from './logs.ts';
import { newId } from './subscriptions.ts';

/** geth's answer for an unknown, expired or removed filter id; clients make a new filter on it. */
const NOT_FOUND = 'filter not found';

/** Who installed a filter: its key may poll it (Infura shares a key's filters among its connections). */
interface Owner {
  key: string | null;
  connection: object | null;
}

type Filter =
  | { kind: 'logs'; owner: Owner; scope: LogScope; criteria: LogCriteria; next: bigint; polled: number }
  | { kind: 'hashes'; owner: Owner; journal: Journal; cursor: number; polled: number };

/**
 * The last `capacity` hashes of one kind (new blocks, pending transactions), numbered in order. Every
 * filter of that kind reads the one journal from its own position, so a filter costs a number, not a
 * copy of each hash: 7,000 block filters each buffering their own hashes took a server past its heap.
 */
class Journal {
  private readonly ring: string[] = [];
  /** The number the next hash gets. */
  private next = 0;

  constructor(private readonly capacity: number) {}

  get end(): number {
    return this.next;
  }

  push(hash: string): void {
    this.ring[this.next % this.capacity] = hash;
    this.next++;
  }

  /** The hashes numbered `from` on; null when some of them have been overwritten (too far behind). */
  since(from: number): string[] | null {
    if (this.next - from > this.capacity) return null;
    const out: string[] = [];
    for (let n = from; n < this.next; n++) out.push(this.ring[n % this.capacity] as string);
    return out;
  }
}

/**
 * The polling filters of eth_newFilter, eth_newBlockFilter and eth_newPendingTransactionFilter, as
 * geth keeps them: a log filter's changes are the matching logs of the blocks added since the last
 * poll (within its block range), a block filter's the new blocks' hashes, a pending filter's the new
 * transactions' hashes.
 *
 * Bounded (src/config/limits.ts FilterLimits): filters per key, per connection and in all (past them
 * a new filter is refused); changes waiting in one filter and time without a poll (past them the
 * filter is removed and its next poll answers "filter not found", the answer clients make a new
 * filter on). A key polls and removes only its own filters.
 */
export class FilterService {
  private readonly filters = new Map<string, Filter>();
  private readonly perKey = new Map<string, number>();
  private readonly perConnection = new WeakMap<object, number>();
  private readonly blocks: Journal;
  private readonly pending: Journal;
  private pendingFilters = 0;
  private readonly sweeper: NodeJS.Timeout;
  private readonly stops: Array<() => void>;

  constructor(
    events: ChainEvents,
    private readonly chain: ChainReader,
    private readonly logs: LogService,
    private readonly limits: FilterLimits = DEFAULT_LIMITS.filters,
    /** Hears the filters removed outside any request (idle ones, by the sweep), for the metrics. */
    private readonly onRemoved: (limit: LimitName) => void = () => {},
  ) {
    this.blocks = new Journal(limits.maxBuffered);
    this.pending = new Journal(limits.maxBuffered);
    this.stops = [
      events.onBlock((block) => this.blocks.push(toHex(block.hash))),
      // Hashing is skipped while no filter would read it.
      events.onPendingTransaction((tx) => {
        if (this.pendingFilters > 0) this.pending.push(toHex(tx.hash()));
      }),
      // After an evm_revert, a log filter looks again at the blocks that replace the removed ones.
      events.onRewind((head) => {
        for (const filter of this.filters.values()) {
          if (filter.kind === 'logs' && filter.next > head + 1n) filter.next = head + 1n;
        }
      }),
    ];
    this.sweeper = setInterval(() => this.sweep(), Math.min(60_000, limits.idleTimeoutMs));
    this.sweeper.unref();
  }

  close(): void {
    for (const stop of this.stops) stop();
    clearInterval(this.sweeper);
    for (const id of [...this.filters.keys()]) this.remove(id);
  }

  async newLogFilter(scope: LogScope, criteria: LogCriteria, caller: Caller | null = null): Promise<string> {
    const head = await this.chain.head();
    return this.add({
      kind: 'logs',
      owner: ownerOf(caller),
      scope,
      criteria,
      next: head.number + 1n,
      polled: Date.now(),
    });
  }

  newBlockFilter(caller: Caller | null = null): string {
    return this.addHashes(this.blocks, caller);
  }

  newPendingTransactionFilter(caller: Caller | null = null): string {
    const id = this.addHashes(this.pending, caller);
    this.pendingFilters++;
    return id;
  }

  /** eth_getFilterChanges: what happened since the last poll. */
  async changes(id: string, caller: Caller | null = null): Promise<string[] | WireLog[]> {
    const filter = this.get(id, caller);
    filter.polled = Date.now();
    if (filter.kind === 'hashes') {
      const hashes = filter.journal.since(filter.cursor);
      if (hashes === null) throw this.overflowed(id);
      filter.cursor = filter.journal.end;
      return hashes;
    }
    const head = (await this.chain.head()).number;
    if ('blockHash' in filter.scope) return [];
    const from = bigMax(filter.next, await this.bound(filter.scope.fromBlock, head, 0n));
    const to = bigMin(head, await this.bound(filter.scope.toBlock, head, head));
    if (to < from) return [];
    if (to - from + 1n > BigInt(this.limits.maxBuffered)) throw this.overflowed(id);
    filter.next = to + 1n;
    return this.logs.getLogs(
      { fromBlock: { kind: 'number', number: from }, toBlock: { kind: 'number', number: to } },
      filter.criteria,
    );
  }

  /** eth_getFilterLogs: every log the filter matches, as eth_getLogs with its criteria. */
  async allLogs(id: string, caller: Caller | null = null): Promise<WireLog[]> {
    const filter = this.get(id, caller);
    filter.polled = Date.now();
    if (filter.kind !== 'logs') throw new RequestFailed(NOT_FOUND);
    return this.logs.getLogs(filter.scope, filter.criteria);
  }

  /** eth_uninstallFilter: true if the caller's key had the filter. */
  uninstall(id: string, caller: Caller | null = null): boolean {
    const filter = this.filters.get(id);
    if (!filter || filter.owner.key !== (caller?.key ?? null)) return false;
    return this.remove(id);
  }

  private remove(id: string): boolean {
    const filter = this.filters.get(id);
    if (!filter) return false;
    this.filters.delete(id);
    if (filter.kind === 'hashes' && filter.journal === this.pending) this.pendingFilters--;
    const { key, connection } = filter.owner;
    if (key !== null) {
      const left = (this.perKey.get(key) ?? 1) - 1;
      if (left <= 0) this.perKey.delete(key);
      else this.perKey.set(key, left);
    }
    if (connection !== null)
      this.perConnection.set(connection, (this.perConnection.get(connection) ?? 1) - 1);
    return true;
  }

  /** Installs a filter, unless one of the bounds on how many there are refuses it. */
  private add(filter: Filter): string {
    const { key, connection } = filter.owner;
    const { maxPerConnection, maxPerKey, maxTotal } = this.limits;
    const ofConnection = connection === null ? 0 : (this.perConnection.get(connection) ?? 0);
    if (ofConnection >= maxPerConnection)
      throw tooMany('filters_per_connection', `on this connection (at most ${maxPerConnection})`);
    const ofKey = key === null ? 0 : (this.perKey.get(key) ?? 0);
    if (ofKey >= maxPerKey) throw tooMany('filters_per_key', `for this API key (at most ${maxPerKey})`);
    if (this.filters.size >= maxTotal)
      throw refusedBy(
        'filters_total',
        new LimitExceeded(`too many filters on this server (at most ${maxTotal}): try again later`),
      );
    const id = newId();
    this.filters.set(id, filter);
    if (key !== null) this.perKey.set(key, ofKey + 1);
    if (connection !== null) this.perConnection.set(connection, ofConnection + 1);
    return id;
  }

  private addHashes(journal: Journal, caller: Caller | null): string {
    return this.add({
      kind: 'hashes',
      owner: ownerOf(caller),
      journal,
      cursor: journal.end,
      polled: Date.now(),
    });
  }

  /** The caller's filter `id`; one that has been idle too long is removed here rather than answered. */
  private get(id: string, caller: Caller | null): Filter {
    const filter = this.filters.get(id);
    // Another key's filter is as unknown as a filter that never was.
    if (!filter || filter.owner.key !== (caller?.key ?? null)) throw new RequestFailed(NOT_FOUND);
    if (Date.now() - filter.polled > this.limits.idleTimeoutMs) {
      this.remove(id);
      throw refusedBy('filter_idle', new RequestFailed(NOT_FOUND));
    }
    return filter;
  }

  /** The filter fell more than maxBuffered changes behind: removed, and this poll answers as for any removed filter. */
  private overflowed(id: string): RequestFailed {
    this.remove(id);
    return refusedBy('filter_buffer', new RequestFailed(NOT_FOUND));
  }

  /** A range end as a number: tags resolve against the head (`earliest` is 0). */
  private async bound(selector: BlockSelector, head: bigint, latest: bigint): Promise<bigint> {
    if (selector.kind === 'tag' && selector.tag !== 'earliest') return latest;
    return this.chain.numberOf(selector, head);
  }

  private sweep(): void {
    const expired = Date.now() - this.limits.idleTimeoutMs;
    for (const [id, filter] of this.filters) {
      if (filter.polled >= expired) continue;
      this.remove(id);
      this.onRemoved('filter_idle');
    }
  }
}

function ownerOf(caller: Caller | null): Owner {
  return { key: caller?.key ?? null, connection: caller?.connection ?? null };
}

function tooMany(limit: LimitName, where: string): LimitExceeded {
  return refusedBy(limit, new LimitExceeded(`too many filters ${where}: eth_uninstallFilter some first`));
}

function bigMax(a: bigint, b: bigint): bigint {
  return a > b ? a : b;
}

function bigMin(a: bigint, b: bigint): bigint {
  return a < b ? a : b;
}
