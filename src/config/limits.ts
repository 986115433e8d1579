import os from 'node:os';

// Every limit of the service, with its default and the reason for it, in one place. `ethtrace start`
// parses its flags into one Limits object (src/main.ts); src/app.ts hands each part to the service,
// the worker pool, the workers and the transport that enforce it, and each is checked in one place.

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
  /** Live `eth_subscribe` subscriptions on one connection (enforced by the subscription service). */
  maxSubscriptionsPerConnection: number;
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
}

export interface Limits {
  pool: PoolLimits;
  calls: CallLimits;
  replay: ReplayLimits;
  methods: MethodLimits;
  requests: RequestLimits;
  webSocket: WebSocketLimits;
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
    // Reth's default (--rpc.max-subscriptions-per-connection); 10,000 on one socket used to stall
    // every method for 2 s per block.
    maxSubscriptionsPerConnection: 1024,
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
  };
}
