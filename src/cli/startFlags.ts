import { DEFAULT_READY_MAX_HEAD_AGE_SECONDS } from '../app.ts';
import { readChainSpec } from '../chain/genesis.ts';
import { DEFAULT_LIMITS, type Limits, withLimits } from '../config/limits.ts';
import { UserError } from '../core/errors.ts';
import { LOG_LEVELS, type LogLevel } from '../observe/log.ts';
import type { StartPlan } from '../service.ts';
import { DEFAULT_UPSTREAM_LIMITS } from '../upstream/client.ts';
import type { UpstreamConfig } from '../upstream/open.ts';
import { type DatabaseFlags, databasePlan } from './databaseFlags.ts';
import { positive, wholeNumber } from './flags.ts';

/**
 * `ethtrace start`'s flags, checked and turned into a StartPlan (src/service.ts) before anything is
 * opened or made. The checks run in a fixed order, so of two wrong flags the same one is named.
 */

/** Blocks behind the upstream's head after which a block is final, when it has no finalized tag (as anvil's tag lags). */
const DEFAULT_FINALITY_DEPTH = 64;
/** How often the upstream's head is asked for: a new block is seen within this, plus a round trip. */
const DEFAULT_UPSTREAM_POLL_MS = 1_000;
/** How long a stop lets the requests being answered finish (`--shutdown-timeout`, seconds). */
export const DEFAULT_SHUTDOWN_SECONDS = 10;
/** Shorter tokens could be guessed by anyone who can reach the port. */
const MIN_OPERATOR_TOKEN_CHARS = 16;

const MIB = 1024 * 1024;

export interface StartOptions {
  datadir?: string;
  host: string;
  port: string;
  apiKey: string[];
  auth: boolean;
  workers?: string;
  execTimeout?: string;
  gasCap?: string;
  maxCalls?: string;
  traceCacheMb?: string;
  traceFilterBlocks?: string;
  maxResponseMb?: string;
  wsMaxPerIp?: string;
  wsMaxSubscriptions?: string;
  wsMaxBufferMb?: string;
  chainId?: string;
  hardfork?: string;
  mnemonic?: string;
  blockTime?: string;
  upstream: string[];
  genesis?: string;
  finalityDepth?: string;
  upstreamTimeoutMs?: string;
  upstreamBudgetMs?: string;
  upstreamRetries?: string;
  upstreamMaxConcurrent?: string;
  upstreamRps?: string;
  upstreamPollMs?: string;
  follow?: boolean;
  verifyStateRoot: boolean;
  processes?: string;
  redis?: string;
  maxBodyMb?: string;
  maxBatch?: string;
  wsMaxPerKey?: string;
  httpMaxPerIp?: string;
  filterMaxPerKey?: string;
  filterMaxPerConnection?: string;
  filterMax?: string;
  filterMaxBuffer?: string;
  filterTimeoutMs?: string;
  headerTimeoutMs?: string;
  bodyTimeoutMs?: string;
  logLevel: string;
  metricsPort?: string;
  metricsHost: string;
  metrics: boolean;
  readyMaxHeadAge?: string;
  shutdownTimeout?: string;
  operatorToken?: string;
}

/** The plan of `start`'s flags and the environment ($ETHTRACE_API_KEYS, $ETHTRACE_OPERATOR_TOKEN). */
export function startPlan(o: StartOptions & DatabaseFlags, env: NodeJS.ProcessEnv): StartPlan {
  const limits = limitsOf(o);
  const port = /^[0-9]+$/.test(o.port) ? Number(o.port) : Number.NaN;
  if (!Number.isInteger(port) || port < 0 || port > 65535)
    throw new UserError(`--port ${o.port} is not a port number`);
  let blockTime: number | undefined;
  if (o.blockTime !== undefined) {
    blockTime = Number(o.blockTime);
    if (!(Number.isFinite(blockTime) && blockTime > 0))
      throw new UserError(`--block-time ${o.blockTime} is not a positive number of seconds`);
  }
  const upstream = upstreamOf(o);
  checkCombinations(o, upstream);
  const processes = positive('processes', o.processes, 1);
  if (o.redis !== undefined && !/^rediss?:\/\/[^\s]+$/.test(o.redis))
    throw new UserError(`--redis ${o.redis} is not a redis:// or rediss:// URL`);
  const follow =
    o.follow && upstream?.genesis
      ? { ...upstreamParts(upstream), genesis: upstream.genesis, verifyStateRoot: o.verifyStateRoot }
      : null;
  if (!(LOG_LEVELS as readonly string[]).includes(o.logLevel))
    throw new UserError(`--log-level ${o.logLevel}: one of ${LOG_LEVELS.join(', ')}`);
  const metricsPort = o.metricsPort === undefined ? null : Number(o.metricsPort);
  if (metricsPort !== null && !(/^[0-9]+$/.test(o.metricsPort ?? '') && metricsPort <= 65535))
    throw new UserError(`--metrics-port ${o.metricsPort} is not a port number`);
  // A dev chain that mines only on demand may rightly have an old head: no bound unless asked for.
  const headAgeBound =
    o.upstream.length > 0 || blockTime !== undefined || o.readyMaxHeadAge !== undefined
      ? positive('ready-max-head-age', o.readyMaxHeadAge, DEFAULT_READY_MAX_HEAD_AGE_SECONDS)
      : null;
  return {
    datadir: o.datadir,
    app: {
      host: o.host,
      port,
      limits,
      metricsPort,
      metricsHost: o.metricsHost,
      metrics: o.metrics,
      readyMaxHeadAgeSeconds: headAgeBound,
    },
    logLevel: o.logLevel as LogLevel,
    shutdownMs: positive('shutdown-timeout', o.shutdownTimeout, DEFAULT_SHUTDOWN_SECONDS) * 1000,
    blockTime,
    upstream: follow ? null : upstream,
    follow,
    processes,
    redis: o.redis ?? null,
    database: databasePlan(o, env),
    operatorToken: operatorTokenOf(o.operatorToken ?? env.ETHTRACE_OPERATOR_TOKEN),
    auth: o.auth,
    apiKeys: [...o.apiKey, ...(env.ETHTRACE_API_KEYS ?? '').split(',')]
      .map((k) => k.trim())
      .filter((k) => k !== ''),
    dev: { chainId: o.chainId, hardfork: o.hardfork, mnemonic: o.mnemonic },
  };
}

function upstreamParts(upstream: UpstreamConfig) {
  return { urls: upstream.urls, limits: upstream.limits, pollMs: upstream.pollMs };
}

/** Every limit of the flags, each over its default (src/config/limits.ts). */
function limitsOf(o: StartOptions): Limits {
  const d = DEFAULT_LIMITS;
  const cacheMb = o.traceCacheMb;
  if (cacheMb !== undefined && !/^[0-9]+$/.test(cacheMb))
    throw new UserError(`--trace-cache-mb ${cacheMb} is not a size in MB`);
  return withLimits(d, {
    pool: {
      workers: positive('workers', o.workers, d.pool.workers),
      deadlineMs: positive('exec-timeout', o.execTimeout, d.pool.deadlineMs),
    },
    calls: {
      gasCap: BigInt(positive('gas-cap', o.gasCap, Number(d.calls.gasCap))),
      maxCalls: positive('max-calls', o.maxCalls, d.calls.maxCalls),
    },
    replay: {
      ...(cacheMb === undefined ? {} : { cacheBytes: Number(cacheMb) * MIB }),
      maxFilterBlocks: positive('trace-filter-blocks', o.traceFilterBlocks, d.replay.maxFilterBlocks),
    },
    requests: {
      maxResponseBytes: positive('max-response-mb', o.maxResponseMb, d.requests.maxResponseBytes / MIB) * MIB,
      maxBodyBytes: positive('max-body-mb', o.maxBodyMb, d.requests.maxBodyBytes / MIB) * MIB,
      maxBatchSize: positive('max-batch', o.maxBatch, d.requests.maxBatchSize),
      headerTimeoutMs: positive('header-timeout-ms', o.headerTimeoutMs, d.requests.headerTimeoutMs),
      bodyTimeoutMs: positive('body-timeout-ms', o.bodyTimeoutMs, d.requests.bodyTimeoutMs),
      maxHttpConnectionsPerIp: positive(
        'http-max-per-ip',
        o.httpMaxPerIp,
        d.requests.maxHttpConnectionsPerIp,
      ),
    },
    webSocket: {
      maxConnectionsPerIp: positive('ws-max-per-ip', o.wsMaxPerIp, d.webSocket.maxConnectionsPerIp),
      maxConnectionsPerKey: positive('ws-max-per-key', o.wsMaxPerKey, d.webSocket.maxConnectionsPerKey),
      maxSubscriptionsPerConnection: positive(
        'ws-max-subscriptions',
        o.wsMaxSubscriptions,
        d.webSocket.maxSubscriptionsPerConnection,
      ),
      maxBufferedBytes:
        positive('ws-max-buffer-mb', o.wsMaxBufferMb, d.webSocket.maxBufferedBytes / MIB) * MIB,
    },
    filters: {
      maxPerKey: positive('filter-max-per-key', o.filterMaxPerKey, d.filters.maxPerKey),
      maxPerConnection: positive(
        'filter-max-per-connection',
        o.filterMaxPerConnection,
        d.filters.maxPerConnection,
      ),
      maxTotal: positive('filter-max', o.filterMax, d.filters.maxTotal),
      maxBuffered: positive('filter-max-buffer', o.filterMaxBuffer, d.filters.maxBuffered),
      idleTimeoutMs: positive('filter-timeout-ms', o.filterTimeoutMs, d.filters.idleTimeoutMs),
    },
  });
}

/** `--upstream` and its flags; null without `--upstream`. */
function upstreamOf(o: StartOptions): UpstreamConfig | null {
  for (const url of o.upstream) {
    if (!/^(https?|wss?):\/\/[^\s]+$/.test(url))
      throw new UserError(`--upstream ${url} is not an http(s):// or ws(s):// URL`);
  }
  if (o.upstream.length === 0) return null;
  const u = DEFAULT_UPSTREAM_LIMITS;
  return {
    urls: o.upstream,
    limits: {
      ...u,
      timeoutMs: positive('upstream-timeout-ms', o.upstreamTimeoutMs, u.timeoutMs),
      budgetMs: positive('upstream-budget-ms', o.upstreamBudgetMs, u.budgetMs),
      retries: wholeNumber('upstream-retries', o.upstreamRetries, u.retries),
      maxConcurrent: positive('upstream-max-concurrent', o.upstreamMaxConcurrent, u.maxConcurrent),
      rps: wholeNumber('upstream-rps', o.upstreamRps, u.rps),
    },
    finalityDepth: wholeNumber('finality-depth', o.finalityDepth, DEFAULT_FINALITY_DEPTH),
    pollMs: positive('upstream-poll-ms', o.upstreamPollMs, DEFAULT_UPSTREAM_POLL_MS),
    genesis: o.genesis === undefined ? null : readChainSpec(o.genesis),
  };
}

/** Flags that apply only beside others. */
function checkCombinations(o: StartOptions, upstream: UpstreamConfig | null): void {
  if (!o.metrics && o.metricsPort !== undefined)
    throw new UserError('--metrics-port serves the metrics, which --no-metrics turns off: give one of them');
  if (o.follow && upstream === null)
    throw new UserError('--follow needs --upstream URL, the node whose chain to follow');
  if (upstream === null && o.genesis !== undefined)
    throw new UserError(
      '--genesis applies to --upstream (an imported chain takes it from `ethtrace import`)',
    );
  if (o.follow && !upstream?.genesis)
    throw new UserError("--follow needs --genesis FILE, the chain's genesis file (geth format)");
  if (!o.verifyStateRoot && !o.follow)
    throw new UserError('--no-verify-state-root applies to --follow (and to `ethtrace import`)');
  if (o.follow && o.finalityDepth !== undefined)
    throw new UserError('--finality-depth applies to --upstream without --follow');
}

/** The operator token of `--operator-token` or the environment, checked; undefined: no dashboard. */
function operatorTokenOf(token: string | undefined): string | undefined {
  if (token === undefined || token === '') return undefined;
  if (token.length < MIN_OPERATOR_TOKEN_CHARS || /\s/.test(token))
    throw new UserError(
      `--operator-token must be at least ${MIN_OPERATOR_TOKEN_CHARS} characters without spaces (e.g. from openssl rand -hex 16)`,
    );
  return token;
}
