import os from 'node:os';

// Every limit of the service, with its default and the reason for it, in one place. `ethtrace start`
// parses its flags into one Limits object (src/cli/startFlags.ts); src/app.ts hands each part to the
// service, the worker pool, the workers and the transport that enforce it, and each is checked in one
// place.

/** The EVM work pool (execution off the event loop). */
export interface PoolLimits {
  /** Concurrent executions: one per core, since EVM work is CPU-bound. */
  workers: number;
  /** Per-request deadline, queue wait included; past it: execution timeout. */
  deadlineMs: number;
  /** Requests that may wait for a worker beyond the ones running; more are refused at once (busy). */
  maxQueue: number;
}

/** Calls simulated for eth_call & co., trace_call* and debug_traceCall. */
export interface CallLimits {
  /** Gas a call gets when it names none, and the most it may name (geth's --rpc.gascap default). */
  gasCap: bigint;
  /** Calls in one trace_callMany: bounds the work one request can ask for (Nethermind's limit). */
  maxCalls: number;
  /**
   * Blocks one eth_simulateV1 may span past its base block, gaps included: geth's 256, the reach of
   * BLOCKHASH, and each block is a state root to compute.
   */
  maxSimulateBlocks: number;
  /**
   * The fewest calls a trace_callMany must have to be run speculatively in parallel when workers are
   * idle (src/exec/speculation.ts): below it, one more worker's set-up outweighs what it saves.
   */
  parallelMinCalls: number;
  /**
   * eth_estimateGas stops its search once (hi − lo) / hi falls below this (geth's 1.5%): wallets add
   * 20–25% on top anyway, and it saves most of the runs (the 7702 fixture's estimate: 6 instead of
   * 15). 0 searches to the exact gas.
   */
  estimateGasErrorRatio: number;
  /**
   * eth_createAccessList re-runs the call with each list found until the list stops changing: one
   * or two runs for almost every call. A call whose accesses keep moving (slots derived from gasleft())
   * would otherwise run until the deadline; geth has no bound of its own.
   */
  maxAccessListRuns: number;
}

/** The trace_ replay methods. */
export interface ReplayLimits {
  /**
   * trace_filter: widest block range one request may cover. Blocks not traced before are replayed
   * on the spot (about 0.5 s of CPU for a full block), so the bound keeps one request within the
   * pool's deadline and fair to others. 100 is Reth's default (`max_trace_filter_blocks`).
   */
  maxFilterBlocks: number;
  /**
   * Memory for finished traces. A final block's traces never change and clients walk the same
   * blocks repeatedly (indexers page through trace_filter, explorers open trace_block then
   * trace_transaction), so a hit saves a whole block replay.
   */
  cacheBytes: number;
  /** trace_filter's address index (src/services/traceIndex.ts): a few hundred bytes per block traced. */
  indexBytes: number;
  /**
   * The fewest transactions a block must have to be replayed in parts when workers are idle
   * (src/exec/speculation.ts): below it, one more worker's set-up outweighs what it saves.
   */
  parallelMinTxs: number;
}

/** Reads whose cost grows with what they are asked for. */
export interface MethodLimits {
  /** eth_getLogs: widest block range one request may scan (Infura and Alchemy cap it similarly). */
  maxLogsBlockRange: number;
  /** eth_getLogs: most logs one answer may carry, so one request cannot build a response of gigabytes. */
  maxLogsResults: number;
  /** eth_feeHistory: most blocks per request (geth's limit). */
  maxFeeHistoryBlocks: number;
}

export interface WebSocketLimits {
  /**
   * Output a connection may have waiting to be sent (ws `bufferedAmount`) before the next message;
   * past it the connection is dropped. Checked before each send, so one large answer always goes
   * out whole; only a client that leaves earlier output unread is dropped.
   */
  maxBufferedBytes: number;
  /** Open WebSockets from one address; past it the upgrade is refused with HTTP 429. */
  maxConnectionsPerIp: number;
  /** Open WebSockets of one API key, from any address; past it the upgrade is refused with HTTP 429. */
  maxConnectionsPerKey: number;
  /** Live `eth_subscribe` subscriptions on one connection (enforced by the subscription service). */
  maxSubscriptionsPerConnection: number;
  /** Largest message a client may send; past it the socket is closed with 1009 (message too big). */
  maxMessageBytes: number;
}

/**
 * The polling filters of eth_newFilter, eth_newBlockFilter and eth_newPendingTransactionFilter
 * (src/services/filters.ts). geth and Reth bound none of these but the idle time, and Infura documents
 * only its expiry (15 minutes) and that a key's filters are shared by its connections; 7,000 block
 * filters, each holding up to 10,000 hashes, took a server's heap past its limit. The counts are
 * refused with -32005, EIP-1474's "limit exceeded": the code Infura answers its limits with and this
 * service its other request limits (eth_getLogs, trace_filter), which clients back off on.
 */
export interface FilterLimits {
  /** Filters one API key may have installed, through any of its connections. */
  maxPerKey: number;
  /** Filters installed through one connection (a WebSocket, or an HTTP keep-alive connection). */
  maxPerConnection: number;
  /** Filters installed in this process, every key's together. */
  maxTotal: number;
  /**
   * Changes one filter may have waiting for its next poll: block or transaction hashes, or blocks
   * whose logs a log filter has yet to read. Past it the filter is removed, and its next poll answers
   * "filter not found", as an expired one does: the client can tell that it missed changes and make
   * a new filter, where dropping the oldest changes would lose them silently.
   */
  maxBuffered: number;
  /** A filter not polled for this long is removed (geth's and Reth's 5 minutes). */
  idleTimeoutMs: number;
}

/** What one request may send and receive. */
export interface RequestLimits {
  /** Largest request body (HTTP) or message (WebSocket) accepted: geth's 5 MiB. */
  maxBodyBytes: number;
  /** Largest batch answered; a larger one gets a single -32600 error (geth's 1000). */
  maxBatchSize: number;
  /**
   * Bytes one answer, and all the answers of one batch together, may take. Reth allows 160 MB per
   * response, but here an answer is a tree of objects in a worker before it is text (vmTrace:
   * several times its JSON) and then crosses to the main thread: 32 MiB keeps two workers' worst
   * case in the hundreds of megabytes, and still holds the replay of a full block with traces and
   * state diffs. vmTraces and struct logs of long loops are what it refuses.
   */
  maxResponseBytes: number;
  /**
   * Time a client has to send a request's headers, from the connection's first byte (or the end of
   * its previous request). A client that trickles them a byte at a time (slowloris) holds a socket
   * and a parser per connection; past it the connection gets 408 and is closed.
   */
  headerTimeoutMs: number;
  /** Time a client has to send a body once its headers are in; past it 408 and the connection closed. */
  bodyTimeoutMs: number;
  /**
   * Open HTTP connections from one address (in one process); past it a new connection is answered
   * 429 and closed. Idle keep-alive connections each hold a socket and a parser until their timeout.
   */
  maxHttpConnectionsPerIp: number;
}

export interface Limits {
  pool: PoolLimits;
  calls: CallLimits;
  replay: ReplayLimits;
  methods: MethodLimits;
  requests: RequestLimits;
  webSocket: WebSocketLimits;
  filters: FilterLimits;
}

export const DEFAULT_LIMITS: Limits = {
  pool: {
    workers: os.availableParallelism(),
    // geth's and Erigon's RPCEVMTimeout. A 200-transaction block replays in about 0.5 s here, so
    // honest work fits ten times over, and a client is still waiting at 5 s.
    deadlineMs: 5_000,
    // Each waiting request is only a closure, so memory is no concern; the bound is there to refuse
    // at once, with a code clients back off on, rather than let a flood wait out the deadline. 256
    // covers a burst of cheap calls (milliseconds each) on a few cores; slow traces hit the deadline
    // long before the queue fills.
    maxQueue: 256,
  },
  calls: {
    // geth's --rpc.gascap, Erigon's and Reth's default.
    gasCap: 50_000_000n,
    maxCalls: 1024,
    maxSimulateBlocks: 256,
    parallelMinCalls: 16,
    estimateGasErrorRatio: 0.015,
    maxAccessListRuns: 16,
  },
  replay: {
    maxFilterBlocks: 100,
    cacheBytes: 256 * 1024 * 1024,
    indexBytes: 64 * 1024 * 1024,
    parallelMinTxs: 16,
  },
  methods: {
    maxLogsBlockRange: 10_000,
    maxLogsResults: 10_000,
    maxFeeHistoryBlocks: 1024,
  },
  requests: {
    maxBodyBytes: 5 * 1024 * 1024,
    maxBatchSize: 1000,
    maxResponseBytes: 32 * 1024 * 1024,
    // Any client sends its headers in one packet; ten seconds is generous for a congested link and
    // short enough that a thousand trickling sockets hold nothing for long (Node's own default is
    // 60 s, checked every 30 s: a trickling client held its socket for up to 80 s).
    headerTimeoutMs: 10_000,
    // A full 5 MiB body in 30 s needs 1.4 Mbit/s; nginx allows 60 s between reads, which a body
    // trickled a byte at a time never exceeds, so the bound here is on the whole body.
    bodyTimeoutMs: 30_000,
    // A browser opens 6 per host, an HTTP client's pool a few dozen; a reverse proxy in front makes
    // every client one address, and its operator raises this.
    maxHttpConnectionsPerIp: 256,
  },
  webSocket: {
    // A client that never reads grew the server by 70 MB per block. 16 MiB holds thousands of
    // notifications or several large answers for a client that reads slowly but does read; geth,
    // whose writes block, drops a client whose socket stays full for its 10 s write timeout instead.
    maxBufferedBytes: 16 * 1024 * 1024,
    // A dapp opens one socket per tab and an indexer a small pool; 64 per address leaves room for
    // both while bounding what one host can hold (each connection up to maxBufferedBytes). Behind a
    // reverse proxy every client shares the proxy's address: raise it there.
    maxConnectionsPerIp: 64,
    // One key's clients spread over many addresses (a dapp's users, an indexer's hosts): four
    // addresses' worth bounds what one leaked key can hold open without limiting a fleet of tabs.
    maxConnectionsPerKey: 256,
    // Reth's default (--rpc.max-subscriptions-per-connection); 10,000 on one socket used to stall
    // every method for 2 s per block.
    maxSubscriptionsPerConnection: 1024,
    // The same as an HTTP body (geth's 5 MiB for both): a message is one request or one batch.
    maxMessageBytes: 5 * 1024 * 1024,
  },
  filters: {
    // A dapp or an indexer watches a few dozen things; a thousand leaves a backend that serves many
    // users through one key room, while one key cannot take every filter of the server.
    maxPerKey: 1024,
    // A browser tab (one client of a key shared by a dapp's users) watches a handful.
    maxPerConnection: 128,
    // A filter costs a few hundred bytes here (block and transaction hashes are kept once for all
    // filters, not per filter), and each one is looked at on every sweep and block.
    maxTotal: 16_384,
    // 10,000 blocks is eth_getLogs' range limit (a log filter further behind could not be read in
    // one poll anyway) and more hashes than a busy pool sees in the 5 minutes a filter may stay idle.
    maxBuffered: 10_000,
    idleTimeoutMs: 5 * 60_000,
  },
};

/** Limits with some groups partly replaced (tests and flags change a few values). */
export type LimitOverrides = { [G in keyof Limits]?: Partial<Limits[G]> };

export function withLimits(base: Limits, overrides: LimitOverrides = {}): Limits {
  return {
    pool: { ...base.pool, ...overrides.pool },
    calls: { ...base.calls, ...overrides.calls },
    replay: { ...base.replay, ...overrides.replay },
    methods: { ...base.methods, ...overrides.methods },
    requests: { ...base.requests, ...overrides.requests },
    webSocket: { ...base.webSocket, ...overrides.webSocket },
    filters: { ...base.filters, ...overrides.filters },
  };
}

/**
 * The abuse limits: each bound a client can run into, by the name its refusals are counted under
 * (`ethtrace_limit_refusals_total{limit}`, src/observe/metrics.ts). README.md's limits table is made
 * from this list (scripts/limits-table.ts), and test/config/limitsTable.test.ts fails when they differ.
 */
export const LIMIT_NAMES = [
  'body_bytes',
  'batch_size',
  'batch_work',
  'pool_queue',
  'response_bytes',
  'trace_callmany_calls',
  'simulate_blocks',
  'logs_block_range',
  'logs_results',
  'trace_filter_blocks',
  'ws_message_bytes',
  'ws_buffered_bytes',
  'ws_subscriptions',
  'connections_per_ip',
  'connections_per_key',
  'http_connections_per_ip',
  'header_timeout',
  'body_timeout',
  'filters_per_key',
  'filters_per_connection',
  'filters_total',
  'filter_buffer',
  'filter_idle',
] as const;

export type LimitName = (typeof LIMIT_NAMES)[number];

export function isLimitName(name: string): name is LimitName {
  return (LIMIT_NAMES as readonly string[]).includes(name);
}

/** One abuse limit as a setting: where its value lives in Limits, its flag, what a client gets past it, why. */
export interface LimitSetting {
  /** The group and field of Limits that holds its value. */
  path: { [G in keyof Limits]: [G, keyof Limits[G] & string] }[keyof Limits];
  unit: 'bytes' | 'count' | 'ms' | 'blocks' | 'results';
  /** The `ethtrace start` flag that sets it, if any. */
  flag: string | null;
  /** What the client gets past it. */
  refusal: string;
  reason: string;
}

export const LIMIT_SETTINGS: Record<LimitName, LimitSetting> = {
  body_bytes: {
    path: ['requests', 'maxBodyBytes'],
    unit: 'bytes',
    flag: '--max-body-mb',
    refusal: 'HTTP 413, the connection closed once the rest is drained',
    reason: "geth's 5 MiB: a JSON body holds a thousand-call batch or a blob transaction well within it",
  },
  batch_size: {
    path: ['requests', 'maxBatchSize'],
    unit: 'count',
    flag: '--max-batch',
    refusal: 'one -32600 error for the whole batch',
    reason: "geth's 1000: a batch is answered as one body, so its size bounds one answer's work",
  },
  batch_work: {
    path: ['pool', 'deadlineMs'],
    unit: 'ms',
    flag: '--exec-timeout',
    refusal: "-32000 execution timeout; a batch's EVM calls share one deadline",
    reason:
      "geth's and Erigon's RPCEVMTimeout; a batch shares it so it cannot hold the workers for a thousand deadlines",
  },
  pool_queue: {
    path: ['pool', 'maxQueue'],
    unit: 'count',
    flag: null,
    refusal: '-32005 busy, at once',
    reason: 'EVM work waiting for a worker; refusing at once beats letting a flood wait out the deadline',
  },
  response_bytes: {
    path: ['requests', 'maxResponseBytes'],
    unit: 'bytes',
    flag: '--max-response-mb',
    refusal: '-32008; in a batch, each answer past it',
    reason: 'an answer is a tree of objects in a worker before it is text: bounds memory per request',
  },
  trace_callmany_calls: {
    path: ['calls', 'maxCalls'],
    unit: 'count',
    flag: '--max-calls',
    refusal: '-32602 too many calls; eth_simulateV1: -38026',
    reason: "Nethermind's bound on the work of one trace_callMany",
  },
  simulate_blocks: {
    path: ['calls', 'maxSimulateBlocks'],
    unit: 'blocks',
    flag: null,
    refusal: '-38026 too many blocks',
    reason: "geth's 256: the reach of BLOCKHASH, and every simulated block is a state root to compute",
  },
  logs_block_range: {
    path: ['methods', 'maxLogsBlockRange'],
    unit: 'blocks',
    flag: null,
    refusal: '-32005 with a range that fits',
    reason: 'Infura and Alchemy cap eth_getLogs ranges alike; log pagers read the suggested range',
  },
  logs_results: {
    path: ['methods', 'maxLogsResults'],
    unit: 'results',
    flag: null,
    refusal: '-32005 with a range that fits',
    reason: 'so one eth_getLogs cannot build an answer of gigabytes',
  },
  trace_filter_blocks: {
    path: ['replay', 'maxFilterBlocks'],
    unit: 'blocks',
    flag: '--trace-filter-blocks',
    refusal: '-32005',
    reason: "Reth's default: unreplayed blocks cost 0.5 s of CPU each",
  },
  ws_message_bytes: {
    path: ['webSocket', 'maxMessageBytes'],
    unit: 'bytes',
    flag: null,
    refusal: 'WebSocket closed with 1009',
    reason: 'the same bound as an HTTP body',
  },
  ws_buffered_bytes: {
    path: ['webSocket', 'maxBufferedBytes'],
    unit: 'bytes',
    flag: '--ws-max-buffer-mb',
    refusal: 'WebSocket closed with 1008',
    reason: 'a client that never reads grew the server by 70 MB per block',
  },
  ws_subscriptions: {
    path: ['webSocket', 'maxSubscriptionsPerConnection'],
    unit: 'count',
    flag: '--ws-max-subscriptions',
    refusal: '-32006',
    reason: "Reth's default; 10,000 on one socket stalled every method for 2 s per block",
  },
  connections_per_ip: {
    path: ['webSocket', 'maxConnectionsPerIp'],
    unit: 'count',
    flag: '--ws-max-per-ip',
    refusal: 'WebSocket upgrade refused with HTTP 429',
    reason: 'a tab opens one, an indexer a few; behind a reverse proxy every client shares its address',
  },
  connections_per_key: {
    path: ['webSocket', 'maxConnectionsPerKey'],
    unit: 'count',
    flag: '--ws-max-per-key',
    refusal: 'WebSocket upgrade refused with HTTP 429',
    reason: 'bounds what one leaked key can hold open from many addresses',
  },
  http_connections_per_ip: {
    path: ['requests', 'maxHttpConnectionsPerIp'],
    unit: 'count',
    flag: '--http-max-per-ip',
    refusal: 'a new connection answered HTTP 429 and closed',
    reason: 'idle keep-alive connections hold a socket and a parser each for up to 65 s',
  },
  header_timeout: {
    path: ['requests', 'headerTimeoutMs'],
    unit: 'ms',
    flag: '--header-timeout-ms',
    refusal: 'HTTP 408, the connection closed',
    reason: 'a client trickling its headers (slowloris) is cut within seconds',
  },
  body_timeout: {
    path: ['requests', 'bodyTimeoutMs'],
    unit: 'ms',
    flag: '--body-timeout-ms',
    refusal: 'HTTP 408, the connection closed',
    reason: 'a 5 MiB body at 1.4 Mbit/s; a body trickled a byte at a time is cut',
  },
  filters_per_key: {
    path: ['filters', 'maxPerKey'],
    unit: 'count',
    flag: '--filter-max-per-key',
    refusal: '-32005, no filter made',
    reason: 'a dapp or indexer watches a few dozen things; one key cannot take every filter of the server',
  },
  filters_per_connection: {
    path: ['filters', 'maxPerConnection'],
    unit: 'count',
    flag: '--filter-max-per-connection',
    refusal: '-32005, no filter made',
    reason: 'a browser tab, one client of a key a dapp shares, watches a handful',
  },
  filters_total: {
    path: ['filters', 'maxTotal'],
    unit: 'count',
    flag: '--filter-max',
    refusal: '-32005, no filter made',
    reason: '7,000 block filters, unbounded, took a server past its heap limit',
  },
  filter_buffer: {
    path: ['filters', 'maxBuffered'],
    unit: 'count',
    flag: '--filter-max-buffer',
    refusal: 'the filter removed; its next poll -32000 filter not found',
    reason:
      'hashes or blocks one filter has waiting; removed rather than silently losing changes, so the client can tell',
  },
  filter_idle: {
    path: ['filters', 'idleTimeoutMs'],
    unit: 'ms',
    flag: '--filter-timeout-ms',
    refusal: 'the filter removed; its next poll -32000 filter not found',
    reason: "geth's and Reth's 5 minutes without a poll (Infura's 15)",
  },
};

/** A limit's value in `limits`. */
export function limitValue(limits: Limits, name: LimitName): number {
  const [group, field] = LIMIT_SETTINGS[name].path;
  return Number((limits[group] as unknown as Record<string, number | bigint>)[field]);
}
