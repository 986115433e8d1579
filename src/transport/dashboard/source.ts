import type { CallGate } from '../../rpc/envelope.ts';
import { creditsOf } from '../access/credits.ts';
import { UsageBook, type UsageStatus } from '../access/usage.ts';
import type { KeyRing } from '../apiKeys.ts';
import {
  DAY_MS,
  type DashboardSnapshot,
  emptyMinute,
  type HeadStats,
  type KeyStats,
  LATENCY_BOUNDS_MS,
  LATENCY_BUCKETS,
  MINUTE_MS,
  type MinuteStats,
  type PoolSeries,
} from './snapshot.ts';

/** How often the pool is sampled; each slot keeps its busiest sample (and the one taken on a snapshot). */
export const POOL_STEP_MS = 5_000;
/** Ranges up to this are drawn from the pool's samples; longer ones from per-minute means. */
const POOL_FINE_MS = 60 * MINUTE_MS;
const MINUTES_KEPT = DAY_MS / MINUTE_MS;
const POOL_SLOTS = DAY_MS / POOL_STEP_MS;
/** The name usage is kept under when the server runs without keys (`--no-auth`). */
export const NO_KEY_NAME = '(no key)';

export interface DashboardInputs {
  /** This process's usage: the access control's (src/transport/access/control.ts), or null without keys. */
  book: UsageBook | null;
  /** The method table's names, for the book this source keeps without keys (others are `other`). */
  methods?: Iterable<string>;
  /** The keys, for each one's limits; null without keys. */
  keys: KeyRing | null;
  /** The execution pool right now. */
  pool(): { busy: number; queued: number; size: number };
  /** The head block's number and timestamp (seconds), or null on an empty chain. */
  head(): Promise<{ number: bigint; timestamp: bigint } | null>;
  now?: () => number;
}

/** A key's traffic in its current second, and the busiest second of each minute. */
interface KeyTrack {
  second: number;
  credits: number;
  /** Minute → credits of its busiest second; minutes in increasing order. */
  peaks: Map<number, number>;
  /** The key's gate, made once: a body costs no allocation here. */
  gate: CallGate;
}

/**
 * One process's part of the dashboard: what the usage book already counts (requests, credits,
 * statuses per key and method, refusals included) plus what it does not, recorded here through a
 * CallGate of its own: latency histograms per minute, each key's busiest second, and pool samples.
 *
 * The gate runs on every call, so it allocates nothing per call: latency goes into a ring of fixed
 * rows (one per minute of the last day), a key's second into its one record (bench/dashboardGate.ts
 * measures it).
 */
export class DashboardSource {
  private readonly book: UsageBook;
  /** Whether this source records usage itself: there is no access control to do it (`--no-auth`). */
  private readonly recordsUsage: boolean;
  private readonly now: () => number;
  private readonly latency = new Float64Array(MINUTES_KEPT * LATENCY_BUCKETS);
  private readonly latencyMinute = new Float64Array(MINUTES_KEPT).fill(-1);
  private readonly keyTracks = new Map<string, KeyTrack>();
  private readonly poolSlot = new Float64Array(POOL_SLOTS).fill(-1);
  private readonly poolBusy = new Float64Array(POOL_SLOTS);
  private readonly poolQueued = new Float64Array(POOL_SLOTS);
  private readonly poolSize = new Float64Array(POOL_SLOTS);
  private readonly sampler: NodeJS.Timeout;
  private readonly anonymous: CallGate = {
    answered: (call, code, ms) => this.answered(null, call.method, code, ms),
  };

  constructor(private readonly inputs: DashboardInputs) {
    this.now = inputs.now ?? Date.now;
    this.recordsUsage = inputs.book === null;
    this.book = inputs.book ?? new UsageBook(this.now, inputs.methods);
    this.sample();
    this.sampler = setInterval(() => this.sample(), POOL_STEP_MS);
    this.sampler.unref();
  }

  /** The gate of the bodies sent with `key` (null without keys): it only listens, and is made once per key. */
  gateFor(key: string | null): CallGate {
    if (key === null) return this.anonymous;
    let track = this.keyTracks.get(key);
    if (track === undefined) {
      const made: KeyTrack = { second: 0, credits: 0, peaks: new Map(), gate: {} };
      // A call the access policy refused spent nothing and ran not at all: the usage book counts it.
      made.gate = {
        answered: (call, code, ms, refused) => {
          if (!refused) this.answered(made, call.method, code, ms);
        },
      };
      this.keyTracks.set(key, made);
      track = made;
    }
    return track.gate;
  }

  private answered(track: KeyTrack | null, method: string, code: number | null, ms: number): void {
    const now = this.now();
    const minute = now - (now % MINUTE_MS);
    const row = (minute / MINUTE_MS) % MINUTES_KEPT;
    if (this.latencyMinute[row] !== minute) {
      this.latencyMinute[row] = minute;
      this.latency.fill(0, row * LATENCY_BUCKETS, (row + 1) * LATENCY_BUCKETS);
    }
    let bucket = 0;
    while (bucket < LATENCY_BOUNDS_MS.length && ms > (LATENCY_BOUNDS_MS[bucket] ?? 0)) bucket++;
    this.latency[row * LATENCY_BUCKETS + bucket] = (this.latency[row * LATENCY_BUCKETS + bucket] ?? 0) + 1;
    const credits = creditsOf(method);
    if (track !== null) {
      const second = now - (now % 1000);
      if (track.second !== second) {
        fold(track, now);
        track.second = second;
        track.credits = 0;
      }
      track.credits += credits;
    }
    if (this.recordsUsage)
      this.book.record(
        '-',
        NO_KEY_NAME,
        method,
        code === null ? 'ok' : (String(code) as UsageStatus),
        credits,
      );
  }

  /** The pool now, into its slot (a slot keeps the busiest of its samples). */
  private sample(): void {
    const now = this.now();
    const slot = now - (now % POOL_STEP_MS);
    const i = (slot / POOL_STEP_MS) % POOL_SLOTS;
    const { busy, queued, size } = this.inputs.pool();
    if (this.poolSlot[i] !== slot) {
      this.poolSlot[i] = slot;
      this.poolBusy[i] = busy;
      this.poolQueued[i] = queued;
      this.poolSize[i] = size;
      return;
    }
    this.poolBusy[i] = Math.max(this.poolBusy[i] ?? 0, busy);
    this.poolQueued[i] = Math.max(this.poolQueued[i] ?? 0, queued);
    this.poolSize[i] = Math.max(this.poolSize[i] ?? 0, size);
  }

  /** What this process knows of the time since `since` (at most the last day). */
  async snapshot(now: number = this.now(), since: number = now - DAY_MS): Promise<DashboardSnapshot> {
    since = Math.max(since, now - DAY_MS);
    this.sample();
    const firstMinute = since - (since % MINUTE_MS);
    const midnight = now - (now % DAY_MS);
    const minutes = new Map<number, MinuteStats>();
    const methods: DashboardSnapshot['methods'] = {};
    const keys: Record<string, KeyStats> = {};
    const keyOf = (id: string, name: string): KeyStats => {
      let k = keys[id];
      if (!k) {
        k = {
          name,
          requests: 0,
          credits: 0,
          refused: 0,
          peakCreditsPerSecond: 0,
          creditsToday: 0,
          limits: { creditsPerSecond: null, burst: 0, creditsPerDay: null },
        };
        keys[id] = k;
      }
      return k;
    };
    for (const row of this.book.rows(Math.min(firstMinute, midnight))) {
      if (row.minute >= midnight) keyOf(row.keyId, row.key).creditsToday += row.credits;
      if (row.minute < firstMinute) continue;
      let m = minutes.get(row.minute);
      if (!m) {
        m = emptyMinute(row.minute);
        minutes.set(row.minute, m);
      }
      const refused = row.status.startsWith('refused-');
      m.requests += row.requests;
      m.credits += row.credits;
      if (row.status === 'ok') m.ok += row.requests;
      else {
        if (refused) m.refused += row.requests;
        else m.errors += row.requests;
        m.failures[row.status] = (m.failures[row.status] ?? 0) + row.requests;
      }
      const method = methods[row.method] ?? { requests: 0, credits: 0, errors: 0, refused: 0 };
      method.requests += row.requests;
      method.credits += row.credits;
      if (refused) method.refused += row.requests;
      else if (row.status !== 'ok') method.errors += row.requests;
      methods[row.method] = method;
      const key = keyOf(row.keyId, row.key);
      key.name = row.key;
      key.requests += row.requests;
      key.credits += row.credits;
      if (refused) key.refused += row.requests;
    }
    for (const m of minutes.values()) {
      const row = (m.minute / MINUTE_MS) % MINUTES_KEPT;
      if (this.latencyMinute[row] !== m.minute) continue;
      for (let b = 0; b < LATENCY_BUCKETS; b++) m.latency[b] = this.latency[row * LATENCY_BUCKETS + b] ?? 0;
    }
    // Limits and busiest seconds, by the keys this process has served: the raw key is looked up
    // here, and only its id, name and limits leave.
    for (const [raw, track] of this.keyTracks) {
      const entry = this.inputs.keys?.lookup(raw);
      if (!entry) continue;
      const key = keys[entry.id];
      if (!key) continue;
      key.name = entry.name;
      key.limits = { ...entry.limits };
      key.peakCreditsPerSecond = Math.max(key.peakCreditsPerSecond, peakOf(track, firstMinute));
    }
    return {
      at: now,
      since,
      minutes: [...minutes.values()].sort((a, b) => a.minute - b.minute),
      methods,
      keys,
      pool: this.poolSince(since, now),
      head: await this.head(),
    };
  }

  private poolSince(since: number, now: number): PoolSeries {
    const fine = now - since <= POOL_FINE_MS;
    const stepMs = fine ? POOL_STEP_MS : MINUTE_MS;
    const out: PoolSeries = { stepMs, slots: [], busy: [], queued: [], size: [] };
    // Per minute: the mean of its slots, which (unlike a maximum) adds up across processes.
    let current = -1;
    let n = 0;
    const sums = { busy: 0, queued: 0, size: 0 };
    const flush = () => {
      if (n === 0) return;
      out.slots.push(current);
      out.busy.push(sums.busy / n);
      out.queued.push(sums.queued / n);
      out.size.push(sums.size / n);
      n = 0;
      sums.busy = sums.queued = sums.size = 0;
    };
    const first = since - (since % POOL_STEP_MS);
    for (let slot = first; slot <= now; slot += POOL_STEP_MS) {
      const i = (slot / POOL_STEP_MS) % POOL_SLOTS;
      if (this.poolSlot[i] !== slot) continue;
      const busy = this.poolBusy[i] ?? 0;
      const queued = this.poolQueued[i] ?? 0;
      const size = this.poolSize[i] ?? 0;
      if (fine) {
        out.slots.push(slot);
        out.busy.push(busy);
        out.queued.push(queued);
        out.size.push(size);
        continue;
      }
      const minute = slot - (slot % MINUTE_MS);
      if (minute !== current) {
        flush();
        current = minute;
      }
      sums.busy += busy;
      sums.queued += queued;
      sums.size += size;
      n++;
    }
    flush();
    return out;
  }

  private async head(): Promise<HeadStats | null> {
    const head = await this.inputs.head();
    return head && { number: Number(head.number), timestamp: Number(head.timestamp) };
  }

  close(): void {
    clearInterval(this.sampler);
  }
}

/** Closes a key's last second into its minute's peak, and forgets minutes older than a day. */
function fold(track: KeyTrack, now: number): void {
  if (track.credits === 0) return;
  const minute = track.second - (track.second % MINUTE_MS);
  track.peaks.set(minute, Math.max(track.peaks.get(minute) ?? 0, track.credits));
  for (const m of track.peaks.keys()) {
    if (m > now - DAY_MS) break;
    track.peaks.delete(m);
  }
}

function peakOf(track: KeyTrack, since: number): number {
  let peak = 0;
  for (const [minute, credits] of track.peaks) if (minute >= since) peak = Math.max(peak, credits);
  // The second still running (or the last one the key was seen in) counts as it stands.
  if (track.second >= since) peak = Math.max(peak, track.credits);
  return peak;
}
