/**
 * What each call costs, in credits, as Infura counts them: the weights of Infura's published
 * Ethereum credit-cost table (docs/keys.md lists them with what differs here). One table, so an
 * operator who prices differently changes this file only.
 */

/** Infura's cost of a method missing from its table, and so of every method not listed here. */
export const DEFAULT_CREDITS = 80;

const METHOD_CREDITS: Readonly<Record<string, number>> = {
  eth_accounts: 80,
  eth_blobBaseFee: 300,
  eth_blockNumber: 80,
  eth_call: 80,
  // Blocks of calls with a state root each: priced as trace_callMany, the other many-call method.
  eth_simulateV1: 300,
  eth_chainId: 5,
  // Not in Infura's table. Like eth_chainId, the chain's own settings: the spec and two cached headers
  // (genesis, head), no state read and no execution.
  eth_config: 5,
  eth_createAccessList: 80,
  eth_estimateGas: 300,
  eth_feeHistory: 80,
  eth_gasPrice: 80,
  eth_getBalance: 80,
  eth_getBlockByHash: 80,
  eth_getBlockByNumber: 80,
  eth_getBlockReceipts: 1000,
  eth_getBlockTransactionCountByHash: 150,
  eth_getBlockTransactionCountByNumber: 150,
  eth_getCode: 80,
  eth_getLogs: 255,
  eth_getProof: 150,
  eth_getStorageAt: 80,
  eth_getTransactionByBlockHashAndIndex: 150,
  eth_getTransactionByBlockNumberAndIndex: 150,
  eth_getTransactionByHash: 80,
  eth_getTransactionCount: 80,
  eth_getTransactionReceipt: 80,
  eth_getUncleByBlockHashAndIndex: 150,
  eth_getUncleByBlockNumberAndIndex: 150,
  eth_getUncleCountByBlockHash: 150,
  eth_getUncleCountByBlockNumber: 150,
  eth_maxPriorityFeePerGas: 80,
  eth_sendRawTransaction: 80,
  eth_sign: 80,
  eth_subscribe: 5,
  eth_syncing: 5,
  eth_unsubscribe: 10,
  net_listening: 5,
  net_peerCount: 80,
  net_version: 5,
  web3_clientVersion: 80,
  // Filters (polling).
  eth_getFilterChanges: 140,
  eth_getFilterLogs: 255,
  eth_newBlockFilter: 80,
  eth_newFilter: 80,
  eth_uninstallFilter: 80,
  // Infura lists these five trace_ methods at 300; every other trace_ method costs the same here
  // (TRACE_PREFIX below), since each replays or executes as much.
  trace_block: 300,
  trace_call: 300,
  trace_callMany: 300,
  trace_filter: 300,
  trace_transaction: 300,
  debug_traceBlockByHash: 1000,
  debug_traceBlockByNumber: 1000,
  debug_traceCall: 1000,
  debug_traceTransaction: 1000,
  // Not in Infura's table. Bundles of calls run as trace_callMany runs its calls (and share its
  // bound on calls), so they cost what it costs; traced by geth's tracers, what debug_traceCall costs.
  eth_callMany: 300,
  eth_callBundle: 300,
  debug_traceCallMany: 1000,
};

/**
 * Methods Infura does not list but that do the work of ones it does: every `trace_` method replays
 * or executes transactions (300), every `debug_trace` one runs geth's tracers (1000).
 */
const PREFIX_CREDITS: ReadonlyArray<readonly [prefix: string, credits: number]> = [
  ['debug_trace', 1000],
  ['trace_', 300],
];

/** The credits one call of `method` costs. */
export function creditsOf(method: string): number {
  let credits = known.get(method);
  if (credits === undefined) {
    credits = lookUp(method);
    // Bounded, as method names are the client's choice; a cheap call asks this several times. A
    // long name (no method's is) is looked up each time: kept, 4,096 names of a body's 5 MiB each
    // would be 20 GiB.
    if (method.length > MAX_KNOWN_NAME) return credits;
    if (known.size >= MAX_KNOWN_METHODS) known.clear();
    known.set(method, credits);
  }
  return credits;
}

const known = new Map<string, number>();
const MAX_KNOWN_METHODS = 4096;
const MAX_KNOWN_NAME = 64;

function lookUp(method: string): number {
  const listed = Object.hasOwn(METHOD_CREDITS, method) ? METHOD_CREDITS[method] : undefined;
  if (listed !== undefined) return listed;
  for (const [prefix, credits] of PREFIX_CREDITS) if (method.startsWith(prefix)) return credits;
  return DEFAULT_CREDITS;
}

/**
 * Subscription events, as Infura charges them: `newHeads` per block, `logs` once per block that
 * brings a subscription any log (however many), `newPendingTransactions` about once a second while
 * they flow (PENDING_CHARGE_MS), whatever the count.
 */
export const EVENT_CREDITS = {
  newHeads: 50,
  logs: 300,
  newPendingTransactions: 200,
} as const;

/** A `newPendingTransactions` subscription is charged at most once per this interval. */
export const PENDING_CHARGE_MS = 1000;

/** Every method with its own weight, for `docs/keys.md` and tests. */
export function creditTable(): ReadonlyArray<readonly [string, number]> {
  return Object.entries(METHOD_CREDITS);
}
