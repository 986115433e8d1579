import type { Redis } from 'ioredis';
import { afterSettled, metElsewhere } from '../../core/caught.ts';
import { UserError } from '../../core/errors.ts';
import { redactUrl } from '../../core/url.ts';
import { type KeyLimits, utcDay } from './bucket.ts';
import {
  applyExchange,
  type ExchangeAsk,
  type ExchangeResult,
  newKeyState,
  type SharedCounters,
  type SharedKeyState,
} from './ledger.ts';

/** A key's state outlives its last exchange by this: past it the key starts again full and unspent. */
const STATE_TTL_MS = 2 * 86_400_000;
/** Optimistic attempts before an exchange fails (the ledger then admits and logs it). */
const MAX_ATTEMPTS = 32;
/** The longest random pause between two attempts: contending processes spread out instead of colliding again. */
const MAX_PAUSE_MS = 20;
/**
 * How long one Redis command may take before the exchange fails (and the ledger admits): Redis
 * answers in well under a millisecond on a LAN, and a request waits for its exchange, so a Redis that
 * hangs holds requests this long at most, instead of for ever.
 */
export const COMMAND_TIMEOUT_MS = 500;

/**
 * Shared counters in Redis, for `--redis`: each key's state is one JSON value, changed by an
 * optimistic transaction (WATCH, read, compute, MULTI/SET/EXEC, again if another process changed it
 * meanwhile). The arithmetic is `applyExchange` itself, the same code the in-memory counters run, so
 * there is no second implementation (in Lua) to keep in step; exchanges are rare (one per lease,
 * see ledger.ts), so retries on contention cost little. The time is Redis's own `TIME`, so
 * processes on hosts with skewed clocks agree on a key's bucket and day.
 *
 * WATCH belongs to a connection, so this client's exchanges run one at a time on a connection of
 * their own.
 */
export class RedisCounters implements SharedCounters {
  private queue: Promise<unknown> = Promise.resolve();
  /**
   * The last command's failure, until a command succeeds: exchanges queued behind one that failed
   * fail at once instead of each waiting out its own timeout on a Redis that hangs. A ping (the
   * ledger's probe) goes through regardless, and clears it.
   */
  private failure: Error | null = null;

  /** Day counters rebuilt from the usage database, since this client began. */
  rebuilt = 0;

  /**
   * `dayBaseline`: credits a key spent today (from `dayStart`, ms) on every host, as the usage
   * database has them (`--database`). Asked when a key's state is missing from Redis, so that a
   * Redis restarted empty (or flushed) does not hand every key a fresh day: the day count starts
   * from what the database says was spent. It lags the traffic by the hosts' unshipped usage (at most
   * a flush interval each, usageShipper.ts) and misses the reservations not spent yet, so a key may
   * get that much more of its day, never less. Its failure fails the exchange (the ledger admits, as
   * for Redis down) and the next exchange asks again.
   */
  constructor(
    private readonly redis: Redis,
    private readonly prefix = 'ethtrace:limits:',
    readonly description = 'redis',
    private readonly dayBaseline?: (keyId: string, dayStart: number) => Promise<number>,
  ) {}

  exchange(keyId: string, ask: ExchangeAsk, limits: KeyLimits): Promise<ExchangeResult> {
    return this.queued(() => {
      if (this.failure !== null) throw this.failure;
      return this.attempt(keyId, ask, limits);
    });
  }

  /** In turn with the exchanges, so that it never lands inside one's WATCH. */
  async ping(): Promise<void> {
    await this.queued(() => this.redis.ping());
  }

  private queued<T>(run: () => Promise<T>): Promise<T> {
    const done = this.queue.then(run).then(
      (value) => {
        this.failure = null;
        return value;
      },
      (e: unknown) => {
        this.failure = e as Error;
        throw e;
      },
    );
    this.queue = afterSettled(done);
    return done;
  }

  private async attempt(keyId: string, ask: ExchangeAsk, limits: KeyLimits): Promise<ExchangeResult> {
    const key = this.prefix + keyId;
    /** The day's spending from the database, once per exchange that finds the key missing. */
    let baseline = null as { day: number; used: number } | null;
    for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
      await this.redis.watch(key);
      try {
        const [raw, [seconds, micros]] = await Promise.all([this.redis.get(key), this.redis.time()]);
        const now = Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
        let state: SharedKeyState;
        if (raw !== null) state = JSON.parse(raw);
        else {
          state = newKeyState(limits, now);
          if (this.dayBaseline) {
            const day = utcDay(now);
            if (baseline?.day !== day)
              baseline = { day, used: await this.dayBaseline(keyId, day * 86_400_000) };
            state.day.used = baseline.used;
          }
        }
        const result = applyExchange(state, ask, limits, now);
        const done = await this.redis.multi().set(key, JSON.stringify(state), 'PX', STATE_TTL_MS).exec();
        // null: the key changed after WATCH; compute again on the new state, after a random pause.
        if (done !== null) {
          if (raw === null && (baseline?.used ?? 0) > 0) this.rebuilt++;
          return result;
        }
        const pause = Math.random() * Math.min(MAX_PAUSE_MS, 2 ** attempt);
        await new Promise((resolve) => setTimeout(resolve, pause));
      } catch (e) {
        // Not awaited: on a Redis that hangs it would wait out another timeout. Commands go out in
        // order, so the next exchange's WATCH still follows it.
        // Its failure comes with the one thrown here, which is reported.
        metElsewhere(this.redis.unwatch());
        throw e;
      }
    }
    throw new Error(`shared limits: ${MAX_ATTEMPTS} conflicting attempts on one key`);
  }
}

/** A Redis client for `--redis URL`, connected and answering; a Redis that cannot be reached fails the start. */
export async function connectRedis(url: string): Promise<Redis> {
  const { Redis } = await import('ioredis');
  // No offline queue: with Redis gone, an exchange fails at once and the ledger admits and logs it
  // rather than holding requests; the client reconnects on its own meanwhile. A Redis that stops
  // answering without closing its connections (a stopped process, a host gone from the network) is
  // given COMMAND_TIMEOUT_MS a command, then treated the same way.
  const redis = new Redis(url, {
    lazyConnect: true,
    enableOfflineQueue: false,
    maxRetriesPerRequest: 1,
    commandTimeout: COMMAND_TIMEOUT_MS,
  });
  redis.on('error', () => {});
  try {
    await redis.connect();
    await redis.ping();
  } catch (e) {
    redis.disconnect();
    throw new UserError(`--redis ${redactUrl(url)}: cannot reach it (${(e as Error).message})`);
  }
  return redis;
}
