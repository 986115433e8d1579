// Many hosts, one service (issue 23). Run: npm run bench:hosts
//  1. The cost of keys and usage in PostgreSQL (--database) against keys and usage in the datadir,
//     on bench:mixed's load (bench/lib/mixedLoad.ts: block receipts, trace_callMany, eth_call and
//     state reads of a 200-transaction block, 16 connections), the load the goal is stated
//     on: within 5% of the datadir's throughput. One host, through a key with settings (credits per
//     second and per day high enough never to refuse, so every check runs and none says no),
//     --log-level warn. One server process varies from the next by more than 5% (±15% on a 2-core
//     machine, whatever its store), so each configuration runs BENCH_ROUNDS times, alternated (each
//     going first in every other round), a fresh server each time, and the medians are compared,
//     the spread printed beside them.
//     Then the same on a cheap method alone (eth_chainId, eth_blockNumber): no work to hide the
//     per-request cost of the key check and usage, so the harshest case; printed, no goal.
//  2. Three hosts against one on eth_chainId through that key, every host given the same --redis
//     (a private redis-server) and --database: the same 16 connections, on one
//     host or spread over three (a load generator each). Requests per second and the ratio. On a
//     machine of few cores the hosts share them with each other and with the load generators, so the
//     ratio says what a host costs here, not what more machines would give.
// (env: BENCH_SECONDS, BENCH_WARMUP_SECONDS, BENCH_ROUNDS: runs of each configuration of part 1, alternated)
import { join } from 'node:path';
import { runCli } from '../test/support/cli.ts';
import { conformanceDatadirs, hostsDir } from '../test/support/hosts.ts';
import { type TestDatabase, testDatabase } from '../test/support/postgres.ts';
import { type PrivateRedis, startRedis } from '../test/support/privateRedis.ts';
import { bigBlockChain } from './lib/bigBlock.ts';
import { type LoadResult, runLoadInChild } from './lib/load.ts';
import { type Group, type MixedRun, mixedGroups, runMixed, totalRate } from './lib/mixedLoad.ts';
import { type Child, CLI, cpuSeconds, startChild } from './lib/process.ts';
import { machineLine, post, progressLog, rpcBody, SECONDS, WARMUP_SECONDS } from './lib/rpc.ts';

const CONNECTIONS = 16;
/**
 * Part 1's warm-up: a server with --database spends its first seconds opening its pool, its
 * LISTEN connection and its first usage flushes, and compiling the driver's code; a 1-second warm-up
 * counted that start-up against every request of a short window (10–20% with 4-second windows,
 * 1–5% with 10-second ones), which a server that runs for days never pays again.
 */
const PART1_WARMUP_SECONDS = Math.max(WARMUP_SECONDS, 5);
const GOAL_OVERHEAD = 0.05;
/** Runs of each configuration in part 1, alternated; the medians are compared. */
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const SETTINGS = ['--credits-per-second', '100000000', '--credits-per-day', '1000000000000'];

const log = progressLog();

const median = (xs: readonly number[]): number => {
  const sorted = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? (sorted[mid] ?? 0) : ((sorted[mid - 1] ?? 0) + (sorted[mid] ?? 0)) / 2;
};
const rangeOf = (xs: readonly number[]) => `${Math.min(...xs).toFixed(0)}–${Math.max(...xs).toFixed(0)}`;

/**
 * The two configurations in the order of `round`: datadir first in odd rounds, PostgreSQL first in
 * even ones, so neither always runs on a machine the other has just warmed or loaded.
 */
function inTurn<T>(round: number, both: readonly [T, T]): readonly T[] {
  return round % 2 ? both : [...both].reverse();
}

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
async function drive(
  servers: Server[],
  body: string,
  connections: number,
  warmupSeconds = WARMUP_SECONDS,
): Promise<Cell[]> {
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
        warmupMs: warmupSeconds * 1000,
        expectBytes: sizes[i] ?? 0,
      }),
    ),
  );
  return results.map((result, i) => ({
    result,
    // Warm-up included in the CPU, answers at the window's rate: a ratio between cells, not an absolute.
    cpuMsPerAnswer:
      (((cpuSeconds(pids[i] ?? 0) ?? 0) - (before[i] ?? 0)) * 1000) /
      (result.requestsPerSecond * (SECONDS + warmupSeconds)),
  }));
}

/**
 * Part 1's table: per kind of request and in all, the median rate of each configuration with its
 * runs' range, their ratio, and the median server CPU per answer. Returns the cost of PostgreSQL:
 * the share of the datadir's median total rate that --database's lacks.
 */
function mixedTable(
  out: string[],
  groups: Group[],
  runs: { datadir: MixedRun[]; postgres: MixedRun[] },
): number {
  out.push(
    `1. keys and usage in PostgreSQL against the datadir on bench:mixed's load: one host, 16 connections (4 per kind), ${SECONDS} s windows, ${ROUNDS} runs of each alternated, medians`,
    `${'request'.padEnd(32)} datadir req/s (runs)        postgres req/s (runs)        ratio`,
  );
  const row = (name: string, rate: (run: MixedRun) => number) => {
    const a = runs.datadir.map(rate);
    const b = runs.postgres.map(rate);
    out.push(
      `${name.padEnd(32)} ${num(median(a))} (${rangeOf(a)})  ${num(median(b))} (${rangeOf(b)})  ${(median(b) / median(a)).toFixed(3)}`,
    );
    return 1 - median(b) / median(a);
  };
  groups.forEach((g, i) => {
    row(g.name, (run) => run.results[i]?.result.requestsPerSecond ?? Number.NaN);
  });
  const overhead = row('all', totalRate);
  const cpu = (rs: MixedRun[]) => median(rs.map((r) => r.cpuMsPerAnswer));
  out.push(
    `cost of PostgreSQL: ${(overhead * 100).toFixed(1)}% of throughput (medians); server CPU per answer ${cpu(runs.datadir).toFixed(3)} → ${cpu(runs.postgres).toFixed(3)} ms (${((cpu(runs.postgres) / cpu(runs.datadir) - 1) * 100).toFixed(1)}%)`,
  );
  return overhead;
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

    const big = await bigBlockChain(work.path, log);
    stops.push(() => big.anvil.stop());
    const bigKey = await createKey(['--datadir', big.datadir]);
    const mixedRuns: { datadir: MixedRun[]; postgres: MixedRun[] } = { datadir: [], postgres: [] };
    let groups: Awaited<ReturnType<typeof mixedGroups>> = [];
    for (let round = 1; round <= ROUNDS; round++) {
      for (const [name, args, key] of inTurn(round, [
        ['datadir', [], bigKey],
        ['postgres', ['--database', database.url], dbKey],
      ] as const)) {
        log(`mixed load: keys and usage in the ${name} (round ${round})`);
        const server = await startHost(big.datadir, [...args], key);
        if (groups.length === 0) groups = await mixedGroups(server.url, big.number);
        mixedRuns[name].push(await runMixed(server, groups, SECONDS, PART1_WARMUP_SECONDS));
        await server.child.stop();
      }
    }
    await big.anvil.stop();
    const mixedOverhead = mixedTable(out, groups, mixedRuns);

    out.push(
      '',
      `1b. the same on a cheap method alone (the harshest case: no work to hide the per-request cost), ${CONNECTIONS} connections`,
      `${'method'.padEnd(16)} datadir req/s (runs)        postgres req/s (runs)        ratio   CPU ms/answer datadir → postgres`,
    );
    let sumDatadir = 0;
    let sumPostgres = 0;
    for (const method of ['eth_chainId', 'eth_blockNumber']) {
      const body = rpcBody(method, []);
      const runs: { datadir: Cell[]; postgres: Cell[] } = { datadir: [], postgres: [] };
      for (let round = 1; round <= ROUNDS; round++) {
        for (const [name, args, key] of inTurn(round, [
          ['datadir', [], datadirKey],
          ['postgres', ['--database', database.url], dbKey],
        ] as const)) {
          log(`${method}: keys and usage in the ${name} (round ${round})`);
          const server = await startHost(one, [...args], key);
          const [cell] = await drive([server], body, CONNECTIONS, PART1_WARMUP_SECONDS);
          await server.child.stop();
          if (cell) runs[name].push(cell);
        }
      }
      const rps = (cells: Cell[]) => cells.map((c) => c.result.requestsPerSecond);
      const a = median(rps(runs.datadir));
      const b = median(rps(runs.postgres));
      const cpu = (cells: Cell[]) => median(cells.map((c) => c.cpuMsPerAnswer)).toFixed(3);
      sumDatadir += a;
      sumPostgres += b;
      out.push(
        `${method.padEnd(16)} ${num(a)} (${rangeOf(rps(runs.datadir))})  ${num(b)} (${rangeOf(rps(runs.postgres))})  ${(b / a).toFixed(3)}   ${cpu(runs.datadir)} → ${cpu(runs.postgres)}`,
      );
    }
    out.push(
      `cost of PostgreSQL on a cheap method: ${((1 - sumPostgres / sumDatadir) * 100).toFixed(1)}% of throughput (medians; no goal)`,
      `goal (bench:mixed's load, part 1): cost ≤ ${GOAL_OVERHEAD * 100}%: ${mixedOverhead <= GOAL_OVERHEAD ? 'met' : 'NOT met'} (${(mixedOverhead * 100).toFixed(1)}%)`,
    );

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
