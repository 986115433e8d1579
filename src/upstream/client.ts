import { LimitExceeded, Unavailable, UpstreamError, UserError } from '../core/errors.ts';
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
 * error: Unavailable (every attempt failed), LimitExceeded (still rate limited after the retries)
 * or UpstreamError (the node answered the call with its own JSON-RPC error).
 */

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
}

export const DEFAULT_UPSTREAM_LIMITS: UpstreamLimits = {
  timeoutMs: 10_000,
  retries: 3,
  backoffMs: 200,
  maxConcurrent: 32,
  rps: 100,
  maxBatch: 100,
};

export interface UpstreamStats {
  /** HTTP requests made (or WebSocket messages sent), retries included. */
  roundTrips: number;
  /** JSON-RPC calls asked for by callers (a request is one, a batch its length). */
  calls: number;
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
/** Rate limiting is logged at most this often per URL. */
const RATE_LOG_INTERVAL_MS = 10_000;

/** The reason an attempt's signal aborts with when its time is up. */
const TIMED_OUT = Symbol('timed out');

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
  | { kind: 'fault'; reason: string }
  | ({ kind: 'rate limited' } & RateLimit)
  /** One error answered for a whole batch: the node refuses it as such (geth's "batch too large"). */
  | { kind: 'rejected'; error: RpcErrorObject };

export class UpstreamClient {
  private readonly endpoints: Endpoint[];
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
  private readonly counters = { roundTrips: 0, calls: 0, retries: 0, failures: 0, rateLimited: 0 };

  constructor(
    urls: readonly string[],
    limits: Partial<UpstreamLimits> = {},
    private readonly log: (line: string) => void = () => {},
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
    this.counters.calls++;
    const [outcome] = await this.exchange([{ method, params }]);
    if (outcome === undefined) throw new Unavailable('upstream answered nothing');
    if (!outcome.ok) throw new UpstreamError(outcome.error);
    return outcome.result as T;
  }

  /**
   * The outcome of each call, in call order: one round trip per `maxBatch` calls (the chunks sent
   * concurrently). A call's own JSON-RPC error is its outcome; a fault of the whole throws.
   */
  async batch(calls: readonly RpcCall[]): Promise<RpcOutcome[]> {
    this.counters.calls += calls.length;
    const chunks: RpcCall[][] = [];
    for (let i = 0; i < calls.length; i += this.limits.maxBatch) {
      chunks.push(calls.slice(i, i + this.limits.maxBatch));
    }
    const answers = await Promise.all(chunks.map((chunk) => this.exchange(chunk)));
    return answers.flat();
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

  /** The calls sent as one request, attempted until answered or out of retries. */
  private async exchange(calls: readonly RpcCall[]): Promise<RpcOutcome[]> {
    if (this.closedWith !== undefined) throw this.closedWith;
    const outcomes: Array<RpcOutcome | undefined> = new Array(calls.length);
    /** Indexes of the calls still to be answered: all, then those a rate limiter turned away. */
    let pending = calls.map((_, i) => i);
    /** The last fault of each URL that failed, to name them all if the request gives up. */
    const faults = new Map<Endpoint, string>();
    for (let attempt = 1; ; attempt++) {
      const { endpoint, result } = await this.attempt(pending.map((i) => calls[i] as RpcCall));
      let waitMs: number;
      if (result.kind === 'fault') {
        faults.delete(endpoint);
        faults.set(endpoint, result.reason);
        if (attempt > this.limits.retries) throw unavailableError(faults, attempt);
        // Another URL may take the retry at once; with none, the backoff spares a struggling node.
        waitMs = this.someUrlUsable() ? 0 : this.backoff(attempt);
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
      }
      this.counters.retries++;
      await this.sleeper.sleep(waitMs);
    }
  }

  /**
   * One request, within the limits, to the URL to use once they let it go: its answer read, or
   * what went wrong.
   */
  private async attempt(calls: readonly RpcCall[]): Promise<{ endpoint: Endpoint; result: AttemptResult }> {
    await this.slots.acquire();
    try {
      await this.bucket?.take();
      const endpoint = this.pick();
      return { endpoint, result: await this.attemptOn(endpoint, calls) };
    } finally {
      this.slots.release();
    }
  }

  private async attemptOn(endpoint: Endpoint, calls: readonly RpcCall[]): Promise<AttemptResult> {
    if (this.closedWith !== undefined) throw this.closedWith;
    const ids = calls.map(() => this.nextId++);
    const body = requestBody(calls, ids);
    const controller = new AbortController();
    this.inFlight.add(controller);
    const timer = setTimeout(() => controller.abort(TIMED_OUT), this.limits.timeoutMs);
    let reply: Reply;
    try {
      reply = await endpoint.transport.send({ body, ids }, controller.signal, () => {
        this.counters.roundTrips++;
      });
    } catch (e) {
      if (this.closedWith !== undefined) throw this.closedWith;
      if (e === TIMED_OUT) return this.fault(endpoint, `no answer within ${this.limits.timeoutMs} ms`);
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
        this.log(`upstream ${endpoint.label} failed (${reason}); set aside, tried again with growing pauses`);
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
    this.log(`upstream ${endpoint.label} rate limits us (${limited.reason}${after}); backing off`);
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

function unavailableError(faults: ReadonlyMap<Endpoint, string>, attempt: number): Unavailable {
  const all = [...faults];
  const [only] = all;
  if (all.length === 1 && only !== undefined) {
    return new Unavailable(`upstream ${only[0].label} unavailable: ${only[1]} (${attempts(attempt)})`);
  }
  const each = all.map(([endpoint, reason]) => `${endpoint.label}: ${reason}`).join('; ');
  return new Unavailable(`upstream unavailable: ${each} (${attempts(attempt)})`);
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
