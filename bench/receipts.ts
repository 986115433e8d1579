// eth_getBlockReceipts, ethtrace side by side with anvil on the same chain, in one run:
//  1. anvil builds a chain holding a busy block (~200 txs, ~440 logs) and an 8,000-transfer block;
//     the chain is exported, imported into a fresh datadir with our CLI, and `ethtrace start` runs
//     as a process of its own;
//  2. both servers must give the same receipts for both blocks (like for like), then the busy block
//     is measured at 1 and 16 keep-alive connections for a fixed window each: req/s, p50, p99;
//  3. the 8,000-transaction block is measured at 1 connection (latency per request).
// Run: node --import tsx bench/receipts.ts
// (env: BENCH_SECONDS, BENCH_WARMUP_SECONDS, BENCH_HUGE_TXS, BENCH_CLIENT=raw|node-http)
import { writeFile } from 'node:fs/promises';
import { availableParallelism, cpus, loadavg } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import {
  type Address,
  type Hex,
  hexToBigInt,
  keccak256,
  numberToHex,
  parseEther,
  parseGwei,
  stringToHex,
} from 'viem';
import { type PrivateKeyAccount, privateKeyToAccount } from 'viem/accounts';
import { type Anvil, SLOT_SECONDS, startAnvil } from '../test/support/anvil.ts';
import { tempDir } from '../test/support/cli.ts';
import { importFromAnvil } from '../test/support/exportChain.ts';
import { buildGenesis, type GenesisAccount } from '../test/support/genesis.ts';
import type { RpcBlock, RpcReceipt as SupportReceipt } from '../test/support/rpcTypes.ts';
import { buildBigBlock, freshAddress } from '../test/support/workload.ts';
import { type ClientKind, fetchText, type LoadResult, runLoadInChild } from './lib/load.ts';
import { childPid, startEthtrace } from './lib/process.ts';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const WARMUP_SECONDS = Number(process.env.BENCH_WARMUP_SECONDS ?? 1);
const HUGE_TXS = Number(process.env.BENCH_HUGE_TXS ?? 8000);
const CONCURRENCIES = [1, 16] as const;
/** `raw` (default) or `node-http`: see bench/lib/load.ts for why there are two. */
const CLIENT = (process.env.BENCH_CLIENT ?? 'raw') as ClientKind;
if (CLIENT !== 'raw' && CLIENT !== 'node-http') throw new Error('BENCH_CLIENT is raw or node-http');

/** The targets this benchmark exists to check. */
const TARGET_RPS_RATIO = 20;
const TARGET_HUGE_MS = 20;

/** 8,000 plain transfers are 168 Mgas: the block gas limit must exceed that (anvil's default is 30 M). */
const GAS_LIMIT = 300_000_000n;
/** Few enough transactions per sender that no pool limit on queued nonces gets near. */
const HUGE_SENDERS = 500;
const TRANSFER_GAS = 21_000n;
/** The base fee starts at 1 gwei and falls while blocks stay under half full: 10 gwei always clears it. */
const MAX_FEE_PER_GAS = parseGwei('10');
const MAX_PRIORITY_FEE_PER_GAS = parseGwei('1');
/** Requests per JSON-RPC batch when handing the transfers to anvil: 8,000 round trips one by one take long. */
const SEND_BATCH = 500;
/**
 * anvil takes ~11 s per request for the 8,000-receipt block here, so its cell has no warm-up and
 * ends with the first request past the window; this bounds it should anvil get much faster.
 */
const HUGE_ANVIL_MAX_REQUESTS = 50;

const started = performance.now();
const log = (line: string) =>
  process.stderr.write(`[${((performance.now() - started) / 1000).toFixed(1).padStart(6)} s] ${line}\n`);

function senders(): PrivateKeyAccount[] {
  return Array.from({ length: HUGE_SENDERS }, (_, i) =>
    privateKeyToAccount(keccak256(stringToHex(`ethtrace bench sender ${i}`))),
  );
}

async function rpcBatch(
  url: string,
  calls: Array<{ method: string; params: unknown[] }>,
): Promise<unknown[]> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(calls.map((c, id) => ({ jsonrpc: '2.0', id, ...c }))),
  });
  const answers = (await res.json()) as Array<{ id: number; result?: unknown; error?: { message: string } }>;
  return answers
    .sort((a, b) => a.id - b.id)
    .map((a) => {
      if (a.error) throw new Error(`${calls[a.id]?.method}: ${a.error.message}`);
      return a.result;
    });
}

/** One block of `count` signed value transfers to fresh accounts, from many senders. */
async function buildTransferBlock(anvil: Anvil, from: PrivateKeyAccount[], count: number) {
  const chainId = anvil.genesis.config.chainId;
  const raws: Hex[] = [];
  for (let i = 0; i < count; i++) {
    const sender = from[i % from.length] as PrivateKeyAccount;
    raws.push(
      await sender.signTransaction({
        type: 'eip1559',
        chainId,
        nonce: Math.floor(i / from.length),
        to: freshAddress(`bench/transfer/${i}`),
        value: 1n,
        gas: TRANSFER_GAS,
        maxFeePerGas: MAX_FEE_PER_GAS,
        maxPriorityFeePerGas: MAX_PRIORITY_FEE_PER_GAS,
      }),
    );
  }
  log(`signed ${count} transfers`);
  for (let i = 0; i < raws.length; i += SEND_BATCH) {
    await rpcBatch(
      anvil.url,
      raws.slice(i, i + SEND_BATCH).map((raw) => ({ method: 'eth_sendRawTransaction', params: [raw] })),
    );
  }
  const parent = await anvil.rpc<RpcBlock<Hex>>('eth_getBlockByNumber', ['latest', false]);
  await anvil.rpc('evm_mine', [
    { timestamp: Number(hexToBigInt(parent.timestamp) + SLOT_SECONDS), blocks: 1 },
  ]);
  const number = hexToBigInt(parent.number) + 1n;
  const block = await anvil.rpc<RpcBlock<Hex>>('eth_getBlockByNumber', [numberToHex(number), false]);
  if (block.transactions.length !== count) {
    throw new Error(
      `anvil mined ${block.transactions.length} of the ${count} transfers into block ${number}`,
    );
  }
  return { number, hash: block.hash };
}

type RpcReceipt = SupportReceipt & { cumulativeGasUsed: Hex };

const receiptsRequest = (block: bigint) =>
  JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'eth_getBlockReceipts', params: [numberToHex(block)] });

/** Both servers' answers for the block, after checking they hold the same receipts. */
async function sameReceipts(block: bigint, anvilUrl: string, ethtraceUrl: string) {
  const body = receiptsRequest(block);
  const [a, e] = await Promise.all([fetchText(anvilUrl, body), fetchText(ethtraceUrl, body)]);
  const theirs = (JSON.parse(a) as { result: RpcReceipt[] | null }).result;
  const ours = (JSON.parse(e) as { result: RpcReceipt[] | null }).result;
  if (!theirs || !ours)
    throw new Error(`block ${block}: no receipts (anvil ${!!theirs}, ethtrace ${!!ours})`);
  if (theirs.length !== ours.length) {
    throw new Error(`block ${block}: anvil has ${theirs.length} receipts, ethtrace ${ours.length}`);
  }
  for (const [i, r] of ours.entries()) {
    const t = theirs[i] as RpcReceipt;
    for (const key of ['transactionHash', 'status', 'gasUsed', 'cumulativeGasUsed', 'blockHash'] as const) {
      if (r[key] !== t[key])
        throw new Error(`block ${block} receipt ${i}: ${key} ${r[key]} here, ${t[key]} in anvil`);
    }
    if (r.logs.length !== t.logs.length) throw new Error(`block ${block} receipt ${i}: log counts differ`);
  }
  return {
    body,
    receipts: ours.length,
    logs: ours.reduce((n, r) => n + r.logs.length, 0),
    anvilBytes: Buffer.byteLength(a),
    ethtraceBytes: Buffer.byteLength(e),
  };
}

const ms = (x: number) => x.toFixed(x < 10 ? 2 : 1);
const kb = (bytes: number) => `${(bytes / 1024).toFixed(0)} KB`;

function row(server: string, r: LoadResult): string {
  return [
    server.padEnd(9),
    String(r.connections).padStart(5),
    String(r.requests).padStart(8),
    r.requestsPerSecond.toFixed(1).padStart(9),
    ms(r.latency.p50).padStart(8),
    ms(r.latency.p99).padStart(8),
    kb(r.bytesPerAnswer).padStart(9),
    r.cpu.server === null ? '      ?' : r.cpu.server.toFixed(2).padStart(7),
    r.cpu.generator.toFixed(2).padStart(7),
  ].join('  ');
}
const HEADER = `${'server'.padEnd(9)}  conns  requests      req/s   p50 ms   p99 ms     answer  cpu srv  cpu gen`;

async function main(): Promise<void> {
  const work = tempDir('ethtrace-bench-receipts-');
  const stops: Array<() => Promise<void>> = [];
  try {
    const machine = `node ${process.version}, ${availableParallelism()} cores (${cpus()[0]?.model ?? '?'})`;
    const loadBefore = loadavg()[0] ?? Number.NaN;
    log(`${machine}, load average ${loadBefore.toFixed(2)}`);
    const from = senders();
    const funded: Record<Address, GenesisAccount> = Object.fromEntries(
      from.map((a) => [a.address, { balance: numberToHex(parseEther('1')) }]),
    );
    const genesisPath = join(work.path, 'anvil-genesis.json');
    await writeFile(
      genesisPath,
      JSON.stringify(buildGenesis({ gasLimit: GAS_LIMIT, alloc: funded }), null, 2),
    );
    const anvil = await startAnvil({ genesisPath });
    stops.push(() => anvil.stop());
    log(`anvil at ${anvil.url}`);

    const big = await buildBigBlock(anvil, { txs: 200, logsPerTx: 2.2 });
    log(`busy block ${big.number}: ${big.receipts.length} txs, ${big.logCount} logs`);
    const huge = await buildTransferBlock(anvil, from, HUGE_TXS);
    log(`transfer block ${huge.number}: ${HUGE_TXS} txs`);

    const { datadir, chain: exported, summary } = await importFromAnvil(anvil, work.path);
    log(`exported ${exported.blocks} blocks`);
    log(`imported: ${summary}`);
    const ethtrace = await startEthtrace(datadir);
    stops.push(() => ethtrace.stop());
    log(`ethtrace at ${ethtrace.url} (pid ${ethtrace.process.pid})`);

    const busy = await sameReceipts(big.number, anvil.url, ethtrace.url);
    const hugeCheck = await sameReceipts(huge.number, anvil.url, ethtrace.url);
    log('both servers answer the same receipts for both blocks');

    const servers = { anvil: anvil.url, ethtrace: ethtrace.url };
    const pids: Record<string, number | null> = {
      anvil: childPid('anvil'),
      ethtrace: ethtrace.process.pid ?? null,
    };
    const results: Record<string, Record<number, LoadResult>> = { anvil: {}, ethtrace: {} };
    for (const connections of CONCURRENCIES) {
      for (const [name, url] of Object.entries(servers)) {
        const result = await runLoadInChild({
          url,
          body: busy.body,
          connections,
          durationMs: SECONDS * 1000,
          warmupMs: WARMUP_SECONDS * 1000,
          expectBytes: name === 'anvil' ? busy.anvilBytes : busy.ethtraceBytes,
          serverPid: pids[name] ?? null,
          client: CLIENT,
        });
        (results[name] as Record<number, LoadResult>)[connections] = result;
        log(row(name, result));
      }
    }

    const hugeOurs = await runLoadInChild({
      url: ethtrace.url,
      body: hugeCheck.body,
      connections: 1,
      durationMs: SECONDS * 1000,
      warmupMs: WARMUP_SECONDS * 1000,
      expectBytes: hugeCheck.ethtraceBytes,
      serverPid: pids.ethtrace ?? null,
      client: CLIENT,
    });
    log(row('ethtrace', hugeOurs));
    const hugeTheirs = await runLoadInChild({
      url: anvil.url,
      body: hugeCheck.body,
      connections: 1,
      durationMs: SECONDS * 1000,
      warmupMs: 0,
      expectBytes: hugeCheck.anvilBytes,
      maxRequests: HUGE_ANVIL_MAX_REQUESTS,
      serverPid: pids.anvil ?? null,
      client: CLIENT,
    });
    log(row('anvil', hugeTheirs));

    const out: string[] = [];
    out.push(
      '',
      `eth_getBlockReceipts, block ${big.number}: ${busy.receipts} txs, ${busy.logs} logs ` +
        `(answer: ethtrace ${kb(busy.ethtraceBytes)}, anvil ${kb(busy.anvilBytes)}); ` +
        `${SECONDS} s per cell after ${WARMUP_SECONDS} s warm-up, keep-alive, loopback, ${CLIENT} client; ` +
        `cpu = cores busy (server, load generator)`,
      HEADER,
    );
    for (const c of CONCURRENCIES) {
      out.push(
        row('anvil', results.anvil?.[c] as LoadResult),
        row('ethtrace', results.ethtrace?.[c] as LoadResult),
      );
    }
    out.push('', 'ratio ethtrace/anvil:');
    let met = true;
    for (const c of CONCURRENCIES) {
      const [a, e] = [results.anvil?.[c] as LoadResult, results.ethtrace?.[c] as LoadResult];
      const rps = e.requestsPerSecond / a.requestsPerSecond;
      const p99 = e.latency.p99 / a.latency.p99;
      const ok = rps >= TARGET_RPS_RATIO && p99 < 1;
      met &&= ok;
      out.push(
        `  ${String(c).padStart(2)} conn: req/s ×${rps.toFixed(1)}, p99 ×${p99.toFixed(3)}  ` +
          `(target ≥ ×${TARGET_RPS_RATIO} req/s, p99 < ×1): ${ok ? 'met' : 'NOT MET'}`,
      );
    }
    const hugeOk = hugeOurs.latency.p99 <= TARGET_HUGE_MS;
    out.push(
      '',
      `eth_getBlockReceipts, block ${huge.number}: ${hugeCheck.receipts} transfers ` +
        `(answer: ethtrace ${kb(hugeCheck.ethtraceBytes)}, anvil ${kb(hugeCheck.anvilBytes)}), 1 connection`,
      HEADER,
      row('anvil', hugeTheirs),
      row('ethtrace', hugeOurs),
      `  ethtrace p50 ${ms(hugeOurs.latency.p50)} ms, p99 ${ms(hugeOurs.latency.p99)} ms ` +
        `(target ≤ ${TARGET_HUGE_MS} ms): ${hugeOk ? 'met' : 'NOT MET'}; ` +
        `anvil p50 ${ms(hugeTheirs.latency.p50)} ms (${hugeTheirs.requests} requests)`,
      '',
      `all targets: ${met && hugeOk ? 'met' : 'NOT MET'}`,
      // Other work on the machine takes cores from the servers and the generator alike.
      `machine: ${machine}; 1-min load average ${loadBefore.toFixed(2)} at start, ` +
        `${loadavg()[0]?.toFixed(2)} at end`,
    );
    process.stdout.write(`${out.join('\n')}\n`);
  } finally {
    for (const stop of stops.reverse()) await stop().catch(() => {});
    work.cleanup();
  }
}

await main();
