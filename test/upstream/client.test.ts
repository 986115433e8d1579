import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { type Hex, keccak256, numberToHex } from 'viem';
import { LimitExceeded, Unavailable, UpstreamError, UserError } from '../../src/core/errors.ts';
import { withUpstreamBudget } from '../../src/upstream/budget.ts';
import {
  DEFAULT_UPSTREAM_LIMITS,
  type RpcCall,
  redactUrl,
  UpstreamClient,
  type UpstreamLimits,
} from '../../src/upstream/client.ts';
import { type Anvil, startAnvil } from '../support/anvil.ts';
import { type FaultProxy, startFaultProxy } from '../support/faultProxy.ts';

/**
 * The upstream client against a real anvil, over HTTP and WebSocket, and against the faults a
 * fault-injecting proxy in front of it makes. Limits are checked with the proxy's counters (how many
 * requests reached it, how many were in flight at once, when each arrived), never by how long
 * something took, so a loaded machine makes the suite slower but not flaky.
 */

let anvil: Anvil;
const clients: UpstreamClient[] = [];
const proxies: FaultProxy[] = [];

before(async () => {
  anvil = await startAnvil();
});

after(async () => {
  await Promise.all(clients.map((c) => c.close()));
  await Promise.all(proxies.map((p) => p.close()));
  await anvil?.stop();
});

/** A client closed when the suite ends, with its log lines kept. */
function client(urls: string[], limits: Partial<UpstreamLimits> = {}) {
  const lines: string[] = [];
  const c = new UpstreamClient(urls, limits, (line) => lines.push(line));
  clients.push(c);
  return Object.assign(c, { logged: () => lines.join('\n') });
}

async function proxy(): Promise<FaultProxy> {
  const p = await startFaultProxy(anvil.url);
  proxies.push(p);
  return p;
}

/** A proxy that refuses connections: its port is closed. */
async function deadProxy(): Promise<FaultProxy> {
  const p = await proxy();
  await p.stop();
  return p;
}

/**
 * Distinct calls whose answers can be checked: web3_sha3 of 0x00, 0x01, … (from `from`); `bad` ones
 * fail.
 */
function sha3Calls(n: number, bad: readonly number[] = [], from = 0): RpcCall[] {
  return Array.from({ length: n }, (_, i) =>
    bad.includes(i)
      ? { method: 'eth_getBalance', params: ['not an address', 'latest'] }
      : { method: 'web3_sha3', params: [numberToHex(from + i, { size: 1 })] },
  );
}

const sha3Of = (i: number): Hex => keccak256(numberToHex(i, { size: 1 }));

/** Rejects with an instance of `type` whose message matches `message`; returns it. */
async function rejectsWith<E extends Error>(
  promise: Promise<unknown>,
  type: abstract new (...args: never[]) => E,
  message: RegExp,
): Promise<E> {
  const e = await promise.then(
    () => assert.fail(`expected ${type.name}`),
    (e: unknown) => e,
  );
  assert.ok(e instanceof type, `expected ${type.name}, got ${String(e)}`);
  assert.match(e.message, message);
  return e;
}

/** `s` as a regular expression matching it exactly. */
const literal = (s: string): string => s.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');

for (const transport of ['http', 'ws'] as const) {
  describe(`UpstreamClient against anvil over ${transport === 'http' ? 'HTTP' : 'WebSocket'}`, () => {
    const url = (): string => (transport === 'http' ? anvil.url : anvil.url.replace(/^http/, 'ws'));

    it('answers single requests with their results, one round trip each', async () => {
      const c = client([url()]);
      assert.equal(await c.request('eth_chainId'), numberToHex(anvil.genesis.config.chainId));
      const genesis = await c.request<{ number: Hex }>('eth_getBlockByNumber', ['0x0', false]);
      assert.equal(genesis.number, '0x0');
      assert.deepEqual(c.stats(), {
        roundTrips: 2,
        calls: 2,
        shared: 0,
        retries: 0,
        failures: 0,
        rateLimited: 0,
        urls: [{ url: url(), ok: 2, failed: 0, healthy: true }],
      });
    });

    it("throws UpstreamError with the node's code and message for a call it refuses, without retrying", async () => {
      const c = client([url()]);
      const e = await rejectsWith(
        c.request('eth_getBalance', ['not an address', 'latest']),
        UpstreamError,
        /./,
      );
      assert.equal(e.upstream.code, -32602);
      assert.equal(e.message, e.upstream.message);
      assert.deepEqual(e.data, e.upstream);
      assert.equal(c.stats().roundTrips, 1);
      assert.equal(c.stats().urls[0]?.healthy, true);
    });

    it('splits a batch longer than maxBatch, answers in call order and keeps per-call errors', async () => {
      const c = client([url()], { maxBatch: 4 });
      const outcomes = await c.batch(sha3Calls(10, [2, 9]));
      assert.equal(outcomes.length, 10);
      outcomes.forEach((outcome, i) => {
        if (i === 2 || i === 9) assert.equal(!outcome.ok && outcome.error.code, -32602, `call ${i}`);
        else assert.deepEqual(outcome, { ok: true, result: sha3Of(i) }, `call ${i}`);
      });
      assert.equal(c.stats().roundTrips, 3, 'ceil(10 / 4) round trips');
      assert.equal(c.stats().calls, 10);
    });

    it('sends an empty batch nowhere and a one-call batch as a plain request', async () => {
      const c = client([url()]);
      assert.deepEqual(await c.batch([]), []);
      assert.equal(c.stats().roundTrips, 0);
      assert.deepEqual(await c.batch(sha3Calls(1)), [{ ok: true, result: sha3Of(0) }]);
      assert.equal(c.stats().roundTrips, 1);
    });

    it('matches many concurrent requests and batches to their answers', async () => {
      const c = client([url()], { maxBatch: 3 });
      const singles = Array.from({ length: 40 }, (_, i) =>
        c.request('web3_sha3', [numberToHex(i, { size: 1 })]),
      );
      const batches = Array.from({ length: 5 }, (_, b) => c.batch(sha3Calls(7, [], 100 + 7 * b)));
      assert.deepEqual(
        await Promise.all(singles),
        Array.from({ length: 40 }, (_, i) => sha3Of(i)),
      );
      for (const [b, outcomes] of (await Promise.all(batches)).entries()) {
        assert.deepEqual(
          outcomes,
          Array.from({ length: 7 }, (_, i) => ({ ok: true, result: sha3Of(100 + 7 * b + i) })),
        );
      }
      assert.equal(c.stats().roundTrips, 40 + 5 * 3);
    });

    it('sends a call asked for again while it is on its way once, and shares its answer', async () => {
      const p = await proxy();
      // Slow enough that every ask below is made while the first is on its way.
      p.delayMs = 300;
      const c = client([transport === 'http' ? p.url : p.wsUrl]);
      const block0 = ['0x0', false];
      const singles = Array.from({ length: 8 }, () => c.request('eth_getBlockByNumber', block0));
      const batch = c.batch([
        { method: 'eth_getBlockByNumber', params: block0 },
        { method: 'web3_sha3', params: ['0x01'] },
        { method: 'web3_sha3', params: ['0x01'] },
      ]);
      const answers = await Promise.all(singles);
      const [inBatch, sha, shaAgain] = await batch;
      const expected = await anvil.rpc('eth_getBlockByNumber', block0);
      for (const answer of answers) assert.deepEqual(answer, expected);
      assert.deepEqual(inBatch, { ok: true, result: expected });
      assert.deepEqual(
        [sha, shaAgain],
        [0, 0].map(() => ({ ok: true, result: sha3Of(1) })),
      );
      assert.deepEqual([c.stats().roundTrips, c.stats().calls, c.stats().shared], [2, 11, 9]);
      // The proxy reads HTTP bodies (WebSocket frames it only pipes).
      if (transport === 'http') {
        const asked = p.calls.map((call) => `${call.method} ${JSON.stringify(call.params)}`);
        assert.deepEqual(asked.sort(), ['eth_getBlockByNumber ["0x0",false]', 'web3_sha3 ["0x01"]']);
      }
      // Once answered, a call is asked for again: sharing is of reads on their way, not a cache.
      await c.request('eth_getBlockByNumber', block0);
      assert.equal(c.stats().roundTrips, 3);
    });
  });
}

describe('UpstreamClient: timeouts and answers that are not answers', () => {
  it('gives Unavailable naming the URL when the upstream never answers', async () => {
    const p = await proxy();
    p.inject({ kind: 'hang' }, Number.POSITIVE_INFINITY);
    const c = client([p.url], { timeoutMs: 300, retries: 1, backoffMs: 10 });
    await rejectsWith(
      c.request('eth_chainId'),
      Unavailable,
      new RegExp(`^upstream ${literal(p.url)} unavailable: no answer within 300 ms \\(2 attempts\\)$`),
    );
    assert.equal(p.counters.requests, 2);
    const stats = c.stats();
    assert.deepEqual(
      [stats.roundTrips, stats.retries, stats.failures, stats.urls[0]?.healthy],
      [2, 1, 2, false],
    );
    // Two failures of one outage: logged once.
    assert.equal(c.logged().match(/failed \(no answer within 300 ms\); set aside/g)?.length, 1);
  });

  it('waits for a slow answer within the timeout', async () => {
    const p = await proxy();
    p.inject({ kind: 'delay', ms: 150 });
    const c = client([p.url], { timeoutMs: 5_000 });
    assert.equal(await c.request('eth_chainId'), numberToHex(anvil.genesis.config.chainId));
    assert.equal(c.stats().failures, 0);
  });

  const corruptions = [
    { kind: 'drop', cause: /other side closed|ECONNRESET|socket hang up/ },
    { kind: 'notJson', cause: /malformed answer: not JSON \(HTTP 200 OK: "<html>/ },
    { kind: 'wrongIds', cause: /malformed answer: answer id \d+, expected \d+/ },
  ] as const;
  for (const { kind, cause } of corruptions) {
    it(`retries an answer that is cut or corrupt (${kind}), then gives Unavailable with the cause`, async () => {
      const p = await proxy();
      const c = client([p.url], { retries: 2, backoffMs: 10 });
      p.inject({ kind });
      assert.equal(await c.request('web3_sha3', ['0x01']), sha3Of(1));
      assert.deepEqual([c.stats().failures, c.stats().retries, c.stats().urls[0]?.healthy], [1, 1, true]);
      p.inject({ kind }, Number.POSITIVE_INFINITY);
      const e = await rejectsWith(c.request('eth_chainId'), Unavailable, /\(3 attempts\)$/);
      assert.match(e.message, new RegExp(`^upstream ${literal(p.url)} unavailable: `));
      assert.match(e.message, cause);
    });
  }

  it('takes a batch answer whose ids are not the ones asked for as a fault', async () => {
    const p = await proxy();
    const c = client([p.url], { retries: 1, backoffMs: 10 });
    p.inject({ kind: 'wrongIds' }, Number.POSITIVE_INFINITY);
    await rejectsWith(
      c.batch(sha3Calls(3)),
      Unavailable,
      /malformed answer: batch answer id \d+ was not asked/,
    );
    p.clear();
    p.inject({ kind: 'wrongIds' });
    assert.deepEqual(
      await c.batch(sha3Calls(3)),
      [0, 1, 2].map((i) => ({ ok: true, result: sha3Of(i) })),
    );
  });

  it('retries a 5xx and gives Unavailable with the status when it persists', async () => {
    const p = await proxy();
    const c = client([p.url], { retries: 2, backoffMs: 10 });
    p.inject({ kind: 'status', status: 503 });
    assert.equal(await c.request('web3_sha3', ['0x02']), sha3Of(2));
    assert.deepEqual(c.stats().urls, [{ url: p.url, ok: 1, failed: 1, healthy: true }]);
    p.inject({ kind: 'status', status: 503 }, Number.POSITIVE_INFINITY);
    await rejectsWith(
      c.request('eth_chainId'),
      Unavailable,
      /: HTTP 503 Service Unavailable \(3 attempts\)$/,
    );
  });

  it("names the node's words for a request it refuses as a client (HTTP 401)", async () => {
    const p = await proxy();
    const body = JSON.stringify({
      jsonrpc: '2.0',
      id: null,
      error: { code: -32000, message: 'invalid key' },
    });
    p.inject({ kind: 'status', status: 401, body }, Number.POSITIVE_INFINITY);
    const c = client([p.url], { retries: 0 });
    await rejectsWith(
      c.request('eth_chainId'),
      Unavailable,
      /HTTP 401 Unauthorized: invalid key \(1 attempt\)$/,
    );
  });
});

describe('UpstreamClient: the budget for upstream reads', () => {
  /** How long `promise` takes to settle, and its error. */
  async function timedFailure(promise: Promise<unknown>): Promise<{ ms: number; error: unknown }> {
    const started = performance.now();
    const error = await promise.then(
      () => assert.fail('expected a failure'),
      (e: unknown) => e,
    );
    return { ms: performance.now() - started, error };
  }

  it('gives up on a hanging upstream when the budget runs out, retries included, naming the URL', async () => {
    const p = await proxy();
    p.inject({ kind: 'hang' }, Number.POSITIVE_INFINITY);
    // Four attempts of 1.5 s would take 6 s; the budget allows two.
    const c = client([p.url], { timeoutMs: 1_500, retries: 3, backoffMs: 10, budgetMs: 2_000 });
    const { ms, error } = await timedFailure(c.request('eth_chainId'));
    assert.ok(error instanceof Unavailable, String(error));
    assert.match(
      error.message,
      new RegExp(
        `^upstream ${literal(p.url)} unavailable: no answer within \\d+ ms \\(2 attempts; out of the request's budget for upstream reads, --upstream-budget-ms 2000\\)$`,
      ),
    );
    assert.equal(p.counters.requests, 2, 'the retry was made within the budget');
    assert.ok(ms < 2_000 + 3_000, `answered after ${Math.round(ms)} ms`);
  });

  it('names every URL that did not answer within the budget', async () => {
    const [a, b] = [await proxy(), await proxy()];
    for (const p of [a, b]) p.inject({ kind: 'hang' }, Number.POSITIVE_INFINITY);
    const c = client([a.url, b.url], { timeoutMs: 1_000, budgetMs: 1_600 });
    const { ms, error } = await timedFailure(c.request('eth_chainId'));
    assert.ok(error instanceof Unavailable, String(error));
    assert.match(
      error.message,
      new RegExp(
        `^upstream unavailable: ${literal(a.url)}: no answer within 1000 ms; ${literal(b.url)}: no answer within \\d+ ms \\(2 attempts; out of .*--upstream-budget-ms 1600\\)$`,
      ),
    );
    assert.ok(ms < 1_600 + 3_000, `answered after ${Math.round(ms)} ms`);
  });

  it("spends a request's budget over all its reads, and gives up a backoff that would outlast it", async () => {
    const p = await proxy();
    p.inject({ kind: 'status', status: 503 }, Number.POSITIVE_INFINITY);
    const c = client([p.url], { backoffMs: 5_000, retries: 3 });
    const { ms, error } = await timedFailure(withUpstreamBudget(1_000, () => c.request('eth_chainId')));
    assert.ok(error instanceof Unavailable, String(error));
    assert.match(
      error.message,
      /: HTTP 503 Service Unavailable \(1 attempt; out of the request's budget for upstream reads, --upstream-budget-ms 1000\)$/,
    );
    assert.equal(p.counters.requests, 1);
    assert.ok(ms < 1_000 + 3_000, `answered after ${Math.round(ms)} ms`);
  });

  it('lets a request that joins a read on its way wait only as long as its own budget', async () => {
    const p = await proxy();
    p.inject({ kind: 'delay', ms: 2_500 });
    const c = client([p.url], { timeoutMs: 10_000 });
    const first = c.request('eth_chainId');
    const { ms, error } = await timedFailure(withUpstreamBudget(500, () => c.request('eth_chainId')));
    assert.ok(error instanceof Unavailable, String(error));
    assert.match(
      error.message,
      new RegExp(
        `^upstream ${literal(p.url)} did not answer a read another request started within the request's budget for upstream reads, --upstream-budget-ms 500$`,
      ),
    );
    assert.ok(ms < 500 + 1_500, `gave up after ${Math.round(ms)} ms`);
    // The read goes on for the request that started it.
    assert.equal(await first, numberToHex(anvil.genesis.config.chainId));
    assert.equal(p.counters.requests, 1);
  });
});

describe('UpstreamClient: rate limiting', () => {
  it('waits out a 429 for as long as its Retry-After asks', async () => {
    const p = await proxy();
    p.inject({ kind: 'status', status: 429, retryAfter: '1' });
    const c = client([p.url], { backoffMs: 10 });
    assert.equal(await c.request('web3_sha3', ['0x03']), sha3Of(3));
    const [first, second] = p.arrivals as [number, number];
    assert.ok(second - first >= 990, `retried ${Math.round(second - first)} ms after the 429`);
    const stats = c.stats();
    assert.deepEqual([stats.rateLimited, stats.retries, stats.failures], [1, 1, 0]);
    assert.deepEqual(stats.urls, [{ url: p.url, ok: 1, failed: 0, healthy: true }]);
  });

  it('backs off exponentially from backoffMs when no Retry-After is given', async () => {
    const p = await proxy();
    p.inject({ kind: 'status', status: 429 }, 2);
    const c = client([p.url], { backoffMs: 150 });
    assert.equal(await c.request('web3_sha3', ['0x04']), sha3Of(4));
    const [a, b, d] = p.arrivals as [number, number, number];
    assert.ok(b - a >= 145, `first backoff ${Math.round(b - a)} ms`);
    assert.ok(d - b >= 295, `second backoff ${Math.round(d - b)} ms`);
    assert.equal(c.stats().rateLimited, 2);
  });

  it('gives LimitExceeded with retryAfterSeconds once the retries are used up', async () => {
    const p = await proxy();
    p.inject({ kind: 'status', status: 429, retryAfter: '1' }, Number.POSITIVE_INFINITY);
    const c = client([p.url], { retries: 1, backoffMs: 10 });
    const e = await rejectsWith(
      c.request('eth_chainId'),
      LimitExceeded,
      new RegExp(
        `^upstream rate limited: ${literal(p.url)} answered HTTP 429 \\(2 attempts\\); it asks to retry after 1 s$`,
      ),
    );
    assert.deepEqual(e.data, { retryAfterSeconds: 1 });
    assert.equal(p.counters.requests, 2);
    assert.equal(c.stats().rateLimited, 2);
    assert.match(c.logged(), /rate limits us \(HTTP 429, retry after 1 s\)/);
  });

  it('gives up at once when a Retry-After asks for more than it would wait', async () => {
    const p = await proxy();
    p.inject({ kind: 'status', status: 429, retryAfter: '120' }, Number.POSITIVE_INFINITY);
    const c = client([p.url]);
    const e = await rejectsWith(
      c.request('eth_chainId'),
      LimitExceeded,
      /\(1 attempt\); it asks to retry after 120 s$/,
    );
    assert.deepEqual(e.data, { retryAfterSeconds: 120 });
    assert.equal(p.counters.requests, 1);
  });

  it('retries a -32005 answer and honours the backoff its data asks for', async () => {
    const p = await proxy();
    const data = { see: 'https://example.invalid/rate', rate: { allowed_rps: 1, backoff_seconds: 0.5 } };
    p.inject({ kind: 'rpcError', code: -32005, message: 'project ID request rate exceeded', data });
    const c = client([p.url], { backoffMs: 10 });
    assert.equal(await c.request('web3_sha3', ['0x05']), sha3Of(5));
    const [first, second] = p.arrivals as [number, number];
    assert.ok(second - first >= 495, `retried ${Math.round(second - first)} ms after the -32005`);
    assert.deepEqual([c.stats().rateLimited, c.stats().failures, p.counters.requests], [1, 0, 2]);

    p.inject({ kind: 'rpcError', code: -32005, message: 'project ID request rate exceeded' }, 3);
    const e = await rejectsWith(
      client([p.url], { retries: 2, backoffMs: 10 }).request('eth_chainId'),
      LimitExceeded,
      /answered -32005 "project ID request rate exceeded" \(3 attempts\)$/,
    );
    assert.equal(e.data, undefined, 'no retryAfterSeconds when the upstream named none');
  });

  it('sends again the calls of a batch that were turned away with -32005', async () => {
    const p = await proxy();
    p.inject({ kind: 'rpcError', code: -32005 });
    const c = client([p.url], { backoffMs: 10, maxBatch: 5 });
    const outcomes = await c.batch(sha3Calls(5, [1]));
    assert.equal(outcomes[1]?.ok, false);
    outcomes.forEach((outcome, i) => {
      if (i !== 1) assert.deepEqual(outcome, { ok: true, result: sha3Of(i) });
    });
    assert.deepEqual([p.counters.requests, p.counters.calls, c.stats().rateLimited], [2, 10, 1]);
  });
});

describe('UpstreamClient: fail-over', () => {
  it('moves on from a dead URL to the next without waiting, and skips it while it cools down', async () => {
    const dead = await deadProxy();
    const live = await proxy();
    // A backoff this long would time the test out: fail-over to a usable URL must not wait.
    const c = client([dead.url, live.url], { backoffMs: 60_000 });
    assert.equal(await c.request('web3_sha3', ['0x06']), sha3Of(6));
    assert.equal(await c.request('web3_sha3', ['0x07']), sha3Of(7));
    const stats = c.stats();
    assert.deepEqual(stats.urls, [
      { url: dead.url, ok: 0, failed: 1, healthy: false },
      { url: live.url, ok: 2, failed: 0, healthy: true },
    ]);
    assert.deepEqual([stats.retries, stats.failures, stats.roundTrips], [1, 1, 3]);
    assert.equal(live.counters.requests, 2);
    assert.match(c.logged(), new RegExp(`${literal(dead.url)} failed \\(connect ECONNREFUSED\\)`));
  });

  it('names every URL and its cause when all fail', async () => {
    const [a, b] = [await deadProxy(), await deadProxy()];
    const c = client([a.url, b.url], { retries: 1, backoffMs: 10 });
    await rejectsWith(
      c.request('eth_chainId'),
      Unavailable,
      new RegExp(
        `^upstream unavailable: ${literal(a.url)}: connect ECONNREFUSED; ${literal(b.url)}: connect ECONNREFUSED \\(2 attempts\\)$`,
      ),
    );
  });

  it('uses a URL killed and restarted mid-test again once it answers', async () => {
    const [first, second] = [await proxy(), await proxy()];
    const c = client([first.url, second.url], { backoffMs: 10 });
    assert.equal(await c.request('web3_sha3', ['0x08']), sha3Of(8));
    assert.equal(first.counters.requests, 1);

    await first.stop();
    assert.equal(await c.request('web3_sha3', ['0x09']), sha3Of(9));
    assert.equal(c.stats().urls[0]?.healthy, false);
    assert.equal(second.counters.requests, 1);

    await first.restart();
    // Once its cooldown (1 s) is over, the first URL is tried again before the second.
    const deadline = performance.now() + 15_000;
    while (c.stats().urls[0]?.ok !== 2) {
      assert.ok(performance.now() < deadline, 'the restarted URL was not used again');
      assert.equal(await c.request('web3_sha3', ['0x0a']), sha3Of(10));
      await sleep(50);
    }
    assert.equal(c.stats().urls[0]?.healthy, true);
    assert.ok(first.counters.requests >= 2);
    assert.match(c.logged(), new RegExp(`${literal(first.url)} answers again`));
  });

  it('tries the only URL even while it cools down, and finds it back after a restart', async () => {
    const p = await proxy();
    const c = client([p.url], { retries: 0 });
    await p.stop();
    await rejectsWith(
      c.request('eth_chainId'),
      Unavailable,
      new RegExp(`^upstream ${literal(p.url)} unavailable: .+ \\(1 attempt\\)$`),
    );
    assert.equal(c.stats().urls[0]?.healthy, false);
    await p.restart();
    assert.equal(await c.request('web3_sha3', ['0x0b']), sha3Of(11));
    assert.deepEqual(c.stats().urls, [{ url: p.url, ok: 1, failed: 1, healthy: true }]);
  });
});

describe('UpstreamClient: limits', () => {
  it('starts no more requests a second than rps allows', async () => {
    const p = await proxy();
    const rps = 20;
    const burst = Math.max(1, Math.ceil(rps / 10));
    const created = performance.now();
    const c = client([p.url], { rps });
    const answers = await Promise.all(
      Array.from({ length: 30 }, (_, i) => c.request('web3_sha3', [numberToHex(i, { size: 1 })])),
    );
    assert.deepEqual(
      answers,
      Array.from({ length: 30 }, (_, i) => sha3Of(i)),
    );
    // The k-th request to arrive cannot have been started before the bucket held k + 1 tokens.
    p.arrivals.forEach((at, k) => {
      const earliest = created + ((k + 1 - burst) / rps) * 1000;
      assert.ok(at >= earliest - 2, `request ${k} arrived ${Math.round(earliest - at)} ms early`);
    });
    assert.equal(p.counters.requests, 30);
  });

  it('keeps at most maxConcurrent requests in flight, batch chunks included', async () => {
    const p = await proxy();
    p.delayMs = 150;
    const c = client([p.url], { maxConcurrent: 3, rps: 0, maxBatch: 2 });
    const singles = Array.from({ length: 12 }, (_, i) =>
      c.request('web3_sha3', [numberToHex(i, { size: 1 })]),
    );
    const batch = c.batch(sha3Calls(10, [], 50));
    assert.deepEqual(
      await Promise.all(singles),
      Array.from({ length: 12 }, (_, i) => sha3Of(i)),
    );
    assert.equal((await batch).length, 10);
    assert.equal(p.counters.requests, 17);
    assert.ok(p.counters.maxInFlight <= 3, `${p.counters.maxInFlight} requests in flight at once`);
    assert.ok(p.counters.maxInFlight >= 2, 'requests did run concurrently');
  });

  it('has the documented defaults and refuses limits that cannot work', () => {
    assert.deepEqual(DEFAULT_UPSTREAM_LIMITS, {
      timeoutMs: 10_000,
      retries: 3,
      backoffMs: 200,
      maxConcurrent: 32,
      rps: 100,
      maxBatch: 100,
      budgetMs: 15_000,
    });
    assert.throws(() => new UpstreamClient([]), UserError);
    assert.throws(() => new UpstreamClient(['ftp://127.0.0.1:1']), UserError);
    assert.throws(() => new UpstreamClient(['not a url']), UserError);
    assert.throws(() => new UpstreamClient([anvil.url], { maxBatch: 0 }), UserError);
    assert.throws(() => new UpstreamClient([anvil.url], { timeoutMs: 0 }), UserError);
    assert.throws(() => new UpstreamClient([anvil.url], { budgetMs: 0 }), UserError);
  });

  it('hides credentials, queries and key-like path segments of a URL', () => {
    assert.equal(
      redactUrl('https://user:secret@rpc.example.invalid:8443/v3/0123456789abcdef0123456789abcdef?key=x'),
      'https://rpc.example.invalid:8443/v3/***',
    );
    assert.equal(redactUrl('http://127.0.0.1:8545/'), 'http://127.0.0.1:8545');
    assert.equal(redactUrl('wss://node.example.invalid/ws'), 'wss://node.example.invalid/ws');
  });
});

describe('UpstreamClient over WebSocket: connection faults', () => {
  it('reconnects after the connection is dropped, retrying a request it cut', async () => {
    const p = await proxy();
    const c = client([p.wsUrl], { backoffMs: 10 });
    assert.equal(await c.request('web3_sha3', ['0x0c']), sha3Of(12));
    p.dropConnections();
    assert.equal(await c.request('web3_sha3', ['0x0d']), sha3Of(13));
    assert.equal(p.counters.wsUpgrades, 2);

    // A request in flight when the connection drops fails over to a new connection.
    p.delayMs = 300;
    const pending = c.request('web3_sha3', ['0x0e']);
    await sleep(50);
    p.dropConnections();
    assert.equal(await pending, sha3Of(14));
    assert.equal(p.counters.wsUpgrades, 3);
    assert.ok(c.stats().failures >= 1);
    assert.equal(c.stats().urls[0]?.healthy, true);
  });

  it('drops an answer that comes after its timeout and keeps serving on the same connection', async () => {
    const p = await proxy();
    const c = client([p.wsUrl], { timeoutMs: 200, retries: 0 });
    assert.equal(await c.request('web3_sha3', ['0x0f']), sha3Of(15));
    p.delayMs = 500;
    await rejectsWith(
      c.request('web3_sha3', ['0x10']),
      Unavailable,
      new RegExp(`^upstream ${literal(p.wsUrl)} unavailable: no answer within 200 ms \\(1 attempt\\)$`),
    );
    p.delayMs = 0;
    await sleep(600); // the late answer arrives, for an id nobody waits for any more
    assert.equal(await c.request('web3_sha3', ['0x11']), sha3Of(17));
    assert.equal(p.counters.wsUpgrades, 1);
  });

  it('gives Unavailable while the port is closed and connects again after a restart', async () => {
    const p = await proxy();
    const c = client([p.wsUrl], { retries: 1, backoffMs: 10 });
    assert.equal(await c.request('web3_sha3', ['0x12']), sha3Of(18));
    await p.stop();
    await rejectsWith(c.request('eth_chainId'), Unavailable, /connect ECONNREFUSED \(2 attempts\)$/);
    await p.restart();
    assert.equal(await c.request('web3_sha3', ['0x13']), sha3Of(19));
    assert.equal(c.stats().urls[0]?.healthy, true);
  });
});

describe('UpstreamClient.close', () => {
  it('ends requests in flight, waiting for a slot or backing off, and refuses new ones', async () => {
    const p = await proxy();
    p.inject({ kind: 'hang' });
    const c = client([p.url], { maxConcurrent: 1 });
    // Each pending request's rejection is caught at once (checked after the close).
    const settled = (promise: Promise<unknown>) =>
      promise.then(
        () => 'answered',
        (e: unknown) => e,
      );
    const inFlight = settled(c.request('eth_chainId'));
    // Another call: the same one would share the first's read rather than wait for a slot.
    const queued = settled(c.request('net_version'));
    const failing = await proxy();
    failing.inject({ kind: 'status', status: 503 }, Number.POSITIVE_INFINITY);
    // A budget longer than the backoff, which would otherwise give up at once.
    const backingOff = client([failing.url], { backoffMs: 60_000, budgetMs: 120_000 });
    const sleeping = settled(backingOff.request('eth_chainId'));
    const ws = client([anvil.url.replace(/^http/, 'ws')]);
    await ws.request('eth_chainId');
    while (p.counters.inFlight === 0 || failing.counters.requests === 0) await sleep(10);

    await Promise.all([c.close(), backingOff.close(), ws.close()]);
    for (const pending of [inFlight, queued, sleeping]) {
      const e = await pending;
      assert.ok(e instanceof Unavailable, String(e));
      assert.equal(e.message, 'upstream client closed');
    }
    await rejectsWith(c.request('eth_chainId'), Unavailable, /^upstream client closed$/);
    await rejectsWith(ws.batch(sha3Calls(2)), Unavailable, /^upstream client closed$/);
    await c.close(); // twice is fine
  });
});
