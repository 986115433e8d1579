import type { ChainService } from '../services/chain.ts';
import type { DebugService } from '../services/debug.ts';
import type { DevService } from '../services/dev.ts';
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
  chain: ChainService;
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
  clientVersion: string;
  limits: MethodLimits;
}

export interface MethodLimits {
  /** eth_getLogs: widest block range one request may scan (Infura and Alchemy cap it similarly). */
  maxLogsBlockRange: number;
  /** eth_getLogs: most logs one answer may carry, so one request cannot build a response of gigabytes. */
  maxLogsResults: number;
  /** eth_feeHistory: most blocks per request (geth's limit). */
  maxFeeHistoryBlocks: number;
}

export const DEFAULT_METHOD_LIMITS: MethodLimits = {
  maxLogsBlockRange: 10_000,
  maxLogsResults: 10_000,
  maxFeeHistoryBlocks: 1024,
};
