import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { KeyLimits } from './bucket.ts';
import {
  type Decision,
  LEASE_CHUNK_MS,
  LEASE_MS,
  LeasingLedger,
  MemoryCounters,
  MemoryLedger,
  PROBE_MS,
  type SharedCounters,
} from './ledger.ts';

function clock(start: number) {
  const c = { t: start, now: () => c.t };
  return c;
}

describe('MemoryLedger', () => {
  it('refuses the sixth eth_call of a second at 400 credits per second, and says when to retry', () => {
    const c = clock(Date.parse('2026-03-01T12:00:00Z'));
    const ledger = new MemoryLedger(c.now);
    const limits: KeyLimits = { creditsPerSecond: 400, burst: 400, creditsPerDay: null };
    for (let i = 0; i < 5; i++) assert.deepEqual(ledger.take('k', 80, limits), { ok: true });
    c.t += 20;
    assert.deepEqual(ledger.take('k', 80, limits), {
      ok: false,
      reason: 'rate',
      retryAfterMs: 180,
      currentRps: 480,
      allowedRps: 400,
    });
    c.t += 180;
    assert.deepEqual(ledger.take('k', 80, limits), { ok: true });
    // Other keys have buckets of their own.
    assert.deepEqual(ledger.take('other', 80, limits), { ok: true });
  });

  it('keeps a day quota that resets at 00:00 UTC, and counts charged events against it', () => {
    const c = clock(Date.parse('2026-03-01T23:59:00Z'));
    const ledger = new MemoryLedger(c.now);
    const limits: KeyLimits = { creditsPerSecond: null, burst: 0, creditsPerDay: 400 };
    for (let i = 0; i < 4; i++) assert.deepEqual(ledger.take('k', 80, limits), { ok: true });
    ledger.charge('k', 50, limits); // a newHeads event
    assert.equal(ledger.exhausted('k', limits), false);
    const refused = ledger.take('k', 80, limits) as Extract<Decision, { reason: 'day' }>;
    assert.equal(refused.reason, 'day');
    assert.equal(refused.used, 370);
    assert.equal(refused.allowed, 400);
    assert.equal(refused.resetAt, Date.parse('2026-03-02T00:00:00Z'));
    // A refusal for the day spends the key's day: its WebSockets close.
    assert.equal(ledger.exhausted('k', limits), true);
    // The day is spent: a cheaper call that would fit is refused too, until 00:00 UTC.
    assert.equal((ledger.take('k', 5, limits) as { reason?: string }).reason, 'day');
    c.t = Date.parse('2026-03-02T00:00:00Z');
    assert.equal(ledger.exhausted('k', limits), false);
    for (let i = 0; i < 5; i++) assert.deepEqual(ledger.take('k', 80, limits), { ok: true });
    assert.equal(ledger.exhausted('k', limits), true);
    assert.equal((ledger.take('k', 5, limits) as { reason?: string }).reason, 'day');
  });

  it('refuses a body by its total: a batch counts every call', () => {
    const ledger = new MemoryLedger(clock(0).now);
    const limits: KeyLimits = { creditsPerSecond: 400, burst: 400, creditsPerDay: 1000 };
    assert.deepEqual(ledger.take('k', 5 * 80, limits), { ok: true });
    assert.equal((ledger.take('k', 80, limits) as { reason?: string }).reason, 'rate');
  });

  it('applies limits given later (keys update) with a full bucket', () => {
    const c = clock(0);
    const ledger = new MemoryLedger(c.now);
    const none: KeyLimits = { creditsPerSecond: null, burst: 0, creditsPerDay: null };
    for (let i = 0; i < 20; i++) assert.deepEqual(ledger.take('k', 80, none), { ok: true });
    const limited: KeyLimits = { creditsPerSecond: 160, burst: 160, creditsPerDay: null };
    assert.deepEqual(ledger.take('k', 80, limited), { ok: true });
    assert.deepEqual(ledger.take('k', 80, limited), { ok: true });
    assert.equal((ledger.take('k', 80, limited) as { reason?: string }).reason, 'rate');
    // The day counted all along: a quota set now sees the 1,760 credits spent today.
    assert.equal(
      (ledger.take('k', 5, { ...none, creditsPerDay: 1000 }) as { reason?: string }).reason,
      'day',
    );
  });
});

describe('LeasingLedger over shared counters', () => {
  it('decides most bodies locally, and several processes together never exceed the rate', async () => {
    const c = clock(Date.parse('2026-03-01T12:00:00Z'));
    const shared = new MemoryCounters(c.now);
    const limits: KeyLimits = { creditsPerSecond: 40_000, burst: 40_000, creditsPerDay: null };
    const processes = [new LeasingLedger(shared, c.now), new LeasingLedger(shared, c.now)];
    const exchanges = () => processes.reduce((n, p) => n + p.exchanges, 0);
    // Within the rate, half of it: a call of 80 credits every 4 ms, from either process in turn.
    for (let ms = 0; ms < 2000; ms += 4) {
      const d = await (processes[(ms / 4) % 2] as LeasingLedger).take('k', 80, limits);
      assert.ok(d.ok, `refused at ${ms} ms within the rate`);
      c.t += 4;
    }
    assert.ok(exchanges() < 500 / 20, `${exchanges()} exchanges for 500 bodies within the rate`);
    // Then two seconds far over it: every process sends a call every ms.
    const before = exchanges();
    let bodies = 0;
    let overAdmitted = 0;
    for (let ms = 0; ms < 2000; ms++) {
      for (const p of processes) {
        bodies++;
        if ((await p.take('k', 80, limits)).ok) overAdmitted += 80;
      }
      c.t += 1;
    }
    // The burst plus two seconds at the rate, plus the leases each process held when it began
    // (tokens taken from the bucket earlier, spent now: LEASE_CHUNK_MS worth each, at most).
    const chunk = (40_000 * LEASE_CHUNK_MS) / 1000;
    assert.ok(overAdmitted <= 40_000 + 2 * 40_000 + 2 * chunk, `admitted ${overAdmitted}`);
    assert.ok(overAdmitted >= 0.9 * 2 * 40_000, `admitted only ${overAdmitted}`);
    assert.ok(
      exchanges() - before < bodies / 10,
      `${exchanges() - before} exchanges for ${bodies} bodies over the rate`,
    );
    for (const p of processes) await p.close();
  });

  it('shares the day: reservations are taken out of one count, and given back at close', async () => {
    const c = clock(Date.parse('2026-03-01T12:00:00Z'));
    const shared = new MemoryCounters(c.now);
    const limits: KeyLimits = { creditsPerSecond: null, burst: 0, creditsPerDay: 800_000 };
    const a = new LeasingLedger(shared, c.now);
    const b = new LeasingLedger(shared, c.now);
    let admitted = 0;
    for (let i = 0; i < 12_000; i++) {
      const d = await (i % 2 ? a : b).take('k', 80, limits);
      if (d.ok) admitted += 80;
    }
    assert.ok(admitted <= 800_000, `admitted ${admitted}`);
    assert.ok(admitted >= 800_000 - 2 * 800, `admitted only ${admitted}`);
    assert.equal((await a.take('k', 80, limits)).ok, false);
    assert.ok(a.exhausted('k', limits));
    await a.close();
    await b.close();
    // What both had reserved and not spent is back: the shared count is exactly what was admitted.
    const probe = shared.exchangeNow(
      'k',
      { rateNeed: 0, rateWant: 0, dayNeed: 0, dayWant: 0, rateReturn: 0, dayReturn: 0, charged: 0 },
      limits,
    );
    assert.equal(probe.dayUsed, admitted);
  });

  it('gives unused lease tokens back (expired, or at close): no token is lost', async () => {
    const c = clock(0);
    const shared = new MemoryCounters(c.now);
    const limits: KeyLimits = { creditsPerSecond: 1000, burst: 1000, creditsPerDay: null };
    const a = new LeasingLedger(shared, c.now);
    const b = new LeasingLedger(shared, c.now);
    let spent = 0;
    // a leases a chunk (100 ms worth: 100) for one 80-credit call and keeps 20.
    assert.deepEqual(await a.take('k', 80, limits), { ok: true });
    spent += 80;
    // b takes what is left, until refused.
    while ((await b.take('k', 80, limits)).ok) spent += 80;
    assert.ok(spent >= 880, `spent ${spent}`);
    // a's 20 expire and go back with its next exchange; 250 ms refill 250.
    c.t += LEASE_MS;
    assert.deepEqual(await a.take('k', 80, limits), { ok: true });
    spent += 80;
    await a.close();
    await b.close();
    const none = {
      rateNeed: 1,
      rateWant: 1e9,
      dayNeed: 0,
      dayWant: 0,
      rateReturn: 0,
      dayReturn: 0,
      charged: 0,
    };
    const left = shared.exchangeNow('k', none, limits);
    assert.ok(left.ok);
    assert.equal(spent + left.rate, 1000 + 250);
  });

  it('admits, and says so, when the shared counters cannot be reached', async () => {
    const lines: string[] = [];
    const broken = { exchange: () => Promise.reject(new Error('connection refused')) };
    const ledger = new LeasingLedger(broken, Date.now, (l) => lines.push(l));
    const d = await ledger.take('k', 80, { creditsPerSecond: 10, burst: 10, creditsPerDay: 10 });
    assert.deepEqual(d, { ok: true });
    assert.match(lines[0] ?? '', /cannot be reached \(connection refused\): admitting requests without/);
    await ledger.close();
  });

  it('tells an outage once as it begins and once as it ends, and does not ask meanwhile', async () => {
    const lines: string[] = [];
    const memory = new MemoryCounters();
    let up = true;
    const refused = () => Promise.reject(new Error('connection refused'));
    const shared: SharedCounters = {
      description: 'the test counters',
      exchange: (keyId, ask, limits) => (up ? memory.exchange(keyId, ask, limits) : refused()),
      ping: () => (up ? Promise.resolve() : refused()),
    };
    const ledger = new LeasingLedger(shared, Date.now, (l) => lines.push(l));
    // 80 credits a second and a body of 80: every body needs an exchange.
    const limits: KeyLimits = { creditsPerSecond: 80, burst: 80, creditsPerDay: null };
    assert.deepEqual(await ledger.take('k', 80, limits), { ok: true });
    assert.deepEqual(ledger.health(), { up: true, outages: 0, unchecked: 0, down: null });
    assert.equal(ledger.problem(), null);

    up = false;
    for (let i = 0; i < 5; i++) assert.deepEqual(await ledger.take('k', 80, limits), { ok: true });
    assert.equal(lines.length, 1, lines.join('\n'));
    assert.match(
      lines[0] ?? '',
      /^the shared limits \(the test counters\) cannot be reached \(connection refused\)/,
    );
    // One exchange found them down; the bodies after it did not wait for another.
    assert.equal(ledger.exchanges, 2);
    const health = ledger.health();
    assert.equal(health.up, false);
    assert.equal(health.outages, 1);
    assert.equal(health.unchecked, 5);
    assert.match(
      ledger.problem() ?? '',
      /cannot be reached since .*Z \(connection refused\): requests are admitted/,
    );

    up = true;
    // Seen back by the probe, without a request.
    const deadline = Date.now() + 10 * PROBE_MS;
    while (!ledger.health().up && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    assert.equal(ledger.health().up, true);
    assert.equal(lines.length, 2, lines.join('\n'));
    assert.match(
      lines[1] ?? '',
      /^the shared limits \(the test counters\) answer again after \d+\.\d s; 5 requests were admitted without their limits meanwhile$/,
    );
    // And the limits hold again: the second body of a second is refused.
    assert.deepEqual(await ledger.take('k', 80, limits), { ok: true });
    assert.equal((await ledger.take('k', 80, limits)).ok, false);
    assert.equal(ledger.health().outages, 1);
    await ledger.close();
  });
});
