// Upstream mode side by side with anvil --fork-url, in one run (issue 12). Run: npm run bench:upstream
// One anvil is the upstream node: a 200-transaction block (bench/lib/bigBlock.ts, the workload of
// bench/trace.ts) with 70 empty blocks after it, so that block is final. Both ethtrace
// (`start --upstream`) and `anvil --fork-url` read it through a proxy of their own that adds
// BENCH_DELAY_MS to every request, a remote provider's round trip, and counts what reaches it.
//  1. The seed example (two value transfers, ["trace"], latest) and the block's 200 transactions as
//     a 200-call trace_callMany on its parent: cold (a fresh process with nothing cached: a new
//     datadir, a new fork) and warm (the same request again). anvil has no trace_callMany; it runs
//     the same calls chained on one state with eth_simulateV1, in one request (no traces: less work
//     than ours). Both answers are checked: the same outputs and outcomes call for call, and ours
//     byte for byte the imported chain's.
//  2. eth_getBlockReceipts of the final block once cached, at one connection: upstream mode against
//     the same chain imported into a datadir (same speed is the goal), and anvil --fork-url.
// (env: BENCH_DELAY_MS, BENCH_COLD_RUNS, BENCH_WARM_RUNS, BENCH_RECEIPTS_ROUNDS, BENCH_SECONDS,
// BENCH_WARMUP_SECONDS)
import { writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { getAddress, numberToHex, parseEther } from 'viem';
import { tempDir } from '../test/support/cli.ts';
import { type FaultProxy, startFaultProxy } from '../test/support/faultProxy.ts';
import { buildGenesis } from '../test/support/genesis.ts';
import { bigBlockChain } from './lib/bigBlock.ts';
import type { LoadResult } from './lib/load.ts';
import { type Child, startChild, startEthtrace } from './lib/process.ts';
import {
  load,
  machineLine,
  ms,
  post,
  progressLog,
  RESULT_HEADER,
  resultRow,
  rpcBody,
  SECONDS,
  WARMUP_SECONDS,
} from './lib/rpc.ts';
import { SEED, seedCalls } from './lib/seed.ts';

/** Latency the proxy adds to each request: a provider some 20 ms away. */
const DELAY_MS = Number(process.env.BENCH_DELAY_MS ?? 20);
/** Cold requests per case, each on a fresh process (ethtrace: a new datadir; anvil: a new fork). */
const COLD_RUNS = Number(process.env.BENCH_COLD_RUNS ?? 3);
/** Warm requests after each cold one, on the same process. */
const WARM_RUNS = Number(process.env.BENCH_WARM_RUNS ?? 5);
/** Blocks mined after the busy block: more than anvil's 64-block lag of `finalized`, so it is final. */
const BLOCKS_AFTER = 70;
/** Rounds of the receipts comparison (upstream mode, imported datadir), alternated. */
const RECEIPTS_ROUNDS = Number(process.env.BENCH_RECEIPTS_ROUNDS ?? 3);
/** ethtrace's head poll, made long so the proxy counts only the requests' own round trips. */
const POLL_MS = 600_000;

/** The goals of issue 12. */
const GOAL_COLD_TRIPS = 0.1;
const GOAL_COLD_TIME = 0.2;
/** "The same speed": the cached upstream block's req/s within this of the imported block's. */
const GOAL_RECEIPTS = 0.9;

const ANVIL_BIN = createRequire(import.meta.url).resolve('@foundry-rs/anvil-linux-amd64/bin/anvil');

const log = progressLog();
const hex = (n: bigint | number) => `0x${n.toString(16)}`;
const median = (xs: readonly number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? (s[mid] as number) : ((s[mid - 1] as number) + (s[mid] as number)) / 2;
};

/** A delaying proxy in front of the upstream that also notes the methods of each request. */
interface CountingProxy {
  proxy: FaultProxy;
  /** One entry per request since the last reset: its methods and how many of each. */
  requests: Array<Record<string, number>>;
  reset(): void;
  trips(): { requests: number; calls: number };
}

async function countingProxy(upstream: string): Promise<CountingProxy> {
  const proxy = await startFaultProxy(upstream, { delayMs: DELAY_MS });
  const requests: Array<Record<string, number>> = [];
  // A rewrite whose `when` never matches: the proxy shows it every request body and forwards the
  // request untouched, so the methods are seen without parsing or re-encoding any answer.
  proxy.inject(
    {
      kind: 'rewrite',
      edit: (answer) => answer,
      when: (request) => {
        const methods: Record<string, number> = {};
        for (const call of (Array.isArray(request) ? request : [request]) as Array<{ method?: string }>)
          methods[String(call?.method)] = (methods[String(call?.method)] ?? 0) + 1;
        requests.push(methods);
        return false;
      },
    },
    Number.POSITIVE_INFINITY,
  );
  return {
    proxy,
    requests,
    reset() {
      proxy.resetCounters();
      requests.length = 0;
    },
    trips: () => ({ requests: proxy.counters.requests, calls: proxy.counters.calls }),
  };
}

/** The requests seen, as `method×n+method×n` per request, like requests merged: `3 × eth_getStorageAt`. */
function describeTrips(requests: ReadonlyArray<Record<string, number>>): string {
  const shapes = new Map<string, number>();
  for (const r of requests) {
    const shape = Object.entries(r)
      .map(([m, n]) => (n > 1 ? `${m}×${n}` : m))
      .join('+');
    shapes.set(shape, (shapes.get(shape) ?? 0) + 1);
  }
  return [...shapes].map(([shape, n]) => (n > 1 ? `${n} × [${shape}]` : `[${shape}]`)).join(', ');
}

/** `anvil --fork-url` through `proxy`, pinned to `block`, nothing cached on disk, no rate limit of its own. */
function startFork(proxy: string, block: bigint, hardfork: string): Promise<Child & { url: string }> {
  return startChild(
    ANVIL_BIN,
    [
      ...['--host', '127.0.0.1', '--port', '0', '--color', 'never'],
      ...['--fork-url', proxy, '--fork-block-number', block.toString()],
      // The fork's state stays the upstream's: no dev accounts funded on it, no deployer added.
      ...['--accounts', '0', '--disable-default-create2-deployer'],
      ...['--no-storage-caching', '--no-rate-limit', '--hardfork', hardfork, '--no-mining'],
    ],
    /Listening on (127\.0\.0\.1:\d+)/,
  ).then((child) => ({ ...child, url: `http://${child.ready}` }));
}

interface Timed {
  ms: number;
  text: string;
  trips: { requests: number; calls: number };
  methods: Array<Record<string, number>>;
}

async function timed(url: string, body: string, proxy: CountingProxy): Promise<Timed> {
  proxy.reset();
  const started = performance.now();
  const text = await post(url, body);
  const ms = performance.now() - started;
  return { ms, text, trips: proxy.trips(), methods: [...proxy.requests] };
}

interface Side {
  cold: Timed[];
  warm: Timed[];
  startTrips: number[];
}

interface CallCase {
  name: string;
  /** Calls as trace_callMany and eth_simulateV1 both take them. */
  calls: Array<Record<string, unknown>>;
  /** ethtrace's block parameter. */
  block: string;
  /** The block anvil forks at (the same state). */
  forkBlock: bigint;
}

/** Our trace_callMany and anvil's eth_simulateV1 ran the same calls: outputs and outcomes agree. */
function checkSame(c: CallCase, ours: string, theirs: string): void {
  const traces = JSON.parse(ours).result as Array<{ output: string; trace: Array<{ error?: string }> }>;
  const blocks = JSON.parse(theirs).result as Array<{ calls: Array<{ returnData: string; status: string }> }>;
  const sims = blocks[0]?.calls ?? [];
  if (traces.length !== c.calls.length || sims.length !== c.calls.length)
    throw new Error(`${c.name}: ${traces.length} traces, ${sims.length} simulated, ${c.calls.length} calls`);
  traces.forEach((t, i) => {
    const s = sims[i] as { returnData: string; status: string };
    const ok = t.trace[0]?.error === undefined;
    if (t.output !== s.returnData || ok !== (s.status === '0x1'))
      throw new Error(
        `${c.name} call ${i}: ethtrace ${t.output} (${ok ? 'ok' : 'failed'}), anvil ${s.returnData} (status ${s.status})`,
      );
  });
}

async function runCase(
  c: CallCase,
  ctx: { upstream: string; hardfork: string; work: string; imported: string },
): Promise<{ ethtrace: Side; anvil: Side }> {
  const ourBody = rpcBody('trace_callMany', [c.calls.map((call) => [call, ['trace']]), c.block]);
  const anvilBody = rpcBody('eth_simulateV1', [
    { blockStateCalls: [{ calls: c.calls }], validation: false },
    'latest',
  ]);
  const reference = await post(ctx.imported, ourBody);
  const ethtrace: Side = { cold: [], warm: [], startTrips: [] };
  const anvil: Side = { cold: [], warm: [], startTrips: [] };
  for (let run = 0; run < COLD_RUNS; run++) {
    const ourProxy = await countingProxy(ctx.upstream);
    const server = await startEthtrace(join(ctx.work, `upstream-${c.name.replace(/\W+/g, '-')}-${run}`), [
      ...['--upstream', ourProxy.proxy.url, '--upstream-poll-ms', String(POLL_MS)],
    ]);
    try {
      ethtrace.startTrips.push(ourProxy.trips().requests);
      ethtrace.cold.push(await timed(server.url, ourBody, ourProxy));
      for (let i = 0; i < WARM_RUNS; i++) ethtrace.warm.push(await timed(server.url, ourBody, ourProxy));
    } finally {
      await server.stop();
      await ourProxy.proxy.close();
    }
    for (const t of [...ethtrace.cold.slice(-1), ...ethtrace.warm.slice(-WARM_RUNS)]) {
      if (t.text !== reference)
        throw new Error(`${c.name}: upstream mode answers otherwise than the imported chain`);
    }
    const theirProxy = await countingProxy(ctx.upstream);
    const fork = await startFork(theirProxy.proxy.url, c.forkBlock, ctx.hardfork);
    try {
      anvil.startTrips.push(theirProxy.trips().requests);
      anvil.cold.push(await timed(fork.url, anvilBody, theirProxy));
      for (let i = 0; i < WARM_RUNS; i++) anvil.warm.push(await timed(fork.url, anvilBody, theirProxy));
    } finally {
      await fork.stop();
      await theirProxy.proxy.close();
    }
    checkSame(c, reference, (anvil.cold.at(-1) as Timed).text);
    const [o, a] = [ethtrace.cold.at(-1) as Timed, anvil.cold.at(-1) as Timed];
    log(
      `${c.name}, cold run ${run + 1}: ethtrace ${ms(o.ms)} ms, ${o.trips.requests} round trips; ` +
        `anvil ${ms(a.ms)} ms, ${a.trips.requests} round trips`,
    );
  }
  return { ethtrace, anvil };
}

interface Row {
  name: string;
  ours: { ms: number; trips: number; calls: number };
  theirs: { ms: number; trips: number; calls: number };
}

function summarise(name: string, ours: Timed[], theirs: Timed[]): Row {
  const side = (ts: Timed[]) => ({
    ms: median(ts.map((t) => t.ms)),
    trips: ts.reduce((n, t) => n + t.trips.requests, 0) / ts.length,
    calls: ts.reduce((n, t) => n + t.trips.calls, 0) / ts.length,
  });
  return { name, ours: side(ours), theirs: side(theirs) };
}

const num = (x: number) => (Number.isInteger(x) ? String(x) : x.toFixed(1));
const ratio = (a: number, b: number) =>
  b === 0 ? (a === 0 ? '—' : '∞') : `×${(a / b).toFixed(a / b < 0.1 ? 3 : 2)}`;

function tableRow(r: Row): string {
  return [
    r.name.padEnd(28),
    ms(r.ours.ms).padStart(11),
    num(r.ours.trips).padStart(6),
    `(${num(r.ours.calls)})`.padStart(8),
    ms(r.theirs.ms).padStart(10),
    num(r.theirs.trips).padStart(6),
    `(${num(r.theirs.calls)})`.padStart(8),
    ratio(r.ours.ms, r.theirs.ms).padStart(9),
    ratio(r.ours.trips, r.theirs.trips).padStart(9),
  ].join(' ');
}
const TABLE_HEADER = [
  'case'.padEnd(28),
  'ethtrace ms'.padStart(11),
  'trips'.padStart(6),
  '(calls)'.padStart(8),
  'anvil ms'.padStart(10),
  'trips'.padStart(6),
  '(calls)'.padStart(8),
  'time'.padStart(9),
  'trips'.padStart(9),
].join(' ');

async function main(): Promise<void> {
  const work = tempDir('ethtrace-bench-upstream-');
  const stops: Array<() => Promise<void>> = [];
  try {
    log(machineLine());
    // The seed's sender holds ether on this chain, as on the conformance chain, so its transfers succeed.
    const genesisPath = join(work.path, 'anvil-genesis.json');
    await writeFile(
      genesisPath,
      JSON.stringify(
        buildGenesis({ alloc: { [getAddress(SEED.from)]: { balance: numberToHex(parseEther('1')) } } }),
      ),
    );
    const { anvil, number, datadir } = await bigBlockChain(work.path, log, {
      anvil: { genesisPath },
      blocksAfter: BLOCKS_AFTER,
    });
    stops.push(() => anvil.stop());
    const head = BigInt(await anvil.rpc<string>('eth_blockNumber'));
    const finalized = BigInt(
      (await anvil.rpc<{ number: string }>('eth_getBlockByNumber', ['finalized', false])).number,
    );
    if (finalized < number) throw new Error(`block ${number} is not final on anvil (finalized ${finalized})`);
    const imported = await startEthtrace(datadir);
    stops.push(imported.stop);
    log(`chain imported; head ${head}, finalized ${finalized}`);

    const block = await anvil.rpc<{ transactions: Array<Record<string, unknown>> }>('eth_getBlockByNumber', [
      hex(number),
      true,
    ]);
    const senders = new Set(block.transactions.map((tx) => tx.from)).size;
    const contracts = new Set(block.transactions.map((tx) => tx.to)).size;
    // No fee fields: the calls run in the parent's environment (see test/diff/traceCallMany.test.ts).
    const manyCalls = block.transactions.map((tx) => ({
      from: tx.from,
      to: tx.to,
      gas: tx.gas,
      value: tx.value,
      input: tx.input,
    }));
    const ctx = { upstream: anvil.url, hardfork: anvil.hardfork, work: work.path, imported: imported.url };
    const seed = await runCase({ name: 'seed', calls: seedCalls(), block: 'latest', forkBlock: head }, ctx);
    const many = await runCase(
      { name: '200-call', calls: manyCalls, block: hex(number - 1n), forkBlock: number - 1n },
      ctx,
    );

    // eth_getBlockReceipts of the final block, cached: upstream mode, imported, anvil --fork-url.
    const receiptsBody = rpcBody('eth_getBlockReceipts', [hex(number)]);
    const ourProxy = await countingProxy(anvil.url);
    stops.push(() => ourProxy.proxy.close());
    const server = await startEthtrace(join(work.path, 'upstream-receipts'), [
      ...['--upstream', ourProxy.proxy.url, '--upstream-poll-ms', String(POLL_MS)],
    ]);
    stops.push(server.stop);
    const firstReceipts = await timed(server.url, receiptsBody, ourProxy);
    if (firstReceipts.text !== (await post(imported.url, receiptsBody)))
      throw new Error('upstream mode answers other receipts than the imported chain');
    ourProxy.reset();
    // Alternated, the order swapped each round, so a change in the machine's load meets both alike.
    const rounds: Array<{ upstream: LoadResult; imported: LoadResult }> = [];
    for (let round = 0; round < RECEIPTS_ROUNDS; round++) {
      const measureUpstream = () => load(server.url, receiptsBody, 1, server.process.pid);
      const measureImported = () => load(imported.url, receiptsBody, 1, imported.process.pid);
      if (round % 2 === 0) {
        const upstream = await measureUpstream();
        rounds.push({ upstream, imported: await measureImported() });
      } else {
        const importedResult = await measureImported();
        rounds.push({ upstream: await measureUpstream(), imported: importedResult });
      }
      const last = rounds.at(-1) as { upstream: LoadResult; imported: LoadResult };
      log(
        `receipts round ${round + 1}: upstream mode ${last.upstream.requestsPerSecond.toFixed(0)} req/s, ` +
          `imported ${last.imported.requestsPerSecond.toFixed(0)} req/s`,
      );
    }
    const upstreamLoadTrips = ourProxy.trips().requests;
    await server.stop();
    const theirProxy = await countingProxy(anvil.url);
    stops.push(() => theirProxy.proxy.close());
    const fork = await startFork(theirProxy.proxy.url, head, anvil.hardfork);
    stops.push(fork.stop);
    const firstTheirs = await timed(fork.url, receiptsBody, theirProxy);
    const againTheirs = await timed(fork.url, receiptsBody, theirProxy);
    const receiptsFork = await load(fork.url, receiptsBody, 1, fork.process.pid);
    await fork.stop();

    const rows = [
      summarise('seed example, cold', seed.ethtrace.cold, seed.anvil.cold),
      summarise('seed example, warm', seed.ethtrace.warm, seed.anvil.warm),
      summarise('200-call callMany, cold', many.ethtrace.cold, many.anvil.cold),
      summarise('200-call callMany, warm', many.ethtrace.warm, many.anvil.warm),
      {
        name: 'receipts, final block (p50)',
        ours: {
          ms: median(rounds.map((r) => r.upstream.latency.p50)),
          trips: upstreamLoadTrips,
          calls: upstreamLoadTrips,
        },
        theirs: {
          ms: receiptsFork.latency.p50,
          trips: againTheirs.trips.requests,
          calls: againTheirs.trips.calls,
        },
      },
    ];

    const coldMany = rows[2] as Row;
    const warmTrips = [...seed.ethtrace.warm, ...many.ethtrace.warm].reduce(
      (n, t) => n + t.trips.requests,
      0,
    );
    const tripsRatio = coldMany.ours.trips / coldMany.theirs.trips;
    const timeRatio = coldMany.ours.ms / coldMany.theirs.ms;
    const roundRatios = rounds.map((r) => r.upstream.requestsPerSecond / r.imported.requestsPerSecond);
    const receiptsRatio = median(roundRatios);
    const p50Ratio = median(rounds.map((r) => r.upstream.latency.p50 / r.imported.latency.p50));
    // Server CPU per answer: what each costs the server, which other work on the machine disturbs
    // far less than req/s (it takes the cores, not the cycles an answer needs).
    const cpuPerAnswer = (r: LoadResult) =>
      r.cpu.server === null ? Number.NaN : (r.cpu.server * r.seconds * 1e6) / r.requests;
    const cpuRatio = median(rounds.map((r) => cpuPerAnswer(r.upstream) / cpuPerAnswer(r.imported)));
    const met = (ok: boolean) => (ok ? 'met' : 'NOT met');
    const samples = (ts: Timed[]) => ts.map((t) => ms(t.ms)).join(', ');
    const first = (side: Side) => describeTrips((side.cold[0] as Timed).methods);

    const out = [
      '',
      `upstream benchmark: one anvil upstream behind a proxy adding ${DELAY_MS} ms to every request ` +
        '(one proxy per server, counting the requests that reach it: "trips" are HTTP requests, "(calls)" the JSON-RPC calls in them)',
      `  chain: block ${number} holds ${block.transactions.length} txs (${senders} senders, ${contracts} contract; LogStore calls ` +
        `writing a fresh slot each, 2–3 logs); ${BLOCKS_AFTER} empty blocks after it; head ${head}, finalized ${finalized}`,
      `  seed example: ${seedCalls().length} transfers from ${SEED.from}, on latest (block ${head}); ` +
        `200-call: the block's ${manyCalls.length} transactions as calls on its parent (block ${number - 1n})`,
      `  ethtrace: \`start --upstream <proxy> --upstream-poll-ms ${POLL_MS}\` (head poll out of the counts), default workers and limits;` +
        ` cold = first request on a fresh datadir and process, ${COLD_RUNS} runs, median; warm = the same request again, ${WARM_RUNS} per run`,
      `  anvil: \`anvil --fork-url <proxy> --fork-block-number <block> --no-storage-caching --no-rate-limit --accounts 0\`;` +
        ' the calls chained on one state with eth_simulateV1 (one request, validation off; results and logs, no traces);' +
        ' cold = first request on a fresh fork, warm = again on that fork',
      `  start-up round trips (not in the table): ethtrace ${median([...seed.ethtrace.startTrips, ...many.ethtrace.startTrips])}, ` +
        `anvil fork ${median([...seed.anvil.startTrips, ...many.anvil.startTrips])}`,
      `  ${machineLine()}`,
      '',
      `${TABLE_HEADER}   (time, trips: ethtrace/anvil)`,
      ...rows.map(tableRow),
      '',
      `  warm: ${warmTrips} upstream requests in ${seed.ethtrace.warm.length + many.ethtrace.warm.length} warm requests ` +
        `(goal 0): ${met(warmTrips === 0)}; receipts: ${upstreamLoadTrips} during the load run (goal 0): ${met(upstreamLoadTrips === 0)}`,
      `  cold 200-call: round trips ×${tripsRatio.toFixed(3)} of anvil's (goal ≤ ×${GOAL_COLD_TRIPS}): ${met(tripsRatio <= GOAL_COLD_TRIPS)}; ` +
        `wall time ×${timeRatio.toFixed(2)} of anvil's (goal ≤ ×${GOAL_COLD_TIME}): ${met(timeRatio <= GOAL_COLD_TIME)}`,
      `  receipts of final block ${number}, cached, 1 connection (${SECONDS} s after ${WARMUP_SECONDS} s warm-up; ` +
        `${RECEIPTS_ROUNDS} rounds alternating upstream mode and imported):`,
      `  ${RESULT_HEADER}`,
      ...rounds.flatMap((r, i) => [
        `  ${resultRow(`round ${i + 1}: upstream mode (cached)`, r.upstream)}`,
        `  ${resultRow(`round ${i + 1}: imported datadir`, r.imported)}`,
      ]),
      `  ${resultRow('anvil --fork-url', receiptsFork)}`,
      `  upstream/imported req/s ×${receiptsRatio.toFixed(2)} (rounds ${roundRatios.map((r) => `×${r.toFixed(2)}`).join(', ')}), ` +
        `p50 ×${p50Ratio.toFixed(2)}, medians (goal: the same speed, req/s ≥ ×${GOAL_RECEIPTS}): ${met(receiptsRatio >= GOAL_RECEIPTS)}`,
      `  server CPU per answer: upstream mode ${median(rounds.map((r) => cpuPerAnswer(r.upstream))).toFixed(0)} µs, ` +
        `imported ${median(rounds.map((r) => cpuPerAnswer(r.imported))).toFixed(0)} µs (×${cpuRatio.toFixed(2)}, median of rounds); ` +
        `first request ${ms(firstReceipts.ms)} ms, ${firstReceipts.trips.requests} round trips (anvil fork: ${ms(firstTheirs.ms)} ms, ` +
        `${firstTheirs.trips.requests}; then ${againTheirs.trips.requests} per request)`,
      '',
      '  cold samples (ms): ' +
        `seed ethtrace ${samples(seed.ethtrace.cold)} | anvil ${samples(seed.anvil.cold)}; ` +
        `200-call ethtrace ${samples(many.ethtrace.cold)} | anvil ${samples(many.anvil.cold)}`,
      '  where the cold round trips went (first run; [methods of one request]):',
      `    seed, ethtrace: ${first(seed.ethtrace)}`,
      `    seed, anvil: ${first(seed.anvil)}`,
      `    200-call, ethtrace: ${first(many.ethtrace)}`,
      `    200-call, anvil: ${first(many.anvil)}`,
    ];
    process.stdout.write(`${out.join('\n')}\n`);
  } finally {
    for (const stop of stops.reverse()) await stop().catch(() => {});
    work.cleanup();
  }
}

await main();
