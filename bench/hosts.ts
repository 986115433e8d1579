// Many hosts, one service (issue 23). Run: npm run bench:hosts
//  1. The cost per request of keys and usage in PostgreSQL (--database) against keys and usage in
//     the datadir: one host, a cheap method (eth_chainId, then eth_blockNumber) at 16 connections
//     through a key with settings (credits per second and per day high enough never to refuse, so
//     every check runs and none says no), --log-level warn. Requests per second and server CPU per
//     answer, best of BENCH_ROUNDS alternated runs; goal: within 5% of the datadir's throughput.
//  2. Three hosts against one on eth_chainId through that key, every host given the same --redis
//     (a private redis-server) and --database: the same 16 connections, on one
//     host or spread over three (a load generator each). Requests per second and the ratio. On a
//     machine of few cores the hosts share them with each other and with the load generators, so the
//     ratio says what a host costs here, not what more machines would give.
// (env: BENCH_SECONDS, BENCH_WARMUP_SECONDS, BENCH_ROUNDS: runs of each configuration of 1, alternated, best kept)
import { join } from 'node:path';
import { runCli } from '../test/support/cli.ts';
import { conformanceDatadirs, hostsDir } from '../test/support/hosts.ts';
import { type TestDatabase, testDatabase } from '../test/support/postgres.ts';
import { type PrivateRedis, startRedis } from '../test/support/privateRedis.ts';
import { type LoadResult, runLoadInChild } from './lib/load.ts';
import { type Child, CLI, cpuSeconds, startChild } from './lib/process.ts';
import { machineLine, post, progressLog, rpcBody, SECONDS, WARMUP_SECONDS } from './lib/rpc.ts';

const CONNECTIONS = 16;
const GOAL_OVERHEAD = 0.05;
/** Runs of each configuration in part 1, alternated; the best of each is kept. */
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 2);
const SETTINGS = ['--credits-per-second', '100000000', '--credits-per-day', '1000000000000'];

const log = progressLog();

interface Server {
  child: Child;
  url: string;
}

async function startHost(datadir: string, args: string[], key: string): Promise<Server> {
  const child = await startChild(
    process.execPath,
    [CLI, 'start', '--datadir', datadir, '--port', '0', '--log-level', 'warn', ...args],
    /HTTP\s+(http:\/\/\S+)\r?\n/,
    { stderrFile: join(datadir, '..', `${datadir.split('/').pop()}.log`) },
  );
  return { child, url: child.ready.replace(/\/v3\/.*$/, `/v3/${key}`) };
}

async function createKey(where: string[]): Promise<string> {
  const made = await runCli(['keys', 'create', ...where, '--name', 'bench', ...SETTINGS]);
  if (made.code !== 0) throw new Error(made.stderr);
  return made.stdout.split('\n')[0]?.trim() ?? '';
}

interface Cell {
  result: LoadResult;
  cpuMsPerAnswer: number;
}

/** `connections` spread over the servers, a load generator each, over one window. */
async function drive(servers: Server[], body: string, connections: number): Promise<Cell[]> {
  const sizes = await Promise.all(servers.map(async (s) => Buffer.byteLength(await post(s.url, body))));
  const pids = servers.map((s) => s.child.process.pid ?? 0);
  const before = pids.map((p) => cpuSeconds(p) ?? 0);
  const results = await Promise.all(
    servers.map((s, i) =>
      runLoadInChild({
        url: s.url,
        body,
        connections: Math.floor(connections / servers.length) + (i < connections % servers.length ? 1 : 0),
        durationMs: SECONDS * 1000,
        warmupMs: WARMUP_SECONDS * 1000,
        expectBytes: sizes[i] ?? 0,
      }),
    ),
  );
  return results.map((result, i) => ({
    result,
    // Warm-up included in the CPU, answers at the window's rate: a ratio between cells, not an absolute.
    cpuMsPerAnswer:
      (((cpuSeconds(pids[i] ?? 0) ?? 0) - (before[i] ?? 0)) * 1000) /
      (result.requestsPerSecond * (SECONDS + WARMUP_SECONDS)),
  }));
}

const total = (cells: Cell[]) => cells.reduce((n, c) => n + c.result.requestsPerSecond, 0);
const num = (x: number, digits = 1) => x.toFixed(digits).padStart(9);

async function main(): Promise<void> {
  const work = hostsDir();
  const stops: Array<() => Promise<void>> = [];
  const out: string[] = [machineLine(), ''];
  let redis: PrivateRedis | undefined;
  let database: TestDatabase | undefined;
  try {
    log(machineLine());
    const [one, two, three] = await conformanceDatadirs(work.path, 3);
    if (!one || !two || !three) throw new Error('no datadirs');
    redis = await startRedis();
    database = await testDatabase();
    const datadirKey = await createKey(['--datadir', one]);
    const dbKey = await createKey(['--database', database.url]);

    out.push(`1. keys and usage in PostgreSQL against the datadir: one host, ${CONNECTIONS} connections`);
    {
      out.push(
        `${'method'.padEnd(16)} datadir req/s  postgres req/s   ratio   CPU ms/answer datadir → postgres`,
      );
      let sumDatadir = 0;
      let sumPostgres = 0;
      for (const method of ['eth_chainId', 'eth_blockNumber']) {
        const body = rpcBody(method, []);
        // Alternated, best of ROUNDS each: on a machine shared with other work, a window that got
        // fewer cores than the other would otherwise read as the cost of PostgreSQL.
        let a: Cell | undefined;
        let b: Cell | undefined;
        for (let round = 1; round <= ROUNDS; round++) {
          log(`${method}: keys in the datadir (round ${round})`);
          const local = await startHost(one, [], datadirKey);
          const [x] = await drive([local], body, CONNECTIONS);
          await local.child.stop();
          log(`${method}: keys and usage in PostgreSQL (round ${round})`);
          const pg = await startHost(one, ['--database', database.url], dbKey);
          const [y] = await drive([pg], body, CONNECTIONS);
          await pg.child.stop();
          if (x && (!a || x.result.requestsPerSecond > a.result.requestsPerSecond)) a = x;
          if (y && (!b || y.result.requestsPerSecond > b.result.requestsPerSecond)) b = y;
        }
        if (!a || !b) throw new Error('no result');
        sumDatadir += a.result.requestsPerSecond;
        sumPostgres += b.result.requestsPerSecond;
        out.push(
          `${method.padEnd(16)} ${num(a.result.requestsPerSecond)}      ${num(b.result.requestsPerSecond)}   ${(b.result.requestsPerSecond / a.result.requestsPerSecond).toFixed(3)}   ${a.cpuMsPerAnswer.toFixed(3)} → ${b.cpuMsPerAnswer.toFixed(3)}`,
        );
      }
      const overhead = 1 - sumPostgres / sumDatadir;
      out.push(
        `cost of PostgreSQL: ${(overhead * 100).toFixed(1)}% of throughput — goal ≤ ${GOAL_OVERHEAD * 100}%: ${overhead <= GOAL_OVERHEAD ? 'met' : 'NOT met'}`,
      );
    }

    // The same key on every host, from the database.
    const shared = ['--redis', redis.url, '--database', database.url];
    const key = dbKey;
    const body = rpcBody('eth_chainId', []);
    out.push(
      '',
      `2. three hosts against one: eth_chainId, ${CONNECTIONS} connections in all, a key with settings, ${shared.filter((a) => a.startsWith('--')).join(' ')}`,
    );
    log('eth_chainId: one host');
    const single = await startHost(one, shared, key);
    const alone = await drive([single], body, CONNECTIONS);
    await single.child.stop();
    log('eth_chainId: three hosts');
    const hosts = await Promise.all([one, two, three].map((d) => startHost(d, shared, key)));
    stops.push(async () => {
      for (const h of hosts) await h.child.stop();
    });
    const spread = await drive(hosts, body, CONNECTIONS);
    for (const h of hosts) await h.child.stop();
    const ratio = total(spread) / total(alone);
    out.push(
      `one host    ${num(total(alone))} req/s  p50 ${alone[0]?.result.latency.p50.toFixed(2)} ms  p99 ${alone[0]?.result.latency.p99.toFixed(2)} ms`,
      `three hosts ${num(total(spread))} req/s  (${spread.map((c) => c.result.requestsPerSecond.toFixed(0)).join(' + ')})  p99 ${Math.max(...spread.map((c) => c.result.latency.p99)).toFixed(2)} ms`,
      `ratio three/one: ${ratio.toFixed(2)} (the hosts and the load generators share this machine's cores:`,
      `   server CPU per answer ${alone[0]?.cpuMsPerAnswer.toFixed(3)} ms on one host, ${spread.map((c) => c.cpuMsPerAnswer.toFixed(3)).join(', ')} ms on three; generators ${alone[0]?.result.cpu.generator.toFixed(2)} → ${spread.reduce((n, c) => n + c.result.cpu.generator, 0).toFixed(2)} cores)`,
    );
    process.stdout.write(`${out.join('\n')}\n`);
  } finally {
    for (const stop of stops.reverse()) await stop().catch(() => {});
    await redis?.kill();
    await database?.drop();
    work.cleanup();
  }
}

await main();
