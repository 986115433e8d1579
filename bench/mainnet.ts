// Trace speed on mainnet-like blocks, side by side with anvil in one run (issue 14).
// Run: npm run bench:mainnet
//
// Blocks of ~200 transactions built on anvil from the mix of bench/lib/mainnetBlocks.ts (swaps through
// a router and pairs, token transfers and approvals, NFT mints, call chains, storage writers,
// failures, EIP-7702 wallets, 100+ senders), plus the old 200-call LogStore block as the best case.
// anvil's chain is imported into ethtrace, served with the replay cache off (--trace-cache-mb 0),
// every answer first checked against anvil's, then per block and method:
//   - trace_replayBlockTransactions ["trace"] and ["trace","stateDiff"];
//   - trace_callMany of the block's transactions on its parent: anvil has no trace_callMany, so its
//     row is its trace_replayBlockTransactions ["trace"] of the block (as bench/trace.ts does);
//   - debug_traceBlockByNumber with callTracer;
// wall time per answer at one connection (p50/p99), answers per second at 16, server CPU per answer
// (utime+stime of the server's process tree, worker threads included, over the window, divided by
// the answers) and Mgas per CPU-second (Mgas/s per core), with ratios against anvil and the goals.
// env: BENCH_SECONDS, BENCH_WARMUP_SECONDS, BENCH_BLOCKS (mainnet-like blocks, default 2),
//      BENCH_TXS (per block, default 200), BENCH_ONLY (comma-separated case names to measure),
//      BENCH_EXEC_TIMEOUT_MS (the server's --exec-timeout), BENCH_PROFILE=1 (CPU profiles of the
//      server's threads, summarised at the end; see scripts/cpuprofile-summary.ts).
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { summariseProfiles } from '../scripts/cpuprofile-summary.ts';
import { asCall } from '../test/support/anvilTraces.ts';
import { tempDir } from '../test/support/cli.ts';
import { importFromAnvil } from '../test/support/exportChain.ts';
import { compareWithAnvil } from '../test/support/mainnetDiff.ts';
import { buildBigBlock } from '../test/support/workload.ts';
import type { LoadResult } from './lib/load.ts';
import { buildMainnetChain } from './lib/mainnetBlocks.ts';
import { childPid, ROOT, startEthtrace } from './lib/process.ts';
import { load, machineLine, measure, ms, progressLog, rpcBody, SECONDS, WARMUP_SECONDS } from './lib/rpc.ts';

const log = progressLog();
const BLOCKS = Number(process.env.BENCH_BLOCKS ?? 2);
const TXS = Number(process.env.BENCH_TXS ?? 200);
const PROFILE = process.env.BENCH_PROFILE === '1';
const ONLY = process.env.BENCH_ONLY?.split(',').filter(Boolean) ?? null;

type CaseName = 'replay' | 'replayStateDiff' | 'callMany' | 'callTracer';

interface Case {
  name: CaseName;
  label: string;
  ours: string;
  anvil: string;
  /** The goals apply to these (speed ≥ anvil's at 1 and 16 connections, CPU ≤ 2× anvil's). */
  goal: boolean;
  /** ethtrace answers concurrent identical requests of this case from one execution. */
  coalesced: boolean;
}

interface BenchBlock {
  label: string;
  number: bigint;
  txs: number;
  gas: bigint;
  senders: number;
  failed: number;
}

interface Measured {
  one: LoadResult;
  sixteen: LoadResult;
}

const hex = (n: bigint) => `0x${n.toString(16)}`;

function cases(block: bigint, calls: unknown[], env: Record<string, unknown>): Case[] {
  const replay = rpcBody('trace_replayBlockTransactions', [hex(block), ['trace']]);
  return [
    {
      name: 'replay',
      label: 'replayBlockTransactions [trace]',
      ours: replay,
      anvil: replay,
      goal: true,
      coalesced: true,
    },
    {
      name: 'replayStateDiff',
      label: 'replayBlockTransactions [trace,stateDiff]',
      ours: rpcBody('trace_replayBlockTransactions', [hex(block), ['trace', 'stateDiff']]),
      anvil: rpcBody('trace_replayBlockTransactions', [hex(block), ['trace', 'stateDiff']]),
      goal: false,
      coalesced: true,
    },
    {
      name: 'callMany',
      label: 'trace_callMany on parent (anvil: replay)',
      ours: rpcBody('trace_callMany', [calls, hex(block - 1n), { blockOverrides: env }]),
      anvil: replay,
      goal: true,
      coalesced: false,
    },
    {
      name: 'callTracer',
      label: 'debug_traceBlockByNumber callTracer',
      ours: rpcBody('debug_traceBlockByNumber', [hex(block), { tracer: 'callTracer' }]),
      anvil: rpcBody('debug_traceBlockByNumber', [hex(block), { tracer: 'callTracer' }]),
      goal: false,
      coalesced: false,
    },
  ];
}

/**
 * 16 connections, unless one answer takes over half a second (anvil's debug_traceBlockByNumber
 * re-executes the block up to each transaction: seconds per block): then one round of 16 requests
 * without warm-up, with a timeout that lets the last of them wait for the fifteen before it.
 */
function loadSlow(url: string, body: string, one: LoadResult, pid: number | null): Promise<LoadResult> {
  if (one.latency.p50 < 500) return load(url, body, 16, pid);
  return measure(url, body, 16, {
    seconds: SECONDS,
    warmupSeconds: 0,
    serverPid: pid,
    maxRequests: 16,
    timeoutMs: Math.ceil(one.latency.max * 16 * 3),
  });
}

const pad = (s: string, n: number) => s.padStart(n);
const cpuPerAnswerMs = (r: LoadResult) =>
  r.cpu.server === null ? Number.NaN : (r.cpu.server / r.requestsPerSecond) * 1000;

const HEADER =
  `${'case'.padEnd(42)} ${'server'.padEnd(8)} ${pad('p50@1', 8)} ${pad('p99@1', 8)} ${pad('req/s@1', 8)} ` +
  `${pad('req/s@16', 9)} ${pad('cpu ms/ans@1', 13)} ${pad('cpu ms/ans@16', 14)} ${pad('Mgas/s/core', 12)}`;

function row(label: string, server: string, m: Measured, gas: bigint, coalesced: boolean): string {
  const cpu16 = cpuPerAnswerMs(m.sixteen);
  const mgasPerCore = Number(gas) / 1e6 / ((coalesced ? cpuPerAnswerMs(m.one) : cpu16) / 1000);
  return (
    `${label.padEnd(42)} ${server.padEnd(8)} ${pad(ms(m.one.latency.p50), 8)} ${pad(ms(m.one.latency.p99), 8)} ` +
    `${pad(m.one.requestsPerSecond.toFixed(1), 8)} ${pad(m.sixteen.requestsPerSecond.toFixed(1), 9)} ` +
    `${pad(ms(cpuPerAnswerMs(m.one)), 13)} ${pad(ms(cpu16), 14)} ${pad(mgasPerCore.toFixed(1), 12)}`
  );
}

function ratioLine(c: Case, ours: Measured, anvil: Measured): string {
  const speed1 = anvil.one.latency.p50 / ours.one.latency.p50;
  const speed16 = ours.sixteen.requestsPerSecond / anvil.sixteen.requestsPerSecond;
  const cpu1 = cpuPerAnswerMs(ours.one) / cpuPerAnswerMs(anvil.one);
  const cpu16 = cpuPerAnswerMs(ours.sixteen) / cpuPerAnswerMs(anvil.sixteen);
  // Concurrent requests for one block's replay share one execution in ethtrace (ReplayService's
  // in-flight map), so at 16 connections its replay rows measure that sharing, not execution: the
  // CPU goal is then judged at one connection only.
  const cpu = c.coalesced ? cpu1 : Math.max(cpu1, cpu16);
  const verdict = (ok: boolean) => (c.goal ? (ok ? ' met' : ' NOT met') : '');
  return (
    `  ${c.goal ? 'goals' : 'ratios'}: speed @1 ×${speed1.toFixed(2)}${c.goal ? ' (≥ ×1)' : ''}${verdict(speed1 >= 1)}; ` +
    `req/s @16 ×${speed16.toFixed(2)}${c.goal ? ' (≥ ×1)' : ''}${verdict(speed16 >= 1)}${c.coalesced ? ' (shared executions)' : ''}; ` +
    `CPU/answer ×${cpu1.toFixed(2)} @1, ×${cpu16.toFixed(2)} @16 of anvil's${c.goal ? ' (≤ ×2)' : ''}${verdict(cpu <= 2)}`
  );
}

async function main(): Promise<void> {
  const work = tempDir('ethtrace-bench-mainnet-');
  const stops: Array<() => Promise<void>> = [];
  const lines: string[] = [];
  let profileDir: string | null = null;
  try {
    log(machineLine());
    const built = await buildMainnetChain(work.path, { blocks: BLOCKS, txsPerBlock: TXS, log });
    const anvil = built.anvil;
    stops.push(() => anvil.stop());
    const big = await buildBigBlock(anvil, { txs: 200, logsPerTx: 2.2 });
    const bigHeader = await anvil.rpc<{ gasUsed: string }>('eth_getBlockByNumber', [hex(big.number), false]);
    log(`anvil block ${big.number}: best case, ${big.receipts.length} LogStore calls`);
    const blocks: BenchBlock[] = [
      ...built.blocks.map((b, i) => ({
        label: `mainnet-like ${i + 1}`,
        number: b.number,
        txs: b.receipts.length,
        gas: b.gasUsed,
        senders: b.senders,
        failed: b.failed,
      })),
      {
        label: 'best case (bench/lib/bigBlock.ts)',
        number: big.number,
        txs: big.receipts.length,
        gas: BigInt(bigHeader.gasUsed),
        senders: 10,
        failed: 0,
      },
    ];
    const { datadir } = await importFromAnvil(anvil, work.path);
    log('imported into ethtrace');
    const nodeArgs: string[] = [];
    if (PROFILE) {
      profileDir = join(ROOT, '.tmp', 'profiles', new Date().toISOString().replace(/[:.]/g, '-'));
      mkdirSync(profileDir, { recursive: true });
      // Worker threads inherit the flags, so each writes a profile of its own on exit.
      nodeArgs.push('--cpu-prof', '--cpu-prof-dir', profileDir);
    }
    // BENCH_EXEC_TIMEOUT_MS: a longer execution deadline, for a machine so loaded that 16
    // connections' worth of queued work would pass the default one.
    const timeout = process.env.BENCH_EXEC_TIMEOUT_MS
      ? ['--exec-timeout', process.env.BENCH_EXEC_TIMEOUT_MS]
      : [];
    const server = await startEthtrace(datadir, ['--trace-cache-mb', '0', ...timeout], nodeArgs);
    stops.push(server.stop);
    const ourPid = server.process.pid ?? null;
    const anvilPid = childPid('anvil');
    log(`ethtrace ${server.url} (pid ${ourPid}), anvil ${anvil.url} (pid ${anvilPid})`);

    const perBlock: Array<{ block: BenchBlock; cases: Case[] }> = [];
    for (const block of blocks) {
      const full = await anvil.rpc<{
        transactions: Array<Record<string, unknown>>;
        number: string;
        timestamp: string;
        mixHash: string;
      }>('eth_getBlockByNumber', [hex(block.number), true]);
      const calls = full.transactions.map((tx) => [asCall(tx), ['trace']]);
      // The block's own environment on its parent's state, as a searcher simulating the next block
      // sends it: the pair's reserves record block.timestamp, so the parent's would show in outputs.
      const env = { number: full.number, time: full.timestamp, prevRandao: full.mixHash };
      const c = cases(block.number, calls, env);
      const check = await compareWithAnvil(server.url, anvil.url, block.number);
      if (check.problems.length > 0) {
        throw new Error(
          `${block.label}: ${check.problems.length} answers differ from anvil's:\n${check.problems.slice(0, 5).join('\n')}`,
        );
      }
      log(`${block.label}: ${check.summary}`);
      perBlock.push({ block, cases: c.filter((x) => ONLY === null || ONLY.includes(x.name)) });
    }

    for (const { block, cases: list } of perBlock) {
      lines.push(
        '',
        `${block.label}: block ${block.number}, ${block.txs} txs, ${(Number(block.gas) / 1e6).toFixed(2)} Mgas, ` +
          `${block.senders} senders, ${block.failed} failing`,
        HEADER,
      );
      for (const c of list) {
        log(`${block.label}: ${c.name}`);
        const one = await load(anvil.url, c.anvil, 1, anvilPid);
        const anvilRun: Measured = { one, sixteen: await loadSlow(anvil.url, c.anvil, one, anvilPid) };
        const ours: Measured = {
          one: await load(server.url, c.ours, 1, ourPid),
          sixteen: await load(server.url, c.ours, 16, ourPid),
        };
        lines.push(
          row(c.label, 'anvil', anvilRun, block.gas, c.coalesced),
          row('', 'ethtrace', ours, block.gas, c.coalesced),
        );
        lines.push(ratioLine(c, ours, anvilRun));
      }
    }
    await server.stop();
  } finally {
    for (const stop of stops.reverse()) await stop().catch(() => {});
    work.cleanup();
  }
  console.log(
    `\nmainnet-like trace benchmark (${SECONDS} s per cell after ${WARMUP_SECONDS} s warm-up; ${machineLine()})` +
      `\nCPU per answer: utime+stime of the server's process tree (all threads) over the window / answers;` +
      `\nMgas/s/core: the block's gas over the CPU per answer at 16 connections (at 1 for the replay rows:` +
      `\nethtrace answers concurrent requests for one block's replay from one execution).${lines.join('\n')}`,
  );
  if (profileDir !== null) console.log(`\n${summariseProfiles(profileDir)}`);
}

await main();
