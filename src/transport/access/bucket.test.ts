import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  fullBucket,
  giveBack,
  grant,
  type KeyLimits,
  nextUtcMidnight,
  RateWindow,
  utcDay,
} from './bucket.ts';

const limits: KeyLimits = { creditsPerSecond: 400, burst: 400, creditsPerDay: null };

describe('token bucket', () => {
  it('starts full, lets a burst through, then refills at the rate', () => {
    const b = fullBucket(limits, 0);
    for (let i = 0; i < 5; i++) assert.deepEqual(grant(b, 80, 80, limits, 0), { granted: 80 });
    const refused = grant(b, 80, 80, limits, 0);
    assert.deepEqual(refused, { granted: 0, retryAfterMs: 200 });
    // 80 credits at 400/s take 200 ms to come back.
    assert.deepEqual(grant(b, 80, 80, limits, 199), { granted: 0, retryAfterMs: 1 });
    assert.deepEqual(grant(b, 80, 80, limits, 200), { granted: 80 });
  });

  it('never holds more than its burst', () => {
    const b = fullBucket(limits, 0);
    grant(b, 400, 400, limits, 0);
    assert.deepEqual(grant(b, 401, 401, limits, 10_000), { granted: 401 }); // full: let through, in debt
    assert.equal(b.tokens, -1);
    giveBack(b, 1000, limits, 10_000);
    assert.equal(b.tokens, 400);
  });

  it('lets a body larger than the burst through only when full, leaving a debt', () => {
    const b = fullBucket(limits, 0);
    assert.deepEqual(grant(b, 1000, 1000, limits, 0), { granted: 1000 });
    assert.equal(b.tokens, -600);
    // The debt is repaid before anything else passes: 680 credits at 400/s.
    assert.deepEqual(grant(b, 80, 80, limits, 0), { granted: 0, retryAfterMs: 1700 });
    assert.deepEqual(grant(b, 80, 80, limits, 1700), { granted: 80 });
    // A second big one waits for a full bucket: 400 - 0 at 400/s.
    assert.deepEqual(grant(b, 1000, 1000, limits, 1700), { granted: 0, retryAfterMs: 1000 });
  });

  it('grants a chunk between need and want (a lease)', () => {
    const b = fullBucket(limits, 0);
    assert.deepEqual(grant(b, 80, 300, limits, 0), { granted: 300 });
    assert.deepEqual(grant(b, 80, 300, limits, 0), { granted: 100 });
    assert.deepEqual(grant(b, 80, 300, limits, 0), { granted: 0, retryAfterMs: 200 });
  });

  it('applies a lowered burst at once', () => {
    const b = fullBucket(limits, 0);
    const lower = { ...limits, burst: 100 };
    assert.deepEqual(grant(b, 80, 80, lower, 0), { granted: 80 });
    assert.equal(b.tokens, 20);
  });
});

describe('UTC days', () => {
  it('change at 00:00 UTC', () => {
    const before = Date.parse('2026-03-01T23:59:59.999Z');
    const after = Date.parse('2026-03-02T00:00:00.000Z');
    assert.equal(utcDay(after), utcDay(before) + 1);
    assert.equal(nextUtcMidnight(before), after);
    assert.equal(nextUtcMidnight(after), Date.parse('2026-03-03T00:00:00.000Z'));
  });
});

describe('RateWindow', () => {
  it('sums the last second in tenths', () => {
    const w = new RateWindow();
    w.add(80, 1000);
    w.add(80, 1050);
    w.add(80, 1500);
    assert.equal(w.sum(1500), 240);
    assert.equal(w.sum(1999, 10), 250);
    assert.equal(w.sum(2000), 80); // the 1000–1099 slot has left the window
    assert.equal(w.sum(2600), 0);
    assert.equal(w.sum(100_000), 0);
  });
});
