import { createServer as createHttpServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ChainReader } from './chain/reader.ts';
import { readStoredSpec } from './chain/storedSpec.ts';
import { DEFAULT_LIMITS, type Limits } from './config/limits.ts';
import { describeForLog, UserError } from './core/errors.ts';
import { RawJson } from './core/rawJson.ts';
import { type ExecutionClient, PoolExecutionClient } from './exec/client.ts';
import { defaultEngine } from './exec/evmEngine.ts';
import { InlineCallsClient } from './exec/inline.ts';
import { PrefetchingClient } from './exec/prefetch.ts';
import { type Logger, lineLogger, RequestLine } from './observe/log.ts';
import { METRICS_CONTENT_TYPE, Metrics } from './observe/metrics.ts';
import { health, readiness } from './observe/ready.ts';
import { type CallGate, RpcEnvelope } from './rpc/envelope.ts';
import { methodTable } from './rpc/methods/index.ts';
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
import {
  type Listening,
  type Page,
  type RequestInfo,
  RpcServer,
  type SocketPolicy,
} from './transport/server.ts';
import { withUpstreamBudget } from './upstream/budget.ts';
import type { UpstreamSource } from './upstream/open.ts';
import { answerUpstreamAsk } from './upstream/remote.ts';
import { CLIENT_VERSION } from './version.ts';

export interface AppConfig {
  host: string;
  port: number;
  /** null serves every key (and `/`): `--no-auth`. */
  keys: KeyRing | null;
  /** Every limit, each given to the part that enforces it (src/config/limits.ts). */
  limits: Limits;
  /**
   * Where `/metrics` is served: null on the API port (with `/health` and `/ready`); a port puts it
   * there instead, on `metricsHost`, so a public API port does not show the service's traffic.
   */
  metricsPort?: number | null;
  metricsHost?: string;
  /**
   * false (`--no-metrics`): no metrics are kept and `/metrics` is not served; for operators who
   * scrape nothing, and for measuring what the metrics cost (bench/mixed.ts).
   */
  metrics?: boolean;
  /** `/ready` fails when the head is older than this (null: no bound, see observe/ready.ts). */
  readyMaxHeadAgeSeconds?: number | null;
}

export const DEFAULT_CONFIG: Omit<AppConfig, 'keys'> = {
  host: '127.0.0.1',
  port: 8545,
  limits: DEFAULT_LIMITS,
};

/** Seconds a followed or upstream head may lag the clock before `/ready` fails (ten missed mainnet slots). */
export const DEFAULT_READY_MAX_HEAD_AGE_SECONDS = 120;

export interface AppListening extends Listening {
  /** The separate metrics listener's URL (`--metrics-port`), else null. */
  metricsUrl: string | null;
}

export interface App {
  listen(): Promise<AppListening>;
  /** Starts the execution workers now rather than on the first trace (and surfaces their errors). */
  warm(): Promise<void>;
  /**
   * Begins a stop at once: `/ready` answers 503 from now on, answers say `connection: close`, and
   * the listener is closed once the connections queued on it are taken, within `deadlineMs`
   * (src/transport/server.ts).
   */
  stopAccepting(options: { deadlineMs: number }): void;
  /**
   * Stops: the bodies being answered get `deadlineMs` to finish (0: cut at once), WebSockets are
   * closed with 1001, then the execution pool.
   */
  close(options?: { deadlineMs?: number }): Promise<void>;
  services: Services;
  execution: ExecutionClient;
  metrics: Metrics;
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
    /** Structured logs: the app's lines and one line per request (observe/log.ts). Without it, none of the latter. */
    logger?: Logger;
    /**
     * One of the API processes of `--processes` (src/processes.ts): `/metrics` shows the figures of
     * all of them, gathered through the primary.
     */
    cluster?: { metricsText(): Promise<string> };
    /** The metrics registry (observe/metrics.ts); made here when not given. */
    metrics?: Metrics;
    /** Limits shared with other processes: why they cannot be reached, or null (`/ready`). */
    sharedLimitsProblem?: () => string | null;
    /** Following an upstream: the follower's heads, for metrics and `/ready`. */
    follow?: () => { head: bigint | null; upstream: bigint | null; error: Error | null };
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
  const logger = deps.logger ?? null;
  const log = deps.log ?? (logger ? lineLogger(logger) : (line: string) => process.stderr.write(`${line}\n`));
  const metrics = deps.metrics ?? new Metrics();
  const upstream = deps.upstream;
  const pool = new PoolExecutionClient({
    datadir: deps.datadir,
    calls: limits.calls,
    pool: limits.pool,
    maxResultBytes: limits.requests.maxResponseBytes,
    log,
    ...(upstream
      ? {
          upstream: {
            source: upstream.worker,
            answer: (ask: unknown) => answerUpstreamAsk(upstream.store.client, ask),
          },
        }
      : {}),
  });
  // Upstream mode: each job's state is read ahead in a few round trips before a worker runs it.
  // Otherwise eth_call and eth_estimateGas run on this thread first, within a small budget.
  const inline =
    !upstream && defaultEngine() === 'evm' ? new InlineCallsClient(pool, chain, limits.calls) : null;
  const execution: ExecutionClient = upstream
    ? new PrefetchingClient(pool, upstream.prefetch)
    : (inline ?? pool);
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
    filters: new FilterService(events, chain, logs, limits.filters, (limit) => {
      if (config.metrics !== false) metrics.limitRefused(limit);
    }),
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
  const table = methodTable(upstream !== undefined);
  const envelope = new RpcEnvelope(
    table,
    { services },
    {
      maxBatchSize: limits.requests.maxBatchSize,
      maxResponseBytes: limits.requests.maxResponseBytes,
      batchScope: (work) => execution.batch(work),
    },
    (e, method) =>
      logger
        ? logger.error({ method, err: describeForLog(e) }, 'internal error')
        : log(`internal error in ${method}: ${describeForLog(e)}`),
  );
  metrics.knowMethods(Object.keys(table));
  const head = async () => {
    const ref = await deps.store.getHead();
    if (ref === null) return null;
    const header = await chain.header(ref.hash);
    return header === null ? null : { number: ref.number, timestamp: header.timestamp };
  };
  metrics.readFrom({
    pool: () => execution.stats(),
    replayCache: () => services.replay.stats(),
    ...(inline ? { inlineCalls: () => inline.inlineStats() } : {}),
    head,
    ...(deps.follow ? { follow: deps.follow } : {}),
  });
  const pages: Record<string, () => Promise<Page>> = {
    '/health': async () => json(health()),
    '/ready': async () =>
      json(
        await readiness({
          // The server is made below, before anything can ask for this page.
          stopping: () => server.stopping,
          head,
          maxHeadAgeSeconds: config.readyMaxHeadAgeSeconds ?? null,
          ...(upstream ? { upstreamProblem: () => upstream.head.unreachable() } : {}),
          ...(deps.sharedLimitsProblem ? { sharedLimitsProblem: deps.sharedLimitsProblem } : {}),
          ...(deps.follow
            ? {
                followProblem: () => deps.follow?.().error?.message ?? null,
              }
            : {}),
        }),
      ),
  };
  const metricsPage = async (): Promise<Page> => ({
    status: 200,
    contentType: METRICS_CONTENT_TYPE,
    body: await (deps.cluster ? deps.cluster.metricsText() : metrics.text()),
  });
  const metricsPort = config.metricsPort ?? null;
  const metricsOn = config.metrics !== false;
  const apiPages = metricsPort === null && metricsOn ? { ...pages, '/metrics': metricsPage } : pages;
  const metricsServer =
    metricsPort === null
      ? null
      : createHttpServer((req, res) => {
          const page = { ...pages, '/metrics': metricsPage }[(req.url ?? '/').split('?')[0] ?? '/'];
          const answer = page ? page() : Promise.resolve(NOT_FOUND);
          answer
            .then(({ status, contentType, body }) => {
              res.writeHead(status, { 'content-type': contentType });
              res.end(body);
            })
            .catch((e: unknown) => {
              res.writeHead(500, { 'content-type': 'text/plain' });
              res.end(`${(e as Error).message}\n`);
            });
        });
  const keyNameOf = (key: string | null) => (key === null ? null : (config.keys?.lookup(key)?.name ?? null));
  // The operator dashboard: its source listens to every call through its own gate (below).
  const dashboard = deps.dashboard
    ? new DashboardSource({
        book: deps.dashboard.book,
        methods: Object.keys(table),
        keys: config.keys,
        pool: () => execution.stats(),
        head,
      })
    : null;
  const server = new RpcServer({
    host: config.host,
    port: config.port,
    keys: config.keys,
    limits: {
      maxBodyBytes: limits.requests.maxBodyBytes,
      headerTimeoutMs: limits.requests.headerTimeoutMs,
      bodyTimeoutMs: limits.requests.bodyTimeoutMs,
      maxHttpConnectionsPerIp: limits.requests.maxHttpConnectionsPerIp,
      webSocket: limits.webSocket,
    },
    ...(deps.sockets ? { sockets: deps.sockets } : {}),
    pages: apiPages,
    ...(dashboard && deps.dashboard
      ? {
          routes: dashboardRoutes({
            token: deps.dashboard.token,
            source: dashboard,
            ...(deps.dashboard.gather ? { gather: deps.dashboard.gather } : {}),
          }),
        }
      : {}),
    ...(metricsOn ? { observer: metrics } : {}),
    // The per-body gate: the observers (metrics, the request's log line), then the access policy
    // (keys, credits, allow-lists), which may refuse the body; src/transport/gate.ts.
    handle: async (body, connection, request, requestId) => {
      const line =
        logger && RequestLine.enabled(logger)
          ? new RequestLine(logger, {
              id: requestId,
              transport: request.transport,
              address: request.address,
              keyName: keyNameOf(request.key),
            })
          : null;
      const handle = () =>
        envelope.handle(
          body,
          connection,
          combineGates(
            metricsOn ? metrics.gate() : null,
            line?.gate(),
            dashboard?.gateFor(request.key),
            deps.gateFor?.(request),
          ),
          { key: request.key, connection: request.connection },
        );
      // Upstream mode: what the body's calls wait for the upstream, together, is bounded (a batch
      // shares one budget, as its EVM work shares one deadline).
      const answer = upstream ? await withUpstreamBudget(upstream.budgetMs, handle) : await handle();
      line?.done(answer.httpStatus);
      return answer;
    },
  });
  return {
    listen: async () => {
      const listening = await server.listen();
      if (metricsServer === null) return { ...listening, metricsUrl: null };
      const host = config.metricsHost ?? '127.0.0.1';
      await new Promise<void>((resolve, reject) => {
        metricsServer.once('error', reject);
        metricsServer.listen(metricsPort ?? 0, host, () => resolve());
      });
      const address = metricsServer.address() as AddressInfo;
      const shown = address.family === 'IPv6' ? `[${address.address}]` : address.address;
      return { ...listening, metricsUrl: `http://${shown}:${address.port}` };
    },
    warm: () => execution.warm(),
    stopAccepting: (options) => server.stopAccepting(options),
    close: async (options = {}) => {
      upstream?.head.stop();
      events.stop();
      services.filters.close();
      await server.close(options);
      if (metricsServer?.listening) {
        metricsServer.closeAllConnections();
        await new Promise<void>((resolve) => metricsServer.close(() => resolve()));
      }
      dashboard?.close();
      await execution.close();
    },
    services,
    execution,
    metrics,
    dashboard,
  };
}

const NOT_FOUND: Page = { status: 404, contentType: 'text/plain; charset=utf-8', body: 'not found\n' };

function json(probe: { status: number; body: unknown }): Page {
  return { status: probe.status, contentType: 'application/json', body: `${JSON.stringify(probe.body)}\n` };
}
