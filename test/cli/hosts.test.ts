import assert from 'node:assert/strict';
import { after, before, describe, it, type TestContext } from 'node:test';
import pg from 'pg';
import WebSocket from 'ws';
import { collect, runCli, startCli } from '../support/cli.ts';
import { conformanceDatadirs, type Hosts, hostsDir, sleep, startHosts } from '../support/hosts.ts';
import {
  type PrivatePostgres,
  privatePostgres,
  type TestDatabase,
  testDatabase,
} from '../support/postgres.ts';
import { type PrivateRedis, startRedis } from '../support/privateRedis.ts';

/**
 * Issue 23: three API hosts (separate `ethtrace start` processes on separate datadirs, each a copy
 * of the imported conformance chain) sharing one PostgreSQL database (keys, settings, usage) and one
 * Redis (rates, day quotas), as a deployment behind a load balancer runs them (docs/deploy.md):
 * changes of keys reach every host within a second, a key's rate holds across them, usage adds up
 * across them, and a PostgreSQL restart under load loses no usage and needs no host restarted.
 */

const CREDITS_PER_SECOND = 400;
/** The key's bucket: a fifth of a second of its rate (see assertSharedRate). */
const BURST = 80;
/** eth_chainId's credits (src/transport/access/credits.ts): small, so a second holds 80 of them. */
const CHAIN_ID_CREDITS = 5;

/** Each host's name on the usage it records (`--host-name`). */
const hostName = (index: number) => ['--host-name', `host-${'abc'[index]}`];

interface Answer {
  host: number;
  /** ms since the load began, when the answer arrived. */
  at: number;
  status: number;
}

/** Seconds counted once the burst is spent. */
const COUNTED_SECONDS = 5;
/** After the first refusal (the burst is spent), for the hosts' leases to settle. */
const SETTLE_MS = 1_000;

/**
 * `loops` clients per host, each sending eth_chainId one after another on a kept-alive connection,
 * on every host at once: far more than 400 credits a second. It goes on until COUNTED_SECONDS after
 * the first refusal and SETTLE_MS; `counting` is when the count begins (ms since the start).
 */
async function hammer(urls: string[], loops: number): Promise<{ answers: Answer[]; counting: number }> {
  const answers: Answer[] = [];
  const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'eth_chainId', params: [] });
  const started = performance.now();
  let counting = Number.POSITIVE_INFINITY;
  const going = () => {
    const at = performance.now() - started;
    assert.ok(at < 30_000, 'no request was refused in 30 s');
    return at < counting + COUNTED_SECONDS * 1000;
  };
  await Promise.all(
    urls.flatMap((url, host) =>
      Array.from({ length: loops }, async () => {
        while (going()) {
          const res = await fetch(url, {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body,
          });
          await res.text();
          const at = performance.now() - started;
          if (res.status === 429 && counting === Number.POSITIVE_INFINITY) counting = at + SETTLE_MS;
          answers.push({ host, at, status: res.status });
        }
      }),
    ),
  );
  return { answers, counting };
}

async function createKey(args: string[], name: string, settings: string[]): Promise<string> {
  const made = await runCli(['keys', 'create', ...args, '--name', name, ...settings]);
  assert.equal(made.code, 0, made.stderr);
  const key = made.stdout.split('\n')[0]?.trim() ?? '';
  assert.match(key, /^[0-9a-f]{32}$/);
  return key;
}

/**
 * A key of 400 credits a second hammered on every host at once: after the burst is spent, the
 * credits the three hosts admit together come to 400 a second within 10%.
 *
 * Counted over COUNTED_SECONDS, by when each answer arrived, and divided by them: a single second's
 * count also moves with when answers are read (on a busy machine an answer admitted at the end of
 * one second may be read in the next) and with the leases (src/transport/access/ledger.ts: each
 * host may spend a lease, LEASE_CHUNK_MS of the rate, more or less than one bucket would in a short
 * window), neither of which adds up over consecutive seconds. Each second is printed. The key's
 * burst is small (BURST): a bucket is right to admit up to its burst above its rate in any window
 * after a quiet spell, and a load generator sharing a busy machine with the hosts has them.
 */
async function assertSharedRate(t: TestContext, hosts: Hosts, key: string): Promise<void> {
  const urls = hosts.hosts.map((h) => h.url(key));
  const { answers, counting } = await hammer(urls, 6);
  assert.deepEqual(
    answers.filter((a) => a.status !== 200 && a.status !== 429),
    [],
    'every answer is an admission or a 429',
  );
  const counted = Array.from({ length: COUNTED_SECONDS }, (_, i) => counting + i * 1000);
  const within = (a: Answer, from: number) => a.at >= from && a.at < from + 1000;
  const credits = counted.map(
    (from) => answers.filter((a) => a.status === 200 && within(a, from)).length * CHAIN_ID_CREDITS,
  );
  const refused = counted.map((from) => answers.filter((a) => a.status === 429 && within(a, from)).length);
  const perHost = [0, 1, 2].map((h) => answers.filter((a) => a.host === h && a.status === 200).length);
  const perSecond = credits.reduce((a, b) => a + b, 0) / credits.length;
  const what = `credits admitted a second over ${COUNTED_SECONDS} s from ${(counting / 1000).toFixed(1)} s: ${perSecond.toFixed(0)} (each: ${credits.join(', ')}); refused: ${refused.join(', ')}; admissions by host: ${perHost.join(', ')}`;
  t.diagnostic(what);
  // Every host served the key, and more was asked than admitted (a tenth more at least).
  assert.ok(
    perHost.every((n) => n > 0),
    what,
  );
  const admittedCount = credits.reduce((a, b) => a + b, 0) / CHAIN_ID_CREDITS;
  const refusedCount = refused.reduce((a, b) => a + b, 0);
  assert.ok(refusedCount >= admittedCount / 10, what);
  assert.ok(Math.abs(perSecond - CREDITS_PER_SECOND) <= CREDITS_PER_SECOND * 0.1, what);
}

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

/**
 * When a key was made or revoked (ms since the epoch), as its row in the database says: the clock of
 * the `keys` command that wrote it, on this machine, as the tests' own.
 */
async function recordedAt(
  database: string,
  name: string,
  column: 'created_at' | 'revoked_at',
): Promise<number> {
  const client = new pg.Client({ connectionString: database });
  await client.connect();
  try {
    const { rows } = await client.query<{ at: Date | null }>(
      `SELECT ${column} AS at FROM api_keys WHERE name = $1 ORDER BY created_at DESC LIMIT 1`,
      [name],
    );
    const at = rows[0]?.at;
    assert.ok(at, `no ${column} for ${name}`);
    return at.getTime();
  } finally {
    await client.end();
  }
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
    // A key before the first start, as an operator makes them: on a database without keys each
    // host would make a "default" key of its own at start, and hosts starting at once race on it.
    await createKey(db(), 'operator', []);
    hosts = await startHosts(datadirs, ['--redis', redis.url, ...db(), '--log-level', 'warn'], hostName);
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
    // Polled from the moment `keys create` prints the key (while it closes its connections and
    // exits), each host on its own; timed from when the key was made, as its row in the database
    // says, to the first answer a host gave it.
    const creating = startCli(['keys', 'create', ...db(), '--name', 'made-on-a']);
    const done = collect(creating);
    const key = await new Promise<string>((resolve, reject) => {
      let out = '';
      creating.stdout?.on('data', (d) => {
        out += d;
        const printed = /^([0-9a-f]{32})$/m.exec(out)?.[1];
        if (printed) resolve(printed);
      });
      creating.once('close', () => reject(new Error(`keys create printed no key: ${out}`)));
    });
    const made = await recordedAt(database?.url ?? '', 'made-on-a', 'created_at');
    const since = await Promise.all(
      [b, c].map(async (h) => {
        await timeUntil(async () => (await status(h.url(key))) === 200, PROPAGATION_MS, `host ${h.index}`);
        return Date.now() - made;
      }),
    );
    t.diagnostic(`accepted on B ${since[0]} ms after it was made, on C ${since[1]} ms after`);
    assert.equal((await done).code, 0);
    for (const ms of since) assert.ok(ms <= PROPAGATION_MS, `accepted ${ms} ms after it was made`);
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
      ws.once('close', (code, reason) => resolve({ code, reason: reason.toString(), at: Date.now() })),
    );
    // The revocation is run "on B": the CLI against the one database, as an operator on B would.
    const revoked = await runCli(['keys', 'revoke', 'revoked-on-b', ...db()]);
    assert.equal(revoked.code, 0, revoked.stderr);
    const close = await Promise.race([closed, sleep(5 * PROPAGATION_MS).then(() => null)]);
    assert.ok(close, 'the WebSocket on C was not closed');
    const after = close.at - (await recordedAt(database?.url ?? '', 'revoked-on-b', 'revoked_at'));
    t.diagnostic(`closed ${after} ms after the revocation`);
    assert.deepEqual({ code: close.code, reason: close.reason }, { code: 1008, reason: 'API key revoked' });
    assert.ok(after <= PROPAGATION_MS, `closed ${after} ms after the revocation`);
    // And refused on the others.
    assert.equal(await status(a.url(key)), 401);
  });

  it('holds a rate of 400 credits a second, kept in the database, across the three', async (t) => {
    assert.ok(hosts);
    const key = await createKey(db(), 'shared-rate', [
      '--credits-per-second',
      String(CREDITS_PER_SECOND),
      '--burst',
      String(BURST),
    ]);
    for (const h of hosts.hosts)
      await timeUntil(
        async () => (await status(h.url(key))) !== 401,
        PROPAGATION_MS,
        `the key on ${h.index}`,
      );
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
    // Each host's own share, as it recorded it (the probes were one eth_chainId on each).
    hosts.hosts.forEach((_, i) => {
      const own = rows.filter((r) => r.host === hostName(i)[1]);
      const probe = requestsIn(probes.filter((r) => r.host === hostName(i)[1]));
      assert.equal(
        requestsIn(own),
        probe + (sent[i]?.chainId ?? 0) + (sent[i]?.blockNumber ?? 0),
        hostName(i)[1],
      );
    });
    // Nothing more comes later: each request was recorded once.
    await sleep(3_000);
    assert.equal(requestsIn(await usageOf(database.url, 'usage-across')), chainId + blockNumber);
  });
});

interface UsageRow {
  host: string;
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
    await createKey(['--database', database.url], 'operator', []);
    hosts = await startHosts(
      datadirs,
      ['--redis', redis.url, '--database', database.url, '--log-level', 'warn'],
      hostName,
    );
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
