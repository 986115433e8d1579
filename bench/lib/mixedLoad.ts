// The mixed load of bench:mixed (issue 13), shared with bench:hosts (issue 23), whose goal is
// stated on it: four kinds of request built from the busy block of bench/lib/bigBlock.ts, each on
// its own connections, over one window.
import { type LoadResult, runLoadInChild } from './load.ts';
import { type Child, cpuSeconds, rssMiB } from './process.ts';
import { post, rpcBody, WARMUP_SECONDS } from './rpc.ts';

/** Connections per kind of request: 16 in all. */
export const GROUP_CONNECTIONS = 4;

export interface Group {
  name: string;
  body: string;
}

export interface MixedServer {
  child: Child;
  /** The JSON-RPC URL, with the key when keys are on. */
  url: string;
}

const hex = (n: bigint | number) => `0x${n.toString(16)}`;

/** The four kinds of request of the mixed load, built from the busy block `number`. */
export async function mixedGroups(url: string, number: bigint): Promise<Group[]> {
  const block = JSON.parse(await post(url, rpcBody('eth_getBlockByNumber', [hex(number), true]))).result as {
    transactions: Array<{ from: string; to: string; gas: string; value: string; input: string }>;
  };
  const calls = block.transactions
    .slice(0, 10)
    .map((tx) => ({ from: tx.from, to: tx.to, gas: tx.gas, value: tx.value, input: tx.input }));
  const first = calls[0];
  if (!first) throw new Error('the busy block has no transactions');
  const reads = [
    ['eth_getBalance', [first.from, 'latest']],
    ['eth_getTransactionCount', [first.from, 'latest']],
    ['eth_getStorageAt', [first.to, '0x0', 'latest']],
    ['eth_getCode', [first.to, 'latest']],
  ].map(([method, params], i) => ({ jsonrpc: '2.0', id: i + 1, method, params }));
  return [
    { name: 'eth_getBlockReceipts (200 txs)', body: rpcBody('eth_getBlockReceipts', [hex(number)]) },
    {
      name: 'trace_callMany (10 calls)',
      body: rpcBody('trace_callMany', [calls.map((c) => [c, ['trace']]), hex(number - 1n)]),
    },
    { name: 'eth_call', body: rpcBody('eth_call', [first, hex(number - 1n)]) },
    { name: 'state reads (batch of 4)', body: JSON.stringify(reads) },
  ];
}

/** The answer's size in bytes; an error or a status other than 200 fails the run. */
export async function reference(url: string, body: string): Promise<number> {
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
  const text = await res.text();
  if (res.status !== 200 || text.includes('"error"'))
    throw new Error(`${url}: ${res.status} ${text.slice(0, 300)}`);
  return Buffer.byteLength(text);
}

export interface MixedRun {
  results: Array<{ group: Group; result: LoadResult }>;
  rssStart: number;
  rssEnd: number;
  rssSeries: number[];
  cpuPerSecond: number;
  /** Server CPU per answer over the window (warm-up included, answers at the window's rate). */
  cpuMsPerAnswer: number;
}

/** Answers per second of every group together. */
export const totalRate = (run: Pick<MixedRun, 'results'>): number =>
  run.results.reduce((n, r) => n + r.result.requestsPerSecond, 0);

/** Every group at once, each on its own connections, over the same window. */
export async function runMixed(
  server: MixedServer,
  groups: Group[],
  seconds: number,
  warmupSeconds = WARMUP_SECONDS,
): Promise<MixedRun> {
  const pid = server.child.process.pid ?? 0;
  const sizes = await Promise.all(groups.map((g) => reference(server.url, g.body)));
  const rssStart = rssMiB(pid);
  // Every 10 s through the window: a plateau is a server whose memory holds; a climb is a leak.
  const rssSeries: number[] = [];
  const sampler = setInterval(() => rssSeries.push(rssMiB(pid)), 10_000);
  const cpuBefore = cpuSeconds(pid) ?? 0;
  const started = performance.now();
  const results = await Promise.all(
    groups.map(async (group, i) => ({
      group,
      result: await runLoadInChild({
        url: server.url,
        body: group.body,
        connections: GROUP_CONNECTIONS,
        durationMs: seconds * 1000,
        warmupMs: warmupSeconds * 1000,
        expectBytes: sizes[i] ?? 0,
      }),
    })),
  );
  clearInterval(sampler);
  const elapsed = (performance.now() - started) / 1000;
  const cpu = (cpuSeconds(pid) ?? 0) - cpuBefore;
  return {
    results,
    rssStart,
    rssEnd: rssMiB(pid),
    rssSeries,
    cpuPerSecond: cpu / elapsed,
    cpuMsPerAnswer: (cpu * 1000) / (totalRate({ results }) * elapsed),
  };
}
