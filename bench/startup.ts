// Start-up: how long from spawning `ethtrace start` on an empty datadir (a dev chain) until it
// answers, beside anvil started the same way. Three moments per run, each from the spawn:
//   printed  the banner's URLs are printed;
//   answer   the first eth_blockNumber is answered (polled every 10 ms from the spawn);
//   call     the first eth_call that needs the EVM is answered (an execution worker has run it).
// Each server is started RUNS times (default 5) on a fresh datadir; the median and the best run
// are printed, and the ratio of the medians to anvil's.
//
//   npm run bench:startup            BENCH_STARTUP_RUNS=10 npm run bench:startup
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CLI } from './lib/process.ts';
import { machineLine } from './lib/rpc.ts';

const RUNS = Number(process.env.BENCH_STARTUP_RUNS ?? 5);
const ANVIL_BIN = createRequire(import.meta.url).resolve('@foundry-rs/anvil-linux-amd64/bin/anvil');
const POLL_MS = 10;
const GIVE_UP_MS = 60_000;
// anvil takes no port 0 and prints no URL before it listens, so it gets a port of its own.
const ANVIL_PORT = 18_545 + (process.pid % 1000);
// The first dev account of both: anvil's default mnemonic is the dev chain's too.
const ACCOUNT = '0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266';

interface Moments {
  printed: number;
  answer: number;
  call: number;
}

async function rpc(url: string, method: string, params: unknown[]): Promise<unknown> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
  });
  const body = (await res.json()) as { result?: unknown; error?: { message: string } };
  if (body.error) throw new Error(`${method}: ${body.error.message}`);
  return body.result;
}

/** Polls `method` until it answers; the milliseconds since `t0` when it did. */
async function firstAnswer(url: () => string | null, t0: number, method: string, params: unknown[]) {
  for (;;) {
    const u = url();
    if (u !== null) {
      try {
        await rpc(u, method, params);
        return performance.now() - t0;
      } catch (e) {
        // Not listening yet (connection refused) is what the polling waits out; anything else is a
        // failure of the server under test.
        if (!String((e as { cause?: { code?: string } }).cause?.code).startsWith('ECONNREFUSED')) throw e;
      }
    }
    if (performance.now() - t0 > GIVE_UP_MS) throw new Error(`${method}: no answer within ${GIVE_UP_MS} ms`);
    await new Promise((r) => setTimeout(r, POLL_MS));
  }
}

async function run(
  command: string,
  args: string[],
  urlOf: (output: string) => string | null,
): Promise<Moments> {
  const t0 = performance.now();
  const child: ChildProcess = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  let printed = Number.NaN;
  const seen = (chunk: Buffer) => {
    output += chunk;
    if (Number.isNaN(printed) && urlOf(output) !== null) printed = performance.now() - t0;
  };
  child.stdout?.on('data', seen);
  child.stderr?.on('data', seen);
  try {
    const url = () => urlOf(output);
    const answer = await firstAnswer(url, t0, 'eth_blockNumber', []);
    const call = await firstAnswer(url, t0, 'eth_call', [
      { from: ACCOUNT, to: ACCOUNT, data: '0x' },
      'latest',
    ]);
    return { printed, answer, call };
  } finally {
    const exited = new Promise((r) => child.once('exit', r));
    child.kill('SIGTERM');
    await exited;
  }
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)] ?? Number.NaN;
}

async function series(name: string, once: () => Promise<Moments>): Promise<Moments> {
  const runs: Moments[] = [];
  for (let i = 0; i < RUNS; i++) runs.push(await once());
  const m = {
    printed: median(runs.map((r) => r.printed)),
    answer: median(runs.map((r) => r.answer)),
    call: median(runs.map((r) => r.call)),
  };
  const best = Math.min(...runs.map((r) => r.answer));
  console.log(
    `${name.padEnd(10)} printed ${m.printed.toFixed(0).padStart(6)} ms   first answer ${m.answer.toFixed(0).padStart(6)} ms (best ${best.toFixed(0)})   first eth_call ${m.call.toFixed(0).padStart(6)} ms`,
  );
  return m;
}

console.log(machineLine());
console.log(`medians of ${RUNS} starts on a fresh datadir, milliseconds from the spawn`);
const ours = await series('ethtrace', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'ethtrace-startup-'));
  try {
    return await run(
      process.execPath,
      [CLI, 'start', '--datadir', dir, '--port', '0', '--no-auth'],
      (out) => /HTTP\s+(http:\/\/\S+)\r?\n/.exec(out)?.[1] ?? null,
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
const anvil = await series('anvil', () =>
  run(
    ANVIL_BIN,
    ['--port', String(ANVIL_PORT), '--host', '127.0.0.1'],
    () => `http://127.0.0.1:${ANVIL_PORT}`,
  ),
);
console.log(
  `ratio (ethtrace / anvil): first answer ×${(ours.answer / anvil.answer).toFixed(1)}, first eth_call ×${(ours.call / anvil.call).toFixed(1)}`,
);
