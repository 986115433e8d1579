import { createServer } from 'node:net';
import { hostname } from 'node:os';
import type { Redis } from 'ioredis';
import { type App, type AppConfig, buildApp } from './app.ts';
import type { DevAccount } from './chain/devChain.ts';
import { checkSchema, readStoredSpec } from './chain/storedSpec.ts';
import { afterSettled, caught } from './core/caught.ts';
import { describeForLog, UserError } from './core/errors.ts';
import type { LogLine } from './core/log.ts';
import { claimDevChain, claimWriter } from './datadirWriter.ts';
import {
  type DevFlags,
  devOptions,
  openDevChain,
  refuseDevChain,
  refuseDevFlags,
} from './devChainDatadir.ts';
import { type FollowConfig, type Follower, openFollow } from './ingest/follower.ts';
import { type Logger, type LogLevel, lineLogger } from './observe/log.ts';
import { aggregateMetrics, Metrics } from './observe/metrics.ts';
import {
  announceListening,
  askPrimary,
  gatherFromAll,
  type Primary,
  type ProcessRole,
  processRole,
  provide,
  startPrimary,
} from './processes.ts';
import { methodTable } from './rpc/methods/index.ts';
import type { DevService } from './services/dev/index.ts';
import { prepareDatadir, resolveDatadir } from './store/datadir.ts';
import { checkStore } from './store/lmdb/check.ts';
import { openLmdbStore, storeExists } from './store/lmdb/index.ts';
import { KeyNameTaken, PostgresKeyTable } from './store/postgres/keys.ts';
import { Listener } from './store/postgres/listener.ts';
import { KEYS_CHANNEL } from './store/postgres/migrations.ts';
import { openPostgres, type Postgres, type PostgresSettings } from './store/postgres/pool.ts';
import { creditsSince, hostsUsageOf, serviceUsageOf, writeUsageBatch } from './store/postgres/usage.ts';
import type { ChainStore } from './store/types.ts';
import { type AccessControl, openAccessControl } from './transport/access/control.ts';
import { IpcCounters } from './transport/access/ipcCounters.ts';
import { LeasingLedger } from './transport/access/ledger.ts';
import { connectRedis, RedisCounters } from './transport/access/redisCounters.ts';
import type { KeySettings } from './transport/access/settings.ts';
import { UsageShipper } from './transport/access/usageShipper.ts';
import { KeyFile, KeyRing } from './transport/apiKeys.ts';
import type { DashboardSnapshot } from './transport/dashboard/snapshot.ts';
import { DatabaseKeyStore, FileKeyStore, KeyMirror } from './transport/keyStore.ts';
import { redactUrl } from './upstream/client.ts';
import { openUpstreamSource, type UpstreamConfig, type UpstreamSource } from './upstream/open.ts';
import { answerUpstreamAsk } from './upstream/remote.ts';

/**
 * `ethtrace start`, wired: the one place that opens what a start serves (the datadir's chain: a dev
 * chain, an imported or followed one, or an upstream's cache), the access control and its ledger,
 * the API processes of `--processes`, and the app (src/app.ts), and the one `close()` that stops
 * them all. The CLI (src/cli/start.ts) turns flags into a StartPlan and prints what it is told.
 */

/** What `ethtrace start` was asked for, its flags checked (src/cli/startFlags.ts). */
export interface StartPlan {
  /** The `--datadir` flag (resolved here, with the environment). */
  datadir: string | undefined;
  app: Omit<AppConfig, 'keys'>;
  logLevel: LogLevel;
  /** What the requests under way get to finish when stopping. */
  shutdownMs: number;
  /** Dev chain: a block every this many seconds. */
  blockTime: number | undefined;
  /** Upstream mode without `--follow`. */
  upstream: UpstreamConfig | null;
  follow: FollowConfig | null;
  /** API processes on the one port. */
  processes: number;
  redis: string | null;
  /** The keys in a shared PostgreSQL database (`--database`), or null: the datadir's keys file. */
  database: DatabasePlan | null;
  /** false: `--no-auth`. */
  auth: boolean;
  /** Keys accepted besides the keys file's (`--api-key`, $ETHTRACE_API_KEYS). */
  apiKeys: string[];
  /** The options of a new dev chain, as given (checked against the datadir's chain). */
  dev: DevFlags;
  /** Serves the operator dashboard to who gives it; undefined: no dashboard. */
  operatorToken: string | undefined;
}

/** `--database` and its settings (src/cli/databaseFlags.ts). */
export interface DatabasePlan {
  url: string;
  settings: Pick<PostgresSettings, 'poolSize' | 'connectTimeoutMs' | 'statementTimeoutMs'>;
  /** The full re-read of the keys, besides each change heard (src/transport/keyStore.ts KeyMirror). */
  keysRefreshMs: number;
  /** Usage recorded in the database (src/transport/access/usageShipper.ts). */
  usage: {
    /** On every row; null: the machine's host name and the port listened on. */
    hostName: string | null;
    flushMs: number;
    bufferRows: number;
  };
}

/** Where a start listens (with --processes, where its API processes do). */
export interface Urls {
  httpUrl: string;
  wsUrl: string;
  metricsUrl: string | null;
}

/** What a start that serves tells its user (src/cli/start.ts prints it). */
export interface Started {
  datadir: string;
  chainId: bigint | undefined;
  head: bigint | undefined;
  listening: Urls;
  /** The key made because no key would have been accepted (shown this once). */
  createdKey: { key: string; path: string } | null;
  /** A dev chain's accounts. */
  devAccounts: readonly DevAccount[] | null;
  /** Upstream mode: how the upstream's chain was learnt. */
  upstreamDescription: string | null;
}

export class Service {
  readonly role: ProcessRole;
  readonly datadir: string;
  private writer: { release(): void; listening(port: number): void } | null = null;
  private source: UpstreamSource | null = null;
  private followed: { store: ChainStore; follower: Follower } | null = null;
  private dev: { store: ChainStore; service: DevService } | null = null;
  private store: ChainStore | null = null;
  /** false once the store went to the API processes (the primary closed it). */
  private storeOpen = false;
  private app: App | null = null;
  private access: AccessControl | null = null;
  private redis: Redis | null = null;
  private postgres: Postgres | null = null;
  private keyMirror: KeyMirror | null = null;
  private usageShipper: UsageShipper | null = null;
  private primary: Primary | null = null;

  constructor(readonly plan: StartPlan) {
    // One of several API processes (src/processes.ts): the primary checked, made and printed
    // everything; this one serves.
    this.role = processRole(plan.processes);
    this.datadir = resolveDatadir(plan.datadir);
  }

  /**
   * Refuses, before anything is opened or made, what cannot start: dev-chain flags given to another
   * chain, a wrong dev-chain flag, a port taken. Nothing (a datadir, a dev chain, a key) is made for
   * a server that cannot listen; the real bind comes later and can still lose a race for the port.
   */
  async check(): Promise<void> {
    const { plan } = this;
    if (plan.upstream || plan.follow) {
      refuseDevFlags(plan.dev, 'an upstream chain');
      if (plan.blockTime !== undefined)
        throw new UserError('--block-time applies to a dev chain, not to --upstream');
    }
    if (!storeExists(this.datadir)) devOptions(plan.dev);
    if (this.role !== 'api') await checkPortFree(plan.app.host, plan.app.port);
  }

  /**
   * Opens everything and listens; `announce` is called once it listens (not in an API process), and
   * then the follower starts. A start that fails closes what it opened.
   */
  async start(logger: Logger, announce: (started: Started) => void): Promise<void> {
    const log = lineLogger(logger);
    prepareDatadir(this.datadir);
    await this.openChain(log);
    try {
      await this.serve(logger, announce);
    } catch (e) {
      await this.close({ abort: true });
      throw e;
    }
  }

  /** Resolves true when the API processes keep failing; never while they serve. */
  failed(): Promise<boolean> {
    return this.primary?.failed.then(() => true) ?? new Promise<boolean>(() => {});
  }

  /** First, before the chain's writers stop: /ready fails and no new connection is taken. */
  stopAccepting(): void {
    this.app?.stopAccepting({ deadlineMs: this.plan.shutdownMs });
  }

  /** A second signal: the API processes are killed at once. */
  kill(): void {
    this.primary?.kill();
  }

  /**
   * The one teardown: the API processes, the chain's writers (follower, miner), the app (requests
   * under way get --shutdown-timeout), the access control, Redis, the store, the datadir's claim.
   * `abort` (a start that failed): nothing waits, and a failure to close is not a second error.
   */
  async close(options: { abort?: boolean } = {}): Promise<void> {
    const abort = options.abort === true;
    await this.primary?.stop(this.plan.shutdownMs);
    await this.followed?.follower.stop();
    await this.dev?.service.stop();
    await this.app?.close(abort ? {} : { deadlineMs: this.plan.shutdownMs });
    await this.access?.close();
    // After the app: the requests it let finish are in the last batch.
    await this.usageShipper?.close();
    await this.keyMirror?.close();
    await this.postgres
      ?.close()
      .catch((e: unknown) =>
        caught('postgres-connection', `stopping: the keys database did not close: ${describeForLog(e)}`),
      );
    if (abort) this.redis?.disconnect();
    else
      await this.redis
        ?.quit()
        .catch((e: unknown) =>
          caught('redis-quit', `stopping: Redis did not take the goodbye: ${describeForLog(e)}`),
        );
    // The primary gave the store to the API processes; an upstream's client stayed here for them.
    const closing = this.storeOpen ? this.store?.close() : this.source?.store.client.close();
    // A failed start's own error is the one to report; the store is closed as far as it goes.
    await (abort && closing ? afterSettled(closing) : closing);
    this.writer?.release();
  }

  /** The datadir's chain: claimed for writing where this process writes it, and opened. */
  private async openChain(log: LogLine): Promise<void> {
    const { role, datadir, plan } = this;
    const { upstream, follow } = plan;
    // One process at a time writes a datadir; a second is refused with the first's pid and port
    // (src/datadirWriter.ts). The primary of --processes holds it for its API processes; a start that
    // fails gives it back as it exits.
    this.writer =
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
    this.source =
      upstream &&
      (await openUpstreamSource(datadir, upstream, log, role === 'api' ? { ask: askPrimary } : {}));
    // A followed chain is an imported one, which one process writes: the primary, or the only one.
    this.followed = follow && role !== 'api' ? await openFollow(datadir, follow, log) : null;
    this.dev = this.source || follow || role !== 'alone' ? null : await openDevChain(datadir, plan.dev, log);
    // An imported chain after all (an import made it first): served read-only, beside its writer.
    if (!this.source && !follow && !this.dev) this.writer?.release();
    // The primary serves nothing: it keeps the store open only to follow the chain into it.
    if (this.imported && role === 'primary') await refuseDevChain(datadir);
    this.store =
      this.source?.store ??
      this.followed?.store ??
      this.dev?.store ??
      (await openLmdbStore(datadir, { readOnly: true }));
    this.storeOpen = true;
  }

  private get imported(): boolean {
    return !this.source && !this.followed && !this.dev;
  }

  /** Checks the chain, listens (or starts the API processes that do), and tells the user. */
  private async serve(logger: Logger, announce: (started: Started) => void): Promise<void> {
    const { role, datadir, plan } = this;
    const store = this.store as ChainStore;
    if (this.imported) await checkStore(store, datadir);
    await checkSchema(store, datadir);
    const chainId = (await readStoredSpec(store))?.chainId;
    const head = await store.getHead();
    if (plan.blockTime !== undefined) {
      if (!this.dev)
        throw new UserError('--block-time applies to a dev chain; this datadir holds an imported one');
      this.dev.service.startInterval(plan.blockTime);
    }
    const keyFile = new KeyFile(datadir);
    // Without auth there are no keys to keep: the database is not opened.
    const db = plan.auth && plan.database ? await this.openDatabase(plan.database) : null;
    const keyStore = db
      ? new DatabaseKeyStore(new PostgresKeyTable<KeySettings>(db))
      : new FileKeyStore(keyFile);
    const needsKey =
      role !== 'api' &&
      plan.auth &&
      plan.apiKeys.length === 0 &&
      (await keyStore.read()).every((k) => k.revokedAt);
    const keys = plan.auth ? KeyRing.from(plan.apiKeys, db ? null : keyFile) : null;
    // The primary of --processes serves nothing: its API processes each follow the database.
    if (db && keys && role !== 'primary') await this.mirrorKeys(db, keys, logger);
    this.redis = plan.redis === null ? null : await connectRedis(plan.redis);
    const listening =
      role === 'primary' ? await this.startApiProcesses(keys, logger) : await this.listen(keys, logger);
    if (role === 'api') return;
    this.writer?.listening(Number(new URL(listening.httpUrl).port));
    // A service that accepts no key is useless: make one, and show it this once.
    let createdKey: Started['createdKey'] = null;
    if (needsKey) {
      createdKey = await keyStore.create('default').then(
        (made) => ({ key: made.key, path: keyStore.where }),
        (e: unknown) => {
          // Another host on the database made it first, and showed it: this one serves that key.
          if (e instanceof KeyNameTaken) return null;
          throw e;
        },
      );
      if (this.keyMirror) await this.keyMirror.refresh();
      else keys?.reload();
    }
    announce({
      datadir,
      chainId,
      head: head?.number,
      listening,
      createdKey,
      devAccounts: this.dev?.service.accounts ?? null,
      upstreamDescription: this.source?.description ?? null,
    });
    this.followed?.follower.start();
  }

  /** Opens the keys database: unreachable, it refuses the start (one line, exit 2). */
  private async openDatabase(database: DatabasePlan): Promise<Postgres> {
    this.postgres = await openPostgres(database.url, {
      ...database.settings,
      applicationName: `ethtrace ${this.role}`,
    });
    return this.postgres;
  }

  /**
   * Keeps `keys` equal to the database's keys, heard on a connection of their own; the first read
   * must succeed (a server that starts with no keys would refuse every request).
   */
  private async mirrorKeys(db: Postgres, keys: KeyRing, logger: Logger): Promise<void> {
    const database = this.plan.database as DatabasePlan;
    const mirror = new KeyMirror(
      new PostgresKeyTable<KeySettings>(db),
      keys,
      database.keysRefreshMs,
      (line) => logger.warn(line),
    );
    this.keyMirror = mirror;
    await mirror
      .start((events) => new Listener(db.settings, KEYS_CHANNEL, events))
      .catch((e: unknown) => {
        throw new UserError(`--database ${db.description}: its keys cannot be read (${describeForLog(e)})`);
      });
  }

  /**
   * The primary of `--processes`: the API processes open the upstream cache and the store
   * themselves; the upstream client stays open here, to read the upstream for them.
   */
  private async startApiProcesses(keys: KeyRing | null, logger: Logger): Promise<Urls> {
    const { source } = this;
    if (source) {
      source.head.stop();
      await source.store.cache.close();
      this.storeOpen = false;
    } else if (!this.followed) {
      await this.store?.close();
      this.storeOpen = false;
    }
    // Limits shared by the API processes are kept here, unless they share Redis.
    this.primary = startPrimary(
      this.plan.processes,
      this.redis === null && keys !== null,
      lineLogger(logger),
      source ? (ask) => answerUpstreamAsk(source.store.client, ask) : undefined,
    );
    await this.redis?.quit();
    this.redis = null;
    return this.primary.listening;
  }

  /** This process serves: the access control, the app, and the listener. */
  private async listen(keys: KeyRing | null, logger: Logger): Promise<Urls> {
    const { plan, role } = this;
    const metrics = new Metrics();
    const log = lineLogger(logger);
    const ledger = this.ledger(logger);
    if (ledger) metrics.readFrom({ sharedLimits: () => ledger.health() });
    const { keyMirror: mirror, postgres } = this;
    if (mirror && postgres)
      metrics.readFrom({
        keysDatabase: () => ({ ...mirror.health(), statementTimeouts: postgres.statementTimeouts }),
      });
    // Keys' settings (credits, allow-lists) and usage; `--no-auth` has none of it.
    const policy =
      keys &&
      openAccessControl(
        keys,
        this.datadir,
        log,
        metrics,
        ledger,
        Object.keys(methodTable(Boolean(this.source))),
      );
    this.access = policy;
    const app = await buildApp(
      { ...plan.app, keys },
      {
        store: this.store as ChainStore,
        datadir: this.datadir,
        log,
        logger,
        metrics,
        ...this.chainParts(),
        ...(ledger ? { sharedLimitsProblem: () => ledger.problem() } : {}),
        ...(mirror ? { keysProblem: () => mirror.problem() } : {}),
        ...(postgres && policy ? { usageProblem: () => this.usageShipper?.problem() ?? null } : {}),
        ...(policy ? { gateFor: (request) => policy.gateFor(request), sockets: policy } : {}),
        ...(role === 'api' ? { cluster: clusterFigures(metrics) } : {}),
        ...this.dashboard(policy),
      },
    );
    this.app = app;
    await app.warm();
    const listening = await app.listen().catch((e: unknown) => {
      throw listenError(e, plan.app.host, plan.app.port);
    });
    if (postgres && policy) this.shipUsage(postgres, policy, listening, metrics, log);
    if (role === 'api') {
      const part = app.dashboard;
      if (part)
        provide('dashboard', (arg) => {
          const { now, since } = arg as { now: number; since: number };
          return part.snapshot(now, since);
        });
      announceListening(listening);
    }
    return listening;
  }

  /**
   * Every host's usage in the database: this process's book, shipped in batches (usageShipper.ts),
   * each row under this host's name (`--host-name`, else the machine's name and the port).
   */
  private shipUsage(
    db: Postgres,
    policy: AccessControl,
    listening: Urls,
    metrics: Metrics,
    log: LogLine,
  ): void {
    const usage = (this.plan.database as DatabasePlan).usage;
    const host = usage.hostName ?? `${hostname()}:${new URL(listening.httpUrl).port}`;
    const shipper = new UsageShipper(
      policy.book,
      {
        description: db.description,
        write: async (batch) => {
          await writeUsageBatch(db, batch);
        },
      },
      {
        host,
        writer: `${host}/${process.pid}-${Date.now()}`,
        flushMs: usage.flushMs,
        maxRows: usage.bufferRows,
        log,
      },
    );
    this.usageShipper = shipper;
    metrics.readFrom({
      usageDatabase: () => shipper.health(),
      serviceUsage: serviceUsageOf(db),
    });
  }

  /**
   * Where the limits of keys shared with other processes are kept: in Redis, or with the primary of
   * `--processes`. An outage of the shared limits is told at warn, once as it begins and once as it ends.
   */
  private ledger(logger: Logger): LeasingLedger | undefined {
    const { redis } = this;
    const url = this.plan.redis;
    const warn = (line: string) => logger.warn(line);
    const db = this.postgres;
    if (redis && url !== null)
      return new LeasingLedger(
        // With the usage in the database, a Redis restarted empty gets each key's day back from it.
        new RedisCounters(
          redis,
          undefined,
          `redis ${redactUrl(url)}`,
          db ? (keyId, from) => creditsSince(db, keyId, from) : undefined,
        ),
        Date.now,
        warn,
      );
    if (this.role === 'api') return new LeasingLedger(new IpcCounters(process), Date.now, warn);
    return undefined;
  }

  /** The app's parts that depend on the chain served: a dev chain, an upstream, a follower. */
  private chainParts() {
    const { followed } = this;
    return {
      ...(followed
        ? {
            syncing: () => followed.follower.syncing(),
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
      ...(this.dev ? { dev: this.dev.service } : {}),
      ...(this.source ? { upstream: this.source } : {}),
    };
  }

  /**
   * The operator dashboard, only with a token (src/transport/dashboard/); with --processes, it shows
   * what every API process saw.
   */
  private dashboard(policy: AccessControl | null) {
    const token = this.plan.operatorToken;
    if (!token) return {};
    return {
      dashboard: {
        token,
        book: policy?.book ?? null,
        // The whole service's hosts, from the usage database.
        ...(this.postgres && policy ? { service: hostsUsageOf(this.postgres) } : {}),
        ...(this.role === 'api'
          ? {
              gather: async (now: number, since: number) =>
                (await gatherFromAll('dashboard', { now, since })) as DashboardSnapshot[],
            }
          : {}),
      },
    };
  }
}

/** What an API process of `--processes` shows of all of them: the metrics of every process. */
function clusterFigures(metrics: Metrics): { metricsText(): Promise<string> } {
  provide('metrics', () => metrics.parts());
  return { metricsText: async () => aggregateMetrics(await gatherFromAll('metrics')) };
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
