import { createServer as createHttpServer, type Server as HttpServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ChainReader } from './chain/reader.ts';
import { readStoredSpec } from './chain/storedSpec.ts';
import { DEFAULT_LIMITS, type Limits } from './config/limits.ts';
import { caught, onCaught } from './core/caught.ts';
import { describeForLog, UserError } from './core/errors.ts';
import type { LogLine } from './core/log.ts';
import { RawJson } from './core/rawJson.ts';
import { type ExecutionClient, PoolExecutionClient } from './exec/client.ts';
import { InlineCallsClient } from './exec/inline.ts';
import { PrefetchingClient } from './exec/prefetch.ts';
import { type Logger, lineLogger, RequestLine } from './observe/log.ts';
import { METRICS_CONTENT_TYPE, Metrics } from './observe/metrics.ts';
import { health, readiness } from './observe/ready.ts';
import { type CallGate, RpcEnvelope } from './rpc/envelope.ts';
import { methodTable } from './rpc/methods/index.ts';
import type { Services, SyncProgress } from './rpc/services.ts';
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
import type { DashboardSnapshot, HostTotals } from './transport/dashboard/snapshot.ts';
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
  /** With `--database`: each host's usage over a range, from the database (the whole service). */
  service?: (rangeMs: number) => Promise<HostTotals[]>;
}

/** What the app serves and with whom it shares its parts (the rest of `ethtrace start`, or a test). */
export interface AppDeps {
  store: ChainStore;
  datadir: string;
  dev?: DevService;
  /** Upstream mode: the store is deps.upstream.store, over the upstream node. */
  upstream?: UpstreamSource;
  log?: LogLine;
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
  /** Keys kept in a shared database: why it cannot be reached, or null (`/ready`, degraded). */
  keysProblem?: () => string | null;
  /** Usage recorded in a shared database: why it cannot be written, or null (`/ready`, degraded). */
  usageProblem?: () => string | null;
  /** Following an upstream: its progress while it catches up, for eth_syncing (src/ingest/follower.ts). */
  syncing?: () => SyncProgress | null;
  /** Following an upstream: the follower's heads, for metrics and `/ready`. */
  follow?: () => { head: bigint | null; upstream: bigint | null; error: Error | null };
  /** The gate of one body (src/transport/gate.ts), from who sent it. */
  gateFor?: (request: RequestInfo) => CallGate | null;
  /** The access policy's word on open WebSockets (src/transport/access/control.ts). */
  sockets?: SocketPolicy;
  dashboard?: DashboardConfig;
}

/** The parts made from the store that the server's pieces share. */
interface Parts {
  chain: ChainReader;
  execution: ExecutionClient;
  log: LogLine;
  logger: Logger | null;
  metrics: Metrics;
  head: () => Promise<{ number: bigint; timestamp: bigint } | null>;
}

/** Wires store → services → JSON-RPC envelope → transport. Listening is separate, for tests on port 0. */
export async function buildApp(config: AppConfig, deps: AppDeps): Promise<App> {
  const spec = await readStoredSpec(deps.store);
  if (spec === null) throw new UserError('the datadir holds no chain: import one first (ethtrace import)');
  const chain = new ChainReader(deps.store, spec);
  const logger = deps.logger ?? null;
  const log = deps.log ?? (logger ? lineLogger(logger) : (line: string) => process.stderr.write(`${line}\n`));
  const metrics = deps.metrics ?? new Metrics();
  // Failures caught below (core/caught.ts) are logged here, as warnings.
  const stopCaughtLines = onCaught((site, line) =>
    logger ? logger.warn({ site }, line) : log(line, 'warn'),
  );
  const upstream = deps.upstream;
  const { execution, inline } = executionOf(config.limits, deps, chain, log);
  const events = new ChainEvents(deps.store, log);
  await events.start();
  // What the cache holds of a block a reorg removed is of no use any more (it was never final); kept,
  // it is only space (entries are keyed by hash, and the hash is no longer canonical).
  if (upstream)
    events.onRemoved(
      (block) =>
        void upstream.store.cache
          .dropBlocks([block.hash])
          .catch((e: unknown) =>
            caught(
              'upstream-cache-drop',
              `upstream cache: block ${block.number} removed by a reorg was not dropped from the cache: ${describeForLog(e)}`,
            ),
          ),
    );
  deps.dev?.announceTo(events);
  const head = headOf(deps.store, chain);
  const parts: Parts = { chain, execution, log, logger, metrics, head };
  const services = servicesOf(config, deps, parts, events);
  const table = methodTable(upstream !== undefined);
  metrics.knowMethods(Object.keys(table));
  metrics.readFrom({
    pool: () => execution.stats(),
    replayCache: () => services.replay.stats(),
    ...(inline ? { inlineCalls: () => inline.inlineStats() } : {}),
    head,
    ...(deps.follow ? { follow: deps.follow } : {}),
  });
  // The operator dashboard: its source listens to every call through its own gate (serverOf).
  const dashboard = deps.dashboard
    ? new DashboardSource({
        book: deps.dashboard.book,
        methods: Object.keys(table),
        keys: config.keys,
        pool: () => execution.stats(),
        head,
      })
    : null;
  // The server is made below, before anything can ask for `/ready`.
  const pages = probePages(config, deps, head, () => server.stopping);
  const metricsPage = async (): Promise<Page> => ({
    status: 200,
    contentType: METRICS_CONTENT_TYPE,
    body: await (deps.cluster ? deps.cluster.metricsText() : metrics.text()),
  });
  const metricsServer =
    (config.metricsPort ?? null) === null ? null : pagesServer({ ...pages, '/metrics': metricsPage });
  const apiPages =
    metricsServer === null && config.metrics !== false ? { ...pages, '/metrics': metricsPage } : pages;
  const envelope = envelopeOf(table, services, config.limits, parts);
  const server = serverOf(config, deps, parts, { envelope, pages: apiPages, dashboard });
  return {
    listen: async () => {
      const listening = await server.listen();
      const metricsUrl = metricsServer && (await listenForMetrics(metricsServer, config));
      return { ...listening, metricsUrl };
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
      stopCaughtLines();
    },
    services,
    execution,
    metrics,
    dashboard,
  };
}

/** The head's number and time, for metrics, `/ready` and the dashboard. */
function headOf(store: ChainStore, chain: ChainReader): Parts['head'] {
  return async () => {
    const ref = await store.getHead();
    if (ref === null) return null;
    const header = await chain.header(ref.hash);
    return header === null ? null : { number: ref.number, timestamp: header.timestamp };
  };
}

/** The execution pool, and what stands before it: the read-ahead of upstream mode, or inline calls. */
function executionOf(
  limits: Limits,
  deps: AppDeps,
  chain: ChainReader,
  log: LogLine,
): { execution: ExecutionClient; inline: InlineCallsClient | null } {
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
  const inline = upstream ? null : new InlineCallsClient(pool, chain, limits.calls);
  const execution: ExecutionClient = upstream
    ? new PrefetchingClient(pool, upstream.prefetch)
    : (inline ?? pool);
  return { execution, inline };
}

function servicesOf(config: AppConfig, deps: AppDeps, parts: Parts, events: ChainEvents): Services {
  const { limits } = config;
  const { chain, execution, log, metrics } = parts;
  const upstream = deps.upstream;
  const fees = new FeeService(chain);
  const logs = new LogService(chain, limits.methods);
  return {
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
    syncing: deps.syncing ?? (() => null),
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
}

function envelopeOf(
  table: ReturnType<typeof methodTable>,
  services: Services,
  limits: Limits,
  { execution, logger, log }: Parts,
): RpcEnvelope<Services> {
  return new RpcEnvelope(
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
        : log(`internal error in ${method}: ${describeForLog(e)}`, 'warn'),
  );
}

/** `/health` and `/ready`. */
function probePages(
  config: AppConfig,
  deps: AppDeps,
  head: Parts['head'],
  stopping: () => boolean,
): Record<string, () => Promise<Page>> {
  const upstream = deps.upstream;
  return {
    '/health': async () => json(health()),
    '/ready': async () =>
      json(
        await readiness({
          stopping,
          head,
          maxHeadAgeSeconds: config.readyMaxHeadAgeSeconds ?? null,
          ...(upstream ? { upstreamProblem: () => upstream.head.unreachable() } : {}),
          ...(deps.sharedLimitsProblem ? { sharedLimitsProblem: deps.sharedLimitsProblem } : {}),
          ...(deps.keysProblem ? { keysProblem: deps.keysProblem } : {}),
          ...(deps.usageProblem ? { usageProblem: deps.usageProblem } : {}),
          ...(deps.follow
            ? {
                followProblem: () => deps.follow?.().error?.message ?? null,
              }
            : {}),
        }),
      ),
  };
}

/** Listens on `--metrics-port`; its URL. */
async function listenForMetrics(metricsServer: HttpServer, config: AppConfig): Promise<string> {
  const host = config.metricsHost ?? '127.0.0.1';
  await new Promise<void>((resolve, reject) => {
    metricsServer.once('error', reject);
    metricsServer.listen(config.metricsPort ?? 0, host, () => resolve());
  });
  const address = metricsServer.address() as AddressInfo;
  const shown = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  return `http://${shown}:${address.port}`;
}

/** The listener of `--metrics-port`: these pages only. */
function pagesServer(pages: Record<string, () => Promise<Page>>): HttpServer {
  return createHttpServer((req, res) => {
    const page = pages[(req.url ?? '/').split('?')[0] ?? '/'];
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
}

function serverOf(
  config: AppConfig,
  deps: AppDeps,
  { logger, metrics }: Parts,
  parts: {
    envelope: RpcEnvelope<Services>;
    pages: Record<string, () => Promise<Page>>;
    dashboard: DashboardSource | null;
  },
): RpcServer {
  const { limits } = config;
  const { envelope, dashboard } = parts;
  const upstream = deps.upstream;
  const metricsOn = config.metrics !== false;
  const keyNameOf = (key: string | null) => (key === null ? null : (config.keys?.lookup(key)?.name ?? null));
  return new RpcServer({
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
    pages: parts.pages,
    ...(dashboard && deps.dashboard
      ? {
          routes: dashboardRoutes({
            token: deps.dashboard.token,
            source: dashboard,
            ...(deps.dashboard.gather ? { gather: deps.dashboard.gather } : {}),
            ...(deps.dashboard.service ? { service: deps.dashboard.service } : {}),
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
}

const NOT_FOUND: Page = { status: 404, contentType: 'text/plain; charset=utf-8', body: 'not found\n' };

function json(probe: { status: number; body: unknown }): Page {
  return { status: probe.status, contentType: 'application/json', body: `${JSON.stringify(probe.body)}\n` };
}
