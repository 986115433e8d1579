/**
 * The arithmetic of a key's limits, pure and clock-free (every function takes `now` in ms), shared
 * by the in-process ledger and the shared counters behind leases (ledger.ts).
 */

/** A key's limits as the ledger applies them; null: no limit of that kind. */
export interface KeyLimits {
  /** The bucket's refill, credits per second. */
  creditsPerSecond: number | null;
  /** The bucket's size: how many credits may be spent at once after a quiet spell. */
  burst: number;
  /** Credits per UTC day (reset at 00:00 UTC). */
  creditsPerDay: number | null;
}

/** A token bucket: `tokens` as of `at` (ms). Tokens may be negative: a debt (see `grant`). */
export interface Bucket {
  tokens: number;
  at: number;
}

/** A new bucket, full (a key starts with its burst). */
export function fullBucket(limits: KeyLimits, now: number): Bucket {
  return { tokens: limits.burst, at: now };
}

function refill(bucket: Bucket, limits: KeyLimits, now: number): void {
  const rate = limits.creditsPerSecond ?? 0;
  if (now > bucket.at) {
    bucket.tokens = Math.min(limits.burst, bucket.tokens + ((now - bucket.at) * rate) / 1000);
    bucket.at = now;
  }
  // A lowered burst (`keys update`) applies at once.
  if (bucket.tokens > limits.burst) bucket.tokens = limits.burst;
}

export type Grant = { granted: number } | { granted: 0; retryAfterMs: number };

/**
 * Takes at least `need` and at most `want` tokens (as many as there are in between), or none.
 * A body costing more than the whole burst (a batch, one eth_getBlockReceipts on a small key) is
 * let through when the bucket is full and leaves it in debt, repaid by the refill before anything
 * else passes; otherwise such a body could never pass at all.
 */
export function grant(bucket: Bucket, need: number, want: number, limits: KeyLimits, now: number): Grant {
  refill(bucket, limits, now);
  if (bucket.tokens >= need || bucket.tokens >= limits.burst) {
    const granted = Math.max(need, Math.min(want, bucket.tokens));
    bucket.tokens -= granted;
    return { granted };
  }
  const rate = limits.creditsPerSecond ?? 0;
  const missing = Math.min(need, limits.burst) - bucket.tokens;
  // Less a hair, so that floating-point residue (79.99999 of 80) does not add a millisecond.
  return {
    granted: 0,
    retryAfterMs: rate > 0 ? Math.max(1, Math.ceil((missing * 1000) / rate - 1e-6)) : 1000,
  };
}

/** Puts unused tokens back (a lease given back), never past the burst. */
export function giveBack(bucket: Bucket, tokens: number, limits: KeyLimits, now: number): void {
  refill(bucket, limits, now);
  bucket.tokens = Math.min(limits.burst, bucket.tokens + tokens);
}

const DAY_MS = 86_400_000;

/** The UTC day of `now` (ms since the epoch), which changes at 00:00 UTC. */
export function utcDay(now: number): number {
  return Math.floor(now / DAY_MS);
}

/** The start of the next UTC day, in ms. */
export function nextUtcMidnight(now: number): number {
  return (utcDay(now) + 1) * DAY_MS;
}

/** Credits spent in one UTC day. */
export interface DayCount {
  day: number;
  used: number;
}

/** The count for today: yesterday's is dropped at 00:00 UTC. */
export function today(count: DayCount, now: number): DayCount {
  const day = utcDay(now);
  if (count.day !== day) {
    count.day = day;
    count.used = 0;
  }
  return count;
}

/**
 * Credits spent over the last second, for `current_rps` in a refusal: ten slots of 100 ms each,
 * so the figure is exact to a tenth of a second without keeping every call.
 */
export class RateWindow {
  private readonly slots = new Float64Array(10);
  private slotAt = 0;

  add(credits: number, now: number): void {
    this.advance(now);
    this.slots[this.slotAt % 10] = (this.slots[this.slotAt % 10] ?? 0) + credits;
  }

  /** Credits over the last second, `extra` (the refused body) included. */
  sum(now: number, extra = 0): number {
    this.advance(now);
    let total = extra;
    for (const v of this.slots) total += v;
    return total;
  }

  private advance(now: number): void {
    const slot = Math.floor(now / 100);
    if (slot <= this.slotAt) return;
    const steps = Math.min(10, slot - this.slotAt);
    for (let i = 1; i <= steps; i++) this.slots[(this.slotAt + i) % 10] = 0;
    this.slotAt = slot;
  }
}
