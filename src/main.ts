import cluster from 'node:cluster';
import { createServer } from 'node:net';
import { Command, CommanderError } from 'commander';
import type { Redis } from 'ioredis';
import { buildApp, DEFAULT_CONFIG, DEFAULT_READY_MAX_HEAD_AGE_SECONDS } from './app.ts';
import {
  DEV_CHAIN_ID,
  DEV_HARDFORKS,
  DEV_MNEMONIC,
  type DevAccount,
  type DevChainOptions,
  type DevHardfork,
  devAccounts,
  devGenesis,
} from './chain/devChain.ts';
import { parseChainSpec, readChainSpec } from './chain/genesis.ts';
import { checkSchema, readStoredSpec } from './chain/storedSpec.ts';
import { DEFAULT_LIMITS, withLimits } from './config/limits.ts';
import { UserError } from './core/errors.ts';
import { claimDevChain, claimWriter } from './datadirWriter.ts';
import { ChainWriter, GROUP_BLOCKS } from './ingest/chainWriter.ts';
import { openFollow } from './ingest/follower.ts';
import { importChain } from './ingest/importer.ts';
import { importProgress } from './ingest/progress.ts';
import { addKeyCommands } from './keysCommands.ts';
import { createLogger, LOG_LEVELS, type LogLevel, lineLogger } from './observe/log.ts';
import { aggregateMetrics, Metrics } from './observe/metrics.ts';
import { toHex } from './primitives/hex.ts';
import {
  announceListening,
  apiProcessStop,
  askPrimary,
  gatherFromAll,
  type Primary,
  type ProcessRole,
  provide,
  StartFailure,
  startPrimary,
} from './processes.ts';
import { methodTable } from './rpc/methods/index.ts';
import { DevService } from './services/dev/index.ts';
import { addStateTestCommand, StateTestsFailed } from './stateTestCommand.ts';
import { prepareDatadir, resolveDatadir } from './store/datadir.ts';
import { checkStore } from './store/lmdb/check.ts';
import { openLmdbStore, storeExists } from './store/lmdb/index.ts';
import type { ChainStore } from './store/types.ts';
import { type AccessControl, openAccessControl } from './transport/access/control.ts';
import { IpcCounters } from './transport/access/ipcCounters.ts';
import { LeasingLedger } from './transport/access/ledger.ts';
import { connectRedis, RedisCounters } from './transport/access/redisCounters.ts';
import { KeyFile, KeyRing } from './transport/apiKeys.ts';
import type { DashboardSnapshot } from './transport/dashboard/snapshot.ts';
import { DEFAULT_UPSTREAM_LIMITS, redactUrl } from './upstream/client.ts';
import { openUpstreamSource, UPSTREAM_CHAIN_META } from './upstream/open.ts';
import { answerUpstreamAsk } from './upstream/remote.ts';
import { VERSION } from './version.ts';

/** Blocks behind the upstream's head after which a block is final, when it has no finalized tag (as anvil's tag lags). */
const DEFAULT_FINALITY_DEPTH = 64;
/** How often the upstream's head is asked for: a new block is seen within this, plus a round trip. */
const DEFAULT_UPSTREAM_POLL_MS = 1_000;

/**
 * Exit status of every failure the user can act on (a wrong flag, a busy port, a bad datadir, a
 * chain that does not verify): one line on stderr says what and what to do. 1 is left to crashes
 * (a bug, printed with its stack), so scripts can tell the two apart.
 */
const EXIT_USER_ERROR = 2;

const DATADIR_HELP = 'data directory (default: $ETHTRACE_DATADIR, else ~/.local/share/ethtrace)';

interface ImportOptions {
  datadir?: string;
  genesis: string;
  verifyStateRoot: boolean;
  blocksPerCommit: string;
}

async function importCommand(files: string[], opts: ImportOptions): Promise<void> {
  const blocksPerCommit = Number(opts.blocksPerCommit);
  if (!Number.isSafeInteger(blocksPerCommit) || blocksPerCommit <= 0)
    throw new UserError(`--blocks-per-commit ${opts.blocksPerCommit} is not a positive integer`);
  const spec = readChainSpec(opts.genesis);
  const datadir = resolveDatadir(opts.datadir);
  prepareDatadir(datadir);
  // The import writes: refused while another process writes this datadir (src/datadirWriter.ts),
  // not while servers serve its chain read-only, which see the new blocks.
  const writer = claimWriter(datadir, 'import', 'imported chain');
  const store = await openLmdbStore(datadir);
  try {
    await checkStore(store, datadir);
    await checkSchema(store, datadir);
    const progress = importProgress(process.stderr);
    const summary = await importChain({
      store,
      spec,
      files,
      verifyStateRoot: opts.verifyStateRoot,
      progress,
      blocksPerCommit,
    });
    progress.finish(summary);
  } finally {
    await store.close();
    writer.release();
  }
}

interface StartOptions {
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

/** How long a stop lets the requests being answered finish (`--shutdown-timeout`, seconds). */
const DEFAULT_SHUTDOWN_SECONDS = 10;

/** The app configuration of `start`'s flags, checked before anything is opened or created. */
function startConfig(o: StartOptions) {
  const count = (flag: string, value: string | undefined, fallback: number) => {
    if (value === undefined) return fallback;
    const n = Number(value);
    if (!Number.isSafeInteger(n) || n <= 0)
      throw new UserError(`--${flag} ${value} is not a positive integer`);
    return n;
  };
  const d = DEFAULT_LIMITS;
  const mib = 1024 * 1024;
  const cacheMb = o.traceCacheMb;
  if (cacheMb !== undefined && !/^[0-9]+$/.test(cacheMb))
    throw new UserError(`--trace-cache-mb ${cacheMb} is not a size in MB`);
  const limits = withLimits(d, {
    pool: {
      workers: count('workers', o.workers, d.pool.workers),
      deadlineMs: count('exec-timeout', o.execTimeout, d.pool.deadlineMs),
    },
    calls: {
      gasCap: BigInt(count('gas-cap', o.gasCap, Number(d.calls.gasCap))),
      maxCalls: count('max-calls', o.maxCalls, d.calls.maxCalls),
    },
    replay: {
      ...(cacheMb === undefined ? {} : { cacheBytes: Number(cacheMb) * mib }),
      maxFilterBlocks: count('trace-filter-blocks', o.traceFilterBlocks, d.replay.maxFilterBlocks),
    },
    requests: {
      maxResponseBytes: count('max-response-mb', o.maxResponseMb, d.requests.maxResponseBytes / mib) * mib,
      maxBodyBytes: count('max-body-mb', o.maxBodyMb, d.requests.maxBodyBytes / mib) * mib,
      maxBatchSize: count('max-batch', o.maxBatch, d.requests.maxBatchSize),
      headerTimeoutMs: count('header-timeout-ms', o.headerTimeoutMs, d.requests.headerTimeoutMs),
      bodyTimeoutMs: count('body-timeout-ms', o.bodyTimeoutMs, d.requests.bodyTimeoutMs),
      maxHttpConnectionsPerIp: count('http-max-per-ip', o.httpMaxPerIp, d.requests.maxHttpConnectionsPerIp),
    },
    webSocket: {
      maxConnectionsPerIp: count('ws-max-per-ip', o.wsMaxPerIp, d.webSocket.maxConnectionsPerIp),
      maxConnectionsPerKey: count('ws-max-per-key', o.wsMaxPerKey, d.webSocket.maxConnectionsPerKey),
      maxSubscriptionsPerConnection: count(
        'ws-max-subscriptions',
        o.wsMaxSubscriptions,
        d.webSocket.maxSubscriptionsPerConnection,
      ),
      maxBufferedBytes: count('ws-max-buffer-mb', o.wsMaxBufferMb, d.webSocket.maxBufferedBytes / mib) * mib,
    },
    filters: {
      maxPerKey: count('filter-max-per-key', o.filterMaxPerKey, d.filters.maxPerKey),
      maxPerConnection: count(
        'filter-max-per-connection',
        o.filterMaxPerConnection,
        d.filters.maxPerConnection,
      ),
      maxTotal: count('filter-max', o.filterMax, d.filters.maxTotal),
      maxBuffered: count('filter-max-buffer', o.filterMaxBuffer, d.filters.maxBuffered),
      idleTimeoutMs: count('filter-timeout-ms', o.filterTimeoutMs, d.filters.idleTimeoutMs),
    },
  });
  const port = /^[0-9]+$/.test(o.port) ? Number(o.port) : Number.NaN;
  if (!Number.isInteger(port) || port < 0 || port > 65535)
    throw new UserError(`--port ${o.port} is not a port number`);
  let blockTime: number | undefined;
  if (o.blockTime !== undefined) {
    blockTime = Number(o.blockTime);
    if (!(Number.isFinite(blockTime) && blockTime > 0))
      throw new UserError(`--block-time ${o.blockTime} is not a positive number of seconds`);
  }
  const nonNegative = (flag: string, value: string | undefined, fallback: number) => {
    if (value === undefined) return fallback;
    if (!/^[0-9]+$/.test(value)) throw new UserError(`--${flag} ${value} is not a whole number`);
    return Number(value);
  };
  for (const url of o.upstream) {
    if (!/^(https?|wss?):\/\/[^\s]+$/.test(url))
      throw new UserError(`--upstream ${url} is not an http(s):// or ws(s):// URL`);
  }
  const u = DEFAULT_UPSTREAM_LIMITS;
  const upstream =
    o.upstream.length === 0
      ? null
      : {
          urls: o.upstream,
          limits: {
            ...u,
            timeoutMs: count('upstream-timeout-ms', o.upstreamTimeoutMs, u.timeoutMs),
            budgetMs: count('upstream-budget-ms', o.upstreamBudgetMs, u.budgetMs),
            retries: nonNegative('upstream-retries', o.upstreamRetries, u.retries),
            maxConcurrent: count('upstream-max-concurrent', o.upstreamMaxConcurrent, u.maxConcurrent),
            rps: nonNegative('upstream-rps', o.upstreamRps, u.rps),
          },
          finalityDepth: nonNegative('finality-depth', o.finalityDepth, DEFAULT_FINALITY_DEPTH),
          pollMs: count('upstream-poll-ms', o.upstreamPollMs, DEFAULT_UPSTREAM_POLL_MS),
          genesis: o.genesis === undefined ? null : readChainSpec(o.genesis),
        };
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
  const processes = count('processes', o.processes, 1);
  if (o.redis !== undefined && !/^rediss?:\/\/[^\s]+$/.test(o.redis))
    throw new UserError(`--redis ${o.redis} is not a redis:// or rediss:// URL`);
  const follow =
    o.follow && upstream?.genesis
      ? {
          urls: upstream.urls,
          limits: upstream.limits,
          pollMs: upstream.pollMs,
          genesis: upstream.genesis,
          verifyStateRoot: o.verifyStateRoot,
        }
      : null;
  if (!(LOG_LEVELS as readonly string[]).includes(o.logLevel))
    throw new UserError(`--log-level ${o.logLevel}: one of ${LOG_LEVELS.join(', ')}`);
  const metricsPort = o.metricsPort === undefined ? null : Number(o.metricsPort);
  if (metricsPort !== null && !(/^[0-9]+$/.test(o.metricsPort ?? '') && metricsPort <= 65535))
    throw new UserError(`--metrics-port ${o.metricsPort} is not a port number`);
  // A dev chain that mines only on demand may rightly have an old head: no bound unless asked for.
  const headAgeBound =
    o.upstream.length > 0 || blockTime !== undefined || o.readyMaxHeadAge !== undefined
      ? count('ready-max-head-age', o.readyMaxHeadAge, DEFAULT_READY_MAX_HEAD_AGE_SECONDS)
      : null;
  return {
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
    shutdownMs: count('shutdown-timeout', o.shutdownTimeout, DEFAULT_SHUTDOWN_SECONDS) * 1000,
    blockTime,
    upstream: follow ? null : upstream,
    follow,
    processes,
    redis: o.redis ?? null,
  };
}

async function startCommand(o: StartOptions): Promise<void> {
  const plan = startConfig(o);
  const { app: config, blockTime, upstream, follow, logLevel, shutdownMs } = plan;
  const operatorToken = operatorTokenOf(o.operatorToken ?? process.env.ETHTRACE_OPERATOR_TOKEN);
  if (upstream || follow) {
    refuseDevFlags({ chainId: o.chainId, hardfork: o.hardfork, mnemonic: o.mnemonic }, 'an upstream chain');
    if (blockTime !== undefined)
      throw new UserError('--block-time applies to a dev chain, not to --upstream');
  }
  // One of several API processes (src/processes.ts): the primary checked, made and printed
  // everything; this one serves.
  const role: ProcessRole = cluster.isWorker ? 'api' : plan.processes > 1 ? 'primary' : 'alone';
  const devFlags = { chainId: o.chainId, hardfork: o.hardfork, mnemonic: o.mnemonic };
  const datadir = resolveDatadir(o.datadir);
  // A wrong dev-chain flag fails before anything is made.
  if (!storeExists(datadir)) devOptions(devFlags);
  // Nothing (a datadir, a dev chain, a key) is made for a server that cannot listen. The real bind
  // comes later and can still lose a race for the port; the key is created only after it succeeded.
  if (role !== 'api') await checkPortFree(config.host, config.port);
  // Listened for before anything is made or printed: a supervisor (or a test) that stops the server
  // the moment it reads the "serving" line must find the handler installed, not Node's default,
  // which kills the process mid-write. A stop asked for during start-up takes effect once it is up.
  const logger = createLogger({ level: logLevel });
  // The first signal drains (requests being answered get --shutdown-timeout to finish); a second
  // one exits at once, with the shell's status for death by that signal (128 + its number). An API
  // process of --processes takes its stop from the primary (src/processes.ts).
  let primary: Primary | null = null;
  const stopRequested =
    role === 'api'
      ? apiProcessStop()
      : new Promise<void>((resolve) => {
          const first = (signal: NodeJS.Signals) => {
            process.off('SIGINT', first);
            process.off('SIGTERM', first);
            const now = (again: NodeJS.Signals) => {
              primary?.kill();
              process.exit(again === 'SIGINT' ? 130 : 143);
            };
            process.once('SIGINT', now);
            process.once('SIGTERM', now);
            logger.info({ signal }, 'stopping: answering the requests under way, then closing');
            resolve();
          };
          process.on('SIGINT', first);
          process.on('SIGTERM', first);
        });
  const metrics = new Metrics();
  prepareDatadir(datadir);
  const log = lineLogger(logger);
  // One process at a time writes a datadir; a second is refused with the first's pid and port
  // (src/datadirWriter.ts). The primary of --processes holds it for its API processes; a start that
  // fails gives it back as it exits.
  const writer =
    role === 'api'
      ? null
      : upstream
        ? claimWriter(datadir, 'start', 'upstream cache')
        : follow
          ? claimWriter(datadir, 'start', 'followed chain')
          : role === 'alone'
            ? await claimDevChain(datadir, log)
            : null;
  // One client reads the upstream for the whole host, at the whole request rate: this process's main
  // thread (its workers ask it), or with --processes the primary's (the API processes ask it), so
  // one read per call is in flight for all of them.
  const source =
    upstream && (await openUpstreamSource(datadir, upstream, log, role === 'api' ? { ask: askPrimary } : {}));
  // A followed chain is an imported one, which one process writes: the primary, or the only one.
  const followed = follow && role !== 'api' ? await openFollow(datadir, follow, log) : null;
  const dev = source || follow || role !== 'alone' ? null : await openDevChain(datadir, devFlags, log);
  // An imported chain after all (an import made it first): served read-only, beside its writer.
  if (!source && !follow && !dev) writer?.release();
  // The primary serves nothing: it keeps the store open only to follow the chain into it.
  const imported = !source && !followed && !dev;
  if (imported && role === 'primary') await refuseDevChain(datadir);
  const store: ChainStore =
    source?.store ?? followed?.store ?? dev?.store ?? (await openLmdbStore(datadir, { readOnly: true }));
  let app: Awaited<ReturnType<typeof buildApp>> | undefined;
  let access: AccessControl | null = null;
  let redis: Redis | null = null;
  try {
    if (imported) await checkStore(store, datadir);
    await checkSchema(store, datadir);
    const chainId = (await readStoredSpec(store))?.chainId;
    const head = await store.getHead();
    if (blockTime !== undefined) {
      if (!dev)
        throw new UserError('--block-time applies to a dev chain; this datadir holds an imported one');
      dev.service.startInterval(blockTime);
    }
    const keyFile = new KeyFile(datadir);
    const given = [...o.apiKey, ...(process.env.ETHTRACE_API_KEYS ?? '').split(',')]
      .map((k) => k.trim())
      .filter((k) => k !== '');
    const needsKey =
      role !== 'api' && o.auth && given.length === 0 && keyFile.read().every((k) => k.revokedAt);
    const keys = o.auth ? KeyRing.from(given, keyFile) : null;
    redis = plan.redis === null ? null : await connectRedis(plan.redis);
    let listening: { httpUrl: string; wsUrl: string; metricsUrl: string | null };
    if (role === 'primary') {
      // The API processes open the upstream cache and the store themselves; the upstream client
      // stays open here, to read the upstream for them.
      if (source) {
        source.head.stop();
        await source.store.cache.close();
      } else if (!followed) await store.close();
      // Limits shared by the API processes are kept here, unless they share Redis.
      primary = startPrimary(
        plan.processes,
        redis === null && keys !== null,
        log,
        source ? (ask) => answerUpstreamAsk(source.store.client, ask) : undefined,
      );
      await redis?.quit();
      redis = null;
      listening = await primary.listening;
    } else {
      // Keys' settings (credits, allow-lists) and usage; `--no-auth` has none of it.
      // An outage of the shared limits is told at warn, once as it begins and once as it ends.
      const warn = (line: string) => logger.warn(line);
      const ledger =
        redis && plan.redis !== null
          ? new LeasingLedger(
              new RedisCounters(redis, undefined, `redis ${redactUrl(plan.redis)}`),
              Date.now,
              warn,
            )
          : role === 'api'
            ? new LeasingLedger(new IpcCounters(process), Date.now, warn)
            : undefined;
      if (ledger) metrics.readFrom({ sharedLimits: () => ledger.health() });
      const policy =
        keys &&
        openAccessControl(keys, datadir, log, metrics, ledger, Object.keys(methodTable(Boolean(source))));
      access = policy;
      app = await buildApp(
        { ...config, keys },
        {
          store,
          datadir,
          log,
          logger,
          metrics,
          ...(followed
            ? {
                follow: () => {
                  const status = followed.follower.status();
                  return {
                    head: status.head?.number ?? null,
                    upstream: status.upstream?.number ?? null,
                    error: status.error,
                  };
                },
              }
            : {}),
          ...(dev ? { dev: dev.service } : {}),
          ...(source ? { upstream: source } : {}),
          ...(ledger ? { sharedLimitsProblem: () => ledger.problem() } : {}),
          ...(policy ? { gateFor: (request) => policy.gateFor(request), sockets: policy } : {}),
          ...(role === 'api' ? { cluster: clusterFigures(metrics) } : {}),
          // The operator dashboard, only with a token (src/transport/dashboard/); with
          // --processes, it shows what every API process saw.
          ...(operatorToken
            ? {
                dashboard: {
                  token: operatorToken,
                  book: policy?.book ?? null,
                  ...(role === 'api'
                    ? {
                        gather: async (now: number, since: number) =>
                          (await gatherFromAll('dashboard', { now, since })) as DashboardSnapshot[],
                      }
                    : {}),
                },
              }
            : {}),
        },
      );
      await app.warm();
      listening = await app.listen().catch((e: unknown) => {
        throw listenError(e, config.host, config.port);
      });
      if (role === 'api') {
        const part = app.dashboard;
        if (part)
          provide('dashboard', (arg) => {
            const { now, since } = arg as { now: number; since: number };
            return part.snapshot(now, since);
          });
        announceListening(listening);
      }
    }
    if (role !== 'api') {
      writer?.listening(Number(new URL(listening.httpUrl).port));
      let shownKey = given[0];
      if (needsKey) {
        // A service that accepts no key is useless: make one, and show it this once.
        shownKey = keyFile.create('default').key;
        keys?.reload();
        process.stdout.write(
          `created API key "default" (shown once, kept hashed in ${keyFile.path}): ${shownKey}\n`,
        );
      }
      const key = o.auth ? (shownKey ?? '<API_KEY>') : (shownKey ?? 'any-key');
      if (dev) process.stdout.write(describeDevAccounts(dev.service.accounts));
      if (source)
        process.stdout.write(`upstream ${upstream?.urls.map(redactUrl).join(', ')}: ${source.description}\n`);
      if (follow)
        process.stdout.write(
          `following ${follow.urls.map(redactUrl).join(', ')}: every block executed and verified${follow.verifyStateRoot ? '' : ' (state roots not compared)'}\n`,
        );
      const kind = dev ? 'dev ' : upstream ? 'upstream ' : follow ? 'followed ' : '';
      const processes = role === 'primary' ? ` in ${plan.processes} processes` : '';
      process.stdout.write(
        `ethtrace serving ${kind}chain ${chainId} (head ${head?.number ?? 'none'}) from ${datadir}${processes}\n` +
          `  HTTP       ${listening.httpUrl}/v3/${key}\n  WebSocket  ${listening.wsUrl}/ws/v3/${key}\n` +
          (shownKey === undefined && o.auth ? '  (use a key from `ethtrace keys create`)\n' : '') +
          (listening.metricsUrl ? `  metrics    ${listening.metricsUrl}/metrics\n` : ''),
      );
      followed?.follower.start();
    }
  } catch (e) {
    await primary?.stop(shutdownMs);
    await followed?.follower.stop();
    await dev?.service.stop();
    await app?.close();
    await access?.close();
    redis?.disconnect();
    await store.close().catch(() => {});
    writer?.release();
    throw e;
  }
  const failed = await Promise.race([
    stopRequested.then(() => false),
    primary?.failed.then(() => true) ?? new Promise<boolean>(() => {}),
  ]);
  // First, before the chain's writers stop: /ready fails and no new connection is taken.
  app?.stopAccepting({ deadlineMs: shutdownMs });
  if (role !== 'api') process.stdout.write('stopping\n');
  await primary?.stop(shutdownMs);
  await followed?.follower.stop();
  await dev?.service.stop();
  await app?.close({ deadlineMs: shutdownMs });
  await access?.close();
  await redis?.quit().catch(() => {});
  if (role !== 'primary' || followed) await store.close();
  else if (source) await source.store.client.close();
  writer?.release();
  if (failed) throw new StartFailure(1, 'the API processes keep exiting');
}

/** What an API process of `--processes` shows of all of them: the metrics of every process. */
function clusterFigures(metrics: Metrics): { metricsText(): Promise<string> } {
  provide('metrics', () => metrics.parts());
  return { metricsText: async () => aggregateMetrics(await gatherFromAll('metrics')) };
}

/**
 * `--processes` serves an imported chain, and not a dev chain (one pool and one miner, in one
 * process) — nor an empty datadir, which would become one.
 */
async function refuseDevChain(datadir: string): Promise<void> {
  const refusal = `--processes applies to an imported, followed or upstream chain: a dev chain has one transaction pool and one miner, in one process`;
  if (!storeExists(datadir)) throw new UserError(`${refusal} (${datadir} is empty, and would become one)`);
  const store = await openLmdbStore(datadir, { readOnly: true });
  try {
    if ((await store.getMeta(META_DEV)) !== null) throw new UserError(`${refusal} (${datadir} holds one)`);
  } finally {
    await store.close();
  }
}

/** Shorter tokens could be guessed by anyone who can reach the port. */
const MIN_OPERATOR_TOKEN_CHARS = 16;

/** The operator token of `--operator-token` or the environment, checked; undefined: no dashboard. */
function operatorTokenOf(token: string | undefined): string | undefined {
  if (token === undefined || token === '') return undefined;
  if (token.length < MIN_OPERATOR_TOKEN_CHARS || /\s/.test(token))
    throw new UserError(
      `--operator-token must be at least ${MIN_OPERATOR_TOKEN_CHARS} characters without spaces (e.g. from openssl rand -hex 16)`,
    );
  return token;
}

/** Fails with one line when `host:port` cannot be listened on; port 0 (any free port) always can. */
async function checkPortFree(host: string, port: number): Promise<void> {
  if (port === 0) return;
  const probe = createServer();
  await new Promise<void>((resolve, reject) => {
    probe.once('error', (e) => reject(listenError(e, host, port)));
    probe.listen({ port, host, exclusive: true }, () => probe.close(() => resolve()));
  });
}

function listenError(error: unknown, host: string, port: number): unknown {
  switch ((error as NodeJS.ErrnoException).code) {
    case 'EADDRINUSE':
      return new UserError(
        `port ${port} on ${host} is in use by another program: stop it, or choose another port with --port`,
      );
    case 'EACCES':
      return new UserError(`not allowed to listen on port ${port}: choose a port above 1023 with --port`);
    case 'EADDRNOTAVAIL':
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return new UserError(`--host ${host} is not an address of this machine: use 127.0.0.1 or 0.0.0.0`);
    default:
      return error;
  }
}

const META_DEV = 'dev';

/**
 * The dev chain of a datadir: made on first start when the datadir is empty (the embedded default),
 * resumed when the datadir holds one; null for an imported chain, which is served read-only.
 *
 * The store is opened for writing from the start: the genesis block is committed in one transaction
 * with the records saying what chain it is, and LMDB runs one write transaction at a time across
 * processes, so when `start` and `import` initialise an empty datadir at once exactly one makes the
 * chain. If that is an import, this start serves the imported chain.
 */
async function openDevChain(
  datadir: string,
  flags: DevFlags,
  log: (line: string) => void,
): Promise<{ store: ChainStore; service: DevService } | null> {
  const store = await openLmdbStore(datadir);
  try {
    await checkStore(store, datadir);
    await checkSchema(store, datadir);
    if ((await store.getMeta(UPSTREAM_CHAIN_META)) !== null)
      throw new UserError(`${datadir} caches the chain of an upstream node: start it with --upstream`);
    for (let attempt = 0; ; attempt++) {
      const head = await store.getHead();
      const recorded = await store.getMeta(META_DEV);
      if (head && !recorded) {
        refuseDevFlags(flags, `${datadir}, which holds an imported chain`);
        await store.close();
        return null;
      }
      if (recorded) {
        const options = recordedOptions(recorded);
        checkDevFlags(options, flags, datadir);
        const spec = await readStoredSpec(store);
        if (spec === null) throw new Error('a dev chain without its genesis spec');
        return { store, service: devService(await ChainWriter.open(store, spec), options, log) };
      }
      const options = devOptions(flags);
      const spec = parseChainSpec(devGenesis(options), 'dev genesis');
      try {
        const writer = await ChainWriter.open(store, spec);
        const record = JSON.stringify({ ...options, chainId: options.chainId.toString() });
        await writer.initGenesis([[META_DEV, new TextEncoder().encode(record)]]);
        return { store, service: devService(writer, options, log) };
      } catch (e) {
        // Another process made a chain here since the look above: look again, once.
        if (attempt > 0 || (await store.getHead()) === null) throw e;
      }
    }
  } catch (e) {
    await store.close();
    throw e;
  }
}

function devService(writer: ChainWriter, options: DevChainOptions, log: (line: string) => void): DevService {
  return new DevService(writer, devAccounts(options.mnemonic), log);
}

function recordedOptions(record: Uint8Array): DevChainOptions {
  return JSON.parse(new TextDecoder().decode(record), (k, v) => (k === 'chainId' ? BigInt(v) : v));
}

interface DevFlags {
  chainId: string | undefined;
  hardfork: string | undefined;
  mnemonic: string | undefined;
}

function devOptions(flags: DevFlags): DevChainOptions {
  const hardfork = (flags.hardfork ?? DEV_HARDFORKS[DEV_HARDFORKS.length - 1]) as DevHardfork;
  if (!DEV_HARDFORKS.includes(hardfork))
    throw new UserError(`--hardfork ${flags.hardfork}: one of ${DEV_HARDFORKS.join(', ')}`);
  if (flags.chainId !== undefined && !/^[0-9]+$/.test(flags.chainId))
    throw new UserError(`--chain-id ${flags.chainId} is not a number`);
  return {
    chainId: flags.chainId ? BigInt(flags.chainId) : DEV_CHAIN_ID,
    hardfork,
    mnemonic: flags.mnemonic ?? DEV_MNEMONIC,
  };
}

/**
 * A dev chain keeps the options it was made with; a flag saying otherwise would be silently ignored
 * (anvil's `--chain-id` on a loaded state overrides it, but here the genesis, and so every block,
 * depends on these), so it is refused.
 */
function checkDevFlags(recorded: DevChainOptions, flags: DevFlags, datadir: string): void {
  const differs: string[] = [];
  if (
    flags.chainId !== undefined &&
    !(/^[0-9]+$/.test(flags.chainId) && BigInt(flags.chainId) === recorded.chainId)
  )
    differs.push(`--chain-id ${flags.chainId} (it has ${recorded.chainId})`);
  if (flags.hardfork !== undefined && flags.hardfork !== recorded.hardfork)
    differs.push(`--hardfork ${flags.hardfork} (it has ${recorded.hardfork})`);
  // The mnemonic itself is not echoed: it may not be the public test one.
  if (flags.mnemonic !== undefined && flags.mnemonic !== recorded.mnemonic)
    differs.push('--mnemonic (it was made with another)');
  if (differs.length > 0)
    throw new UserError(
      `the dev chain in ${datadir} was made with other options: ${differs.join(', ')}; leave these flags out to resume it, or give a new --datadir for a new chain`,
    );
}

function refuseDevFlags(flags: DevFlags, holder: string): void {
  const given = Object.entries({
    '--chain-id': flags.chainId,
    '--hardfork': flags.hardfork,
    '--mnemonic': flags.mnemonic,
  })
    .filter(([, v]) => v !== undefined)
    .map(([k]) => k);
  if (given.length > 0)
    throw new UserError(
      `${given.join(', ')} apply to a new dev chain, not to ${holder}: leave them out, or give an empty --datadir`,
    );
}

/** The dev accounts with their keys, as anvil prints them: they are test keys, never to hold value. */
function describeDevAccounts(accounts: readonly DevAccount[]): string {
  const lines = accounts.map((a, i) => `  (${i}) ${toHex(a.address)}  private key ${toHex(a.privateKey)}`);
  return `dev accounts (10,000 ether each; test keys, known to everyone):\n${lines.join('\n')}\n`;
}

function collect(value: string, previous: string[]): string[] {
  return [...previous, value];
}

/** Commander's message on one line: "error: unknown option '--nme'\n(Did you mean --name?)\n". */
function oneLine(text: string): string {
  return `${text
    .replace(/^error: /, '')
    .trimEnd()
    .replace(/\n\(Did you mean (.*)\)$/, ' (did you mean $1)')}\n`;
}

/** The command line; errors go through `exitOverride`, so that `main` decides every exit status. */
function program(): Command {
  const root = new Command('ethtrace')
    .description('Ethereum JSON-RPC service for traces and receipts (Infura-compatible at the edge)')
    .version(`ethtrace ${VERSION}`, '-V, --version', 'print the version')
    .helpOption('-h, --help', 'print this help')
    .exitOverride()
    .addHelpText(
      'after',
      '\nRun `ethtrace <command> --help` for its options. Exit status: 0 done, 2 the command could not do\nwhat was asked (one line on stderr says why), 1 an internal error.',
    );
  // Commander's "error: …" becomes "ethtrace <command>: …", followed by that command's usage line.
  const named = (command: Command, path: string) => {
    const full = path === '' ? 'ethtrace' : `ethtrace ${path}`;
    return command
      .configureOutput({ outputError: (text, write) => write(`${full}: ${oneLine(text)}`) })
      .showHelpAfterError(`usage: ${full} ${command.usage()}\n(\`${full} --help\` describes the options)`);
  };

  named(
    root
      .command('import')
      .description('execute and verify the blocks of geth-export files and store them')
      .argument('<files...>', 'chain files in the format of `geth export` (RLP blocks)')
      .requiredOption('--genesis <file>', 'the genesis file (geth format) of the chain')
      .option('--datadir <dir>', DATADIR_HELP)
      .option('--no-verify-state-root', 'accept state roots that differ (chains of dev nodes)')
      .option(
        '--blocks-per-commit <n>',
        'blocks stored per store transaction at most (also one a second); a killed import loses at most these',
        String(GROUP_BLOCKS),
      )
      .action((files: string[], opts: ImportOptions) => importCommand(files, opts)),
    'import',
  );

  named(
    root
      .command('start')
      .description(
        'serve the chain in the datadir: POST /v3/<KEY> and WebSocket /ws/v3/<KEY>; on an empty datadir, ' +
          'a new dev chain (chain id 31337, the 10 test-mnemonic accounts with 10,000 ether) that mines ' +
          'each transaction as it arrives, or a block every SECONDS with --block-time',
      )
      .option('--datadir <dir>', DATADIR_HELP)
      .option('--host <address>', 'address to listen on', DEFAULT_CONFIG.host)
      .option('--port <port>', 'port to listen on (0: any free port)', String(DEFAULT_CONFIG.port))
      .option(
        '--api-key <key>',
        'accept this key (repeatable; also $ETHTRACE_API_KEYS, comma-separated)',
        collect,
        [],
      )
      .option('--no-auth', 'serve every key, and /')
      .option('--workers <n>', 'EVM execution threads')
      .option('--exec-timeout <ms>', 'deadline of one EVM execution')
      .option('--gas-cap <gas>', 'gas limit of calls and traces')
      .option('--max-calls <n>', 'calls in one trace_callMany / eth_simulateV1')
      .option('--trace-cache-mb <mb>', 'memory for replayed blocks')
      .option('--trace-filter-blocks <n>', 'blocks one trace_filter may replay')
      .option('--max-response-mb <mb>', 'largest answer, or batch of answers (default 32)')
      .option('--ws-max-per-ip <n>', 'WebSockets open from one address (default 64)')
      .option('--ws-max-subscriptions <n>', 'subscriptions on one WebSocket (default 1024)')
      .option('--ws-max-buffer-mb <mb>', 'unsent output before a WebSocket is dropped (default 16)')
      .option('--ws-max-per-key <n>', 'WebSockets open with one API key (default 256)')
      .option('--http-max-per-ip <n>', 'HTTP connections open from one address, per process (default 256)')
      .option(
        '--filter-max-per-key <n>',
        'polling filters (eth_newFilter & co.) of one API key (default 1024)',
      )
      .option('--filter-max-per-connection <n>', 'polling filters made on one connection (default 128)')
      .option('--filter-max <n>', 'polling filters in all (default 16384)')
      .option(
        '--filter-max-buffer <n>',
        'changes a filter may have waiting before it is removed (default 10000)',
      )
      .option('--filter-timeout-ms <ms>', 'a filter not polled for this long is removed (default 300000)')
      .option('--max-body-mb <mb>', 'largest request body (default 5)')
      .option('--max-batch <n>', 'requests in one batch (default 1000)')
      .option('--header-timeout-ms <ms>', "time to send a request's headers (default 10000)")
      .option('--body-timeout-ms <ms>', "time to send a request's body (default 30000)")
      .option('--no-metrics', 'keep no metrics and serve no /metrics')
      .option('--log-level <level>', `${LOG_LEVELS.join(', ')}: one JSON line per request at info`, 'info')
      .option(
        '--metrics-port <port>',
        'serve /metrics (and /health, /ready) on this port only (default: the API port)',
      )
      .option('--metrics-host <address>', 'address of --metrics-port', '127.0.0.1')
      .option(
        '--ready-max-head-age <seconds>',
        `/ready fails when the head is older (default ${DEFAULT_READY_MAX_HEAD_AGE_SECONDS} with --upstream or --block-time)`,
      )
      .option(
        '--shutdown-timeout <seconds>',
        `on SIGTERM/SIGINT, time for requests under way to finish (default ${DEFAULT_SHUTDOWN_SECONDS})`,
      )
      .option('--chain-id <id>', 'chain id of a new dev chain (default 31337)')
      .option('--hardfork <fork>', `fork of a new dev chain: ${DEV_HARDFORKS.join(', ')} (default the last)`)
      .option('--mnemonic <words>', 'mnemonic of the accounts of a new dev chain (default the test one)')
      .option(
        '--block-time <seconds>',
        'dev chain: mine a block every SECONDS instead of on each transaction',
      )
      .option(
        '--upstream <url>',
        'serve the chain of this node (http(s):// or ws(s)://; repeatable, tried in order): the datadir is its cache',
        collect,
        [],
      )
      .option(
        '--genesis <file>',
        "with --upstream: the chain's genesis file, for a node that cannot say its forks (needed by --follow)",
      )
      .option(
        '--follow',
        "with --upstream and --genesis: fetch, execute and verify every block of the upstream's chain into " +
          'the datadir, keeping in step with its head (reorgs included); served as an imported chain',
      )
      .option('--no-verify-state-root', 'with --follow: accept state roots that differ (chains of dev nodes)')
      .option(
        '--finality-depth <blocks>',
        'with --upstream: blocks after which a block is final without a finalized tag (default 64)',
      )
      .option(
        '--upstream-timeout-ms <ms>',
        'with --upstream: how long one request to it may take (default 10000)',
      )
      .option(
        '--upstream-budget-ms <ms>',
        'with --upstream: how long one client request (and the start) may wait for it in all, retries included (default 15000)',
      )
      .option(
        '--upstream-retries <n>',
        'with --upstream: retries of a failed request, with backoff (default 3)',
      )
      .option(
        '--upstream-max-concurrent <n>',
        'with --upstream: requests to it in flight at once (default 32)',
      )
      .option('--upstream-rps <n>', 'with --upstream: requests to it per second, 0 unlimited (default 100)')
      .option('--upstream-poll-ms <ms>', 'with --upstream: how often its head is read (default 1000)')
      .option(
        '--processes <n>',
        'API processes on the one port (one per core uses them all; not for a dev chain); limits are shared (default 1)',
      )
      .option(
        '--redis <url>',
        'keep the limits of keys in this Redis (redis://host:port/db), shared by every process and host using it',
      )
      .option(
        '--operator-token <token>',
        'serve the operator dashboard at /dashboard to whoever gives this token (also $ETHTRACE_OPERATOR_TOKEN)',
      )
      .action((opts: StartOptions) => startCommand(opts)),
    'start',
  );

  const keys = named(
    root
      .command('keys')
      .description('manage the API keys kept (hashed) in the datadir')
      .option('--datadir <dir>', DATADIR_HELP),
    'keys',
  );
  addKeyCommands(keys, named, DATADIR_HELP);
  addStateTestCommand(root, named);
  return named(root, '');
}

async function main(argv: string[]): Promise<number> {
  const cli = program();
  if (argv.length === 0) {
    process.stderr.write(cli.helpInformation());
    return EXIT_USER_ERROR;
  }
  try {
    await cli.parseAsync(argv, { from: 'user' });
    return 0;
  } catch (e) {
    // Commander has printed its message (and the usage) already; --help and --version end here too.
    if (e instanceof CommanderError) return e.exitCode === 0 ? 0 : EXIT_USER_ERROR;
    // An API process of `--processes` failed: it has said why on the shared stderr.
    if (e instanceof StartFailure) return e.status;
    if (e instanceof StateTestsFailed) return 1;
    if (e instanceof UserError) {
      const command = argv[0] && cli.commands.some((c) => c.name() === argv[0]) ? ` ${argv[0]}` : '';
      // On a terminal the import's progress bar may hold the line.
      const newline = process.stderr.isTTY ? '\n' : '';
      process.stderr.write(`${newline}ethtrace${command}: ${e.message}\n`);
      return EXIT_USER_ERROR;
    }
    throw e;
  }
}

const code = await main(process.argv.slice(2));
// A failed start may leave handles (worker threads, timers) that would keep the process up.
// An API process of `--processes` has its IPC channel to the primary open: it leaves when done.
if (code === 0 && !cluster.isWorker) process.exitCode = 0;
else process.exit(code);
