import { ChainReader } from './chain/reader.ts';
import { readStoredSpec } from './chain/storedSpec.ts';
import { DEFAULT_LIMITS, type Limits } from './config/limits.ts';
import { describeForLog, UserError } from './core/errors.ts';
import { RawJson } from './core/rawJson.ts';
import { type ExecutionClient, PoolExecutionClient } from './exec/client.ts';
import { PrefetchingClient } from './exec/prefetch.ts';
import { type CallGate, RpcEnvelope } from './rpc/envelope.ts';
import { METHODS } from './rpc/methods/index.ts';
import { withPassThrough } from './rpc/methods/passThrough.ts';
import type { Services } from './rpc/services.ts';
import { DebugService } from './services/debug.ts';
import type { DevService } from './services/dev/index.ts';
import { ChainEvents } from './services/events.ts';
import { ExecutionService } from './services/execution.ts';
import { FeeService } from './services/fees.ts';
import { FilterService } from './services/filters.ts';
import { LogService } from './services/logs.ts';
import { ReplayService } from './services/replay.ts';
import { StateService } from './services/state.ts';
import { SubscriptionService } from './services/subscriptions.ts';
import { TraceService } from './services/trace.ts';
import type { ChainStore } from './store/types.ts';
import type { UsageBook } from './transport/access/usage.ts';
import type { KeyRing } from './transport/apiKeys.ts';
import { dashboardRoutes } from './transport/dashboard/http.ts';
import type { DashboardSnapshot } from './transport/dashboard/snapshot.ts';
import { DashboardSource } from './transport/dashboard/source.ts';
import { combineGates } from './transport/gate.ts';
import { type Listening, type RequestInfo, RpcServer, type SocketPolicy } from './transport/server.ts';
import type { UpstreamSource, UpstreamWorkerSource } from './upstream/open.ts';

export const CLIENT_VERSION = 'ethtrace/v0.1.0';

export interface AppConfig {
  host: string;
  port: number;
  /** null serves every key (and `/`): `--no-auth`. */
  keys: KeyRing | null;
  /** Every limit, each given to the part that enforces it (src/config/limits.ts). */
  limits: Limits;
}

export const DEFAULT_CONFIG: Omit<AppConfig, 'keys'> = {
  host: '127.0.0.1',
  port: 8545,
  limits: DEFAULT_LIMITS,
};

export interface App {
  listen(): Promise<Listening>;
  /** Starts the execution workers now rather than on the first trace (and surfaces their errors). */
  warm(): Promise<void>;
  close(): Promise<void>;
  services: Services;
  execution: ExecutionClient;
  /** This process's part of the operator dashboard (null without an operator token). */
  dashboard: DashboardSource | null;
}

/** The operator dashboard (`--operator-token`): served under /dashboard, from this process's data. */
export interface DashboardConfig {
  token: string;
  /** The access control's usage (null without keys: the dashboard then counts calls itself). */
  book: UsageBook | null;
  /** Every API process's snapshot, when several serve the port; this process's alone otherwise. */
  gather?: (now: number, since: number) => Promise<DashboardSnapshot[]>;
}

/** Wires store → services → JSON-RPC envelope → transport. Listening is separate, for tests on port 0. */
export async function buildApp(
  config: AppConfig,
  deps: {
    store: ChainStore;
    datadir: string;
    dev?: DevService;
    /** Upstream mode: the store is deps.upstream.store, over the upstream node. */
    upstream?: UpstreamSource;
    log?: (line: string) => void;
    /** The gate of one body (src/transport/gate.ts), from who sent it. */
    gateFor?: (request: RequestInfo) => CallGate | null;
    /** The access policy's word on open WebSockets (src/transport/access/control.ts). */
    sockets?: SocketPolicy;
    dashboard?: DashboardConfig;
  },
): Promise<App> {
  const spec = await readStoredSpec(deps.store);
  if (spec === null) throw new UserError('the datadir holds no chain: import one first (ethtrace import)');
  const { limits } = config;
  const chain = new ChainReader(deps.store, spec);
  const log = deps.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  const upstream = deps.upstream;
  const pool = new PoolExecutionClient({
    datadir: deps.datadir,
    calls: limits.calls,
    pool: limits.pool,
    maxResultBytes: limits.requests.maxResponseBytes,
    log,
    ...(upstream ? { upstream: workerShare(upstream.worker, limits.pool.workers) } : {}),
  });
  // Upstream mode: each job's state is read ahead in a few round trips before a worker runs it.
  const execution: ExecutionClient = upstream ? new PrefetchingClient(pool, upstream.prefetch) : pool;
  const fees = new FeeService(chain);
  const logs = new LogService(chain, limits.methods);
  const events = new ChainEvents(deps.store, log);
  await events.start();
  // What the cache holds of a block a reorg removed is of no use any more (it was never final).
  if (upstream)
    events.onRemoved((block) => void upstream.store.cache.dropBlocks([block.hash]).catch(() => {}));
  deps.dev?.announceTo(events);
  const services: Services = {
    chain,
    state: new StateService(deps.store),
    logs,
    fees,
    trace: new TraceService(chain, execution, limits.calls),
    replay: new ReplayService(chain, execution, limits.replay),
    debug: new DebugService(chain, execution),
    dev: deps.dev ?? null,
    execution: new ExecutionService(chain, fees, execution),
    subscriptions: new SubscriptionService(
      events,
      chain,
      logs,
      limits.webSocket.maxSubscriptionsPerConnection,
      log,
    ),
    filters: new FilterService(events, chain, logs),
    clientVersion: CLIENT_VERSION,
    limits: limits.methods,
    forward: upstream
      ? async (method, params) =>
          new RawJson(
            JSON.stringify(
              (await upstream.store.client.request(method, Array.isArray(params) ? params : [])) ?? null,
            ),
          )
      : null,
  };
  const envelope = new RpcEnvelope(
    upstream ? withPassThrough(METHODS) : METHODS,
    { services },
    {
      maxBatchSize: limits.requests.maxBatchSize,
      maxResponseBytes: limits.requests.maxResponseBytes,
      batchScope: (work) => execution.batch(work),
    },
    (e, method) => log(`internal error in ${method}: ${describeForLog(e)}`),
  );
  // --- the operator dashboard: its source listens to every call through its own gate (below) ---
  const dashboard = deps.dashboard
    ? new DashboardSource({
        book: deps.dashboard.book,
        keys: config.keys,
        pool: () => execution.stats(),
        head: async () => {
          const head = await deps.store.getHead();
          const header = head && (await chain.header(head.hash));
          return head && header && { number: head.number, timestamp: header.timestamp };
        },
      })
    : null;
  const server = new RpcServer({
    host: config.host,
    port: config.port,
    keys: config.keys,
    limits: { maxBodyBytes: limits.requests.maxBodyBytes, webSocket: limits.webSocket },
    ...(deps.sockets ? { sockets: deps.sockets } : {}),
    ...(dashboard && deps.dashboard
      ? {
          routes: dashboardRoutes({
            token: deps.dashboard.token,
            source: dashboard,
            ...(deps.dashboard.gather ? { gather: deps.dashboard.gather } : {}),
          }),
        }
      : {}),
    // The per-body gate: access policy (keys, credits, allow-lists) and observers (metrics, logs)
    // join here as combineGates(...) of each part's gate for the request.
    handle: (body, connection, request) =>
      envelope.handle(
        body,
        connection,
        combineGates(deps.gateFor?.(request), dashboard?.gateFor(request.key)),
      ),
  });
  return {
    listen: () => server.listen(),
    warm: () => execution.warm(),
    close: async () => {
      upstream?.head.stop();
      events.stop();
      services.filters.close();
      await server.close();
      dashboard?.close();
      await execution.close();
    },
    services,
    execution,
    dashboard,
  };
}

/**
 * A worker's part of the upstream request rate: the workers and the main thread share the flag's
 * rate, so together they keep to it (0 stays unlimited).
 */
function workerShare(source: UpstreamWorkerSource, workers: number): UpstreamWorkerSource {
  const rps = source.limits.rps;
  return {
    ...source,
    limits: { ...source.limits, rps: rps === 0 ? 0 : Math.max(1, Math.floor(rps / (workers + 1))) },
  };
}
