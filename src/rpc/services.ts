import type { ChainReader } from '../chain/reader.ts';
import type { MethodLimits } from '../config/limits.ts';
import type { RawJson } from '../core/rawJson.ts';
import type { DebugService } from '../services/debug.ts';
import type { DevService } from '../services/dev/index.ts';
import type { ExecutionService } from '../services/execution.ts';
import type { FeeService } from '../services/fees.ts';
import type { FilterService } from '../services/filters.ts';
import type { LogService } from '../services/logs.ts';
import type { ReplayService } from '../services/replay.ts';
import type { StateService } from '../services/state.ts';
import type { SubscriptionService } from '../services/subscriptions.ts';
import type { TraceService } from '../services/trace.ts';

/** Everything a method handler may use. */
export interface Services {
  chain: ChainReader;
  state: StateService;
  logs: LogService;
  fees: FeeService;
  trace: TraceService;
  replay: ReplayService;
  debug: DebugService;
  /** Present on a dev chain only: the chain accepts transactions. */
  dev: DevService | null;
  execution: ExecutionService;
  subscriptions: SubscriptionService;
  filters: FilterService;
  /** Following an upstream: how far its catch-up is, for eth_syncing; null when not catching up. */
  syncing: () => SyncProgress | null;
  clientVersion: string;
  limits: MethodLimits;
  /**
   * Upstream mode: a method sent on to the upstream node as it came, its answer returned as the
   * node gave it (src/rpc/methods/passThrough.ts lists which). Null when the chain is local.
   */
  forward: ((method: string, params: unknown) => Promise<RawJson>) | null;
}

/** A catch-up under way, in eth_syncing's (geth's) terms: the block it began at, ours, and its goal. */
export interface SyncProgress {
  startingBlock: bigint;
  currentBlock: bigint;
  highestBlock: bigint;
}
