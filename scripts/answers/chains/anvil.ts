/*
 * Copied from test/support/anvil.ts for scripts/answers: it imports genesis.ts, which imports src/chain/genesis.ts. The answers tool must not load
 * src/ (the code it compares), so it carries its own copy; keep it in step with the original.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Hex, hexToBigInt, keccak256, numberToHex } from 'viem';
import type { RpcBlock, RpcReceipt } from '../../../test/support/rpcTypes.ts';
import {
  type AnvilHardfork,
  buildGenesis,
  type GethGenesis,
  hardforkOfGenesis,
  isActive,
} from './genesis.ts';

/**
 * anvil (Foundry) as a child process: the real chain the differential and import tests take their
 * blocks and traces from. Always on 127.0.0.1 with an OS-chosen port, and started from a genesis
 * file we wrote, so the exported chain has a genesis.json that says what anvil ran.
 */

const ANVIL_BIN = createRequire(import.meta.url).resolve('@foundry-rs/anvil-linux-amd64/bin/anvil');
/** anvil boots in ~50 ms; a generous bound only so a broken binary fails the test instead of hanging it. */
const STARTUP_TIMEOUT_MS = 15_000;
/** How long `stop()` waits after SIGTERM before SIGKILL. */
const STOP_GRACE_MS = 5_000;
const LISTENING = /Listening on 127\.0\.0\.1:(\d+)/;
/** Post-merge slot length; blocks are spaced by it so timestamps (hence hashes) are reproducible. */
export const SLOT_SECONDS = 12n;

export interface AnvilOptions {
  /** A geth genesis to start from; by default one is built by `buildGenesis({ hardfork })`. */
  genesisPath?: string;
  /** Only when no `genesisPath` is given (a given genesis names its own hardfork). */
  hardfork?: AnvilHardfork;
  /** Interval mining instead of the default manual mining; `mineBlock` refuses to run then. */
  blockTime?: number;
  extraArgs?: string[];
}

export interface Anvil {
  readonly url: string;
  /** The genesis anvil was started from; one `startAnvil` wrote is deleted by `stop()`. */
  readonly genesisPath: string;
  readonly genesis: GethGenesis;
  readonly hardfork: AnvilHardfork;
  readonly intervalMining: boolean;
  /** One JSON-RPC call; an error answer throws `AnvilRpcError`. */
  rpc<T = unknown>(method: string, params?: readonly unknown[]): Promise<T>;
  /** Kills anvil and waits for it to exit; safe to call twice. */
  stop(): Promise<void>;
}

export class AnvilRpcError extends Error {
  constructor(
    readonly method: string,
    readonly code: number,
    readonly rpcMessage: string,
    readonly data?: unknown,
  ) {
    super(`anvil ${method}: ${rpcMessage} (code ${code})`);
    this.name = 'AnvilRpcError';
  }
}

export async function startAnvil(opts: AnvilOptions = {}): Promise<Anvil> {
  const { genesisPath, ownedDir } = await resolveGenesis(opts);
  const genesis = JSON.parse(await readFile(genesisPath, 'utf8')) as GethGenesis;
  const hardfork = hardforkOfGenesis(genesis);
  if (opts.hardfork !== undefined && opts.hardfork !== hardfork) {
    throw new Error(`startAnvil: hardfork ${opts.hardfork} asked, but ${genesisPath} is ${hardfork}`);
  }
  const child = spawn(ANVIL_BIN, anvilArgs(genesisPath, genesis, hardfork, opts), {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const killOnExit = (): void => void child.kill('SIGKILL');
  process.once('exit', killOnExit);
  const stop = async (): Promise<void> => {
    process.off('exit', killOnExit);
    await stopChild(child);
    if (ownedDir !== undefined) await rm(ownedDir, { recursive: true, force: true });
  };
  try {
    const port = await readPort(child);
    const url = `http://127.0.0.1:${port}`;
    const anvil: Anvil = {
      url,
      genesisPath,
      genesis,
      hardfork,
      intervalMining: opts.blockTime !== undefined,
      rpc: (method, params = []) => rpcCall(url, method, params),
      stop,
    };
    await assertGenesisMatches(anvil);
    return anvil;
  } catch (err) {
    await stop();
    throw err;
  }
}

async function resolveGenesis(opts: AnvilOptions): Promise<{ genesisPath: string; ownedDir?: string }> {
  if (opts.genesisPath !== undefined) return { genesisPath: opts.genesisPath };
  const ownedDir = await mkdtemp(join(tmpdir(), 'ethtrace-anvil-'));
  const genesisPath = join(ownedDir, 'genesis.json');
  const genesis = buildGenesis(opts.hardfork === undefined ? {} : { hardfork: opts.hardfork });
  await writeFile(genesisPath, `${JSON.stringify(genesis, null, 2)}\n`);
  return { genesisPath, ownedDir };
}

/** Each flag either makes anvil's chain match the genesis file or makes blocks reproducible. */
function anvilArgs(genesisPath: string, genesis: GethGenesis, hardfork: AnvilHardfork, opts: AnvilOptions) {
  return [
    ...['--host', '127.0.0.1', '--port', '0', '--color', 'never'],
    ...['--init', genesisPath, '--hardfork', hardfork],
    // anvil ignores the genesis gasLimit and uses its own default unless told.
    ...['--gas-limit', hexToBigInt(genesis.gasLimit).toString()],
    // Without these anvil adds funded dev accounts and a CREATE2 deployer on top of the alloc,
    // and the genesis file would no longer describe the genesis state.
    ...['--accounts', '0', '--disable-default-create2-deployer'],
    // anvil skips EIP-7825's per-transaction gas cap unless asked; a real Osaka chain enforces it.
    '--enable-tx-gas-limit',
    // Block order = submission order (the default orders by fee), so callers know each tx's index.
    ...['--order', 'fifo'],
    ...(opts.blockTime === undefined ? ['--no-mining'] : ['--block-time', String(opts.blockTime)]),
    ...(opts.extraArgs ?? []),
  ];
}

function readPort(child: ChildProcess): Promise<number> {
  return new Promise((resolve, reject) => {
    let output = '';
    const fail = (why: string): void => {
      cleanup();
      reject(new Error(`anvil did not start: ${why}\n${output.slice(-4000)}`));
    };
    const onData = (chunk: Buffer): void => {
      output += chunk.toString();
      const match = LISTENING.exec(output);
      if (match?.[1] === undefined) return;
      cleanup();
      resolve(Number(match[1]));
    };
    const onExit = (code: number | null, signal: string | null): void =>
      fail(`exited (code ${code}, signal ${signal})`);
    const onError = (err: Error): void => fail(err.message);
    const timer = setTimeout(
      () => fail(`no "Listening on" within ${STARTUP_TIMEOUT_MS} ms`),
      STARTUP_TIMEOUT_MS,
    );
    const cleanup = (): void => {
      clearTimeout(timer);
      child.off('exit', onExit).off('error', onError);
      child.stdout?.off('data', onData);
      child.stderr?.off('data', onData);
      // anvil logs every request; unread pipes fill up and would block it mid-test.
      child.stdout?.resume();
      child.stderr?.resume();
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', onData);
    child.on('exit', onExit).on('error', onError);
  });
}

async function stopChild(child: ChildProcess): Promise<void> {
  if (child.pid === undefined || child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), STOP_GRACE_MS);
  await exited;
  clearTimeout(timer);
}

let nextRpcId = 1;

async function rpcCall<T>(url: string, method: string, params: readonly unknown[]): Promise<T> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: nextRpcId++, method, params }),
  });
  if (!res.ok) throw new Error(`anvil ${method}: HTTP ${res.status} ${await res.text()}`);
  const body = (await res.json()) as {
    result?: T;
    error?: { code: number; message: string; data?: unknown };
  };
  if (body.error !== undefined) {
    throw new AnvilRpcError(method, body.error.code, body.error.message, body.error.data);
  }
  return body.result as T;
}

/**
 * Fails fast when an anvil upgrade changes how it reads a genesis file: every header field the
 * file sets, the header fields each hardfork adds, and every alloc account must be what anvil runs.
 */
async function assertGenesisMatches(anvil: Anvil): Promise<void> {
  const mismatches: string[] = [];
  const expect: Expect = (what, got, want) => {
    if (got !== want) mismatches.push(`${what}: anvil ${String(got)}, genesis ${String(want)}`);
  };
  await checkGenesisHeader(anvil, expect);
  await checkGenesisAlloc(anvil, expect);
  if (mismatches.length > 0) {
    throw new Error(`anvil's genesis differs from ${anvil.genesisPath}:\n  ${mismatches.join('\n  ')}`);
  }
}

type Expect = (what: string, got: unknown, want: unknown) => void;

async function checkGenesisHeader({ rpc, genesis, hardfork }: Anvil, expect: Expect): Promise<void> {
  expect('chainId', Number(await rpc<Hex>('eth_chainId')), genesis.config.chainId);
  expect('hardfork', (await rpc<{ hardFork: string }>('anvil_nodeInfo')).hardFork.toLowerCase(), hardfork);
  const header = await rpc<RpcBlock<Hex>>('eth_getBlockByNumber', ['0x0', false]);
  for (const field of ['gasLimit', 'baseFeePerGas', 'timestamp', 'difficulty', 'number'] as const) {
    expect(field, hexToBigInt(header[field] as Hex), hexToBigInt(genesis[field]));
  }
  expect('extraData', header.extraData, genesis.extraData);
  expect('mixHash', header.mixHash, genesis.mixHash);
  expect('miner', header.miner, genesis.coinbase.toLowerCase());
  expect('parentBeaconBlockRoot present', 'parentBeaconBlockRoot' in header, isActive(hardfork, 'cancun'));
  expect('requestsHash present', 'requestsHash' in header, isActive(hardfork, 'prague'));
}

async function checkGenesisAlloc({ rpc, genesis }: Anvil, expect: Expect): Promise<void> {
  for (const [address, account] of Object.entries(genesis.alloc)) {
    const [balance, nonce, code] = await Promise.all([
      rpc<Hex>('eth_getBalance', [address, '0x0']),
      rpc<Hex>('eth_getTransactionCount', [address, '0x0']),
      rpc<Hex>('eth_getCode', [address, '0x0']),
    ]);
    expect(`${address} balance`, hexToBigInt(balance), hexToBigInt(account.balance));
    expect(`${address} nonce`, hexToBigInt(nonce), hexToBigInt(account.nonce ?? '0x0'));
    expect(`${address} code`, code, (account.code ?? '0x').toLowerCase());
    for (const [slot, value] of Object.entries(account.storage ?? {})) {
      const stored = await rpc<Hex>('eth_getStorageAt', [address, slot, '0x0']);
      expect(`${address} storage ${slot}`, hexToBigInt(stored), hexToBigInt(value));
    }
  }
}

export type TxOutcome = 'success' | 'reverted';

export interface MinedBlock {
  number: bigint;
  hash: Hex;
  receipts: RpcReceipt[];
}

export interface MineOptions {
  /** Outcome of each transaction, index for index; all must succeed when omitted. */
  expect?: readonly TxOutcome[];
  /** Defaults to the parent's timestamp plus one slot, so reruns give identical blocks. */
  timestamp?: bigint;
}

/**
 * Sends the signed transactions and mines exactly one block holding all of them, in order. Throws
 * if anvil left any out, added others, or a transaction's outcome is not the one expected: the
 * callers build chains whose shape later tests rely on, so a silent difference would mislead them.
 */
export async function mineBlock(
  anvil: Anvil,
  signedTxs: readonly Hex[],
  opts: MineOptions = {},
): Promise<MinedBlock> {
  if (anvil.intervalMining) throw new Error('mineBlock needs manual mining (no blockTime)');
  const expected = opts.expect ?? signedTxs.map((): TxOutcome => 'success');
  if (expected.length !== signedTxs.length) {
    throw new Error('mineBlock: one expected outcome per transaction');
  }
  for (const raw of signedTxs) await anvil.rpc('eth_sendRawTransaction', [raw]);
  const parent = await anvil.rpc<RpcBlock<Hex>>('eth_getBlockByNumber', ['latest', false]);
  const timestamp = opts.timestamp ?? hexToBigInt(parent.timestamp) + SLOT_SECONDS;
  await anvil.rpc('evm_mine', [{ timestamp: Number(timestamp), blocks: 1 }]);
  const number = hexToBigInt(parent.number) + 1n;
  const block = await anvil.rpc<RpcBlock<Hex>>('eth_getBlockByNumber', [numberToHex(number), false]);
  assertSameHashes(
    number,
    block.transactions,
    signedTxs.map((raw) => keccak256(raw)),
  );
  const receipts = await anvil.rpc<RpcReceipt[]>('eth_getBlockReceipts', [block.hash]);
  assertOutcomes(number, receipts, expected);
  return { number, hash: block.hash, receipts };
}

function assertSameHashes(number: bigint, got: readonly Hex[], want: readonly Hex[]): void {
  if (got.length === want.length && got.every((hash, i) => hash === want[i])) return;
  throw new Error(
    `block ${number}: anvil mined [${got.join(', ')}], expected exactly [${want.join(', ')}] in that order`,
  );
}

function assertOutcomes(
  number: bigint,
  receipts: readonly RpcReceipt[],
  expected: readonly TxOutcome[],
): void {
  const wrong = receipts.flatMap((r, i) => {
    const got: TxOutcome = r.status === '0x1' ? 'success' : 'reverted';
    return got === expected[i] ? [] : [`tx ${i} (${r.transactionHash}) ${got}, expected ${expected[i]}`];
  });
  if (wrong.length > 0) throw new Error(`block ${number}: ${wrong.join('; ')}`);
}
