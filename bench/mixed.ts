// Mixed load with keys, limits and metrics on (issue 13). Run: npm run bench:mixed
//  1. BENCH_MIXED_SECONDS (default 60) of 16 connections at once: 4 each on eth_getBlockReceipts of a
//     200-transaction block, trace_callMany of 10 of its transactions on its parent, eth_call of one
//     of them, and a batch of four state reads; through a key with credits per second and per day
//     (high enough never to refuse) and every limit on. Per method: requests/s, p50, p99; errors
//     (any failed or wrong-length answer fails the run); server RSS at the start and the end.
//  2. The same load with limits and metrics off: a key with no settings and --no-metrics. The cost
//     of limits and metrics is the throughput difference (goal: within 5%). Also against no keys at
//     all (--no-auth: no key check, no usage), and with one log line per request (info, the default)
//     on top; all other runs use --log-level warn.
//  3. eth_chainId at 16 connections with one API process and with --processes 2 (goal: ≥ 15,000
//     requests/s on this machine's 2 cores).
//  4. Server CPU time per answer (from /proc, the server's whole process tree) for ethtrace and for
//     anvil serving the same chain, on the heavy methods, one connection: unlike requests per
//     second it does not depend on how fast the load generator is. Among them eth_simulateV1 of 10
//     calls (transfers and calls on two contracts sharing slots) and a 3-transaction eth_callBundle
//     (anvil serves no eth_callBundle); a server that does not offer a method (-32601) is printed as
//     'not served' rather than failing the run.
// (env: BENCH_MIXED_SECONDS, BENCH_SECONDS for the cells of 3 and 4, BENCH_WARMUP_SECONDS)
import { join } from 'node:path';
import { runCli, tempDir } from '../test/support/cli.ts';
import { LOG_STORE_RUNTIME, logStoreCalldata } from '../test/support/contracts.ts';
import { devAccount } from '../test/support/devAccounts.ts';
import { freshAddress } from '../test/support/workload.ts';
import { bigBlockChain } from './lib/bigBlock.ts';
import { type LoadResult, runLoadInChild } from './lib/load.ts';
import { GROUP_CONNECTIONS, type MixedServer, mixedGroups, reference, runMixed } from './lib/mixedLoad.ts';
import { CLI, childPid, cpuSeconds, startChild } from './lib/process.ts';
import { machineLine, post, progressLog, rpcBody, SECONDS, WARMUP_SECONDS } from './lib/rpc.ts';

const MIXED_SECONDS = Number(process.env.BENCH_MIXED_SECONDS ?? 60);
const GOAL_CHAIN_ID_RPS = 15_000;
const GOAL_OVERHEAD = 0.05;

const log = progressLog();

const hex = (n: bigint | number) => `0x${n.toString(16)}`;

/** The server's logs go to a file (LOG_FILE), as an operator's would, not through this process. */
const LOG_FILE = 'server.log';

async function startServer(datadir: string, args: string[], key: string | null): Promise<MixedServer> {
  const child = await startChild(
    process.execPath,
    [CLI, 'start', '--datadir', datadir, '--port', '0', ...(key === null ? ['--no-auth'] : []), ...args],
    /HTTP\s+(http:\/\/\S+)\r?\n/,
    { stderrFile: join(datadir, '..', LOG_FILE) },
  );
  const printed = child.ready;
  return { child, url: key === null ? printed : printed.replace(/\/v3\/.*$/, `/v3/${key}`) };
}

/** One request at a time for a window: server CPU per answer (whole process tree) and latency. */
async function cpuPerAnswer(url: string, pid: number, body: string): Promise<{ cpuMs: number; p50: number }> {
  const expectBytes = await reference(url, body);
  const before = cpuSeconds(pid) ?? 0;
  const result = await runLoadInChild({
    url,
    body,
    connections: 1,
    durationMs: SECONDS * 1000,
    warmupMs: 0,
    expectBytes,
  });
  return { cpuMs: (((cpuSeconds(pid) ?? 0) - before) * 1000) / result.requests, p50: result.latency.p50 };
}

async function chainId(server: MixedServer): Promise<LoadResult> {
  const body = rpcBody('eth_chainId', []);
  return runLoadInChild({
    url: server.url,
    body,
    connections: 16,
    durationMs: SECONDS * 1000,
    warmupMs: WARMUP_SECONDS * 1000,
    expectBytes: await reference(server.url, body),
  });
}

/** Whether the server offers the method of `body`: false for -32601, any other error fails the run. */
async function served(url: string, body: string): Promise<boolean> {
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
  const answer = JSON.parse(await res.text()) as { error?: { code: number; message: string } };
  if (answer.error?.code === -32601) return false;
  if (answer.error) throw new Error(`${url}: ${answer.error.message}`);
  return true;
}

// Gas of each simulated contract call: a LogStore call writes one slot and emits up to three logs.
const SIMULATED_CALL_GAS = 200_000;

/**
 * eth_simulateV1 of one block of 10 calls on the busy block's state, as a wallet or searcher sends
 * them: ETH transfers between the dev accounts, and calls on two LogStore contracts (the chain's
 * own, and a second put in place by the block's state override) whose keys repeat, so later calls
 * overwrite slots earlier ones wrote and every call sees what the ones before it left.
 */
function simulateBody(number: bigint, logStore: string): string {
  const second = freshAddress('bench/mixed/simulate');
  const calls = Array.from({ length: 10 }, (_, i) => {
    const from = devAccount(i % 5).address;
    if (i % 3 === 0)
      return { from, to: devAccount(5 + (i % 5)).address, value: hex(10n ** 15n * BigInt(i + 1)) };
    const to = i % 3 === 1 ? logStore : second;
    const data = logStoreCalldata({ key: BigInt(i % 2), value: BigInt(i + 1), logs: 1 + (i % 3) });
    return { from, to, input: data, gas: hex(SIMULATED_CALL_GAS) };
  });
  return rpcBody('eth_simulateV1', [
    { blockStateCalls: [{ stateOverrides: { [second]: { code: LOG_STORE_RUNTIME } }, calls }] },
    hex(number),
  ]);
}

/**
 * A Flashbots eth_callBundle of 3 signed transactions for the block after the busy one: a transfer
 * and two LogStore calls on the same key, from two senders at their nonces after the busy block.
 */
async function callBundleBody(url: string, number: bigint, logStore: string): Promise<string> {
  const block = JSON.parse(await post(url, rpcBody('eth_getBlockByNumber', [hex(number), false]))).result as {
    baseFeePerGas: string;
  };
  const chainId = Number(JSON.parse(await post(url, rpcBody('eth_chainId', []))).result);
  const [a, b] = [devAccount(1), devAccount(2)];
  const nonceOf = async (address: string) =>
    Number(JSON.parse(await post(url, rpcBody('eth_getTransactionCount', [address, hex(number)]))).result);
  const [nonceA, nonceB] = await Promise.all([nonceOf(a.address), nonceOf(b.address)]);
  const fees = { maxFeePerGas: BigInt(block.baseFeePerGas) * 2n, maxPriorityFeePerGas: 1n, chainId };
  const call = (value: bigint) => logStoreCalldata({ key: 7n, value, logs: 2 });
  const txs = await Promise.all([
    a.signTransaction({ ...fees, nonce: nonceA, to: b.address, value: 10n ** 15n, gas: 21_000n }),
    a.signTransaction({
      ...fees,
      nonce: nonceA + 1,
      to: logStore as `0x${string}`,
      data: call(1n),
      gas: 200_000n,
    }),
    b.signTransaction({
      ...fees,
      nonce: nonceB,
      to: logStore as `0x${string}`,
      data: call(2n),
      gas: 200_000n,
    }),
  ]);
  return rpcBody('eth_callBundle', [{ txs, blockNumber: hex(number + 1n), stateBlockNumber: hex(number) }]);
}

const pad = (s: string, n: number) => s.padEnd(n);
const num = (x: number, digits = 1) => x.toFixed(digits).padStart(9);

async function main(): Promise<void> {
  const work = tempDir('ethtrace-bench-mixed-');
  const stops: Array<() => Promise<void>> = [];
  const out: string[] = [machineLine(), ''];
  try {
    log(machineLine());
    const { anvil, number, datadir } = await bigBlockChain(work.path, log);
    stops.push(() => anvil.stop());
    // A key with limits that hold but never refuse this load: every check runs, none says no.
    const made = await runCli([
      'keys',
      'create',
      '--datadir',
      datadir,
      '--name',
      'bench',
      '--credits-per-second',
      '100000000',
      '--credits-per-day',
      '1000000000000',
    ]);
    if (made.code !== 0) throw new Error(made.stderr);
    const key = made.stdout.split('\n')[0]?.trim() ?? '';
    const bare = await runCli(['keys', 'create', '--datadir', datadir, '--name', 'no-settings']);
    if (bare.code !== 0) throw new Error(bare.stderr);
    const keyWithoutSettings = bare.stdout.split('\n')[0]?.trim() ?? '';

    log('keys, limits and metrics on');
    const on = await startServer(datadir, ['--log-level', 'warn'], key);
    const groups = await mixedGroups(on.url, number);
    const withLimits = await runMixed(on, groups, MIXED_SECONDS);
    await on.child.stop();
    log('limits and metrics off (a key with no settings, --no-metrics)');
    const off = await startServer(datadir, ['--no-metrics', '--log-level', 'warn'], keyWithoutSettings);
    const withoutLimits = await runMixed(off, groups, MIXED_SECONDS);
    await off.child.stop();
    log('no keys at all, no metrics');
    const noAuth = await startServer(datadir, ['--no-metrics', '--log-level', 'warn'], null);
    const withoutKeys = await runMixed(noAuth, groups, MIXED_SECONDS);
    await noAuth.child.stop();
    log('keys, limits, metrics and request logs on');
    const logged = await startServer(datadir, [], key);
    const withLogs = await runMixed(logged, groups, MIXED_SECONDS);
    await logged.child.stop();

    out.push(
      `1. mixed load, ${MIXED_SECONDS} s, 16 connections (${GROUP_CONNECTIONS} per method), keys + limits + metrics on`,
    );
    out.push(
      `${pad('method', 34)}     req/s   p50 ms   p99 ms   off req/s   on/off   no-auth req/s   +logs req/s`,
    );
    let totalOn = 0;
    let totalOff = 0;
    let totalLogged = 0;
    let totalNoAuth = 0;
    withLimits.results.forEach(({ group, result }, i) => {
      const offResult = withoutLimits.results[i]?.result;
      const offRps = offResult?.requestsPerSecond ?? Number.NaN;
      const loggedRps = withLogs.results[i]?.result.requestsPerSecond ?? Number.NaN;
      const noAuthRps = withoutKeys.results[i]?.result.requestsPerSecond ?? Number.NaN;
      totalNoAuth += noAuthRps;
      totalLogged += loggedRps;
      totalOn += result.requestsPerSecond;
      totalOff += offRps;
      out.push(
        `${pad(group.name, 34)} ${num(result.requestsPerSecond)} ${num(result.latency.p50, 2).slice(1)} ${num(result.latency.p99, 2).slice(1)}   ${num(offRps)}   ${(result.requestsPerSecond / offRps).toFixed(3)}       ${num(noAuthRps)}     ${num(loggedRps)}`,
      );
    });
    const overhead = 1 - totalOn / totalOff;
    // On a shared machine the two windows may get different shares of the cores: CPU per answer is
    // the figure that does not depend on it.
    const cpuOverhead = withLimits.cpuMsPerAnswer / withoutLimits.cpuMsPerAnswer - 1;
    out.push(
      `errors: 0 (a failed or wrong-length answer stops the run); server CPU ${withLimits.cpuPerSecond.toFixed(2)} cores`,
      `server RSS, MiB, start → every 10 s → end: ${[withLimits.rssStart, ...withLimits.rssSeries, withLimits.rssEnd].map((x) => x.toFixed(0)).join(' → ')}`,
      `   (off: ${[withoutLimits.rssStart, ...withoutLimits.rssSeries, withoutLimits.rssEnd].map((x) => x.toFixed(0)).join(' → ')})`,
    );
    out.push(
      `2. cost of limits + metrics: ${(overhead * 100).toFixed(1)}% of throughput (all methods) — goal ≤ ${GOAL_OVERHEAD * 100}%: ${overhead <= GOAL_OVERHEAD ? 'met' : 'NOT met'}`,
      `   server CPU per answer ${withLimits.cpuMsPerAnswer.toFixed(3)} ms on, ${withoutLimits.cpuMsPerAnswer.toFixed(3)} ms off: +${(cpuOverhead * 100).toFixed(1)}%; no keys at all ${withoutKeys.cpuMsPerAnswer.toFixed(3)} ms; with request logs ${withLogs.cpuMsPerAnswer.toFixed(3)} ms`,
      `   keys (key check and usage) + limits + metrics against no keys at all: ${((1 - totalOn / totalNoAuth) * 100).toFixed(1)}% of throughput`,
      `   and of one JSON log line per request (--log-level info, the default) on top: ${((1 - totalLogged / totalOn) * 100).toFixed(1)}%; RSS ${withLogs.rssStart.toFixed(0)} → ${withLogs.rssEnd.toFixed(0)} MiB`,
    );

    log('eth_chainId, 1 and 2 processes');
    const one = await startServer(datadir, ['--log-level', 'warn'], key);
    const oneResult = await chainId(one);
    await one.child.stop();
    const two = await startServer(datadir, ['--processes', '2', '--log-level', 'warn'], key);
    const twoResult = await chainId(two);
    await two.child.stop();
    out.push(
      '',
      '3. eth_chainId, 16 connections, keys + limits + metrics on (request log off: --log-level warn)',
    );
    for (const [name, r] of [
      ['1 process', oneResult],
      ['--processes 2', twoResult],
    ] as const)
      out.push(
        `${pad(name, 16)} ${num(r.requestsPerSecond)} req/s  p50 ${r.latency.p50.toFixed(2)} ms  p99 ${r.latency.p99.toFixed(2)} ms  generator ${r.cpu.generator.toFixed(2)} cores`,
      );
    out.push(
      `goal ≥ ${GOAL_CHAIN_ID_RPS} req/s with --processes 2: ${twoResult.requestsPerSecond >= GOAL_CHAIN_ID_RPS ? 'met' : 'NOT met'} (the load generator shares the 2 cores)`,
    );

    log('server CPU per answer, ethtrace and anvil');
    const ours = await startServer(datadir, ['--trace-cache-mb', '0'], key);
    stops.push(() => ours.child.stop());
    const oursPid = ours.child.process.pid ?? 0;
    const anvilPid = childPid('anvil');
    if (anvilPid === null) throw new Error('no /proc entry for anvil');
    out.push('', '4. server CPU per answer, one connection (whole process tree, from /proc)');
    out.push(`${pad('method', 44)} ethtrace ms   anvil ms   ratio`);
    const heavy: Array<[string, string]> = [
      ['eth_getBlockReceipts (200 txs)', rpcBody('eth_getBlockReceipts', [hex(number)])],
      [
        'trace_replayBlockTransactions trace (no cache)',
        rpcBody('trace_replayBlockTransactions', [hex(number), ['trace']]),
      ],
      [
        'debug_traceBlockByNumber callTracer',
        rpcBody('debug_traceBlockByNumber', [hex(number), { tracer: 'callTracer' }]),
      ],
      ['eth_call', groups[2]?.body ?? ''],
    ];
    // The contract every transaction of the busy block calls (bench/lib/bigBlock.ts).
    const busy = JSON.parse(await post(ours.url, rpcBody('eth_getBlockByNumber', [hex(number), true])))
      .result as {
      transactions: Array<{ to: string }>;
    };
    const logStore = busy.transactions[0]?.to ?? '';
    heavy.push(
      ['eth_simulateV1 (10 calls, 2 contracts)', simulateBody(number, logStore)],
      ['eth_callBundle (3 txs)', await callBundleBody(ours.url, number, logStore)],
    );
    const cell = (r: { cpuMs: number } | null, width: number) =>
      (r ? r.cpuMs.toFixed(2) : 'not served').padStart(width);
    for (const [name, body] of heavy) {
      const a = (await served(ours.url, body)) ? await cpuPerAnswer(ours.url, oursPid, body) : null;
      const b = (await served(anvil.url, body)) ? await cpuPerAnswer(anvil.url, anvilPid, body) : null;
      const ratio = a && b ? (a.cpuMs / b.cpuMs).toFixed(2) : '—';
      out.push(`${pad(name, 44)} ${cell(a, 11)} ${cell(b, 10)}  ${ratio.padStart(6)}`);
    }
    process.stdout.write(`${out.join('\n')}\n`);
  } finally {
    for (const stop of stops.reverse()) await stop().catch(() => {});
    work.cleanup();
  }
}

await main();
