import type { ChainReader } from '../chain/reader.ts';
import type { BlockSelector } from '../core/blockSelector.ts';
import { RequestFailed } from '../core/errors.ts';
import { toHex } from '../primitives/hex.ts';
import type { ChainEvents } from './events.ts';
import type { LogCriteria, LogScope, LogService, WireLog } from './logs.ts';
import { newId } from './subscriptions.ts';

/** A filter not polled for this long is removed (geth's deadline). */
export const FILTER_TIMEOUT_MS = 5 * 60_000;
/** Hashes a block or pending-transaction filter keeps between polls; older ones are dropped. */
export const FILTER_MAX_BUFFERED = 10_000;

type Filter =
  | { kind: 'logs'; scope: LogScope; criteria: LogCriteria; next: bigint; polled: number; stop: null }
  | { kind: 'hashes'; buffered: string[]; polled: number; stop: () => void };

/**
 * The polling filters of eth_newFilter, eth_newBlockFilter and eth_newPendingTransactionFilter, as
 * geth keeps them: a log filter's changes are the matching logs of the blocks added since the last
 * poll (within its block range), a block filter's the new blocks' hashes, a pending filter's the new
 * transactions' hashes.
 */
export class FilterService {
  private readonly filters = new Map<string, Filter>();
  private readonly sweeper: NodeJS.Timeout;

  constructor(
    private readonly events: ChainEvents,
    private readonly chain: ChainReader,
    private readonly logs: LogService,
    private readonly timeoutMs = FILTER_TIMEOUT_MS,
  ) {
    this.sweeper = setInterval(() => this.sweep(), Math.min(60_000, timeoutMs));
    this.sweeper.unref();
    // After an evm_revert, a log filter looks again at the blocks that replace the removed ones.
    this.stopRewinds = events.onRewind((head) => {
      for (const filter of this.filters.values()) {
        if (filter.kind === 'logs' && filter.next > head + 1n) filter.next = head + 1n;
      }
    });
  }

  private readonly stopRewinds: () => void;

  close(): void {
    this.stopRewinds();
    clearInterval(this.sweeper);
    for (const id of [...this.filters.keys()]) this.uninstall(id);
  }

  async newLogFilter(scope: LogScope, criteria: LogCriteria): Promise<string> {
    const head = await this.chain.head();
    return this.add({
      kind: 'logs',
      scope,
      criteria,
      next: head.number + 1n,
      polled: Date.now(),
      stop: null,
    });
  }

  newBlockFilter(): string {
    return this.addHashes((push) => this.events.onBlock((block) => push(toHex(block.hash))));
  }

  newPendingTransactionFilter(): string {
    return this.addHashes((push) => this.events.onPendingTransaction((tx) => push(toHex(tx.hash()))));
  }

  /** eth_getFilterChanges: what happened since the last poll. */
  async changes(id: string): Promise<string[] | WireLog[]> {
    const filter = this.get(id);
    filter.polled = Date.now();
    if (filter.kind === 'hashes') return filter.buffered.splice(0);
    const head = (await this.chain.head()).number;
    if ('blockHash' in filter.scope) return [];
    const from = bigMax(filter.next, await this.bound(filter.scope.fromBlock, head, 0n));
    const to = bigMin(head, await this.bound(filter.scope.toBlock, head, head));
    if (to < from) return [];
    filter.next = to + 1n;
    return this.logs.getLogs(
      { fromBlock: { kind: 'number', number: from }, toBlock: { kind: 'number', number: to } },
      filter.criteria,
    );
  }

  /** eth_getFilterLogs: every log the filter matches, as eth_getLogs with its criteria. */
  async allLogs(id: string): Promise<WireLog[]> {
    const filter = this.get(id);
    filter.polled = Date.now();
    if (filter.kind !== 'logs') throw new RequestFailed('filter not found');
    return this.logs.getLogs(filter.scope, filter.criteria);
  }

  uninstall(id: string): boolean {
    const filter = this.filters.get(id);
    if (!filter) return false;
    filter.stop?.();
    this.filters.delete(id);
    return true;
  }

  private add(filter: Filter): string {
    const id = newId();
    this.filters.set(id, filter);
    return id;
  }

  private addHashes(listen: (push: (hash: string) => void) => () => void): string {
    const buffered: string[] = [];
    const stop = listen((hash) => {
      buffered.push(hash);
      if (buffered.length > FILTER_MAX_BUFFERED) buffered.shift();
    });
    return this.add({ kind: 'hashes', buffered, polled: Date.now(), stop });
  }

  private get(id: string): Filter {
    const filter = this.filters.get(id);
    // geth's answer for an unknown or expired id.
    if (!filter) throw new RequestFailed('filter not found');
    return filter;
  }

  /** A range end as a number: tags resolve against the head (`earliest` is 0). */
  private async bound(selector: BlockSelector, head: bigint, latest: bigint): Promise<bigint> {
    if (selector.kind === 'tag' && selector.tag !== 'earliest') return latest;
    return this.chain.numberOf(selector, head);
  }

  private sweep(): void {
    const expired = Date.now() - this.timeoutMs;
    for (const [id, filter] of this.filters) if (filter.polled < expired) this.uninstall(id);
  }
}

function bigMax(a: bigint, b: bigint): bigint {
  return a > b ? a : b;
}

function bigMin(a: bigint, b: bigint): bigint {
  return a < b ? a : b;
}
