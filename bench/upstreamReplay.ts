// Cold block replays in upstream mode, side by side with anvil (issue 19). Run: npm run bench:upstream-replay
// One anvil holds a 200-transaction block (bench/lib/bigBlock.ts, the workload of bench/trace.ts),
// with a few empty blocks after it; the same chain imported into a datadir gives the reference answer.
//  1. How the block's pre-state (the accounts and slots its transactions touch) can be learnt from
//     the upstream, each timed on anvil in one request: its trace of the block (debug_traceBlockByHash
//     with prestateTracer), one debug_traceTransaction per transaction, one debug_traceCall per
//     transaction on the parent's state, one eth_createAccessList per transaction on the parent's
//     state; and how many of the block trace's accounts and slots each names.
//  2. trace_replayBlockTransactions(["trace"]) of the block, cold (the first request of a fresh
//     `ethtrace start --upstream` process on a fresh datadir, default settings) and warm (again),
//     through a proxy that adds BENCH_DELAY_MS to each request and counts them; beside it, the same
//     first request to a fresh process over the imported datadir (execution alone, cold: what the
//     machine gives a replay), and anvil answering it. Every answer is checked against the imported
//     chain's. "after the upstream" is the time from the last upstream request's arrival at the proxy
//     to the answer: execution, once the reads are done.
// (env: BENCH_COLD_RUNS, BENCH_DELAY_MS, BENCH_STRATEGY_RUNS)
import { join } from 'node:path';
import { tempDir } from '../test/support/cli.ts';
import { type FaultProxy, startFaultProxy } from '../test/support/faultProxy.ts';
import { bigBlockChain } from './lib/bigBlock.ts';
import { startEthtrace } from './lib/process.ts';
import { machineLine, progressLog, rpcBody } from './lib/rpc.ts';

/** Cold requests, each on a fresh process and datadir. */
const COLD_RUNS = Number(process.env.BENCH_COLD_RUNS ?? 5);
/** Latency the proxy adds to each request (0: anvil on this host). */
const DELAY_MS = Number(process.env.BENCH_DELAY_MS ?? 0);
/** Timings of each pre-state strategy. */
const STRATEGY_RUNS = Number(process.env.BENCH_STRATEGY_RUNS ?? 3);
/** ethtrace's head poll, made long so the proxy counts only the request's own round trips. */
const POLL_MS = 600_000;

const log = progressLog();
const hex = (n: bigint | number) => `0x${n.toString(16)}`;
const median = (xs: readonly number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length === 0
    ? Number.NaN
    : s.length % 2
      ? (s[mid] as number)
      : ((s[mid - 1] as number) + (s[mid] as number)) / 2;
};
const ms = (x: number) => (Number.isNaN(x) ? '—' : x.toFixed(x < 100 ? 1 : 0));

/** POSTs a body; the answer text (errors included: a cold replay that fails is a result here). */
async function send(url: string, body: string): Promise<{ text: string; ms: number }> {
  const started = performance.now();
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
  const text = await res.text();
  return { text, ms: performance.now() - started };
}

async function batch(url: string, calls: Array<{ method: string; params: unknown[] }>): Promise<unknown[]> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(calls.map((c, id) => ({ jsonrpc: '2.0', id, ...c }))),
  });
  const answers = (await res.json()) as Array<{ id: number; result?: unknown; error?: unknown }>;
  return answers.sort((a, b) => a.id - b.id).map((a) => (a.error ? null : a.result));
}

/** The accounts and slots prestateTracer answers name, as `address` and `address:slot`. */
function keysOfPrestates(prestates: readonly unknown[]): Set<string> {
  const keys = new Set<string>();
  for (const p of prestates) {
    for (const [address, account] of Object.entries((p ?? {}) as Record<string, { storage?: object }>)) {
      keys.add(address.toLowerCase());
      for (const slot of Object.keys(account?.storage ?? {})) keys.add(`${address.toLowerCase()}:${slot}`);
    }
  }
  return keys;
}

interface Strategy {
  name: string;
  keys(): Promise<Set<string>>;
}

function strategies(url: string, block: RpcBlock): Strategy[] {
  const at = { blockHash: block.parentHash };
  // Fees and nonce left out, as ethtrace asks (src/upstream/prefetch.ts).
  const asCall = (tx: RpcTx) => ({ from: tx.from, to: tx.to, gas: tx.gas, value: tx.value, input: tx.input });
  return [
    {
      name: 'debug_traceBlockByHash (block)',
      keys: async () => {
        const traces = await batch(url, [
          { method: 'debug_traceBlockByHash', params: [block.hash, { tracer: 'prestateTracer' }] },
        ]);
        return keysOfPrestates(((traces[0] ?? []) as Array<{ result: unknown }>).map((t) => t.result));
      },
    },
    {
      name: 'debug_traceTransaction × txs',
      keys: async () =>
        keysOfPrestates(
          await batch(
            url,
            block.transactions.map((tx) => ({
              method: 'debug_traceTransaction',
              params: [tx.hash, { tracer: 'prestateTracer' }],
            })),
          ),
        ),
    },
    {
      name: 'debug_traceCall × txs, parent',
      keys: async () =>
        keysOfPrestates(
          await batch(
            url,
            block.transactions.map((tx) => ({
              method: 'debug_traceCall',
              params: [asCall(tx), at, { tracer: 'prestateTracer' }],
            })),
          ),
        ),
    },
    {
      name: 'eth_createAccessList × txs, parent',
      keys: async () => {
        const lists = await batch(
          url,
          block.transactions.map((tx) => ({ method: 'eth_createAccessList', params: [asCall(tx), at] })),
        );
        // An access list leaves out the sender, the recipient and the fee recipient: added here.
        const keys = new Set<string>([block.miner.toLowerCase()]);
        lists.forEach((list, i) => {
          const tx = block.transactions[i] as RpcTx;
          keys.add(tx.from.toLowerCase());
          if (tx.to) keys.add(tx.to.toLowerCase());
          for (const entry of (
            list as { accessList?: Array<{ address: string; storageKeys: string[] }> } | null
          )?.accessList ?? []) {
            keys.add(entry.address.toLowerCase());
            for (const slot of entry.storageKeys) keys.add(`${entry.address.toLowerCase()}:${slot}`);
          }
        });
        return keys;
      },
    },
  ];
}

interface RpcTx {
  hash: string;
  from: string;
  to: string | null;
  gas: string;
  value: string;
  input: string;
}

interface RpcBlock {
  hash: string;
  parentHash: string;
  miner: string;
  transactions: RpcTx[];
}

/** Each request's methods, `method×n` joined with `+`. */
function shapes(proxy: FaultProxy): string {
  const byRequest = new Map<number, Map<string, number>>();
  for (const call of proxy.calls) {
    const methods = byRequest.get(call.request) ?? new Map<string, number>();
    methods.set(call.method, (methods.get(call.method) ?? 0) + 1);
    byRequest.set(call.request, methods);
  }
  return [...byRequest.values()]
    .map((m) => `[${[...m].map(([method, n]) => (n > 1 ? `${method}×${n}` : method)).join('+')}]`)
    .join(' ');
}

async function main(): Promise<void> {
  const work = tempDir('ethtrace-bench-upstream-replay-');
  const stops: Array<() => Promise<void>> = [];
  try {
    log(machineLine());
    const { anvil, number, datadir } = await bigBlockChain(work.path, log, { blocksAfter: 3 });
    stops.push(() => anvil.stop());
    const imported = await startEthtrace(datadir, ['--exec-timeout', '120000']);
    stops.push(imported.stop);
    const block = await anvil.rpc<RpcBlock>('eth_getBlockByNumber', [hex(number), true]);
    const body = rpcBody('trace_replayBlockTransactions', [hex(number), ['trace']]);
    const reference = (await send(imported.url, body)).text;

    // 1. The pre-state strategies, on anvil.
    const rows: string[] = [];
    let exact: Set<string> | undefined;
    for (const strategy of strategies(anvil.url, block)) {
      const times: number[] = [];
      let keys = new Set<string>();
      for (let run = 0; run < STRATEGY_RUNS; run++) {
        const started = performance.now();
        keys = await strategy.keys();
        times.push(performance.now() - started);
      }
      exact ??= keys;
      const missing = [...exact].filter((k) => !keys.has(k)).length;
      const extra = [...keys].filter((k) => !exact?.has(k)).length;
      log(`${strategy.name}: ${times.map((t) => ms(t)).join(', ')} ms; ${keys.size} keys`);
      rows.push(
        `  ${strategy.name.padEnd(36)} ${ms(median(times)).padStart(9)} ${String(keys.size).padStart(6)} ${String(missing).padStart(8)} ${String(extra).padStart(6)}`,
      );
    }

    // 2. Cold and warm replays in upstream mode, anvil beside.
    const anvilTimes: number[] = [];
    for (let i = 0; i < COLD_RUNS; i++) anvilTimes.push((await send(anvil.url, body)).ms);
    const cold: Array<{
      ms: number;
      ok: boolean;
      trips: number;
      calls: number;
      error: string;
      shape: string;
      after: number;
    }> = [];
    const importedCold: Array<{ ms: number; ok: boolean }> = [];
    const warm: number[] = [];
    for (let run = 0; run < COLD_RUNS; run++) {
      const proxy = await startFaultProxy(anvil.url, { delayMs: DELAY_MS });
      const server = await startEthtrace(join(work.path, `upstream-${run}`), [
        ...['--upstream', proxy.url, '--upstream-poll-ms', String(POLL_MS)],
      ]);
      try {
        proxy.resetCounters();
        const sent = performance.now();
        const first = await send(server.url, body);
        const lastRead = proxy.arrivals.at(-1) ?? sent;
        const ok = first.text === reference;
        const error = ok
          ? ''
          : ((JSON.parse(first.text) as { error?: { message?: string } }).error?.message ?? 'other answer');
        cold.push({
          ms: first.ms,
          ok,
          trips: proxy.counters.requests,
          calls: proxy.counters.calls,
          error,
          shape: shapes(proxy),
          after: sent + first.ms - lastRead,
        });
        log(
          `cold run ${run + 1}: ${ms(first.ms)} ms, ${ok ? 'answered' : `failed: ${error}`}, ${proxy.counters.requests} round trips`,
        );
        if (ok) {
          const again = await send(server.url, body);
          if (again.text === reference) warm.push(again.ms);
        }
      } finally {
        await server.stop();
        await proxy.close();
      }
      const alone = await startEthtrace(datadir);
      try {
        const first = await send(alone.url, body);
        importedCold.push({ ms: first.ms, ok: first.text === reference });
      } finally {
        await alone.stop();
      }
    }
    const answered = cold.filter((c) => c.ok);
    const out = [
      '',
      `upstream replay benchmark: trace_replayBlockTransactions(["trace"]) of block ${number} (${block.transactions.length} txs) read from anvil`,
      `  ${machineLine()}`,
      '',
      `  1. the block's pre-state from the upstream (anvil), one request each, median of ${STRATEGY_RUNS}:`,
      `  ${'strategy'.padEnd(36)} ${'ms'.padStart(9)} ${'keys'.padStart(6)} ${'missing'.padStart(8)} ${'extra'.padStart(6)}   (against the block trace's keys)`,
      ...rows,
      '',
      `  2. ethtrace \`start --upstream <proxy> --upstream-poll-ms ${POLL_MS}\`, default settings, proxy delay ${DELAY_MS} ms; cold = first request on a fresh process and datadir:`,
      `  cold: answered ${answered.length}/${cold.length}; median ${ms(median(answered.map((c) => c.ms)))} ms answered ` +
        `(all runs: ${cold.map((c) => `${ms(c.ms)}${c.ok ? '' : '✗'}`).join(', ')} ms)`,
      `  round trips per cold request: ${cold.map((c) => c.trips).join(', ')} (calls ${cold.map((c) => c.calls).join(', ')}); ` +
        `after the upstream: ${cold.map((c) => ms(c.after)).join(', ')} ms`,
      `  imported datadir, first request of a fresh process (default settings): ${importedCold.map((c) => `${ms(c.ms)}${c.ok ? '' : '✗'}`).join(', ')} ms`,
      `  warm: median ${ms(median(warm))} ms; anvil's own answer: median ${ms(median(anvilTimes))} ms`,
      ...[...new Set(cold.filter((c) => !c.ok).map((c) => c.error))].map((e) => `  failure: ${e}`),
      `  first cold run's round trips: ${cold[0]?.shape ?? ''}`,
    ];
    process.stdout.write(`${out.join('\n')}\n`);
  } finally {
    for (const stop of stops.reverse()) await stop().catch(() => {});
    work.cleanup();
  }
}

await main();
