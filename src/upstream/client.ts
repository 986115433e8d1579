import { LimitExceeded, Unavailable, UpstreamError, UserError } from '../core/errors.ts';
import type { LogLine } from '../core/log.ts';
import { type Budget, currentBudget } from './budget.ts';
import {
  RATE_LIMITED_CODE,
  type RpcCall,
  type RpcErrorObject,
  type RpcOutcome,
  readAnswer,
  requestBody,
  retryAfterOfData,
} from './protocol.ts';
import { Semaphore, Sleeper, TokenBucket } from './throttle.ts';

export { redactUrl } from '../core/url.ts';

import { metElsewhere } from '../core/caught.ts';
import { redactUrl } from '../core/url.ts';
import { type Reply, type Transport, TransportFault, transportFor } from './transports.ts';

export type { RpcCall, RpcOutcome } from './protocol.ts';

/**
 * A JSON-RPC client for the node upstream mode reads from (geth, Reth, Erigon, anvil, another
 * ethtrace), over HTTP(S) or WebSocket, with fail-over between URLs, retries, and the limits a
 * shared node (or a paid endpoint) expects from a polite client.
 *
 * Faults are the client's to absorb: a URL that fails (no connection, no answer in time, a 5xx, an
 * answer that is not the one asked for) is put aside for a cooldown and the next URL is tried; rate
 * limiting (HTTP 429, JSON-RPC -32005) is waited out. What remains reaches the caller as a domain
 * error: Unavailable (every attempt failed, or the request's budget for upstream reads ran out),
 * LimitExceeded (still rate limited after the retries) or UpstreamError (the node answered the call
 * with its own JSON-RPC error).
 *
 * One read per call in flight: a call (method and params) asked for while the same call is on its
 * way is not sent again; the caller shares its answer. In upstream mode this client is the only one
 * that reads (the workers and the API processes of `--processes` ask its owner: src/upstream/remote.ts),
 * so concurrent requests, speculative parts of one replay and processes all share one read.
 */

/** What reads the upstream: this client, or one that asks the thread or process owning it. */
export interface UpstreamReader {
  /** One call: its result, or UpstreamError carrying the node's JSON-RPC error. */
  request<T = unknown>(method: string, params?: unknown[]): Promise<T>;
  /** The outcome of each call, in call order; a fault of the whole throws. */
  batch(calls: readonly RpcCall[]): Promise<RpcOutcome[]>;
  stats(): UpstreamStats;
  close(): Promise<void>;
}

export interface UpstreamLimits {
  /** Per attempt: from the request leaving (its connection included) to its whole answer. */
  timeoutMs: number;
  /** Extra attempts per request after a transport fault, 429, -32005 or 5xx. */
  retries: number;
  /** First backoff, doubling, capped at 5 s; a longer Retry-After (header or error data) wins. */
  backoffMs: number;
  /** HTTP requests (or WebSocket messages awaiting answers) in flight at once, over all URLs. */
  maxConcurrent: number;
  /** Requests (HTTP requests or WebSocket messages) started per second, token bucket; 0 = unlimited. */
  rps: number;
  /** JSON-RPC calls per batch request; longer lists are split. */
  maxBatch: number;
  /**
   * What one client request may spend waiting for the upstream, all its reads, attempts and
   * backoffs together (src/upstream/budget.ts); a read outside any request gets as much.
   */
  budgetMs: number;
}

export const DEFAULT_UPSTREAM_LIMITS: UpstreamLimits = {
  timeoutMs: 10_000,
  retries: 3,
  backoffMs: 200,
  maxConcurrent: 32,
  rps: 100,
  maxBatch: 100,
  // Half the 30 s after which RPC clients and the proxies before them commonly give up, so a client
  // hears -32002 with the reason rather than a timeout of its own, with room left for the execution
  // deadline (5 s) after the reads. It holds one whole attempt (10 s) and a retry on what is left:
  // a hanging URL costs one attempt, and a second URL, or a transient fault, still gets its chance.
  budgetMs: 15_000,
};

export interface UpstreamStats {
  /** HTTP requests made (or WebSocket messages sent), retries included. */
  roundTrips: number;
  /** JSON-RPC calls asked for by callers (a request is one, a batch its length). */
  calls: number;
  /** Calls answered by the same call already in flight (not sent again). */
  shared: number;
  /** Attempts made again after a fault or rate limiting. */
  retries: number;
  /** Attempts that met a fault: no connection, no answer in time, a 5xx, a malformed answer. */
  failures: number;
  /** Attempts answered with HTTP 429 or JSON-RPC -32005. */
  rateLimited: number;
  /** Each URL (credentials, query and key-like path segments hidden), in the order given. */
  urls: Array<{ url: string; ok: number; failed: number; healthy: boolean }>;
}

/** A Backoff never waits longer than this (a Retry-After may). */
const MAX_BACKOFF_MS = 5_000;
/** A failing URL is set aside this long, doubled at each failure of a retry of it, up to the max. */
const FIRST_COOLDOWN_MS = 1_000;
const MAX_COOLDOWN_MS = 30_000;
/** A Retry-After longer than this is not waited for: the request gives up at once (LimitExceeded). */
const MAX_RETRY_AFTER_MS = 30_000;

/**
 * How long one read may take with every attempt and the longest wait between them: the budget of a
 * reader that serves no client's request and would rather wait out all its retries (the follower,
 * which keeps the stored chain served meanwhile and tries again itself).
 */
export function allAttemptsMs(limits: Pick<UpstreamLimits, 'retries' | 'timeoutMs'>): number {
  return (limits.retries + 1) * limits.timeoutMs + limits.retries * MAX_RETRY_AFTER_MS;
}

/** Rate limiting is logged at most this often per URL. */
const RATE_LOG_INTERVAL_MS = 10_000;

/** The reason an attempt's signal aborts with when its time is up. */
const TIMED_OUT = Symbol('timed out');
/** The reason a wait for a slot or a token ends with when the budget runs out. */
const OUT_OF_BUDGET = Symbol('out of budget');

class Endpoint {
  ok = 0;
  failed = 0;
  healthy = true;
  /** While unhealthy: when the cooldown ends (performance.now()). */
  downUntil = 0;
  cooldownMs = 0;
  lastRateLog = Number.NEGATIVE_INFINITY;

  constructor(
    readonly label: string,
    readonly transport: Transport,
  ) {}
}

type RateLimit = { reason: string; retryAfterSeconds: number | undefined };

type AttemptResult =
  | { kind: 'answers'; outcomes: RpcOutcome[] }
  /** The budget ran out before a slot or a token let the request go. */
  | { kind: 'out of budget' }
  | { kind: 'fault'; reason: string }
  | ({ kind: 'rate limited' } & RateLimit)
  /** One error answered for a whole batch: the node refuses it as such (geth's "batch too large"). */
  | { kind: 'rejected'; error: RpcErrorObject };

/** One call on its way: who started it, until when, and its answer to share. */
interface Flight {
  readonly key: string;
  /** The budget of the request that started it: the read stops there. */
  readonly until: number;
  readonly answer: Promise<RpcOutcome>;
  settle(outcome: RpcOutcome | Error): void;
  /** The URLs tried so far, for a joiner whose own budget ends first. */
  readonly tried: Set<string>;
}

export class UpstreamClient implements UpstreamReader {
  private readonly endpoints: Endpoint[];
  /** Each call on its way, by method and params. */
  private readonly flights = new Map<string, Flight>();
  private readonly limits: UpstreamLimits;
  private readonly slots: Semaphore;
  private readonly bucket: TokenBucket | undefined;
  private readonly sleeper = new Sleeper();
  /** Each attempt in flight, to be aborted by close(). */
  private readonly inFlight = new Set<AbortController>();
  /** Set by close(): the error every pending and later request ends with. */
  private closedWith: Unavailable | undefined;
  private closed: Promise<void> | undefined;
  private nextId = 1;
  private readonly counters = {
    roundTrips: 0,
    calls: 0,
    shared: 0,
    retries: 0,
    failures: 0,
    rateLimited: 0,
  };

  constructor(
    urls: readonly string[],
    limits: Partial<UpstreamLimits> = {},
    private readonly log: LogLine = () => {},
  ) {
    if (urls.length === 0) throw new UserError('upstream: no URL given');
    this.limits = checkLimits({ ...DEFAULT_UPSTREAM_LIMITS, ...limits });
    this.endpoints = urls.map((url) => {
      const label = redactUrl(url);
      try {
        return new Endpoint(label, transportFor(url, this.limits));
      } catch (e) {
        throw new UserError(`upstream URL ${label}: ${e instanceof Error ? e.message : String(e)}`);
      }
    });
    this.slots = new Semaphore(this.limits.maxConcurrent);
    this.bucket =
      this.limits.rps > 0
        ? // A burst of a tenth of a second's worth: a strict per-second limit upstream still holds.
          new TokenBucket(this.limits.rps, Math.max(1, Math.ceil(this.limits.rps / 10)))
        : undefined;
  }

  /** One call: its result, or UpstreamError carrying the node's JSON-RPC error. */
  async request<T = unknown>(method: string, params: unknown[] = []): Promise<T> {
    const [outcome] = await this.batch([{ method, params }]);
    if (outcome === undefined) throw new Unavailable('upstream answered nothing');
    if (!outcome.ok) throw new UpstreamError(outcome.error);
    return outcome.result as T;
  }

  /**
   * The outcome of each call, in call order: one round trip per `maxBatch` calls not already in
   * flight (the chunks sent concurrently); a call in flight is joined, not sent again. A call's own
   * JSON-RPC error is its outcome; a fault of the whole throws. Attempts, backoffs and waits for a
   * slot all end when the request's budget for upstream reads does.
   */
  async batch(calls: readonly RpcCall[]): Promise<RpcOutcome[]> {
    if (calls.length === 0) return [];
    if (this.closedWith !== undefined) throw this.closedWith;
    this.counters.calls += calls.length;
    const budget: Budget = currentBudget() ?? {
      until: performance.now() + this.limits.budgetMs,
      ms: this.limits.budgetMs,
    };
    const answers: Array<Promise<RpcOutcome>> = [];
    const fresh: Array<{ call: RpcCall; flight: Flight }> = [];
    for (const call of calls) {
      const key = flightKey(call);
      const running = this.flights.get(key);
      if (running !== undefined) {
        this.counters.shared++;
        answers.push(this.join(running, budget));
        continue;
      }
      const flight = newFlight(key, budget.until);
      this.flights.set(key, flight);
      fresh.push({ call, flight });
      answers.push(flight.answer);
    }
    for (let i = 0; i < fresh.length; i += this.limits.maxBatch) {
      const chunk = fresh.slice(i, i + this.limits.maxBatch);
      const land = (j: number, outcome: RpcOutcome | Error): void => {
        const { flight } = chunk[j] as { flight: Flight };
        if (this.flights.get(flight.key) === flight) this.flights.delete(flight.key);
        flight.settle(outcome);
      };
      this.exchange(
        chunk.map(({ call }) => call),
        budget,
        (label) => {
          for (const { flight } of chunk) flight.tried.add(label);
        },
      ).then(
        (outcomes) => {
          for (let j = 0; j < chunk.length; j++)
            land(j, outcomes[j] ?? new Unavailable('upstream answered nothing'));
        },
        (e: unknown) => {
          const error = e instanceof Error ? e : new Error(String(e));
          for (let j = 0; j < chunk.length; j++) land(j, error);
        },
      );
    }
    return Promise.all(answers);
  }

  /**
   * The answer of a call another request started, waited for at most until this request's own
   * budget runs out (the read itself goes on for the one that started it).
   */
  private join(flight: Flight, budget: Budget): Promise<RpcOutcome> {
    if (flight.until <= budget.until) return flight.answer;
    return new Promise<RpcOutcome>((resolve, reject) => {
      const timer = setTimeout(
        () => {
          const urls = flight.tried.size === 0 ? this.labels() : [...flight.tried];
          reject(
            new Unavailable(
              `upstream ${urls.join(', ')} did not answer a read another request started within ${budgetClause(budget)}`,
            ),
          );
        },
        Math.max(0, budget.until - performance.now()),
      );
      flight.answer.then(
        (outcome) => {
          clearTimeout(timer);
          resolve(outcome);
        },
        (e: unknown) => {
          clearTimeout(timer);
          reject(e);
        },
      );
    });
  }

  private labels(): string[] {
    return this.endpoints.map((e) => e.label);
  }

  stats(): UpstreamStats {
    return {
      ...this.counters,
      urls: this.endpoints.map((e) => ({ url: e.label, ok: e.ok, failed: e.failed, healthy: e.healthy })),
    };
  }

  /** Ends every request still waiting or in flight (Unavailable) and closes the WebSockets. */
  close(): Promise<void> {
    if (this.closed === undefined) {
      const reason = new Unavailable('upstream client closed');
      this.closedWith = reason;
      for (const controller of this.inFlight) controller.abort(reason);
      this.slots.close(reason);
      this.bucket?.close(reason);
      this.sleeper.close(reason);
      this.closed = Promise.all(this.endpoints.map((e) => e.transport.close())).then(() => {});
    }
    return this.closed;
  }

  /**
   * The calls sent as one request, attempted until answered, out of retries or out of `budget`;
   * `onTry` hears the label of each URL tried.
   */
  private async exchange(
    calls: readonly RpcCall[],
    budget: Budget,
    onTry: (label: string) => void,
  ): Promise<RpcOutcome[]> {
    if (this.closedWith !== undefined) throw this.closedWith;
    const outcomes: Array<RpcOutcome | undefined> = new Array(calls.length);
    /** Indexes of the calls still to be answered: all, then those a rate limiter turned away. */
    let pending = calls.map((_, i) => i);
    /** The last fault of each URL that failed, to name them all if the request gives up. */
    const faults = new Map<Endpoint, string>();
    for (let attempt = 1; ; attempt++) {
      if (performance.now() >= budget.until) throw this.budgetSpent(faults, attempt - 1, budget);
      const { endpoint, result } = await this.attempt(
        pending.map((i) => calls[i] as RpcCall),
        budget.until,
        onTry,
      );
      let waitMs: number;
      if (result.kind === 'out of budget') throw this.budgetSpent(faults, attempt - 1, budget);
      if (result.kind === 'fault') {
        faults.delete(endpoint);
        faults.set(endpoint, result.reason);
        if (performance.now() >= budget.until) throw this.budgetSpent(faults, attempt, budget);
        if (attempt > this.limits.retries) throw unavailableError(faults, attempt);
        // Another URL may take the retry at once; with none, the backoff spares a struggling node.
        waitMs = this.someUrlUsable() ? 0 : this.backoff(attempt);
        // A backoff that outlasts the budget would only end in the same error later.
        if (performance.now() + waitMs >= budget.until) throw this.budgetSpent(faults, attempt, budget);
      } else {
        if (result.kind === 'rejected') throw new UpstreamError(result.error);
        let limited: RateLimit;
        if (result.kind === 'answers') {
          const turnedAway = keepAnswers(result.outcomes, pending, outcomes);
          if (turnedAway === undefined) return outcomes as RpcOutcome[];
          pending = turnedAway.pending;
          limited = turnedAway.limited;
        } else {
          limited = result;
        }
        this.noteRateLimited(endpoint, limited);
        const askedMs = (limited.retryAfterSeconds ?? 0) * 1000;
        if (attempt > this.limits.retries || askedMs > MAX_RETRY_AFTER_MS) {
          throw rateLimitedError(endpoint, limited, attempt);
        }
        waitMs = Math.max(this.backoff(attempt), askedMs);
        if (performance.now() + waitMs >= budget.until) throw rateLimitedError(endpoint, limited, attempt);
      }
      this.counters.retries++;
      await this.sleeper.sleep(waitMs);
    }
  }

  /**
   * One request, within the limits, to the URL to use once they let it go: its answer read, or
   * what went wrong. Waiting for a slot or a token, and the attempt itself, end at `until`.
   */
  private async attempt(
    calls: readonly RpcCall[],
    until: number,
    onTry: (label: string) => void,
  ): Promise<{ endpoint: Endpoint; result: AttemptResult }> {
    const waiting = new AbortController();
    const timer = setTimeout(() => waiting.abort(OUT_OF_BUDGET), Math.max(0, until - performance.now()));
    try {
      await this.slots.acquire(waiting.signal);
    } catch (e) {
      clearTimeout(timer);
      if (e === OUT_OF_BUDGET) return { endpoint: this.pick(), result: { kind: 'out of budget' } };
      throw e;
    }
    try {
      await this.bucket?.take(waiting.signal);
      clearTimeout(timer);
      const endpoint = this.pick();
      onTry(endpoint.label);
      const timeoutMs = Math.min(this.limits.timeoutMs, Math.max(1, Math.round(until - performance.now())));
      return { endpoint, result: await this.attemptOn(endpoint, calls, timeoutMs) };
    } catch (e) {
      if (e === OUT_OF_BUDGET) return { endpoint: this.pick(), result: { kind: 'out of budget' } };
      throw e;
    } finally {
      clearTimeout(timer);
      this.slots.release();
    }
  }

  private async attemptOn(
    endpoint: Endpoint,
    calls: readonly RpcCall[],
    timeoutMs: number,
  ): Promise<AttemptResult> {
    if (this.closedWith !== undefined) throw this.closedWith;
    const ids = calls.map(() => this.nextId++);
    const body = requestBody(calls, ids);
    const controller = new AbortController();
    this.inFlight.add(controller);
    const timer = setTimeout(() => controller.abort(TIMED_OUT), timeoutMs);
    let reply: Reply;
    try {
      reply = await endpoint.transport.send({ body, ids }, controller.signal, () => {
        this.counters.roundTrips++;
      });
    } catch (e) {
      if (this.closedWith !== undefined) throw this.closedWith;
      if (e === TIMED_OUT) return this.fault(endpoint, `no answer within ${timeoutMs} ms`);
      if (e instanceof TransportFault) return this.fault(endpoint, e.message);
      throw e;
    } finally {
      clearTimeout(timer);
      this.inFlight.delete(controller);
    }
    return this.judge(endpoint, reply, ids);
  }

  /** What an answer that arrived means. */
  private judge(endpoint: Endpoint, reply: Reply, ids: readonly number[]): AttemptResult {
    const status = `HTTP ${reply.status}${reply.statusText === '' ? '' : ` ${reply.statusText}`}`;
    if (reply.status === 429) {
      const data = 'json' in reply.body ? errorData(reply.body.json) : undefined;
      return {
        kind: 'rate limited',
        reason: 'HTTP 429',
        retryAfterSeconds: reply.retryAfterSeconds ?? retryAfterOfData(data),
      };
    }
    if (reply.status >= 500) return this.fault(endpoint, status);
    if ('notJson' in reply.body) {
      return this.fault(endpoint, `malformed answer: not JSON (${status}: ${reply.body.notJson})`);
    }
    if (reply.status < 200 || reply.status >= 300) {
      // An upstream refusing us as a client (401 for a bad key, 413 for a body too large): another
      // URL may take us; the node's own words say why.
      const said = errorMessage(reply.body.json);
      return this.fault(endpoint, said === undefined ? status : `${status}: ${said}`);
    }
    const reading = readAnswer(reply.body.json, ids);
    if (reading.kind === 'malformed') return this.fault(endpoint, `malformed answer: ${reading.reason}`);
    this.markOk(endpoint);
    if (reading.kind === 'answers') return reading;
    if (reading.error.code === RATE_LIMITED_CODE) {
      return {
        kind: 'rate limited',
        reason: `${RATE_LIMITED_CODE} ${JSON.stringify(reading.error.message)}`,
        retryAfterSeconds: retryAfterOfData(reading.error.data),
      };
    }
    return reading;
  }

  /** The first usable URL in the order given; with none, the one whose cooldown ends first. */
  private pick(): Endpoint {
    const now = performance.now();
    let soonest = this.endpoints[0] as Endpoint;
    for (const endpoint of this.endpoints) {
      if (endpoint.healthy || now >= endpoint.downUntil) return endpoint;
      if (endpoint.downUntil < soonest.downUntil) soonest = endpoint;
    }
    return soonest;
  }

  /**
   * The request's budget ran out: Unavailable naming each URL that failed and why, or, when none
   * was tried yet, the URLs it waited for.
   */
  private budgetSpent(faults: ReadonlyMap<Endpoint, string>, attempt: number, budget: Budget): Unavailable {
    const clause = `${attempts(attempt)}; out of ${budgetClause(budget)}`;
    if (faults.size === 0) {
      return new Unavailable(
        `upstream ${this.labels().join(', ')} unavailable: no request could be sent in time, every request slot busy or the request rate used up (${clause})`,
      );
    }
    return unavailableError(faults, clause);
  }

  private someUrlUsable(): boolean {
    const now = performance.now();
    return this.endpoints.some((e) => e.healthy || now >= e.downUntil);
  }

  private backoff(attempt: number): number {
    return Math.min(MAX_BACKOFF_MS, this.limits.backoffMs * 2 ** (attempt - 1));
  }

  private fault(endpoint: Endpoint, reason: string): AttemptResult {
    this.counters.failures++;
    endpoint.failed++;
    const now = performance.now();
    // Requests already in flight when the URL was set aside fail too: they do not extend the cooldown.
    if (endpoint.healthy || now >= endpoint.downUntil) {
      endpoint.cooldownMs = endpoint.healthy
        ? FIRST_COOLDOWN_MS
        : Math.min(MAX_COOLDOWN_MS, endpoint.cooldownMs * 2);
      endpoint.downUntil = now + endpoint.cooldownMs;
      // Once per outage: the cooldowns that follow (doubling) would repeat it every few seconds.
      if (endpoint.healthy)
        this.log(
          `upstream ${endpoint.label} failed (${reason}); set aside, tried again with growing pauses`,
          'warn',
        );
    }
    endpoint.healthy = false;
    return { kind: 'fault', reason };
  }

  private markOk(endpoint: Endpoint): void {
    endpoint.ok++;
    if (!endpoint.healthy) this.log(`upstream ${endpoint.label} answers again`);
    endpoint.healthy = true;
    endpoint.cooldownMs = 0;
    endpoint.downUntil = 0;
  }

  private noteRateLimited(endpoint: Endpoint, limited: RateLimit): void {
    this.counters.rateLimited++;
    const now = performance.now();
    if (now - endpoint.lastRateLog < RATE_LOG_INTERVAL_MS) return;
    endpoint.lastRateLog = now;
    const after =
      limited.retryAfterSeconds === undefined ? '' : `, retry after ${limited.retryAfterSeconds} s`;
    this.log(`upstream ${endpoint.label} rate limits us (${limited.reason}${after}); backing off`, 'warn');
  }
}

/**
 * Stores the outcomes answered for `pending` (indexes into the request's calls) in `into`, except
 * the calls a rate limiter turned away (-32005): those are returned, to be sent again.
 */
function keepAnswers(
  answered: readonly RpcOutcome[],
  pending: readonly number[],
  into: Array<RpcOutcome | undefined>,
): { pending: number[]; limited: RateLimit } | undefined {
  const turnedAway: number[] = [];
  let limited: RateLimit | undefined;
  answered.forEach((outcome, j) => {
    const i = pending[j] as number;
    if (outcome.ok || outcome.error.code !== RATE_LIMITED_CODE) {
      into[i] = outcome;
      return;
    }
    turnedAway.push(i);
    limited = mergeRateLimits(limited, {
      reason: `${RATE_LIMITED_CODE} ${JSON.stringify(outcome.error.message)}`,
      retryAfterSeconds: retryAfterOfData(outcome.error.data),
    });
  });
  return limited === undefined ? undefined : { pending: turnedAway, limited };
}

function mergeRateLimits(a: RateLimit | undefined, b: RateLimit): RateLimit {
  if (a === undefined) return b;
  const seconds = [a.retryAfterSeconds, b.retryAfterSeconds].filter((s) => s !== undefined);
  return { reason: a.reason, retryAfterSeconds: seconds.length === 0 ? undefined : Math.max(...seconds) };
}

function attempts(n: number): string {
  return `${n} attempt${n === 1 ? '' : 's'}`;
}

/** `upstream URL unavailable: cause (N attempts…)`, naming each URL that failed and its last fault. */
function unavailableError(faults: ReadonlyMap<Endpoint, string>, attempt: number | string): Unavailable {
  const tail = typeof attempt === 'number' ? attempts(attempt) : attempt;
  const all = [...faults];
  const [only] = all;
  if (all.length === 1 && only !== undefined) {
    return new Unavailable(`upstream ${only[0].label} unavailable: ${only[1]} (${tail})`);
  }
  const each = all.map(([endpoint, reason]) => `${endpoint.label}: ${reason}`).join('; ');
  return new Unavailable(`upstream unavailable: ${each} (${tail})`);
}

/** How an error names the budget: its length and the flag that sets it. */
function budgetClause(budget: Budget): string {
  return `the request's budget for upstream reads, --upstream-budget-ms ${budget.ms}`;
}

/** What makes two calls the same read: the method and the params, as sent. */
function flightKey(call: RpcCall): string {
  return `${call.method}\u0000${JSON.stringify(call.params)}`;
}

function newFlight(key: string, until: number): Flight {
  let settle!: (outcome: RpcOutcome | Error) => void;
  const answer = new Promise<RpcOutcome>((resolve, reject) => {
    settle = (outcome) => (outcome instanceof Error ? reject(outcome) : resolve(outcome));
  });
  // Its starter and every joiner await it; a fault nobody is left to hear is not an unhandled one.
  metElsewhere(answer);
  return { key, until, answer, settle, tried: new Set() };
}

function rateLimitedError(endpoint: Endpoint, limited: RateLimit, attempt: number): LimitExceeded {
  const seconds = limited.retryAfterSeconds;
  const after = seconds === undefined ? '' : `; it asks to retry after ${seconds} s`;
  return new LimitExceeded(
    `upstream rate limited: ${endpoint.label} answered ${limited.reason} (${attempts(attempt)})${after}`,
    seconds === undefined ? undefined : { retryAfterSeconds: seconds },
  );
}

/** The error data of a JSON-RPC error answer (a 429's body may carry one). */
function errorData(json: unknown): unknown {
  const first = Array.isArray(json) ? (json[0] as unknown) : json;
  if (typeof first !== 'object' || first === null) return undefined;
  const error = (first as { error?: unknown }).error;
  return typeof error === 'object' && error !== null ? (error as { data?: unknown }).data : undefined;
}

function errorMessage(json: unknown): string | undefined {
  const first = Array.isArray(json) ? (json[0] as unknown) : json;
  if (typeof first !== 'object' || first === null) return undefined;
  const error = (first as { error?: unknown }).error;
  const message =
    typeof error === 'object' && error !== null ? (error as { message?: unknown }).message : error;
  return typeof message === 'string' && message !== '' ? message.slice(0, 200) : undefined;
}

function checkLimits(limits: UpstreamLimits): UpstreamLimits {
  const rules: Array<[keyof UpstreamLimits, number]> = [
    ['timeoutMs', 1],
    ['retries', 0],
    ['backoffMs', 0],
    ['maxConcurrent', 1],
    ['rps', 0],
    ['maxBatch', 1],
    ['budgetMs', 1],
  ];
  for (const [name, least] of rules) {
    const value = limits[name];
    if (!Number.isFinite(value) || value < least || (name !== 'rps' && !Number.isInteger(value))) {
      throw new UserError(
        `upstream limit ${name} must be ${name === 'rps' ? 'a number' : 'an integer'} ≥ ${least}, not ${value}`,
      );
    }
  }
  return limits;
}
