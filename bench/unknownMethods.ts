/**
 * Issue 19 item 7, as an attacker holding an ordinary key would do it: REQUESTS bodies (default 20),
 * each a batch of 1,000 calls of distinct unknown method names of ~4 KB, against a dev chain served
 * with keys and an operator dashboard. While it runs, `eth_chainId` is asked every 50 ms; at the
 * end the server's heap (its own /metrics: nodejs_heap_size_used_bytes, RSS), the size of its usage
 * files and what the dashboard lists are printed. Memory figures are taken after a pause, so a
 * garbage collection has had a chance; they are indicative on a shared machine.
 *
 *   node --import tsx bench/unknownMethods.ts [REQUESTS]
 *
 * BENCH_CLI=path/to/bin/ethtrace.mjs runs another checkout's CLI (an older commit, side by side).
 */
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { tempDir } from '../test/support/cli.ts';
import { CLI, startChild } from './lib/process.ts';

const REQUESTS = Number(process.argv[2] ?? 20);
const BATCH = 1000;
const NAME_BYTES = 4000;
const TOKEN = 'bench-operator-token-0123456789';

function sample(text: string, series: string): number {
  for (const line of text.split('\n'))
    if (line.startsWith(`${series} `)) return Number(line.slice(series.length + 1));
  return Number.NaN;
}

const mb = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(1)} MB`;
const kb = (bytes: number) => `${(bytes / 1024).toFixed(1)} KB`;

function usageBytes(datadir: string): number {
  const dir = join(datadir, 'usage');
  let total = 0;
  for (const name of readdirSync(dir)) total += statSync(join(dir, name)).size;
  return total;
}

const dir = tempDir('ethtrace-bench-unknown-');
const child = await startChild(
  process.execPath,
  [
    process.env.BENCH_CLI ?? CLI,
    'start',
    '--port',
    '0',
    '--datadir',
    dir.path,
    '--operator-token',
    TOKEN,
    '--log-level',
    'warn',
  ],
  /HTTP\s+(http:\/\/\S+)\r?\n/,
);
try {
  const url = child.ready;
  const base = url.replace(/\/v3\/.*$/, '');
  const memory = async () => {
    const text = await (await fetch(`${base}/metrics`)).text();
    return {
      heap: sample(text, 'nodejs_heap_size_used_bytes'),
      rss: sample(text, 'process_resident_memory_bytes'),
    };
  };
  const post = (body: string) =>
    fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body }).then((r) =>
      r.text(),
    );
  await post(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'eth_chainId', params: [] }));
  await new Promise((r) => setTimeout(r, 3000));
  const before = await memory();

  // eth_chainId every 50 ms, its slowest answer kept: while the attack is sent, and after it.
  let slowest = 0;
  let slowestAfter = 0;
  let attacking = true;
  let probing = true;
  const probe = (async () => {
    while (probing) {
      const t = performance.now();
      await post(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'eth_chainId', params: [] }));
      if (attacking) slowest = Math.max(slowest, performance.now() - t);
      else slowestAfter = Math.max(slowestAfter, performance.now() - t);
      await new Promise((r) => setTimeout(r, 50));
    }
  })();

  const filler = 'x'.repeat(NAME_BYTES);
  const started = performance.now();
  for (let r = 0; r < REQUESTS; r++) {
    const body = `[${Array.from(
      { length: BATCH },
      (_, i) => `{"jsonrpc":"2.0","id":${i},"method":"m${r}_${i}_${filler}","params":[]}`,
    ).join(',')}]`;
    await post(body);
  }
  const sendSeconds = (performance.now() - started) / 1000;
  attacking = false;
  // Two flushes of the usage files (every 2 s), and time for a collection.
  await new Promise((r) => setTimeout(r, 6000));
  probing = false;
  await probe;
  const after = await memory();
  const dashboard = (await (
    await fetch(`${base}/dashboard/data?range=15m`, { headers: { authorization: `Bearer ${TOKEN}` } })
  ).json()) as { methods: Array<{ name: string; requests: number }> };
  console.log(
    `${REQUESTS} bodies of ${BATCH} distinct ~${NAME_BYTES}-byte unknown method names (${mb(REQUESTS * BATCH * NAME_BYTES)} of names), sent in ${sendSeconds.toFixed(1)} s`,
  );
  console.log(
    `heap used: ${mb(before.heap)} -> ${mb(after.heap)}; RSS ${mb(before.rss)} -> ${mb(after.rss)}`,
  );
  console.log(`usage files: ${kb(usageBytes(dir.path))}`);
  console.log(
    `slowest eth_chainId: ${slowest.toFixed(0)} ms while the bodies were sent, ${slowestAfter.toFixed(0)} ms in the 6 s after`,
  );
  console.log(
    `dashboard top methods: ${dashboard.methods.length} rows, first ${dashboard.methods
      .slice(0, 3)
      .map((m) => `${m.name.slice(0, 24)}=${m.requests}`)
      .join(', ')}`,
  );
} finally {
  await child.stop();
  dir.cleanup();
}
