/**
 * What the operator dashboard shows, in two forms: a snapshot, which is what one process knows and
 * can be added to the snapshots of other processes (`--processes N`: one per API process, gathered
 * over IPC and merged), and a view, the merged whole shaped for the page's charts.
 *
 * Everything in a snapshot is a count or a sum, so merging is addition: latency is kept as histogram
 * bucket counts (percentiles are computed only after merging, from the summed counts), and the pool
 * as per-slot values that add up across processes. The one exception is a key's busiest second,
 * which each process knows only for its own share of the key's traffic: merged, it is the sum of the
 * processes' busiest seconds, exact for one process and an upper bound for several.
 */

export const MINUTE_MS = 60_000;
export const DAY_MS = 24 * 60 * MINUTE_MS;

/** Upper bounds of the latency buckets, ms; a last bucket holds everything slower. */
export const LATENCY_BOUNDS_MS: readonly number[] = [
  0.25, 0.5, 1, 2, 5, 10, 25, 50, 100, 250, 500, 1_000, 2_500, 5_000, 10_000, 30_000,
];
export const LATENCY_BUCKETS = LATENCY_BOUNDS_MS.length + 1;

/** The ranges the page offers, in ms. */
export const RANGES = { '15m': 15 * MINUTE_MS, '1h': 60 * MINUTE_MS, '1d': DAY_MS } as const;
export type RangeName = keyof typeof RANGES;

/** One minute of calls: answered (ok or a JSON-RPC error) or refused by a key's limits or lists. */
export interface MinuteStats {
  /** The minute's start, ms since the epoch. */
  minute: number;
  requests: number;
  credits: number;
  ok: number;
  /** Answered with a JSON-RPC error. */
  errors: number;
  /** Refused before running: a rate or day limit (429) or an allow-list (403). */
  refused: number;
  /** Calls that did not succeed, by status: a JSON-RPC code (`-32601`) or `refused-rate`/`-day`/`-allowlist`. */
  failures: Record<string, number>;
  /** Answered calls per LATENCY_BOUNDS_MS bucket (refusals take no time worth showing). */
  latency: number[];
}

export interface MethodStats {
  requests: number;
  credits: number;
  errors: number;
  refused: number;
}

export interface KeyLimitsView {
  creditsPerSecond: number | null;
  burst: number;
  creditsPerDay: number | null;
}

/** One key's use in the snapshot's range, by its name: the key itself is never in a snapshot. */
export interface KeyStats {
  name: string;
  requests: number;
  credits: number;
  refused: number;
  /** Credits admitted in the key's busiest second of the range (see the module's note on merging). */
  peakCreditsPerSecond: number;
  /** Credits spent since 00:00 UTC, whatever the range: the day quota's measure. */
  creditsToday: number;
  limits: KeyLimitsView;
}

/** The execution pool over time: per slot of `stepMs`, its busiest sample (or, per minute, the mean). */
export interface PoolSeries {
  stepMs: number;
  /** Slot starts, ms. */
  slots: number[];
  busy: number[];
  queued: number[];
  size: number[];
}

export interface HeadStats {
  number: number;
  /** The head block's timestamp, seconds. */
  timestamp: number;
}

export interface DashboardSnapshot {
  /** When it was taken, and the start of the time it covers (ms). */
  at: number;
  since: number;
  /** Minutes with traffic, oldest first. */
  minutes: MinuteStats[];
  methods: Record<string, MethodStats>;
  /** By key id (names can be changed; ids cannot). */
  keys: Record<string, KeyStats>;
  pool: PoolSeries;
  head: HeadStats | null;
}

export function emptyMinute(minute: number): MinuteStats {
  return {
    minute,
    requests: 0,
    credits: 0,
    ok: 0,
    errors: 0,
    refused: 0,
    failures: {},
    latency: new Array<number>(LATENCY_BUCKETS).fill(0),
  };
}

function addInto(into: Record<string, number>, from: Record<string, number>): void {
  for (const [k, v] of Object.entries(from)) into[k] = (into[k] ?? 0) + v;
}

/** The snapshots of several processes as one (the same shape, so a merge of merges is fine). */
export function mergeSnapshots(list: readonly DashboardSnapshot[]): DashboardSnapshot {
  const minutes = new Map<number, MinuteStats>();
  const methods: Record<string, MethodStats> = {};
  const keys: Record<string, KeyStats> = {};
  const pool = new Map<number, { busy: number; queued: number; size: number }>();
  let at = 0;
  let since = Number.POSITIVE_INFINITY;
  let stepMs = 0;
  let head: HeadStats | null = null;
  for (const s of list) {
    at = Math.max(at, s.at);
    since = Math.min(since, s.since);
    for (const m of s.minutes) {
      let into = minutes.get(m.minute);
      if (!into) {
        into = emptyMinute(m.minute);
        minutes.set(m.minute, into);
      }
      into.requests += m.requests;
      into.credits += m.credits;
      into.ok += m.ok;
      into.errors += m.errors;
      into.refused += m.refused;
      addInto(into.failures, m.failures);
      for (let i = 0; i < LATENCY_BUCKETS; i++)
        into.latency[i] = (into.latency[i] ?? 0) + (m.latency[i] ?? 0);
    }
    for (const [name, m] of Object.entries(s.methods)) {
      const into = methods[name] ?? { requests: 0, credits: 0, errors: 0, refused: 0 };
      into.requests += m.requests;
      into.credits += m.credits;
      into.errors += m.errors;
      into.refused += m.refused;
      methods[name] = into;
    }
    for (const [id, k] of Object.entries(s.keys)) {
      const into = keys[id];
      if (!into) {
        keys[id] = { ...k, limits: { ...k.limits } };
        continue;
      }
      into.requests += k.requests;
      into.credits += k.credits;
      into.refused += k.refused;
      into.peakCreditsPerSecond += k.peakCreditsPerSecond;
      into.creditsToday += k.creditsToday;
    }
    // Every process samples on the same slot boundaries (multiples of the step), so slots line up.
    stepMs = Math.max(stepMs, s.pool.stepMs);
    s.pool.slots.forEach((slot, i) => {
      const into = pool.get(slot) ?? { busy: 0, queued: 0, size: 0 };
      into.busy += s.pool.busy[i] ?? 0;
      into.queued += s.pool.queued[i] ?? 0;
      into.size += s.pool.size[i] ?? 0;
      pool.set(slot, into);
    });
    if (s.head && (head === null || s.head.number > head.number)) head = { ...s.head };
  }
  const slots = [...pool.keys()].sort((a, b) => a - b);
  return {
    at,
    since: Number.isFinite(since) ? since : at,
    minutes: [...minutes.values()].sort((a, b) => a.minute - b.minute),
    methods,
    keys,
    pool: {
      stepMs,
      slots,
      busy: slots.map((s) => pool.get(s)?.busy ?? 0),
      queued: slots.map((s) => pool.get(s)?.queued ?? 0),
      size: slots.map((s) => pool.get(s)?.size ?? 0),
    },
    head,
  };
}

/**
 * The `q` quantile (0..1) of a latency histogram, ms, interpolated linearly within its bucket (as
 * Prometheus's histogram_quantile does); null without observations. A quantile that falls in the
 * last, open bucket is its lower bound: "at least this".
 */
export function quantile(counts: readonly number[], q: number): number | null {
  let total = 0;
  for (const c of counts) total += c;
  if (total === 0) return null;
  const rank = q * total;
  let seen = 0;
  for (let i = 0; i < counts.length; i++) {
    const c = counts[i] ?? 0;
    if (c > 0 && seen + c >= rank) {
      const lower = i === 0 ? 0 : (LATENCY_BOUNDS_MS[i - 1] ?? 0);
      const upper = LATENCY_BOUNDS_MS[i];
      if (upper === undefined) return lower;
      return lower + ((upper - lower) * (rank - seen)) / c;
    }
    seen += c;
  }
  return LATENCY_BOUNDS_MS[LATENCY_BOUNDS_MS.length - 1] ?? null;
}

/** What `/dashboard/data` sends: one merged snapshot shaped for the charts, every series zero-filled. */
/** One host's usage over the range, from the usage database (`--database`). */
export interface HostTotals {
  host: string;
  requests: number;
  credits: number;
  errors: number;
  refused: number;
}

export interface DashboardView {
  range: RangeName;
  now: number;
  since: number;
  /** Minute starts, seconds (uPlot's time unit). */
  time: number[];
  requests: number[];
  credits: number[];
  ok: number[];
  errors: number[];
  refused: number[];
  latency: {
    /** Observations per minute (the answered calls). */
    count: number[];
    p50: Array<number | null>;
    p90: Array<number | null>;
    p99: Array<number | null>;
  };
  /** Statuses of failures, most frequent first, each with its count per minute. */
  failures: Array<{ status: string; total: number; counts: number[] }>;
  /** The 20 methods with the most requests, most first. */
  methods: Array<{ name: string } & MethodStats>;
  /** 20 keys: those refused most first, then by credits. */
  keys: KeyStats[];
  pool: { stepMs: number; time: number[]; busy: number[]; queued: number[]; size: number[] };
  head: { number: number; timestamp: number; ageSeconds: number } | null;
  /**
   * With `--database`: every host of the service over the range, from the usage database (the rest
   * of the view is this host's); `error` when the database could not be read.
   */
  service?: { hosts: HostTotals[]; error: string | null };
  totals: {
    requests: number;
    credits: number;
    errors: number;
    refused: number;
    p50: number | null;
    p99: number | null;
  };
}

/** Methods and keys a view lists, and the length a method's name is cut to. */
const MAX_ROWS = 20;
const MAX_NAME_CHARS = 80;

export function viewOf(snapshot: DashboardSnapshot, range: RangeName, now: number): DashboardView {
  const first = Math.floor((now - RANGES[range]) / MINUTE_MS) * MINUTE_MS + MINUTE_MS;
  const last = Math.floor(now / MINUTE_MS) * MINUTE_MS;
  const byMinute = new Map(snapshot.minutes.map((m) => [m.minute, m]));
  const minutes: MinuteStats[] = [];
  for (let m = first; m <= last; m += MINUTE_MS) minutes.push(byMinute.get(m) ?? emptyMinute(m));
  const all = emptyMinute(0);
  const failureTotals: Record<string, number> = {};
  for (const m of minutes) {
    all.requests += m.requests;
    all.credits += m.credits;
    all.errors += m.errors;
    all.refused += m.refused;
    addInto(failureTotals, m.failures);
    m.latency.forEach((c, i) => {
      all.latency[i] = (all.latency[i] ?? 0) + c;
    });
  }
  const failures = Object.entries(failureTotals)
    .sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]))
    .map(([status, total]) => ({ status, total, counts: minutes.map((m) => m.failures[status] ?? 0) }));
  const seconds = (ms: number) => Math.floor(ms / 1000);
  const p = snapshot.pool;
  const poolFrom = p.slots.findIndex((s) => s >= now - RANGES[range]);
  const from = poolFrom < 0 ? p.slots.length : poolFrom;
  return {
    range,
    now,
    since: first,
    time: minutes.map((m) => seconds(m.minute)),
    requests: minutes.map((m) => m.requests),
    credits: minutes.map((m) => m.credits),
    ok: minutes.map((m) => m.ok),
    errors: minutes.map((m) => m.errors),
    refused: minutes.map((m) => m.refused),
    latency: {
      count: minutes.map((m) => m.latency.reduce((a, b) => a + b, 0)),
      p50: minutes.map((m) => quantile(m.latency, 0.5)),
      p90: minutes.map((m) => quantile(m.latency, 0.9)),
      p99: minutes.map((m) => quantile(m.latency, 0.99)),
    },
    failures,
    // Bounded, as method names are the clients' (an unknown method is counted under its name too).
    methods: Object.entries(snapshot.methods)
      .map(([name, m]) => ({
        ...m,
        name: name.length > MAX_NAME_CHARS ? `${name.slice(0, MAX_NAME_CHARS)}…` : name,
      }))
      .sort((a, b) => b.requests - a.requests || a.name.localeCompare(b.name))
      .slice(0, MAX_ROWS),
    // Keys being refused first: those are the ones an operator looks for.
    keys: Object.values(snapshot.keys)
      .sort((a, b) => b.refused - a.refused || b.credits - a.credits || a.name.localeCompare(b.name))
      .slice(0, MAX_ROWS),
    pool: {
      stepMs: p.stepMs,
      time: p.slots.slice(from).map(seconds),
      busy: p.busy.slice(from),
      queued: p.queued.slice(from),
      size: p.size.slice(from),
    },
    head: snapshot.head && {
      ...snapshot.head,
      ageSeconds: Math.max(0, Math.round(now / 1000 - snapshot.head.timestamp)),
    },
    totals: {
      requests: all.requests,
      credits: all.credits,
      errors: all.errors,
      refused: all.refused,
      p50: quantile(all.latency, 0.5),
      p99: quantile(all.latency, 0.99),
    },
  };
}
