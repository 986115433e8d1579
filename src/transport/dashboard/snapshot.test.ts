import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { UsageBook } from '../access/usage.ts';
import { KeyFile, KeyRing } from '../apiKeys.ts';
import { LATENCY_BOUNDS_MS, LATENCY_BUCKETS, mergeSnapshots, quantile, viewOf } from './snapshot.ts';
import { DashboardSource } from './source.ts';

const T0 = Date.UTC(2026, 10, 25, 12, 0, 0);

/** A source over its own book and clock, as one API process has it. */
function process_(keys: KeyRing | null, clock: { now: number }, pool = { busy: 0, queued: 0, size: 2 }) {
  const book = new UsageBook(() => clock.now);
  const source = new DashboardSource({
    book,
    keys,
    now: () => clock.now,
    pool: () => pool,
    head: async () => ({ number: 7n, timestamp: BigInt(Math.floor(T0 / 1000)) }),
  });
  return { book, source, pool };
}

describe('dashboard snapshots', () => {
  it('merge to what one process seeing all the traffic would show (latency percentiles included)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'ethtrace-dash-'));
    const file = new KeyFile(dir);
    const { key } = file.create('alice', { settings: { creditsPerSecond: 400, creditsPerDay: 10_000 } });
    const keys = KeyRing.from([], file);
    const id = keys.lookup(key)?.id ?? '';
    const clock = { now: T0 };
    const all = process_(keys, clock);
    const parts = [process_(keys, clock), process_(keys, clock)];
    // Calls over three minutes, answered by one process or the other, in a pattern.
    for (let i = 0; i < 300; i++) {
      clock.now = T0 + i * 600;
      const method = i % 3 === 0 ? 'eth_call' : 'eth_chainId';
      const code = i % 10 === 0 ? -32602 : null;
      const ms = (i % 37) * 0.7 + (i % 50 === 0 ? 3000 : 0);
      const status = code === null ? 'ok' : '-32602';
      const part = parts[i % 2];
      for (const p of [all, part]) {
        if (!p) continue;
        p.book.record(id, 'alice', method, status, method === 'eth_call' ? 80 : 5);
        p.source.gateFor(key).answered?.({ method, params: [] }, code, ms);
      }
      if (i % 25 === 0)
        for (const p of [all, part]) p?.book.record(id, 'alice', 'eth_call', 'refused-rate', 0);
    }
    clock.now = T0 + 300 * 600;
    const one = await all.source.snapshot(clock.now);
    const merged = mergeSnapshots(await Promise.all(parts.map((p) => p.source.snapshot(clock.now))));
    // Everything but the pool (each process has its own) and the busiest second (see snapshot.ts).
    assert.deepEqual(merged.minutes, one.minutes);
    assert.deepEqual(merged.methods, one.methods);
    const mergedAlice = merged.keys[id];
    const oneAlice = one.keys[id];
    assert.ok(mergedAlice && oneAlice);
    const { peakCreditsPerSecond: _a, ...mergedKey } = mergedAlice;
    const { peakCreditsPerSecond: _b, ...oneKey } = oneAlice;
    assert.deepEqual(mergedKey, oneKey);
    assert.equal(oneKey.name, 'alice');
    assert.deepEqual(oneKey.limits, { creditsPerSecond: 400, burst: 400, creditsPerDay: 10_000 });
    assert.equal(oneKey.refused, 12);
    const a = viewOf(one, '1h', clock.now);
    const b = viewOf(merged, '1h', clock.now);
    assert.deepEqual(b.latency, a.latency);
    assert.deepEqual(b.failures, a.failures);
    assert.equal(a.totals.requests, 312);
    assert.deepEqual(
      a.failures.map((f) => [f.status, f.total]),
      [
        ['-32602', 30],
        ['refused-rate', 12],
      ],
    );
    assert.equal(sumOf(a.latency.count), 300);
    for (const p of [all, ...parts]) p.source.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('add the pools of several processes slot by slot', async () => {
    const clock = { now: T0 };
    const parts = [
      process_(null, clock, { busy: 1, queued: 0, size: 2 }),
      process_(null, clock, { busy: 2, queued: 3, size: 2 }),
    ];
    const merged = mergeSnapshots(
      await Promise.all(parts.map((p) => p.source.snapshot(clock.now, clock.now - 15 * 60_000))),
    );
    assert.deepEqual(merged.pool, { stepMs: 5000, slots: [T0], busy: [3], queued: [3], size: [4] });
    assert.deepEqual(merged.head, { number: 7, timestamp: T0 / 1000 });
    // Over a day, per minute: the mean of each process's samples, added.
    const day = mergeSnapshots(await Promise.all(parts.map((p) => p.source.snapshot(clock.now))));
    assert.deepEqual(day.pool, { stepMs: 60_000, slots: [T0], busy: [3], queued: [3], size: [4] });
    for (const p of parts) p.source.close();
  });

  it('count calls themselves when the server has no keys (no usage book of an access control)', async () => {
    const clock = { now: T0 };
    const source = new DashboardSource({
      book: null,
      keys: null,
      now: () => clock.now,
      pool: () => ({ busy: 0, queued: 0, size: 1 }),
      head: async () => null,
    });
    source.gateFor(null).answered?.({ method: 'eth_chainId', params: [] }, null, 1);
    source.gateFor(null).answered?.({ method: 'nope', params: [] }, -32601, 1);
    const view = viewOf(await source.snapshot(clock.now), '15m', clock.now);
    assert.deepEqual(
      view.methods.map((m) => [m.name, m.requests, m.errors]),
      [
        ['eth_chainId', 1, 0],
        // A name the method table does not have is counted as "other", as /metrics does.
        ['other', 1, 1],
      ],
    );
    assert.equal(view.keys[0]?.name, '(no key)');
    source.close();
  });
});

describe('latency quantiles of a histogram', () => {
  const counts = (entries: Array<[bucket: number, n: number]>) => {
    const c = new Array<number>(LATENCY_BUCKETS).fill(0);
    for (const [b, n] of entries) c[b] = n;
    return c;
  };

  it('interpolate within the bucket the rank falls in', () => {
    // 100 calls in (1, 2] ms: the median is half-way.
    const i = LATENCY_BOUNDS_MS.indexOf(2);
    assert.equal(quantile(counts([[i, 100]]), 0.5), 1.5);
    assert.equal(quantile(counts([[i, 100]]), 1), 2);
  });

  it('are null without observations, and the lower bound in the open last bucket', () => {
    assert.equal(quantile(counts([]), 0.5), null);
    const last = LATENCY_BOUNDS_MS[LATENCY_BOUNDS_MS.length - 1];
    assert.equal(quantile(counts([[LATENCY_BUCKETS - 1, 3]]), 0.99), last);
  });

  it('order p50 <= p90 <= p99', () => {
    const c = counts([
      [2, 50],
      [5, 30],
      [9, 15],
      [13, 5],
    ]);
    const [p50, p90, p99] = [0.5, 0.9, 0.99].map((q) => quantile(c, q) ?? Number.NaN);
    assert.ok(p50 !== undefined && p90 !== undefined && p99 !== undefined);
    assert.ok(p50 <= p90 && p90 <= p99, `${p50} ${p90} ${p99}`);
  });
});

function sumOf(xs: readonly number[]): number {
  return xs.reduce((a, b) => a + b, 0);
}
