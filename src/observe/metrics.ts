import {
  AggregatorRegistry,
  Counter,
  collectDefaultMetrics,
  Gauge,
  Histogram,
  type MetricObjectWithValues,
  type MetricValue,
  Registry,
} from 'prom-client';
import { LIMIT_NAMES, type LimitName } from '../config/limits.ts';
import { CAUGHT_SITES, caughtCounts } from '../core/caught.ts';

/** The Prometheus text format's content type, as the registry writes it. */
export const METRICS_CONTENT_TYPE = Registry.PROMETHEUS_CONTENT_TYPE;

/** Label values for calls whose method is not in the method table (so a client cannot grow the label set). */
export const OTHER = 'other';

export type Transport = 'http' | 'ws';
export type KeyRefusalKind = 'rate' | 'day' | 'allowlist';

/** What the metrics read when scraped; each part is optional (an app without a pool in tests, no follower). */
export interface MetricSources {
  pool?: () => { size: number; busy: number; queued: number; timeouts: number; crashes: number };
  replayCache?: () => { hits: number; executions: number };
  /** eth_call / eth_estimateGas answered on the answering thread, and those its watchdog stopped. */
  inlineCalls?: () => { answered: number; interrupted: number };
  /** The served chain's head: its number and timestamp (seconds), or null before the first block. */
  head?: () => Promise<{ number: bigint; timestamp: bigint } | null>;
  /** Following an upstream: our head and the upstream's as last seen (null when not known yet). */
  follow?: () => { head: bigint | null; upstream: bigint | null };
  /** Limits shared with other processes (src/transport/access/ledger.ts LeasingLedger.health). */
  sharedLimits?: () => { up: boolean; outages: number; unchecked: number };
  /** Keys kept in a shared database (src/transport/keyStore.ts KeyMirror, and its pool's timeouts). */
  keysDatabase?: () => { up: boolean; outages: number; failedReads: number; statementTimeouts: number };
  /** This process's usage shipped to the database (src/transport/access/usageShipper.ts). */
  usageDatabase?: () => { up: boolean; buffered: number; dropped: number; flushes: number; outages: number };
  /**
   * The whole service's usage today, by host and by key name, from the database (cached there for a
   * few seconds: src/store/postgres/usage.ts serviceUsageOf).
   */
  serviceUsage?: () => Promise<{
    hosts: Array<{ name: string; requests: number; credits: number }>;
    keys: Array<{ name: string; requests: number; credits: number }>;
  }>;
}

/** The call as a gate sees it (src/rpc/envelope.ts CallInfo): only the method is read. */
interface Call {
  method: string;
}

/**
 * The service's metrics, in one registry of their own (not prom-client's global one) so that each
 * process of a cluster hands this registry to prom-client's AggregatorRegistry
 * (`AggregatorRegistry.setRegistries([metrics.registry])` in a worker), and tests can run several
 * apps in one process. Gauges read at scrape time say how to combine across processes
 * (`aggregator`): a head is the same chain in every process, counts of work add up.
 *
 * Every label value is bounded: methods only from the method table (else "other"), key NAMES from
 * the keys file (never a key), limits from config/limits.ts LIMIT_NAMES, error codes from JSON-RPC's
 * server range (else "other").
 */
interface MethodCounts {
  started: number;
  succeeded: number;
  /** By error-code label. */
  failed: Map<string, number>;
  duration: { observe(value: number): void };
}

export class Metrics {
  readonly registry = new Registry();
  private methods: ReadonlySet<string> = new Set();
  private readonly started: Counter<'method'>;
  private readonly succeeded: Counter<'method'>;
  private readonly failed: Counter<'method' | 'code'>;
  private readonly duration: Histogram<'method'>;
  private readonly connections: Gauge<'transport'>;
  private readonly connectionsOpened: Counter<'transport'>;
  private readonly credits: Counter<'key'>;
  private readonly keyRefusals: Counter<'key' | 'kind'>;
  private readonly limitRefusals: Counter<'limit'>;
  private sources: MetricSources = {};
  /**
   * Each method's counts, kept here as plain numbers and handed to prom-client when scraped (each
   * counter's `collect`): prom-client validates and hashes the labels of every increment, which cost
   * a cheap call (a batch of four state reads) 3 µs. The duration histogram is prom-client's own.
   */
  private readonly perMethod = new Map<string, MethodCounts>();
  private readonly creditsByKey = new Map<string, { inc(value: number): void }>();
  /** One gate for every body: it keeps nothing of its own. */
  private readonly callGate = {
    admit: (calls: readonly Call[]): null => {
      for (const call of calls) this.countsOf(call.method).started++;
      return null;
    },
    answered: (call: Call, code: number | null, ms: number): void => {
      const counts = this.countsOf(call.method);
      if (code === null) counts.succeeded++;
      else {
        const label = codeLabel(code);
        counts.failed.set(label, (counts.failed.get(label) ?? 0) + 1);
      }
      counts.duration.observe(ms / 1000);
    },
    limited: (limit: LimitName): void => this.limitRefused(limit),
  };

  constructor(options: { defaultMetrics?: boolean } = {}) {
    const registers = [this.registry];
    this.started = new Counter({
      name: 'ethtrace_rpc_calls_started_total',
      help: 'JSON-RPC calls started, by method',
      labelNames: ['method'],
      registers,
      collect: () => this.handOver(this.started, (counts) => counts.started),
    });
    this.succeeded = new Counter({
      name: 'ethtrace_rpc_successful_calls_total',
      help: 'JSON-RPC calls answered with a result, by method',
      labelNames: ['method'],
      registers,
      collect: () => this.handOver(this.succeeded, (counts) => counts.succeeded),
    });
    this.failed = new Counter({
      name: 'ethtrace_rpc_failed_calls_total',
      help: 'JSON-RPC calls answered with an error, by method and error code',
      labelNames: ['method', 'code'],
      registers,
      collect: () => {
        this.failed.reset();
        for (const [method, counts] of this.perMethod)
          for (const [code, n] of counts.failed) this.failed.labels(method, code).inc(n);
      },
    });
    this.duration = new Histogram({
      name: 'ethtrace_rpc_call_duration_seconds',
      help: 'Time from a call starting to its answer, by method',
      labelNames: ['method'],
      // From a cached read (well under a millisecond) to a trace at the execution deadline (5 s).
      buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers,
    });
    this.connections = new Gauge({
      name: 'ethtrace_connections_open',
      help: 'Open client connections, by transport (HTTP sockets, WebSockets)',
      labelNames: ['transport'],
      registers,
    });
    this.connectionsOpened = new Counter({
      name: 'ethtrace_connections_opened_total',
      help: 'Client connections opened, by transport',
      labelNames: ['transport'],
      registers,
    });
    this.credits = new Counter({
      name: 'ethtrace_key_credits_total',
      help: 'Credits spent, by key name',
      labelNames: ['key'],
      registers,
    });
    this.keyRefusals = new Counter({
      name: 'ethtrace_key_refusals_total',
      help: "Calls refused by a key's settings, by key name and kind (rate, day, allowlist)",
      labelNames: ['key', 'kind'],
      registers,
    });
    this.limitRefusals = new Counter({
      name: 'ethtrace_limit_refusals_total',
      help: 'Requests, connections or calls refused by an abuse limit (README, Limits), by limit',
      labelNames: ['limit'],
      registers,
    });
    // Failures caught and gone past (src/core/caught.ts), counted there since the layers that catch
    // them cannot reach this registry; every site shows, at 0 until it catches one.
    const caughtErrors: Counter<'site'> = new Counter({
      name: 'ethtrace_caught_errors_total',
      help: 'Failures caught and gone past (logged as they happened), by where they were caught',
      labelNames: ['site'],
      registers,
      collect: () => {
        caughtErrors.reset();
        const counts = caughtCounts();
        for (const site of CAUGHT_SITES) caughtErrors.labels(site).inc(counts.get(site) ?? 0);
      },
    });
    // Every limit shows, at 0 until it refuses something: a rate of an absent series is no rate.
    for (const limit of LIMIT_NAMES) this.limitRefusals.labels(limit).inc(0);
    for (const transport of ['http', 'ws']) this.connections.labels(transport).set(0);
    this.collected();
    if (options.defaultMetrics !== false) collectDefaultMetrics({ register: this.registry });
  }

  /** The method table's names: the only method labels (others are "other"). */
  knowMethods(methods: Iterable<string>): void {
    this.methods = new Set(methods);
  }

  /** The parts read at scrape time (given once the app holding them is built). */
  readFrom(sources: MetricSources): void {
    if (sources.sharedLimits && !this.sources.sharedLimits) this.sharedLimitsGauges();
    if (sources.keysDatabase && !this.sources.keysDatabase) this.keysDatabaseGauges();
    if (sources.usageDatabase && !this.sources.usageDatabase) this.usageDatabaseGauges();
    this.sources = { ...this.sources, ...sources };
  }

  /**
   * Made only for a process whose limits are shared (--processes, --redis), so that a server without
   * them shows no `ethtrace_shared_limits_up 0`.
   */
  private sharedLimitsGauges(): void {
    const registers = [this.registry];
    const sources = () => this.sources;
    new Gauge({
      name: 'ethtrace_shared_limits_up',
      help: 'Whether the shared limits (Redis, or the primary process) answer: 1, or 0 while requests are admitted without their limits',
      registers,
      aggregator: 'min',
      collect() {
        const shared = sources().sharedLimits?.();
        if (shared) this.set(shared.up ? 1 : 0);
      },
    });
    new Gauge({
      name: 'ethtrace_shared_limits_outages_total',
      help: 'Times the shared limits could not be reached (each outage once, as it began)',
      registers,
      collect() {
        const shared = sources().sharedLimits?.();
        if (shared) this.set(shared.outages);
      },
    });
    new Gauge({
      name: 'ethtrace_shared_limits_unchecked_total',
      help: 'Requests admitted without their limits because the shared limits could not be reached',
      registers,
      collect() {
        const shared = sources().sharedLimits?.();
        if (shared) this.set(shared.unchecked);
      },
    });
  }

  /**
   * A maker of gauges read from one health record at each scrape (none while the source has none);
   * `min` for an up/down gauge, so that one process down shows the whole host down.
   */
  private healthGauge<H>(source: () => H | null | undefined) {
    const registers = [this.registry];
    return (name: string, help: string, value: (health: H) => number, aggregator?: 'min') =>
      new Gauge({
        name,
        help,
        registers,
        ...(aggregator ? { aggregator } : {}),
        collect() {
          const health = source();
          if (health) this.set(value(health));
        },
      });
  }

  /** Made only for a process whose keys are in a shared database (`--database`). */
  private keysDatabaseGauges(): void {
    const gauge = this.healthGauge(() => this.sources.keysDatabase?.());
    gauge(
      'ethtrace_keys_database_up',
      'Whether the keys database answers and its changes are heard: 1, or 0 while the keys last read are served',
      (k) => (k.up ? 1 : 0),
      'min',
    );
    gauge(
      'ethtrace_keys_database_outages_total',
      'Times the keys database was lost (each outage once, as it began)',
      (k) => k.outages,
    );
    gauge(
      'ethtrace_keys_database_failed_reads_total',
      'Re-reads of the keys from the database that failed (the keys known are kept)',
      (k) => k.failedReads,
    );
    gauge(
      'ethtrace_database_statement_timeouts_total',
      'Statements the database cut at the statement timeout (--database-statement-timeout)',
      (k) => k.statementTimeouts,
    );
  }

  /** Made only for a process whose usage goes to a shared database (`--database`). */
  private usageDatabaseGauges(): void {
    const registers = [this.registry];
    const sources = () => this.sources;
    const gauge = this.healthGauge(() => this.sources.usageDatabase?.());
    gauge(
      'ethtrace_usage_database_up',
      'Whether usage is written to the database: 1, or 0 while it waits in memory',
      (h) => (h.up ? 1 : 0),
      'min',
    );
    gauge(
      'ethtrace_usage_database_buffered_rows',
      'Rows of usage waiting to be written to the database (--usage-buffer-rows bounds them)',
      (h) => h.buffered,
    );
    gauge(
      'ethtrace_usage_database_dropped_requests_total',
      'Requests whose usage was dropped because the rows waiting for the database reached their bound',
      (h) => h.dropped,
    );
    gauge(
      'ethtrace_usage_database_flushes_total',
      'Batches of usage written to the database',
      (h) => h.flushes,
    );
    gauge(
      'ethtrace_usage_database_outages_total',
      'Times usage could not be written to the database (each outage once, as it began)',
      (h) => h.outages,
    );
    // The service's figures are the same in every process: combined as the largest, not added.
    const service = (
      name: string,
      help: string,
      label: 'host' | 'key',
      part: 'hosts' | 'keys',
      field: 'requests' | 'credits',
    ) =>
      new Gauge({
        name,
        help,
        labelNames: [label],
        registers,
        aggregator: 'max',
        async collect() {
          this.reset();
          const read = sources().serviceUsage;
          if (!read) return;
          // A database that cannot be read leaves the series out of this scrape; its outage is told
          // by ethtrace_usage_database_up and the log.
          const usage = await read().catch(() => null);
          for (const t of usage?.[part] ?? []) this.set({ [label]: t.name }, t[field]);
        },
      });
    service(
      'ethtrace_service_requests_today',
      'Requests since 00:00 UTC on each host of the service, from the usage database',
      'host',
      'hosts',
      'requests',
    );
    service(
      'ethtrace_service_credits_today',
      'Credits since 00:00 UTC on each host of the service, from the usage database',
      'host',
      'hosts',
      'credits',
    );
    service(
      'ethtrace_service_key_credits_today',
      "Credits since 00:00 UTC of each key (by name) on all the service's hosts, from the usage database",
      'key',
      'keys',
      'credits',
    );
  }

  /** The Prometheus text of every metric. */
  text(): Promise<string> {
    return this.registry.metrics();
  }

  /** This process's figures, for the processes of a cluster to add up (`aggregateMetrics`). */
  parts(): Promise<unknown> {
    return this.registry.getMetricsAsJSON();
  }

  /** The label of a method: itself when the method table has it, else "other". */
  methodLabel(method: string): string {
    return this.methods.has(method) ? method : OTHER;
  }

  /** A gate (src/rpc/envelope.ts CallGate) that admits everything and counts each call and its outcome. */
  gate(): {
    admit(calls: readonly Call[]): null;
    answered(call: Call, code: number | null, ms: number): void;
    limited(limit: LimitName): void;
  } {
    return this.callGate;
  }

  /** A method's counts; unknown methods share the "other" counts (the map stays as small as the table). */
  private countsOf(method: string): MethodCounts {
    const known = this.perMethod.get(method);
    if (known !== undefined) return known;
    const label = this.methodLabel(method);
    let counts = this.perMethod.get(label);
    if (counts === undefined) {
      counts = { started: 0, succeeded: 0, failed: new Map(), duration: this.duration.labels(label) };
      this.perMethod.set(label, counts);
    }
    return counts;
  }

  /** One count kept here, as a prom-client counter by method (its `collect`, as it is scraped). */
  private handOver(counter: Counter<'method'>, count: (counts: MethodCounts) => number): void {
    counter.reset();
    for (const [method, counts] of this.perMethod) {
      const n = count(counts);
      if (n > 0) counter.labels(method).inc(n);
    }
  }

  limitRefused(limit: LimitName): void {
    this.limitRefusals.labels(limit).inc();
  }

  connectionOpened(transport: Transport): void {
    this.connections.labels(transport).inc();
    this.connectionsOpened.labels(transport).inc();
  }

  connectionClosed(transport: Transport): void {
    this.connections.labels(transport).dec();
  }

  /** Credits a key spent (src/transport/access/control.ts), by its name. */
  keyCredits(name: string, credits: number): void {
    if (credits <= 0) return;
    let series = this.creditsByKey.get(name);
    if (series === undefined) {
      // Key names come from the keys file, so the map is as bounded as the label set.
      series = this.credits.labels(name);
      this.creditsByKey.set(name, series);
    }
    series.inc(credits);
  }

  /** Calls a key's settings refused, by its name. */
  keyRefused(name: string, kind: KeyRefusalKind, calls: number): void {
    this.keyRefusals.labels(name, kind).inc(calls);
  }

  /** Gauges read from the app's parts when scraped. */
  private collected(): void {
    const registers = [this.registry];
    const sources = () => this.sources;
    new Gauge({
      name: 'ethtrace_pool_busy',
      help: 'EVM workers running a job',
      registers,
      collect() {
        const pool = sources().pool?.();
        if (pool) this.set(pool.busy);
      },
    });
    new Gauge({
      name: 'ethtrace_pool_queued',
      help: 'EVM jobs waiting for a worker',
      registers,
      collect() {
        const pool = sources().pool?.();
        if (pool) this.set(pool.queued);
      },
    });
    new Gauge({
      name: 'ethtrace_pool_workers',
      help: 'EVM worker threads the pool may run',
      registers,
      collect() {
        const pool = sources().pool?.();
        if (pool) this.set(pool.size);
      },
    });
    // Counts kept by the pool and the replay cache themselves, exposed as they stand (so not
    // prom-client Counters, which only count up from here); still monotonic, rate() applies.
    new Gauge({
      name: 'ethtrace_pool_timeouts_total',
      help: 'EVM jobs that ran past their deadline',
      registers,
      collect() {
        const pool = sources().pool?.();
        if (pool) this.set(pool.timeouts);
      },
    });
    new Gauge({
      name: 'ethtrace_inline_calls_total',
      help: 'eth_call and eth_estimateGas run on the answering thread: answered there, or stopped by their watchdog and run again on a worker',
      labelNames: ['outcome'],
      registers,
      collect() {
        const inline = sources().inlineCalls?.();
        if (!inline) return;
        this.set({ outcome: 'answered' }, inline.answered);
        this.set({ outcome: 'interrupted' }, inline.interrupted);
      },
    });
    new Gauge({
      name: 'ethtrace_replay_cache_hits_total',
      help: 'trace_ replays answered from the replay cache',
      registers,
      collect() {
        const cache = sources().replayCache?.();
        if (cache) this.set(cache.hits);
      },
    });
    new Gauge({
      name: 'ethtrace_replay_cache_misses_total',
      help: 'trace_ replays that had to execute their block',
      registers,
      collect() {
        const cache = sources().replayCache?.();
        if (cache) this.set(cache.executions);
      },
    });
    new Gauge({
      name: 'ethtrace_head_number',
      help: "The served chain's head block number",
      registers,
      aggregator: 'max',
      async collect() {
        const head = await sources().head?.();
        if (head) this.set(Number(head.number));
      },
    });
    new Gauge({
      name: 'ethtrace_head_age_seconds',
      help: "Seconds since the head block's timestamp",
      registers,
      aggregator: 'min',
      async collect() {
        const head = await sources().head?.();
        if (head) this.set(Math.max(0, Date.now() / 1000 - Number(head.timestamp)));
      },
    });
    new Gauge({
      name: 'ethtrace_follow_last_block',
      help: 'Following an upstream: the last block followed (executed, verified and stored)',
      registers,
      aggregator: 'max',
      collect() {
        const follow = sources().follow?.();
        if (follow?.head != null) this.set(Number(follow.head));
      },
    });
    new Gauge({
      name: 'ethtrace_follow_blocks_behind',
      help: "Following an upstream: blocks between the upstream's head as last seen and ours",
      registers,
      aggregator: 'min',
      collect() {
        const follow = sources().follow?.();
        if (follow?.head != null && follow.upstream != null)
          this.set(Math.max(0, Number(follow.upstream - follow.head)));
      },
    });
  }
}

/** A JSON-RPC error code as a label: the spec's and servers' range (-32768…-32000) and 3 (revert); else "other". */
export function codeLabel(code: number): string {
  return (Number.isInteger(code) && code >= -32768 && code <= -32000) || code === 3 ? String(code) : OTHER;
}

/**
 * The text of the figures of several processes (each one's `Metrics.parts()`), added up as each
 * metric's `aggregator` says (a sum unless it is declared otherwise).
 */
export function aggregateMetrics(parts: readonly unknown[]): Promise<string> {
  return AggregatorRegistry.aggregate(parts as MetricObjectWithValues<MetricValue<string>>[][]).metrics();
}
