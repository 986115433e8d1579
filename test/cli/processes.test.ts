import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Redis } from 'ioredis';
import { USAGE_FLUSH_MS } from '../../src/transport/access/usage.ts';
import { KEY_RELOAD_MS } from '../../src/transport/apiKeys.ts';
import { CONFORMANCE, runCli, tempDir } from '../support/cli.ts';
import { type CliServer, serveCli, stopDev } from '../support/devServer.ts';

/**
 * `ethtrace start --processes N`: real processes on one port over one imported datadir, with the
 * limits of a key held across them by the primary process or by the real Redis on this machine.
 */

const GENESIS = join(CONFORMANCE, 'genesis.json');
const CHAIN = join(CONFORMANCE, 'chain.rlp');
const REDIS_URL = 'redis://127.0.0.1:6379/0';
const CREDITS_PER_SECOND = 400;
/** eth_call's credits (src/transport/access/credits.ts): five fit in one second's burst of 400. */
const CALL_CREDITS = 80;
const TOKEN = 'operator-token-of-the-processes-test';

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** The pids of a process's children, from /proc. */
function childrenOf(pid: number): number[] {
  const out: number[] = [];
  for (const task of readdirSync(`/proc/${pid}/task`)) {
    const text = readFileSync(`/proc/${pid}/task/${task}/children`, 'utf8').trim();
    if (text !== '') out.push(...text.split(/\s+/).map(Number));
  }
  return out;
}

/** The API processes: the primary's children that run this program (tsx starts esbuild helpers too). */
function apiProcesses(primary: number): number[] {
  return childrenOf(primary).filter((pid) => {
    try {
      return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('ethtrace');
    } catch {
      return false;
    }
  });
}

/** Each on a connection of its own, so that the connections spread over the API processes. */
async function ethCalls(url: string, n: number): Promise<number[]> {
  return Promise.all(
    Array.from({ length: n }, async (_, i) => {
      const res = await fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', connection: 'close' },
        body: JSON.stringify({
          jsonrpc: '2.0',
          id: i,
          method: 'eth_call',
          params: [{ to: '0x70997970c51812dc3a010c7d01b50e0d17dc79c8', data: '0x' }, 'latest'],
        }),
      });
      await res.text();
      return res.status;
    }),
  );
}

async function blockNumber(url: string): Promise<string> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', connection: 'close' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'eth_blockNumber', params: [] }),
  });
  return ((await res.json()) as { result: string }).result;
}

async function createKey(datadir: string, name: string): Promise<string> {
  const made = await runCli([
    'keys',
    'create',
    '--datadir',
    datadir,
    '--name',
    name,
    '--credits-per-second',
    String(CREDITS_PER_SECOND),
  ]);
  assert.equal(made.code, 0, made.stderr);
  const key = made.stdout.split('\n')[0]?.trim() ?? '';
  assert.match(key, /^[0-9a-f]{32}$/);
  return key;
}

/**
 * A burst of eth_calls on a key of 400 credits per second, across the processes: what was admitted
 * fits the one bucket of the key (its burst plus its rate over the burst's duration), and the rest
 * was refused with 429.
 */
async function assertOneBucket(url: string): Promise<{ admitted: number; refused: number }> {
  const started = performance.now();
  const statuses = await ethCalls(url, 24);
  const seconds = (performance.now() - started) / 1000;
  const admitted = statuses.filter((s) => s === 200).length;
  assert.deepEqual(
    statuses.filter((s) => s !== 200 && s !== 429),
    [],
    'every answer is an admission or a 429',
  );
  const bound = Math.floor((CREDITS_PER_SECOND * (1 + seconds)) / CALL_CREDITS);
  assert.ok(admitted >= 1, 'the key is served');
  assert.ok(
    admitted <= bound,
    `${admitted} calls admitted in ${seconds.toFixed(2)} s; one bucket admits at most ${bound}`,
  );
  assert.ok(statuses.includes(429), 'the calls past the bucket are refused');
  return { admitted, refused: statuses.length - admitted };
}

/** A sample's value in Prometheus text, 0 when the series is absent. */
function sample(text: string, series: string): number {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? 0 : Number(line.slice(series.length + 1));
}

describe('ethtrace start --processes', () => {
  const dir = tempDir('ethtrace-processes-');
  let server: CliServer | undefined;
  let key = '';

  before(async () => {
    const imported = await runCli(['import', '--genesis', GENESIS, '--datadir', dir.path, CHAIN]);
    assert.equal(imported.code, 0, imported.stderr);
    key = await createKey(dir.path, 'shared');
    // A key of no settings as well (the URL printed), for calls the limits should not refuse.
    server = await serveCli([
      '--operator-token',
      TOKEN,
      '--datadir',
      dir.path,
      '--processes',
      '2',
      '--api-key',
      'unlimited-key-of-this-test',
    ]);
  });
  after(async () => {
    if (server) await stopDev(server.child);
    dir.cleanup();
  });

  it('runs two API processes on one port, and says so', async () => {
    assert.ok(server);
    assert.match(server.output, /ethtrace serving chain \d+ \(head 54\) from .* in 2 processes/);
    assert.equal(apiProcesses(server.child.pid ?? 0).length, 2);
  });

  it('holds the limits of a key across the processes, and both processes serve it', async () => {
    assert.ok(server);
    const url = server.url.replace(/\/v3\/.*$/, `/v3/${key}`);
    const { admitted, refused } = await assertOneBucket(url);
    // Whichever process answers /metrics or the dashboard shows the figures of both.
    const base = server.url.replace(/\/v3\/.*$/, '');
    for (let i = 0; i < 4; i++) {
      const res = await fetch(`${base}/metrics`, { headers: { connection: 'close' } });
      const text = await res.text();
      assert.equal(sample(text, 'ethtrace_key_refusals_total{key="shared",kind="rate"}'), refused);
      assert.equal(sample(text, 'ethtrace_key_credits_total{key="shared"}'), admitted * CALL_CREDITS);
      const view = (await (
        await fetch(`${base}/dashboard/data?range=15m`, {
          headers: { authorization: `Bearer ${TOKEN}`, connection: 'close' },
        })
      ).json()) as { keys: Array<{ name: string; requests: number; credits: number }> };
      const shared = view.keys.find((k) => k.name === 'shared');
      assert.equal(shared?.requests, 24);
      assert.equal(shared?.credits, admitted * CALL_CREDITS);
    }
    // Usage is recorded by each process that served (files per process, named by its pid): both
    // did. The running minute is in current.TAG.json, a minute that is over in DAY.TAG.jsonl (the
    // calls may straddle a minute's end).
    await sleep(USAGE_FLUSH_MS + 1_000);
    const writers = new Set(
      readdirSync(join(dir.path, 'usage'))
        .map((name) => /^(?:current|\d{4}-\d{2}-\d{2})\.(\d+)-/.exec(name)?.[1])
        .filter((pid) => pid !== undefined),
    );
    assert.equal(writers.size, 2, `usage written by ${[...writers].join(', ')}`);
    // `keys usage` adds the processes up: every admitted call, once.
    const usage = await runCli(['keys', 'usage', 'shared', '--json', '--datadir', dir.path]);
    assert.equal(usage.code, 0, usage.stderr);
    const rows = JSON.parse(usage.stdout) as Array<{ method: string; status: string; requests: number }>;
    const count = (status: string) =>
      rows.filter((r) => r.method === 'eth_call' && r.status === status).reduce((n, r) => n + r.requests, 0);
    assert.equal(count('ok') + count('refused-rate'), 24);
  });

  it('starts another API process when one dies, and keeps serving', async () => {
    assert.ok(server);
    const primary = server.child.pid ?? 0;
    const [victim] = apiProcesses(primary);
    assert.ok(victim);
    process.kill(victim, 'SIGKILL');
    let now = apiProcesses(primary);
    for (let i = 0; i < 100 && (now.length < 2 || now.includes(victim)); i++) {
      await sleep(100);
      now = apiProcesses(primary);
    }
    assert.equal(now.length, 2);
    assert.ok(!now.includes(victim));
    // A new process answers once it listens; the other answers meanwhile.
    for (let i = 0; i < 6; i++) assert.equal(await blockNumber(server.url), '0x36');
  });

  it('stops every process on SIGTERM, with status 0', async () => {
    assert.ok(server);
    const primary = server.child.pid ?? 0;
    const api = apiProcesses(primary);
    const code = await stopDev(server.child);
    server = undefined;
    assert.equal(code, 0);
    for (const pid of api) assert.throws(() => process.kill(pid, 0), /ESRCH/, `API process ${pid} is gone`);
  });
});

describe('ethtrace start --redis', () => {
  const dir = tempDir('ethtrace-redis-');
  let servers: CliServer[] = [];
  let key = '';
  const redis = new Redis(REDIS_URL, { lazyConnect: true });

  before(async () => {
    await redis.connect();
    const imported = await runCli(['import', '--genesis', GENESIS, '--datadir', dir.path, CHAIN]);
    assert.equal(imported.code, 0, imported.stderr);
    key = await createKey(dir.path, 'redis');
  });
  after(async () => {
    for (const s of servers) await stopDev(s.child);
    redis.disconnect();
    dir.cleanup();
  });

  it('holds the limits of a key across two hosts (two servers on two ports) sharing Redis', async () => {
    // Two independent `start`s stand for two API hosts; --processes 2 on one of them as well.
    servers = [
      await serveCli(['--datadir', dir.path, '--redis', REDIS_URL]),
      await serveCli(['--datadir', dir.path, '--redis', REDIS_URL, '--processes', '2']),
    ];
    const [one, two] = servers.map((s) => s.url.replace(/\/v3\/.*$/, `/v3/${key}`));
    assert.ok(one && two);
    const started = performance.now();
    const statuses = (await Promise.all([ethCalls(one, 12), ethCalls(two, 12)])).flat();
    const seconds = (performance.now() - started) / 1000;
    const admitted = statuses.filter((s) => s === 200).length;
    const bound = Math.floor((CREDITS_PER_SECOND * (1 + seconds)) / CALL_CREDITS);
    assert.ok(admitted >= 1 && admitted <= bound, `${admitted} admitted; one bucket admits at most ${bound}`);
    assert.ok(statuses.includes(429));
    // The key's state is in Redis, under its id (never the key itself).
    const names = await redis.keys('ethtrace:limits:*');
    assert.ok(names.length >= 1);
    assert.ok(names.every((n) => !n.includes(key)));
  });

  it('applies a change of the key to every process within a second or so', async () => {
    const url = servers[1]?.url.replace(/\/v3\/.*$/, `/v3/${key}`) ?? '';
    const updated = await runCli([
      'keys',
      'update',
      'redis',
      '--credits-per-second',
      '0',
      '--datadir',
      dir.path,
    ]);
    assert.equal(updated.code, 0, updated.stderr);
    await sleep(KEY_RELOAD_MS + 500);
    const statuses = await ethCalls(url, 24);
    assert.deepEqual(
      statuses.filter((s) => s !== 200),
      [],
    );
  });
});

describe('ethtrace start --processes refusals', () => {
  it('refuses a dev chain (an empty datadir would become one), making nothing', async () => {
    const dir = tempDir('ethtrace-processes-dev-');
    try {
      const result = await runCli(['start', '--port', '0', '--datadir', dir.path, '--processes', '2']);
      assert.equal(result.code, 2);
      assert.match(result.stderr, /--processes applies to an imported, followed or upstream chain/);
      assert.deepEqual(
        readdirSync(dir.path).filter((n) => n !== 'usage'),
        [],
      );
    } finally {
      dir.cleanup();
    }
  });

  it('refuses a Redis it cannot reach, and a URL that is not one', async () => {
    const dir = tempDir('ethtrace-redis-down-');
    try {
      const imported = await runCli(['import', '--genesis', GENESIS, '--datadir', dir.path, CHAIN]);
      assert.equal(imported.code, 0, imported.stderr);
      const down = await runCli([
        'start',
        '--port',
        '0',
        '--datadir',
        dir.path,
        '--redis',
        'redis://127.0.0.1:1/0',
      ]);
      assert.equal(down.code, 2, down.stderr);
      assert.match(down.stderr, /--redis redis:\/\/127\.0\.0\.1:1\/0: cannot reach it/);
      const bad = await runCli(['start', '--port', '0', '--datadir', dir.path, '--redis', 'http://x']);
      assert.equal(bad.code, 2);
      assert.match(bad.stderr, /--redis http:\/\/x is not a redis:\/\/ or rediss:\/\/ URL/);
    } finally {
      dir.cleanup();
    }
  });
});
