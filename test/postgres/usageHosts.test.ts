import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { after, before, describe, it } from 'node:test';
import { collect, runCli, tempDir } from '../support/cli.ts';
import { type CliServer, serveCli, stopDev } from '../support/devServer.ts';
import { postJson } from '../support/http.ts';
import {
  type PrivatePostgres,
  privatePostgres,
  type TestDatabase,
  testDatabase,
} from '../support/postgres.ts';
import { type PrivateRedis, startRedis } from '../support/privateRedis.ts';

/**
 * Issue 23 item 3 on the real engines: `ethtrace start --database` hosts (separate processes and
 * datadirs, one database) record usage per key, method, status and minute into PostgreSQL, and
 * `keys usage --database` adds it up: equal to the requests sent, after a clean stop, a host killed
 * mid-load (at most its last interval lost, nothing counted twice after its restart), and
 * PostgreSQL stopped and started mid-load; and with `--redis`, a Redis restarted empty gets each
 * key's day back from the database.
 */

interface Row {
  minute: string;
  host: string;
  keyId: string;
  key: string;
  method: string;
  status: string;
  requests: number;
  credits: number;
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

async function makeKey(database: string, name: string, extra: string[] = []): Promise<string> {
  const made = await runCli(['keys', 'create', '--name', name, ...extra, '--database', database]);
  assert.equal(made.code, 0, made.stderr);
  return made.stdout.trim();
}

async function usageRows(database: string, extra: string[] = []): Promise<Row[]> {
  const out = await runCli(['keys', 'usage', '--json', '--database', database, ...extra]);
  assert.equal(out.code, 0, out.stderr);
  return JSON.parse(out.stdout) as Row[];
}

const total = (rows: readonly Row[], host?: string) =>
  rows.filter((r) => host === undefined || r.host === host).reduce((n, r) => n + r.requests, 0);

/** `start` on a fresh dev-chain datadir with the database, once it listens. */
async function host(
  database: string,
  datadir: string,
  extra: string[] = [],
): Promise<CliServer & { base: string }> {
  const server = await serveCli([
    '--datadir',
    datadir,
    '--database',
    database,
    '--log-level',
    'warn',
    ...extra,
  ]);
  return { ...server, base: server.url.replace(/\/v3\/[^/]+$/, '') };
}

async function killHard(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGKILL');
  await exited;
}

let nextId = 0;
const call = (method: string, params: unknown[] = []) => ({ jsonrpc: '2.0', id: ++nextId, method, params });

/**
 * Sends eth_chainId with `concurrency` clients until `stop()`; each answer's arrival is kept, so a
 * test can tell what was answered before a moment.
 */
function load(url: string, concurrency = 3) {
  let running = true;
  const answered: number[] = [];
  const failed: string[] = [];
  const clients = Array.from({ length: concurrency }, async () => {
    while (running) {
      try {
        const answer = await postJson(url, call('eth_chainId'));
        if (answer.status === 200 && answer.body?.result) answered.push(Date.now());
        else failed.push(answer.text);
      } catch (e) {
        // The server killed under it: the request was not answered.
        failed.push((e as Error).message);
        await sleep(20);
      }
    }
  });
  return {
    answered,
    failed,
    async stop() {
      running = false;
      await Promise.all(clients);
    },
  };
}

describe('usage of several hosts in PostgreSQL (the machine server, a database of this test)', () => {
  let db: TestDatabase;
  const dirs = [tempDir('ethtrace-usage-a-'), tempDir('ethtrace-usage-b-'), tempDir('ethtrace-usage-c-')];
  let alice = '';
  let bob = '';
  before(async () => {
    db = await testDatabase();
    alice = await makeKey(db.url, 'alice');
    bob = await makeKey(db.url, 'bob');
  });
  after(async () => {
    for (const d of dirs) d.cleanup();
    await db?.drop();
  });

  it('adds up, across hosts, to the requests sent: per host, key, method and status', async () => {
    const token = 'operator-token-0123456789';
    const a = await host(db.url, dirs[0]?.path ?? '', ['--host-name', 'host-a', '--operator-token', token]);
    const b = await host(db.url, dirs[1]?.path ?? '');
    const expected = new Map<string, number>();
    const count = (h: string, key: string, method: string, status: string, n = 1) => {
      const id = `${h}|${key}|${method}|${status}`;
      expected.set(id, (expected.get(id) ?? 0) + n);
    };
    const hostB = `${(await import('node:os')).hostname()}:${new URL(b.base).port}`;
    try {
      for (const [server, name] of [
        [a, 'host-a'],
        [b, hostB],
      ] as const) {
        for (const [key, keyName, n] of [
          [alice, 'alice', 3],
          [bob, 'bob', 2],
        ] as const) {
          const url = `${server.base}/v3/${key}`;
          for (let i = 0; i < n; i++) {
            assert.equal((await postJson(url, call('eth_chainId'))).status, 200);
            count(name, keyName, 'eth_chainId', 'ok');
          }
          const batch = await postJson(url, [
            call('eth_blockNumber'),
            call('eth_getBalance', ['0x70997970c51812dc3a010c7d01b50e0d17dc79c8', 'latest']),
            call('eth_blockNumber'),
          ]);
          assert.equal(batch.status, 200);
          count(name, keyName, 'eth_blockNumber', 'ok', 2);
          count(name, keyName, 'eth_getBalance', 'ok');
          const unknown = await postJson(url, call('no_suchMethod'));
          assert.equal(unknown.body.error.code, -32601);
          count(name, keyName, 'other', '-32601');
        }
      }
      // The dashboard and /metrics of host A show both hosts, from the database (within a flush).
      const sent = (h: string) =>
        [...expected].filter(([id]) => id.startsWith(`${h}|`)).reduce((n, [, c]) => n + c, 0);
      type Data = { service?: { hosts: Array<{ host: string; requests: number }>; error: string | null } };
      let data: Data = {};
      for (let i = 0; i < 50; i++) {
        data = (await (
          await fetch(`${a.base}/dashboard/data?range=15m`, { headers: { authorization: `Bearer ${token}` } })
        ).json()) as Data;
        if (data.service?.hosts.reduce((n, h) => n + h.requests, 0) === sent('host-a') + sent(hostB)) break;
        await sleep(200);
      }
      assert.deepEqual(
        data.service?.hosts.map((h) => [h.host, h.requests]).sort(),
        [
          ['host-a', sent('host-a')],
          [hostB, sent(hostB)],
        ].sort(),
      );
      let metrics = '';
      for (let i = 0; i < 40; i++) {
        metrics = await (await fetch(`${a.base}/metrics`)).text();
        if (metrics.includes(`ethtrace_service_requests_today{host="${hostB}"} ${sent(hostB)}\n`)) break;
        await sleep(250);
      }
      assert.match(
        metrics,
        new RegExp(`\nethtrace_service_requests_today{host="host-a"} ${sent('host-a')}\n`),
      );
      assert.ok(
        metrics.includes(`ethtrace_service_requests_today{host="${hostB}"} ${sent(hostB)}\n`),
        metrics,
      );
      assert.match(metrics, /\nethtrace_usage_database_up 1\n/);
    } finally {
      // A clean stop ships what the last interval held.
      assert.equal(await stopDev(a.child), 0);
      assert.equal(await stopDev(b.child), 0);
    }
    const rows = await usageRows(db.url);
    const got = new Map<string, number>();
    for (const r of rows) {
      const id = `${r.host}|${r.key}|${r.method}|${r.status}`;
      got.set(id, (got.get(id) ?? 0) + r.requests);
    }
    assert.deepEqual(
      [...got].sort(([x], [y]) => x.localeCompare(y)),
      [...expected].sort(([x], [y]) => x.localeCompare(y)),
    );
    // Credits as the credit table has them (eth_chainId 5, eth_blockNumber and eth_getBalance 80).
    const aliceA = rows.filter((r) => r.host === 'host-a' && r.key === 'alice');
    assert.equal(
      aliceA.reduce((n, r) => n + r.credits, 0),
      3 * 5 + 3 * 80 + aliceA.filter((r) => r.method === 'other').reduce((n, r) => n + r.credits, 0),
    );
    // One host's usage, and the tables: the service's, then each host's with a host column.
    assert.equal(total(await usageRows(db.url, ['--host', 'host-a'])), total(rows, 'host-a'));
    const text = await runCli(['keys', 'usage', '--database', db.url]);
    assert.equal(text.code, 0, text.stderr);
    assert.match(text.stdout, /^usage of the service \(2 hosts\) since /);
    assert.match(text.stdout, /\nusage by host since .*\nhost +key +method +status +requests +credits\n/);
    assert.match(text.stdout, /\nhost-a +alice +eth_blockNumber +ok +2 +160\n/);
    const one = await runCli(['keys', 'usage', 'bob', '--host', 'host-a', '--database', db.url]);
    assert.match(one.stdout, /^usage of host host-a since /);
    assert.doesNotMatch(one.stdout, /alice|\n\S*\d+:\d+ /);
  });

  it('loses at most the last interval of a host killed mid-load, and counts nothing twice after its restart', async () => {
    const flushMs = 500;
    const flags = ['--host-name', 'host-c', '--usage-flush-interval', String(flushMs)];
    const c = await host(db.url, dirs[2]?.path ?? '', flags);
    const concurrency = 3;
    const traffic = load(`${c.base}/v3/${alice}`, concurrency);
    await sleep(2_500);
    const killedAt = Date.now();
    await killHard(c.child);
    await traffic.stop();
    // Every answer the client read was sent before the host died, also one read after killedAt.
    const answered = traffic.answered.length;
    const recorded = total(await usageRows(db.url, ['--host', 'host-c']));
    assert.ok(answered > 50, `only ${answered} answered`);
    // A call is recorded as its answer is written: the kill may take the answers of the calls in
    // flight, one per client, after they were counted.
    assert.ok(recorded <= answered + concurrency, `${recorded} recorded of ${answered} answered`);
    // The interval under way when it died, and the flush it may have been in: 2 intervals at most.
    const lastIntervals = traffic.answered.filter((t) => t > killedAt - 2 * flushMs).length;
    assert.ok(
      answered - recorded <= lastIntervals,
      `${answered - recorded} lost, ${lastIntervals} answered in its last ${2 * flushMs} ms`,
    );

    const again = await host(db.url, dirs[2]?.path ?? '', flags);
    for (let i = 0; i < 25; i++)
      assert.equal((await postJson(`${again.base}/v3/${alice}`, call('eth_chainId'))).status, 200);
    assert.equal(await stopDev(again.child), 0);
    assert.equal(total(await usageRows(db.url, ['--host', 'host-c'])), recorded + 25);
  });
});

describe('usage while PostgreSQL stops and starts mid-load (a server of this test)', () => {
  let pg: PrivatePostgres;
  const dir = tempDir('ethtrace-usage-pg-');
  before(async () => {
    pg = await privatePostgres();
  });
  after(() => {
    pg?.destroy();
    dir.cleanup();
  });

  it('loses nothing and needs no restart: buffered, /ready degraded, flushed when it returns', async () => {
    const key = await makeKey(pg.url, 'steady');
    const server = await host(pg.url, dir.path, ['--host-name', 'host-pg', '--usage-flush-interval', '300']);
    let stderr = '';
    server.child.stderr?.on('data', (d) => {
      stderr += d;
    });
    const ready = async () =>
      (await (await fetch(`${server.base}/ready`)).json()) as { status: string; degraded?: string[] };
    const traffic = load(`${server.base}/v3/${key}`, 2);
    try {
      await sleep(1_000);
      pg.stop();
      let degraded = await ready();
      for (let i = 0; i < 50 && !degraded.degraded?.some((d) => /^usage cannot be written/.test(d)); i++) {
        await sleep(100);
        degraded = await ready();
      }
      assert.equal(degraded.status, 'degraded');
      assert.ok(
        degraded.degraded?.some((d) =>
          /^usage cannot be written to postgres:\/\/.* rows wait in memory/.test(d),
        ),
        JSON.stringify(degraded),
      );
      await sleep(1_500);
      const metrics = await (await fetch(`${server.base}/metrics`)).text();
      assert.match(metrics, /\nethtrace_usage_database_up 0\n/);
      pg.start();
      let back = await ready();
      for (let i = 0; i < 100 && back.degraded?.some((d) => /^usage/.test(d)); i++) {
        await sleep(100);
        back = await ready();
      }
      assert.ok(!back.degraded?.some((d) => /^usage/.test(d)), JSON.stringify(back));
      await sleep(1_000);
    } finally {
      await traffic.stop();
      const stopped = collect(server.child);
      server.child.kill('SIGTERM');
      assert.equal((await stopped).code, 0);
    }
    assert.deepEqual(traffic.failed, []);
    assert.equal(total(await usageRows(pg.url, ['--since', '1h'])), traffic.answered.length);
    assert.match(stderr, /usage cannot be written to postgres/);
    assert.match(stderr, /usage is written to postgres:\/\/.* again after/);
  });
});

describe('the day of a key after Redis restarts empty (--redis and --database)', () => {
  let db: TestDatabase;
  let redis: PrivateRedis | undefined;
  const dir = tempDir('ethtrace-usage-redis-');
  before(async () => {
    db = await testDatabase();
    redis = await startRedis();
  });
  after(async () => {
    await redis?.kill();
    dir.cleanup();
    await db?.drop();
  });

  it("comes back from the database's usage: the day's spent credits are not handed out again", async () => {
    // Ten eth_calls a day (80 credits each).
    const key = await makeKey(db.url, 'daily', ['--credits-per-day', '800']);
    const server = await host(db.url, dir.path, [
      '--redis',
      redis?.url ?? '',
      '--usage-flush-interval',
      '200',
    ]);
    const url = `${server.base}/v3/${key}`;
    const ethCall = () =>
      call('eth_call', [{ to: '0x70997970c51812dc3a010c7d01b50e0d17dc79c8', data: '0x' }, 'latest']);
    const ready = async () =>
      (await (await fetch(`${server.base}/ready`)).json()) as { status: string; degraded?: string[] };
    const readyUntil = async (status: string) => {
      let last = await ready();
      for (let i = 0; i < 100 && last.status !== status; i++) {
        await sleep(100);
        last = await ready();
      }
      assert.equal(last.status, status, JSON.stringify(last));
    };
    try {
      for (let i = 0; i < 6; i++) assert.equal((await postJson(url, ethCall())).status, 200);
      await sleep(800);
      await redis?.kill();
      await readyUntil('degraded');
      await redis?.restart();
      await readyUntil('ready');
      const statuses: number[] = [];
      for (let i = 0; i < 8; i++) statuses.push((await postJson(url, ethCall())).status);
      // 480 credits spent before the restart: 4 more calls fill the day, the fifth is refused.
      assert.deepEqual(statuses, [200, 200, 200, 200, 429, 429, 429, 429]);
    } finally {
      assert.equal(await stopDev(server.child), 0);
    }
  });
});
