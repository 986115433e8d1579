import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { Redis } from 'ioredis';
import type { KeyLimits } from './bucket.ts';
import { type ExchangeAsk, LeasingLedger, MemoryCounters, NO_ASK } from './ledger.ts';
import { RedisCounters } from './redisCounters.ts';

// The Redis this machine runs (README: tests talk to the real one); each test uses keys of its own.
const REDIS_URL = process.env.ETHTRACE_TEST_REDIS ?? 'redis://127.0.0.1:6379';

describe('RedisCounters (the real Redis)', () => {
  const connections: Redis[] = [];
  const connect = () => {
    const redis = new Redis(REDIS_URL, { lazyConnect: false, maxRetriesPerRequest: 1 });
    connections.push(redis);
    return redis;
  };
  let prefix: string;
  before(() => {
    prefix = `ethtrace-test:${randomBytes(6).toString('hex')}:`;
  });
  after(async () => {
    const [first] = connections;
    if (first) {
      const keys = await first.keys(`${prefix}*`);
      if (keys.length > 0) await first.del(...keys);
    }
    for (const redis of connections) redis.disconnect();
  });

  it('answers each exchange as the in-memory reference does', async () => {
    const redis = new RedisCounters(connect(), prefix);
    const memory = new MemoryCounters();
    const limits: KeyLimits = { creditsPerSecond: null, burst: 0, creditsPerDay: 1000 };
    const asks: ExchangeAsk[] = [
      { ...NO_ASK, dayNeed: 300, dayWant: 300 },
      { ...NO_ASK, dayNeed: 300, dayWant: 500 },
      { ...NO_ASK, charged: 50 },
      { ...NO_ASK, dayNeed: 300, dayWant: 300 },
      { ...NO_ASK, dayReturn: 200 },
      { ...NO_ASK, dayNeed: 300, dayWant: 300 },
    ];
    for (const ask of asks)
      assert.deepEqual(await redis.exchange('day', ask, limits), await memory.exchange('day', ask, limits));
  });

  it('keeps one count for many processes exchanging at once (no update lost to a race)', async () => {
    const processes = Array.from({ length: 4 }, () => new RedisCounters(connect(), prefix));
    const limits: KeyLimits = { creditsPerSecond: null, burst: 0, creditsPerDay: null };
    await Promise.all(
      processes.flatMap((p) =>
        Array.from({ length: 25 }, () => p.exchange('race', { ...NO_ASK, charged: 7 }, limits)),
      ),
    );
    const last = await processes[0]?.exchange('race', NO_ASK, limits);
    assert.equal(last?.dayUsed, 4 * 25 * 7);
  });

  it('shares a key’s rate between leasing ledgers: together they never pass more than the bucket gives', async () => {
    const limits: KeyLimits = { creditsPerSecond: 400, burst: 400, creditsPerDay: null };
    const ledgers = [0, 1].map(() => new LeasingLedger(new RedisCounters(connect(), prefix)));
    let admitted = 0;
    const started = Date.now();
    // Half a second of two processes asking as fast as they can for 80-credit calls.
    while (Date.now() - started < 500) {
      const decisions = await Promise.all(ledgers.map((l) => l.take('rate', 80, limits)));
      admitted += decisions.filter((d) => d.ok).length;
    }
    const elapsed = (Date.now() - started) / 1000;
    for (const l of ledgers) await l.close();
    // The burst plus the refill over the run, plus one lease chunk per process (ledger.ts).
    const bound = 400 + 400 * elapsed + 2 * 40;
    assert.ok(admitted * 80 <= bound, `${admitted * 80} credits admitted, bound ${bound.toFixed(0)}`);
    // And the limit is not so tight that the key starves: most of what the rate allows passes.
    assert.ok(admitted * 80 >= 0.5 * (400 + 400 * elapsed), `only ${admitted * 80} credits admitted`);
  });
});
