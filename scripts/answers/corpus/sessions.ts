import type { Pair } from '../lib/compare.ts';
import type { Answer } from '../lib/http.ts';
import type { Side } from '../lib/tree.ts';
import { WsClient } from '../lib/ws.ts';
import type { ChainContext } from './context.ts';

/**
 * Stateful exchanges: polling filters over HTTP and subscriptions over WebSocket. Their ids are the
 * only values the comparison normalises, because the service draws them at random (16 random
 * bytes, services/subscriptions.ts): each side's id is registered with the pair, shown in both
 * answers as one placeholder, and put back into that side's later requests.
 */

let nextId = 1_000_000;

export function request(method: string, params: readonly unknown[]): string {
  return JSON.stringify({ jsonrpc: '2.0', id: nextId++, method, params });
}

/** The `result` of an answer, or undefined when it is an error or not JSON. */
export function resultOf(a: Answer): unknown {
  try {
    return (JSON.parse(a.body) as { result?: unknown }).result;
  } catch {
    return undefined;
  }
}

/** eth_newFilter / eth_newBlockFilter / eth_newPendingTransactionFilter, polled and removed. */
export class FilterSession {
  private readonly ids: string[] = [];
  private readonly logFilters: string[] = [];
  private static readonly CATEGORY = 'filters (session)';

  constructor(
    private readonly pair: Pair,
    private readonly ctx: ChainContext,
  ) {}

  private step(method: string, params: readonly unknown[]): Promise<Record<Side, Answer>> {
    return this.pair.step(FilterSession.CATEGORY, method, request(method, params));
  }

  /** Makes a filter; answers the placeholder of its id (undefined if either side made none). */
  private async make(method: string, params: readonly unknown[]): Promise<string | undefined> {
    const before = this.pair.lastPlaceholder();
    await this.pair.step(FilterSession.CATEGORY, method, request(method, params), { randomId: 'filter id' });
    const after = this.pair.lastPlaceholder();
    return after === before ? undefined : after;
  }

  /** Makes the filters (before any new block, on a dev chain). */
  async create(): Promise<void> {
    const logs = this.ctx.blocks.flatMap((b) => b.receipts.flatMap((r) => r.logs));
    const first = logs[0];
    const withLogs = this.ctx.blocks.find((b) => b.receipts.some((r) => r.logs.length > 0));
    const filters: unknown[] = [
      { fromBlock: '0x0', toBlock: 'latest' },
      {},
      ...(first ? [{ fromBlock: 'earliest', address: first.address, topics: first.topics.slice(0, 1) }] : []),
      ...(withLogs ? [{ blockHash: withLogs.hash }] : []),
      { fromBlock: '0x1', toBlock: '0x0' },
    ];
    for (const f of filters) {
      const id = await this.make('eth_newFilter', [f]);
      if (id !== undefined) {
        this.ids.push(id);
        this.logFilters.push(id);
      }
    }
    for (const method of ['eth_newBlockFilter', 'eth_newPendingTransactionFilter']) {
      const id = await this.make(method, []);
      if (id !== undefined) this.ids.push(id);
    }
  }

  /** Polls every filter (twice), reads the log filters whole, then removes them. */
  async poll(): Promise<void> {
    for (const id of this.ids) {
      await this.step('eth_getFilterChanges', [id]);
      await this.step('eth_getFilterChanges', [id]);
      await this.step('eth_getFilterLogs', [id]);
    }
    for (const id of this.ids) {
      await this.step('eth_uninstallFilter', [id]);
      await this.step('eth_uninstallFilter', [id]);
    }
    const [gone] = this.ids;
    if (gone !== undefined) {
      await this.step('eth_getFilterChanges', [gone]);
      await this.step('eth_getFilterLogs', [gone]);
    }
    await this.step('eth_uninstallFilter', [`0x${'0'.repeat(32)}`]);
  }
}

/**
 * One socket per server: a sample of plain requests sent over it, then subscriptions made and
 * removed. On a dev chain the subscriptions stay open while blocks are mined and their
 * notifications are compared in order at the end.
 */
export class WsSession {
  private readonly subscriptions: string[] = [];
  private static readonly CATEGORY = 'websocket (session)';

  private constructor(
    private readonly pair: Pair,
    private readonly clients: Record<Side, WsClient>,
    private readonly timeoutMs: number,
  ) {}

  static async open(pair: Pair, timeoutMs: number): Promise<WsSession> {
    const [o, n] = await Promise.all([
      WsClient.open(pair.server('old').wsUrl),
      WsClient.open(pair.server('new').wsUrl),
    ]);
    return new WsSession(pair, { old: o, new: n }, timeoutMs);
  }

  /** Sends one message on both sockets (its placeholders replaced per side) and compares the answers. */
  async send(method: string, text: string, randomId?: string): Promise<string | undefined> {
    const [o, n] = await Promise.all([
      this.clients.old.request(this.pair.unmaskText('old', text), this.timeoutMs),
      this.clients.new.request(this.pair.unmaskText('new', text), this.timeoutMs),
    ]);
    const placeholder =
      randomId === undefined ? undefined : this.pair.registerResults(randomId, frame(o), frame(n));
    this.pair.compareMasked(WsSession.CATEGORY, method, text, frame(o), frame(n));
    return placeholder;
  }

  async subscribe(ctx: ChainContext): Promise<void> {
    const first = ctx.blocks.flatMap((b) => b.receipts.flatMap((r) => r.logs))[0];
    const subs: unknown[][] = [
      ['newHeads'],
      ['logs'],
      ['logs', {}],
      ...(first ? [['logs', { address: first.address, topics: first.topics.slice(0, 1) }]] : []),
      ['newPendingTransactions'],
      ['newPendingTransactions', true],
    ];
    for (const params of subs) {
      const id = await this.send('eth_subscribe', request('eth_subscribe', params), 'subscription id');
      if (id !== undefined) this.subscriptions.push(id);
    }
    // Refused, or taken with the unknown member ignored: either way its id (if any) is masked too.
    for (const params of [['nope'], ['logs', { fromBlock: '0x0' }], [], ['newHeads', { extra: 1 }]]) {
      const id = await this.send('eth_subscribe', request('eth_subscribe', params), 'subscription id');
      if (id !== undefined) this.subscriptions.push(id);
    }
  }

  async unsubscribe(): Promise<void> {
    for (const id of this.subscriptions) {
      await this.send('eth_unsubscribe', request('eth_unsubscribe', [id]));
      await this.send('eth_unsubscribe', request('eth_unsubscribe', [id]));
    }
    await this.send('eth_unsubscribe', request('eth_unsubscribe', ['0x00']));
  }

  /** Waits for both sides to have as many notifications (at most `waitMs`), then compares them in order. */
  async compareNotifications(waitMs: number): Promise<void> {
    const started = performance.now();
    while (
      this.clients.old.notifications.length !== this.clients.new.notifications.length &&
      performance.now() - started < waitMs
    ) {
      await new Promise((r) => setTimeout(r, 100));
    }
    // Extra time for stragglers, equal on both sides.
    await new Promise((r) => setTimeout(r, 300));
    const o = this.clients.old.notifications;
    const n = this.clients.new.notifications;
    for (let i = 0; i < Math.max(o.length, n.length); i++) {
      this.pair.compareMasked(
        WsSession.CATEGORY,
        'eth_subscription (notification)',
        `notification ${i + 1} of ${Math.max(o.length, n.length)}`,
        frame(o[i] ?? '<none>'),
        frame(n[i] ?? '<none>'),
      );
    }
  }

  close(): void {
    this.clients.old.close();
    this.clients.new.close();
  }
}

function frame(text: string): Answer {
  return { status: 200, headers: '', body: text };
}

/** A handful of addresses, blocks and hashes worth asking about over a socket too. */
export function wsSample(ctx: ChainContext): Array<[string, string]> {
  const last = ctx.blocks[ctx.head];
  const tx = ctx.blocks.flatMap((b) => b.txs)[0];
  const out: Array<[string, readonly unknown[]]> = [
    ['eth_chainId', []],
    ['eth_blockNumber', []],
    ['eth_getBlockByNumber', ['latest', true]],
    ['eth_getBlockReceipts', ['latest']],
    ['trace_block', ['latest']],
    ['eth_getLogs', [{ fromBlock: '0x0', toBlock: 'latest' }]],
    ['eth_getBalance', [ctx.addresses[0] ?? `0x${'00'.repeat(20)}`, 'latest']],
    ['eth_getBlockByNumber', ['0x0', false]],
  ];
  if (last) out.push(['debug_traceBlockByHash', [last.hash, { tracer: 'callTracer' }]]);
  if (tx) {
    out.push(['eth_getTransactionReceipt', [tx.hash]]);
    out.push(['trace_replayTransaction', [tx.hash, ['trace', 'stateDiff']]]);
    out.push(['debug_traceTransaction', [tx.hash, { tracer: 'prestateTracer' }]]);
  }
  const texts: Array<[string, string]> = out.map(([m, p]) => [m, request(m, p)]);
  texts.push(['(batch)', `[${request('eth_chainId', [])},${request('net_version', [])},5]`]);
  texts.push(['(bad JSON)', '{"jsonrpc":"2.0","id":1,']);
  texts.push(['(invalid request)', '{"jsonrpc":"1.0","id":1,"method":"eth_chainId"}']);
  texts.push(['(unknown method)', request('eth_nope', [])]);
  texts.push(['eth_getBalance', request('eth_getBalance', ['0x12'])]);
  return texts;
}
