import assert from 'node:assert/strict';
import { copyFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it, type TestContext } from 'node:test';
import WebSocket from 'ws';
import { LEASE_CHUNK_MS } from '../../src/transport/access/ledger.ts';
import { runCli } from '../support/cli.ts';
import {
  conformanceDatadirs,
  type Hosts,
  hostsDir,
  type PrivateRedis,
  sleep,
  startHosts,
  startRedis,
} from '../support/hosts.ts';
import {
  type PrivatePostgres,
  privatePostgres,
  type TestDatabase,
  testDatabase,
} from '../support/postgres.ts';

/**
 * Issue 23: three API hosts (separate `ethtrace start` processes on separate datadirs) sharing one
 * Redis, as a deployment behind a load balancer runs them (docs/deploy.md).
 */

const CREDITS_PER_SECOND = 400;
/** eth_chainId's credits (src/transport/access/credits.ts): small, so a second holds 80 of them. */
const CHAIN_ID_CREDITS = 5;

interface Answer {
  host: number;
  /** ms since the load began, when the answer arrived. */
  at: number;
  status: number;
}

/**
 * `loops` clients per host, each sending eth_chainId one after another on a kept-alive connection,
 * for `ms`: far more than 400 credits a second, on every host at once.
 */
async function hammer(urls: string[], loops: number, ms: number): Promise<Answer[]> {
  const answers: Answer[] = [];
  const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'eth_chainId', params: [] });
  const started = performance.now();
  await Promise.all(
    urls.flatMap((url, host) =>
      Array.from({ length: loops }, async () => {
        while (performance.now() - started < ms) {
          const res = await fetch(url, {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body,
          });
          await res.text();
          answers.push({ host, at: performance.now() - started, status: res.status });
        }
      }),
    ),
  );
  return answers;
}

async function createKey(args: string[], name: string, settings: string[]): Promise<string> {
  const made = await runCli(['keys', 'create', ...args, '--name', name, ...settings]);
  assert.equal(made.code, 0, made.stderr);
  const key = made.stdout.split('\n')[0]?.trim() ?? '';
  assert.match(key, /^[0-9a-f]{32}$/);
  return key;
}

/**
 * A key of 400 credits a second hammered on every host at once: each second counted after the
 * burst is spent holds 400 credits of admissions within 10%, over the three hosts together.
 */
async function assertSharedRate(t: TestContext, hosts: Hosts, key: string): Promise<void> {
  const urls = hosts.hosts.map((h) => h.url(key));
  // Two seconds to spend the burst (400 credits: the bucket starts full) and settle the leases,
  // then three seconds counted, a second at a time.
  const answers = await hammer(urls, 3, 5_000);
  assert.deepEqual(
    answers.filter((a) => a.status !== 200 && a.status !== 429),
    [],
    'every answer is an admission or a 429',
  );
  const counted = [2, 3, 4];
  const within = (a: Answer, s: number) => a.at >= s * 1000 && a.at < (s + 1) * 1000;
  const credits = counted.map(
    (s) => answers.filter((a) => a.status === 200 && within(a, s)).length * CHAIN_ID_CREDITS,
  );
  const refused = counted.map((s) => answers.filter((a) => a.status === 429 && within(a, s)).length);
  const perHost = [0, 1, 2].map((h) => answers.filter((a) => a.host === h && a.status === 200).length);
  const mean = credits.reduce((a, b) => a + b, 0) / credits.length;
  const what = `credits admitted in seconds ${counted.join(', ')}: ${credits.join(', ')} (mean ${mean.toFixed(0)}); refused: ${refused.join(', ')}; admissions by host: ${perHost.join(', ')}`;
  t.diagnostic(what);
  // Every host served the key, and in every second counted more was asked than admitted.
  assert.ok(
    perHost.every((n) => n > 0),
    what,
  );
  assert.ok(
    refused.every((n) => n > 0),
    what,
  );
  assert.ok(Math.abs(mean - CREDITS_PER_SECOND) <= CREDITS_PER_SECOND * 0.1, what);
  // A single second may hold up to a lease more per host than a single bucket would admit, or a
  // lease less (src/transport/access/ledger.ts: a lease is LEASE_CHUNK_MS of the rate), moved
  // from or to the second beside it; the mean above is what the three seconds hold together.
  const lease = (CREDITS_PER_SECOND * LEASE_CHUNK_MS) / 1000;
  for (const c of credits) assert.ok(Math.abs(c - CREDITS_PER_SECOND) <= 3 * lease, what);
}

describe('three hosts sharing one Redis', () => {
  const dir = hostsDir();
  let redis: PrivateRedis | undefined;
  let hosts: Hosts | undefined;
  let key = '';

  before(async () => {
    redis = await startRedis();
    const datadirs = await conformanceDatadirs(dir.path, 3);
    const [first, ...others] = datadirs;
    assert.ok(first);
    key = await createKey(['--datadir', first], 'shared-rate', [
      '--credits-per-second',
      String(CREDITS_PER_SECOND),
    ]);
    // Without a database each host reads its own keys.json: the same file on each.
    for (const d of others) copyFileSync(join(first, 'keys.json'), join(d, 'keys.json'));
    hosts = await startHosts(datadirs, ['--redis', redis.url, '--log-level', 'warn']);
  });
  after(async () => {
    await hosts?.stop();
    await redis?.kill();
    dir.cleanup();
  });

  it('holds a rate of 400 credits a second across the three: what they admit in a second is within 10% of 400', async (t) => {
    assert.ok(hosts);
    await assertSharedRate(t, hosts, key);
  });
});

/** How long after a change of the keys every host must apply it (issue 23). */
const PROPAGATION_MS = 1_000;

/** The time (ms) from now until `check` holds, polling every 20 ms; fails after `limitMs` × 5. */
async function timeUntil(check: () => Promise<boolean>, limitMs: number, what: string): Promise<number> {
  const started = performance.now();
  while (!(await check())) {
    if (performance.now() - started > limitMs * 5) assert.fail(`${what}: not within ${limitMs * 5} ms`);
    await sleep(20);
  }
  return performance.now() - started;
}

async function status(url: string): Promise<number> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'eth_chainId', params: [] }),
  });
  await res.text();
  return res.status;
}

describe('three hosts sharing one database and one Redis', () => {
  const dir = hostsDir();
  let redis: PrivateRedis | undefined;
  let database: TestDatabase | undefined;
  let hosts: Hosts | undefined;
  const db = () => ['--database', database?.url ?? ''];

  before(async () => {
    [redis, database] = await Promise.all([startRedis(), testDatabase()]);
    const datadirs = await conformanceDatadirs(dir.path, 3);
    hosts = await startHosts(datadirs, ['--redis', redis.url, ...db(), '--log-level', 'warn']);
  });
  after(async () => {
    await hosts?.stop();
    await redis?.kill();
    await database?.drop();
    dir.cleanup();
  });

  it('accepts on B and C, within a second, a key made on A', async (t) => {
    assert.ok(hosts);
    const [, b, c] = hosts.hosts;
    assert.ok(b && c);
    const key = await createKey(db(), 'made-on-a', []);
    // Polled from the moment `keys create` has exited, each host on its own.
    const since = await Promise.all(
      [b, c].map((h) =>
        timeUntil(async () => (await status(h.url(key))) === 200, PROPAGATION_MS, `host ${h.index}`),
      ),
    );
    t.diagnostic(`accepted on B after ${since[0]?.toFixed(0)} ms, on C after ${since[1]?.toFixed(0)} ms`);
    for (const ms of since) assert.ok(ms <= PROPAGATION_MS, `accepted after ${ms.toFixed(0)} ms`);
    // And a key the database never had is refused everywhere.
    for (const h of hosts.hosts) assert.equal(await status(h.url('0'.repeat(32))), 401);
  });

  it('closes, within a second, a WebSocket on C of a key revoked on B', async (t) => {
    assert.ok(hosts);
    const [a, , c] = hosts.hosts;
    assert.ok(a && c);
    const key = await createKey(db(), 'revoked-on-b', []);
    await timeUntil(async () => (await status(c.url(key))) === 200, PROPAGATION_MS, 'the key on C');
    const ws = new WebSocket(c.wsUrl(key));
    await new Promise((resolve, reject) => ws.once('open', resolve).once('error', reject));
    const closed = new Promise<{ code: number; reason: string; at: number }>((resolve) =>
      ws.once('close', (code, reason) => resolve({ code, reason: reason.toString(), at: performance.now() })),
    );
    // The revocation is run "on B": the CLI against the one database, as an operator on B would.
    const revoked = await runCli(['keys', 'revoke', 'revoked-on-b', ...db()]);
    assert.equal(revoked.code, 0, revoked.stderr);
    const at = performance.now();
    const close = await Promise.race([closed, sleep(5 * PROPAGATION_MS).then(() => null)]);
    assert.ok(close, 'the WebSocket on C was not closed');
    t.diagnostic(`closed ${(close.at - at).toFixed(0)} ms after the revocation`);
    assert.deepEqual({ code: close.code, reason: close.reason }, { code: 1008, reason: 'API key revoked' });
    assert.ok(close.at - at <= PROPAGATION_MS, `closed ${(close.at - at).toFixed(0)} ms after`);
    assert.equal(await status(a.url(key)), 401);
  });

  it('holds a rate of 400 credits a second, kept in the database, across the three', async (t) => {
    assert.ok(hosts);
    const key = await createKey(db(), 'shared-rate', ['--credits-per-second', String(CREDITS_PER_SECOND)]);
    for (const h of hosts.hosts)
      await timeUntil(
        async () => (await status(h.url(key))) !== 401,
        PROPAGATION_MS,
        `the key on ${h.index}`,
      );
    // The bucket starts full at 400 again: wait out what the probes spent of it.
    await sleep(1_000);
    await assertSharedRate(t, hosts, key);
  });

  it('records usage on every host into the database: summed across hosts, it equals the requests sent', async () => {
    assert.ok(hosts && database);
    const key = await createKey(db(), 'usage-across', []);
    for (const h of hosts.hosts)
      await timeUntil(
        async () => (await status(h.url(key))) === 200,
        PROPAGATION_MS,
        `the key on ${h.index}`,
      );
    // What the probes above sent counts too: usage is every answered request.
    const probes = await usageWhen(database.url, 'usage-across', 3, FLUSH_WAIT_MS);
    const before = {
      chainId: requestsIn(probes, 'eth_chainId'),
      blockNumber: requestsIn(probes, 'eth_blockNumber'),
    };
    const sent = [
      { chainId: 7, blockNumber: 3 },
      { chainId: 11, blockNumber: 5 },
      { chainId: 13, blockNumber: 2 },
    ];
    await Promise.all(
      hosts.hosts.map(async (h, i) => {
        await send(h.url(key), 'eth_chainId', sent[i]?.chainId ?? 0);
        await send(h.url(key), 'eth_blockNumber', sent[i]?.blockNumber ?? 0);
      }),
    );
    const chainId = before.chainId + sent.reduce((n, s) => n + s.chainId, 0);
    const blockNumber = before.blockNumber + sent.reduce((n, s) => n + s.blockNumber, 0);
    const rows = await usageWhen(database.url, 'usage-across', chainId + blockNumber, FLUSH_WAIT_MS);
    assert.equal(requestsIn(rows, 'eth_chainId'), chainId, JSON.stringify(rows));
    assert.equal(requestsIn(rows, 'eth_blockNumber'), blockNumber, JSON.stringify(rows));
    // Nothing more comes later: each request was recorded once.
    await sleep(3_000);
    assert.equal(requestsIn(await usageOf(database.url, 'usage-across')), chainId + blockNumber);
  });
});

interface UsageRow {
  method: string;
  status: string;
  requests: number;
}

/** `keys usage NAME --json` against the database: what every host recorded for the key. */
async function usageOf(database: string, name: string): Promise<UsageRow[]> {
  const usage = await runCli(['keys', 'usage', name, '--json', '--database', database]);
  assert.equal(usage.code, 0, usage.stderr);
  return JSON.parse(usage.stdout) as UsageRow[];
}

const requestsIn = (rows: UsageRow[], method?: string) =>
  rows.filter((r) => method === undefined || r.method === method).reduce((n, r) => n + r.requests, 0);

/** The usage once its requests add up to `expected`, or as it is after `ms` (flushes are batched). */
async function usageWhen(database: string, name: string, expected: number, ms: number): Promise<UsageRow[]> {
  const until = performance.now() + ms;
  let rows = await usageOf(database, name);
  while (requestsIn(rows) < expected && performance.now() < until) {
    await sleep(250);
    rows = await usageOf(database, name);
  }
  return rows;
}

/** Long enough for every host to flush what it holds (a few seconds, issue 23), and some. */
const FLUSH_WAIT_MS = 15_000;

async function send(url: string, method: string, n: number): Promise<void> {
  for (let i = 0; i < n; i++) {
    const res = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: i, method, params: [] }),
    });
    const text = await res.text();
    assert.equal(res.status, 200, text);
  }
}

describe('three hosts while their PostgreSQL restarts', () => {
  const dir = hostsDir();
  let server: PrivatePostgres | undefined;
  let redis: PrivateRedis | undefined;
  let database: TestDatabase | undefined;
  let hosts: Hosts | undefined;

  before(async () => {
    server = await privatePostgres();
    [redis, database] = await Promise.all([startRedis(), testDatabase(server.url)]);
    const datadirs = await conformanceDatadirs(dir.path, 3);
    hosts = await startHosts(datadirs, [
      '--redis',
      redis.url,
      '--database',
      database.url,
      '--log-level',
      'warn',
    ]);
  });
  after(async () => {
    await hosts?.stop();
    await redis?.kill();
    await database?.drop();
    server?.destroy();
    dir.cleanup();
  });

  it('serves on and loses no usage while PostgreSQL is down and back, with no host restarted', async (t) => {
    assert.ok(hosts && database && server);
    const made = await runCli(['keys', 'create', '--database', database.url, '--name', 'through-restart']);
    assert.equal(made.code, 0, made.stderr);
    const key = made.stdout.split('\n')[0]?.trim() ?? '';
    for (const h of hosts.hosts)
      await timeUntil(
        async () => (await status(h.url(key))) === 200,
        PROPAGATION_MS,
        `the key on ${h.index}`,
      );
    const pids = hosts.hosts.map((h) => h.server.child.pid);
    const baseline = requestsIn(await usageWhen(database.url, 'through-restart', 3, FLUSH_WAIT_MS));

    // Load on the three hosts for 6 s; PostgreSQL is stopped (at once, as a crash) from 1.5 s to 3.5 s.
    const statuses: number[] = [];
    const started = performance.now();
    const load = Promise.all(
      hosts.hosts.flatMap((h) =>
        [0, 1].map(async () => {
          while (performance.now() - started < 6_000) {
            statuses.push(await status(h.url(key)));
            await sleep(5);
          }
        }),
      ),
    );
    await sleep(1_500);
    server.stop();
    const stoppedAt = statuses.length;
    await sleep(2_000);
    server.start();
    const restartedAt = statuses.length;
    await load;
    t.diagnostic(
      `${statuses.length} requests: ${stoppedAt} before the stop, ${restartedAt - stoppedAt} while PostgreSQL was down`,
    );
    assert.ok(restartedAt - stoppedAt > 0, 'requests were sent while PostgreSQL was down');
    assert.deepEqual(
      statuses.filter((s) => s !== 200),
      [],
      'every request answered, PostgreSQL down or not',
    );

    // The same processes, with no restart, flush what they held once PostgreSQL is back.
    const expected = baseline + statuses.length;
    const rows = await usageWhen(database.url, 'through-restart', expected, FLUSH_WAIT_MS);
    assert.equal(requestsIn(rows), expected, JSON.stringify(rows));
    assert.deepEqual(
      hosts.hosts.map((h) => h.server.child.pid),
      pids,
    );
    for (const h of hosts.hosts) assert.equal(h.server.child.exitCode, null, `host ${h.index} is running`);
    // And once only.
    await sleep(3_000);
    assert.equal(requestsIn(await usageOf(database.url, 'through-restart')), expected);
  });
});
