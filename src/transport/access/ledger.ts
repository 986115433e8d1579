import {
  type Bucket,
  type DayCount,
  fullBucket,
  giveBack,
  grant,
  type KeyLimits,
  nextUtcMidnight,
  RateWindow,
  today,
  utcDay,
} from './bucket.ts';

/**
 * The rate and day state of keys, behind one small interface so that it can live in this process
 * (MemoryLedger, today), in the primary process of a cluster (over IPC), or in Redis.
 *
 * ## How several processes share limits without a round trip per request
 *
 * The state of a key is one token bucket (credits per second, refilled continuously, `burst` deep)
 * and one day count (credits spent since 00:00 UTC). With several API processes it is kept in one
 * place, the *shared counters* (SharedCounters below: the primary over IPC, or Redis), and each
 * process holds *leases* taken out of it (LeasingLedger):
 *
 * - a rate lease: tokens taken from the shared bucket in a chunk (LEASE_CHUNK_MS worth of the key's
 *   rate, at least the body's cost), spent locally, and given back if unused after LEASE_MS;
 * - a day reservation: credits added to the shared day count in a chunk (DAY_CHUNK of the quota,
 *   at least the body's cost), spent locally, the rest given back at close.
 *
 * A body whose cost the local leases cover is decided in the process, synchronously; otherwise the
 * process makes one `exchange` with the shared counters, which in one atomic step takes back what
 * the process returns, adds what it spent unrefusably (subscription events), and grants new leases
 * or refuses. Tokens are only ever taken out of the shared bucket, never created by a process, so
 * the processes together never exceed a key's day, and never spend more than the bucket gave out;
 * a lease's tokens may be spent up to LEASE_MS after they left it, so over a short window the
 * processes may spend up to one chunk each (LEASE_CHUNK_MS of the rate) above what a single bucket
 * would have let through in that window. The other cost of leasing: tokens one process holds are not
 * available to another until spent or given back, so a key spread over N processes may be refused
 * up to N chunks early, for at most LEASE_MS. A process that dies loses its leases (at most a chunk
 * each), which errs the safe way. After a rate refusal a process refuses bodies its lease cannot pay
 * for LEASE_CHUNK_MS (or the refusal's retry time, if longer) without asking again, so a client far
 * over its rate costs the shared store about one exchange per chunk, not one per request.
 *
 * ## Writing a backend
 *
 * Implement SharedCounters.exchange as one atomic step with `applyExchange`'s semantics (it is the
 * reference: MemoryCounters runs it, and ledger.test.ts checks LeasingLedger over it):
 * - Redis: one Lua script (EVALSHA) per exchange over a hash per key
 *   (`tokens`, `at`, `day`, `used`), taking `now` from Redis's own `TIME` so that processes with
 *   skewed clocks agree; the hash expires a day after its last use.
 * - Cluster IPC: the primary keeps a MemoryCounters and answers each worker's exchange message.
 * Usage (usage.ts) needs no backend: each process appends its own file.
 */

export type Decision =
  | { ok: true }
  | {
      ok: false;
      reason: 'rate';
      /** When the body would pass, at the key's rate. */
      retryAfterMs: number;
      /** Credits per second asked of this process over the last second, the refused body included. */
      currentRps: number;
      allowedRps: number;
    }
  | { ok: false; reason: 'day'; used: number; allowed: number; resetAt: number };

export const ADMITTED: Decision = { ok: true };

export interface Ledger {
  /**
   * Admits a body of `credits` for a key, counting them against its second and its day, or refuses
   * it and counts nothing. Synchronous when decided locally, a promise when the shared state is asked.
   */
  take(keyId: string, credits: number, limits: KeyLimits): Decision | Promise<Decision>;
  /**
   * Counts credits that were spent without asking (subscription events, sent as blocks come) against
   * the key's day; they are never refused, but they exhaust the day.
   */
  charge(keyId: string, credits: number, limits: KeyLimits): void;
  /** Whether the key has spent its day (its WebSockets are closed, as Infura does). */
  exhausted(keyId: string, limits: KeyLimits): boolean;
  /** Gives back what this process holds, and stops its timers. */
  close(): Promise<void>;
}

// --- the shared state and its one atomic step ----------------------------------------------------

/** The state of one key in the shared counters. */
export interface SharedKeyState {
  bucket: Bucket;
  /** Whether the bucket was made for a rate: a key given one by `keys update` starts full. */
  rated: boolean;
  day: DayCount;
}

/** What a process asks of the shared counters in one exchange (all in credits). */
export interface ExchangeAsk {
  /** Rate tokens needed now (the body; 0 when the local lease covers it) and wanted (a chunk). */
  rateNeed: number;
  rateWant: number;
  /** Day credits needed now (0 when the local reservation covers it) and wanted (a chunk). */
  dayNeed: number;
  dayWant: number;
  /** Unused tokens of an expired lease, back into the bucket (never past its burst). */
  rateReturn: number;
  /** Unused day credits given back (at close, or when a reservation is renewed). */
  dayReturn: number;
  /** Credits spent meanwhile without a reservation (events; keys without a day quota). */
  charged: number;
}

export type ExchangeResult =
  | { ok: true; rate: number; day: number; dayUsed: number }
  | { ok: false; reason: 'rate'; retryAfterMs: number; dayUsed: number }
  | { ok: false; reason: 'day'; dayUsed: number };

/**
 * The exchange, on one key's state: returns and charges first, then the day (a body the day cannot
 * hold is refused whole), then the rate. A refusal grants and takes nothing.
 */
export function applyExchange(
  state: SharedKeyState,
  ask: ExchangeAsk,
  limits: KeyLimits,
  now: number,
): ExchangeResult {
  const day = today(state.day, now);
  day.used = Math.max(0, day.used - ask.dayReturn) + ask.charged;
  const rated = limits.creditsPerSecond !== null;
  if (rated && !state.rated) state.bucket = fullBucket(limits, now);
  state.rated = rated;
  if (rated && ask.rateReturn > 0) giveBack(state.bucket, ask.rateReturn, limits, now);
  const perDay = limits.creditsPerDay;
  if (perDay !== null && ask.dayNeed > 0 && day.used + ask.dayNeed > perDay)
    return { ok: false, reason: 'day', dayUsed: day.used };
  let rate = 0;
  if (rated && ask.rateNeed > 0) {
    const g = grant(state.bucket, ask.rateNeed, Math.max(ask.rateNeed, ask.rateWant), limits, now);
    if ('retryAfterMs' in g)
      return { ok: false, reason: 'rate', retryAfterMs: g.retryAfterMs, dayUsed: day.used };
    rate = g.granted;
  }
  let reserved = 0;
  if (ask.dayNeed > 0) {
    const room = perDay === null ? ask.dayNeed : perDay - day.used;
    reserved = Math.max(ask.dayNeed, Math.min(Math.max(ask.dayNeed, ask.dayWant), room));
    day.used += reserved;
  }
  return { ok: true, rate, day: reserved, dayUsed: day.used };
}

/** A key's shared state when it is first seen: a full bucket, nothing spent today. */
export function newKeyState(limits: KeyLimits, now: number): SharedKeyState {
  return {
    bucket: fullBucket(limits, now),
    rated: limits.creditsPerSecond !== null,
    day: { day: utcDay(now), used: 0 },
  };
}

/** Where the state of keys is kept for several processes: the primary over IPC, or Redis. */
export interface SharedCounters {
  /** One atomic exchange on a key's state (`applyExchange` is its semantics). */
  exchange(keyId: string, ask: ExchangeAsk, limits: KeyLimits): Promise<ExchangeResult>;
  /** What they are, for log lines and `/ready` (`redis redis://host:6379/0`); no secret in it. */
  readonly description?: string;
  /**
   * Resolves when they answer, rejects when they cannot be reached: asked while no exchange says so
   * (an outage noticed, and its end, without waiting for a request of a key with limits).
   */
  ping?(): Promise<void>;
}

/** How the shared counters are doing, as a LeasingLedger saw them: for `/ready` and the metrics. */
export interface SharedHealth {
  up: boolean;
  /** Outages so far, each counted once, when it began. */
  outages: number;
  /** Bodies admitted without their limits because the shared counters could not be asked. */
  unchecked: number;
  /** Why, and since when (ms), they cannot be reached; null while they answer. */
  down: { since: number; error: string } | null;
}

/** Shared counters in memory: the reference backend, and what a cluster's primary would keep. */
export class MemoryCounters implements SharedCounters {
  private readonly keys = new Map<string, SharedKeyState>();

  constructor(private readonly now: () => number = Date.now) {}

  exchangeNow(keyId: string, ask: ExchangeAsk, limits: KeyLimits): ExchangeResult {
    const now = this.now();
    let state = this.keys.get(keyId);
    if (!state) {
      state = newKeyState(limits, now);
      this.keys.set(keyId, state);
    }
    return applyExchange(state, ask, limits, now);
  }

  async exchange(keyId: string, ask: ExchangeAsk, limits: KeyLimits): Promise<ExchangeResult> {
    return this.exchangeNow(keyId, ask, limits);
  }
}

// --- one process alone ------------------------------------------------------------------------------

/** Per key, what this process alone saw, for `current_rps` and for closing sockets. */
interface LocalKey {
  window: RateWindow;
  /**
   * The UTC day on which a body was refused for the day: the key is spent until 00:00 UTC, and
   * every body is refused (a cheaper one would still fit, but a key whose WebSockets were closed
   * for its day is not half open on HTTP).
   */
  refusedDay: number;
  dayUsed: number;
}

/** An exchange that asks for nothing and returns nothing: what a key's state is now. */
export const NO_ASK: ExchangeAsk = {
  rateNeed: 0,
  rateWant: 0,
  dayNeed: 0,
  dayWant: 0,
  rateReturn: 0,
  dayReturn: 0,
  charged: 0,
};

/** The ledger of a single process: exact, synchronous, the shared counters' arithmetic in memory. */
export class MemoryLedger implements Ledger {
  private readonly counters: MemoryCounters;
  private readonly local = new Map<string, LocalKey>();

  constructor(private readonly now: () => number = Date.now) {
    this.counters = new MemoryCounters(now);
  }

  take(keyId: string, credits: number, limits: KeyLimits): Decision {
    const local = localOf(this.local, keyId);
    const now = this.now();
    if (limits.creditsPerDay !== null && local.refusedDay === utcDay(now))
      return refusal({ ok: false, reason: 'day', dayUsed: local.dayUsed }, local, credits, limits, now);
    const result = this.counters.exchangeNow(
      keyId,
      { ...NO_ASK, rateNeed: credits, rateWant: credits, dayNeed: credits, dayWant: credits },
      limits,
    );
    local.dayUsed = result.dayUsed;
    if (result.ok) {
      local.window.add(credits, now);
      return ADMITTED;
    }
    return refusal(result, local, credits, limits, now);
  }

  charge(keyId: string, credits: number, limits: KeyLimits): void {
    const local = localOf(this.local, keyId);
    local.window.add(credits, this.now());
    local.dayUsed = this.counters.exchangeNow(keyId, { ...NO_ASK, charged: credits }, limits).dayUsed;
  }

  exhausted(keyId: string, limits: KeyLimits): boolean {
    const local = this.local.get(keyId);
    if (!local || limits.creditsPerDay === null) return false;
    const result = this.counters.exchangeNow(keyId, NO_ASK, limits);
    return local.refusedDay === utcDay(this.now()) || result.dayUsed >= limits.creditsPerDay;
  }

  async close(): Promise<void> {}
}

function localOf(map: Map<string, LocalKey>, keyId: string): LocalKey {
  let local = map.get(keyId);
  if (!local) {
    local = { window: new RateWindow(), refusedDay: -1, dayUsed: 0 };
    map.set(keyId, local);
  }
  return local;
}

function refusal(
  result: Exclude<ExchangeResult, { ok: true }>,
  local: LocalKey,
  credits: number,
  limits: KeyLimits,
  now: number,
): Decision {
  if (result.reason === 'day') {
    local.refusedDay = utcDay(now);
    return {
      ok: false,
      reason: 'day',
      used: result.dayUsed,
      allowed: limits.creditsPerDay ?? 0,
      resetAt: nextUtcMidnight(now),
    };
  }
  return {
    ok: false,
    reason: 'rate',
    retryAfterMs: result.retryAfterMs,
    currentRps: local.window.sum(now, credits),
    allowedRps: limits.creditsPerSecond ?? 0,
  };
}

// --- several processes: leases over shared counters ---------------------------------------------

/** How much of a key's rate one lease takes: 100 ms worth, so a lease is spent or back within it. */
export const LEASE_CHUNK_MS = 100;
/** Unused lease tokens go back to the shared bucket after this, for the other processes. */
export const LEASE_MS = 250;
/** A day reservation takes this share of the quota: a process that dies loses at most this. */
export const DAY_CHUNK = 0.001;
/**
 * The shared counters are pinged when no exchange has been answered for this long (and during an
 * outage, this often), so an outage and its end are seen within it even when no request asks.
 */
export const PROBE_MS = 1000;

interface LeasedKey extends LocalKey {
  limits: KeyLimits;
  tokens: number;
  expiresAt: number;
  /** Tokens of expired leases, to give back at the next exchange. */
  returning: number;
  /** The UTC day `reserved` belongs to: a reservation dies with its day (the shared count resets). */
  reservedDay: number;
  reserved: number;
  charged: number;
  /**
   * After a rate refusal, until when bodies the local lease cannot pay are refused here without
   * asking (see the top of this file), and the cost of the body that was refused.
   */
  blockedUntil: number;
  blockedNeed: number;
  inflight: Promise<unknown> | null;
}

/**
 * A ledger over shared counters: decides locally while its leases last, exchanges with the shared
 * counters when they do not (see the top of this file). A shared store that cannot be reached
 * admits: limits bound cost; keys, secrets and allow-lists still hold. An outage is told through
 * `warn` twice, when it begins and when it ends (with how long it lasted and how many bodies were
 * admitted without their limits), not once per request: a line per request buried everything else
 * (20,244 lines in 5 s) at info, and a warning per request would do the same at warn.
 */
export class LeasingLedger implements Ledger {
  private readonly keys = new Map<string, LeasedKey>();
  private readonly timer: NodeJS.Timeout;
  /** Exchanges made, for tests and metrics: most bodies should need none. */
  exchanges = 0;
  private outages = 0;
  private unchecked = 0;
  /** The outage under way: since when, why, and the bodies admitted unchecked during it. */
  private down: { since: number; error: string; unchecked: number } | null = null;
  /** When the shared counters last answered or failed (an exchange or a ping). */
  private lastHeard: number;
  private probing = false;

  constructor(
    private readonly shared: SharedCounters,
    private readonly now: () => number = Date.now,
    private readonly warn: (line: string) => void = () => {},
  ) {
    this.lastHeard = now();
    this.timer = setInterval(() => {
      void this.flush(false);
      this.probe();
    }, LEASE_MS);
    this.timer.unref();
  }

  /** Whether the shared counters answer, and what their outages cost. */
  health(): SharedHealth {
    const down = this.down && { since: this.down.since, error: this.down.error };
    return { up: down === null, outages: this.outages, unchecked: this.unchecked, down };
  }

  /** Why `/ready` should call the service degraded, or null while the shared counters answer. */
  problem(): string | null {
    if (this.down === null) return null;
    return `${this.what()} cannot be reached since ${new Date(this.down.since).toISOString()} (${this.down.error}): requests are admitted without their rate and day limits`;
  }

  take(keyId: string, credits: number, limits: KeyLimits): Decision | Promise<Decision> {
    const s = this.key(keyId, limits);
    if (s.inflight) return s.inflight.then(() => this.take(keyId, credits, limits));
    const now = this.now();
    if (limits.creditsPerDay !== null && s.refusedDay === utcDay(now))
      return refusal({ ok: false, reason: 'day', dayUsed: s.dayUsed }, s, credits, limits, now);
    this.expire(s, now);
    const rateOk = limits.creditsPerSecond === null || s.tokens >= credits;
    const dayOk = limits.creditsPerDay === null || s.reserved >= credits;
    if (rateOk && dayOk) {
      this.spend(s, credits, limits, true, true, now);
      return ADMITTED;
    }
    if (!rateOk && now < s.blockedUntil && credits >= s.blockedNeed)
      return refusal(
        { ok: false, reason: 'rate', retryAfterMs: s.blockedUntil - now, dayUsed: s.dayUsed },
        s,
        credits,
        limits,
        now,
      );
    if (this.down !== null) {
      // Known to be down: admitted at once rather than after another failed exchange (a Redis that
      // hangs takes its command timeout to fail); the probe (PROBE_MS) says when they are back.
      this.admitUnchecked(s, credits, limits, rateOk, dayOk, now);
      return ADMITTED;
    }
    const perSecond = limits.creditsPerSecond ?? 0;
    const ask: ExchangeAsk = {
      rateNeed: rateOk ? 0 : credits,
      rateWant: rateOk ? 0 : Math.max(credits, (perSecond * LEASE_CHUNK_MS) / 1000),
      // The remainder of a lease too small for this body goes back with the exchange.
      rateReturn: s.returning + (rateOk ? 0 : s.tokens),
      dayNeed: dayOk ? 0 : credits,
      dayWant: dayOk ? 0 : Math.max(credits, (limits.creditsPerDay ?? 0) * DAY_CHUNK),
      dayReturn: dayOk ? 0 : s.reserved,
      charged: s.charged,
    };
    s.returning = 0;
    s.charged = 0;
    if (!rateOk) s.tokens = 0;
    if (!dayOk) s.reserved = 0;
    const done = this.exchange(keyId, s, ask).then((result): Decision => {
      const at = this.now();
      if (result === null) {
        this.admitUnchecked(s, credits, limits, rateOk, dayOk, at);
        return ADMITTED;
      }
      if (!result.ok) {
        if (result.reason === 'rate') {
          // Until a whole chunk has refilled, not merely this body: at saturation, a process then
          // asks about LEASE_CHUNK_MS apart instead of once per body that would just fit.
          s.blockedUntil = at + Math.max(result.retryAfterMs, LEASE_CHUNK_MS);
          s.blockedNeed = credits;
        }
        return refusal(result, s, credits, limits, at);
      }
      if (!rateOk) {
        s.tokens = result.rate;
        s.expiresAt = at + LEASE_MS;
      }
      if (!dayOk) {
        s.reserved = result.day;
        s.reservedDay = utcDay(at);
      }
      this.spend(s, credits, limits, true, true, at);
      return ADMITTED;
    });
    s.inflight = done.finally(() => {
      s.inflight = null;
    });
    return done;
  }

  charge(keyId: string, credits: number, limits: KeyLimits): void {
    const s = this.key(keyId, limits);
    s.window.add(credits, this.now());
    s.charged += credits;
    s.dayUsed += credits;
  }

  exhausted(keyId: string, limits: KeyLimits): boolean {
    const s = this.keys.get(keyId);
    if (!s || limits.creditsPerDay === null) return false;
    return s.refusedDay === utcDay(this.now()) || s.dayUsed >= limits.creditsPerDay;
  }

  async close(): Promise<void> {
    clearInterval(this.timer);
    await this.flush(true);
  }

  private key(keyId: string, limits: KeyLimits): LeasedKey {
    let s = this.keys.get(keyId);
    if (!s) {
      s = {
        ...localOf(new Map(), keyId),
        limits,
        tokens: 0,
        expiresAt: 0,
        returning: 0,
        reservedDay: -1,
        reserved: 0,
        charged: 0,
        blockedUntil: 0,
        blockedNeed: 0,
        inflight: null,
      };
      this.keys.set(keyId, s);
    }
    s.limits = limits;
    return s;
  }

  /** Moves an expired lease's tokens to `returning`, and drops a reservation of a past day. */
  private expire(s: LeasedKey, now: number): void {
    if (s.tokens > 0 && now >= s.expiresAt) {
      s.returning += s.tokens;
      s.tokens = 0;
    }
    if (s.reservedDay !== utcDay(now)) s.reserved = 0;
  }

  /** Admits a body the shared counters could not be asked about, and counts it. */
  private admitUnchecked(
    s: LeasedKey,
    credits: number,
    limits: KeyLimits,
    rate: boolean,
    day: boolean,
    now: number,
  ): void {
    this.unchecked++;
    if (this.down) this.down.unchecked++;
    this.spend(s, credits, limits, rate, day, now);
  }

  private spend(
    s: LeasedKey,
    credits: number,
    limits: KeyLimits,
    rate: boolean,
    day: boolean,
    now: number,
  ): void {
    if (rate && limits.creditsPerSecond !== null) s.tokens -= credits;
    if (day && limits.creditsPerDay !== null) s.reserved -= credits;
    else s.charged += credits;
    s.dayUsed += credits;
    s.window.add(credits, now);
  }

  private async exchange(keyId: string, s: LeasedKey, ask: ExchangeAsk): Promise<ExchangeResult | null> {
    this.exchanges++;
    try {
      const result = await this.shared.exchange(keyId, ask, s.limits);
      // Credits spent here since the ask left are not in the shared figure yet.
      s.dayUsed = result.dayUsed + s.charged;
      this.answered();
      return result;
    } catch (e) {
      this.failed(e);
      return null;
    }
  }

  private what(): string {
    return `the shared limits${this.shared.description ? ` (${this.shared.description})` : ''}`;
  }

  private answered(): void {
    this.lastHeard = this.now();
    const down = this.down;
    if (down === null) return;
    this.down = null;
    const seconds = ((this.lastHeard - down.since) / 1000).toFixed(1);
    this.warn(
      `${this.what()} answer again after ${seconds} s; ${down.unchecked} requests were admitted without their limits meanwhile`,
    );
  }

  private failed(e: unknown): void {
    this.lastHeard = this.now();
    if (this.down !== null) return;
    const error = (e as Error).message;
    this.down = { since: this.lastHeard, error, unchecked: 0 };
    this.outages++;
    this.warn(
      `${this.what()} cannot be reached (${error}): admitting requests without their rate and day limits until they answer; one line will say when they do`,
    );
  }

  /** Pings the shared counters when nothing was heard of them for PROBE_MS (see PROBE_MS). */
  private probe(): void {
    const ping = this.shared.ping?.bind(this.shared);
    if (!ping || this.probing || this.now() - this.lastHeard < PROBE_MS) return;
    this.probing = true;
    ping()
      .then(
        () => this.answered(),
        (e: unknown) => this.failed(e),
      )
      .finally(() => {
        this.probing = false;
      });
  }

  /** Gives back expired leases and reports charges; `all` also gives back live leases (close). */
  private async flush(all: boolean): Promise<void> {
    // While they are down, what would be given back or reported waits for them to answer again
    // (the last flush, at close, tries anyway).
    if (this.down !== null && !all) return;
    const now = this.now();
    const pending: Promise<unknown>[] = [];
    for (const [keyId, s] of this.keys) {
      if (s.inflight) continue;
      this.expire(s, now);
      const ask: ExchangeAsk = {
        ...NO_ASK,
        rateReturn: s.returning + (all ? s.tokens : 0),
        dayReturn: all ? s.reserved : 0,
        charged: s.charged,
      };
      if (ask.rateReturn === 0 && ask.dayReturn === 0 && ask.charged === 0) continue;
      s.returning = 0;
      s.charged = 0;
      if (all) {
        s.tokens = 0;
        s.reserved = 0;
      }
      pending.push(this.exchange(keyId, s, ask));
    }
    await Promise.all(pending);
  }
}
