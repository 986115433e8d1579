// The EVM of src/evm side by side, in one run, with the engine it replaced (@ethereumjs/vm, stock:
// the run-time speed-ups the service once patched into it are gone with it) and with anvil (revm):
//   loop     a counter loop (JUMPDEST PUSH ADD DUP GT JUMPI), 1M iterations, 29 Mgas
//   mix      a loop of MSTORE, MLOAD, MUL, XOR, KECCAK256 of 64 bytes, SHR: 200k iterations, 26 Mgas
//   erc20    transfers of bench/contracts/Mainnet.sol's Token, one transaction each, 1,000 senders
//   calls    a contract calling another 20,000 times (CALL, a frame each, jump analysis reused)
//   roots    a state root over 10, 100 and 2,000 accounts: src/evm/trie.ts against @ethereumjs/mpt
// CPU milliseconds per run (this process's for the two in-process engines, anvil's process's for an
// eth_call, less an empty eth_call's) and the ratios. BENCH_STATETESTS=1 also times every case of
// ../shared/ethereum-tests in process (one thread).
// Run: npm run bench:evm   (BENCH_RUNS=N runs per case, default 5; the fastest is shown)

import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { createBlock } from '@ethereumjs/block';
import { Common, Hardfork, Mainnet } from '@ethereumjs/common';
import { createMPT } from '@ethereumjs/mpt';
import { Caches, MerkleStateManager } from '@ethereumjs/statemanager';
import { createLegacyTx, type LegacyTx } from '@ethereumjs/tx';
import { Address, createAddressFromString, Account as EjsAccount } from '@ethereumjs/util';
import { createVM, runTx, type VM } from '@ethereumjs/vm';
import secp256k1 from 'secp256k1';
import { encodeDeployData, encodeFunctionData, type Hex } from 'viem';
import { runStateTests } from '../src/cli/stateTests.ts';
import type { BlockEnv } from '../src/evm/env.ts';
import { forkRules } from '../src/evm/forks.ts';
import { Machine } from '../src/evm/interpreter.ts';
import { precompilesFor } from '../src/evm/precompiles/index.ts';
import { type AccountRecord, EMPTY_CODE_HASH, type StateReader, WorldState } from '../src/evm/state.ts';
import { applyTransaction, type Transaction } from '../src/evm/transaction.ts';
import { trieRoot } from '../src/evm/trie.ts';
import { addressBytes, bytesToBigint } from '../src/evm/words.ts';
import { keccak256 } from '../src/primitives/keccak.ts';
import { startAnvil } from '../test/support/anvil.ts';
import { childPid, cpuSeconds, ROOT } from './lib/process.ts';
import { machineLine } from './lib/rpc.ts';
import { compileContracts } from './lib/solidity.ts';

const RUNS = Number(process.env.BENCH_RUNS ?? 5);
const RULES = forkRules('Prague');
const PRECOMPILES = precompilesFor(RULES.precompiles);
const CONTRACT = 0xc0de00000000000000000000000000000000c0den;
const OTHER = 0xc0de00000000000000000000000000000000c1den;
const CALLER = 0xca11e40000000000000000000000000000000000n;
const GAS = 30_000_000n;

function hex(bytes: Uint8Array): Hex {
  return `0x${Buffer.from(bytes).toString('hex')}`;
}
function bytes(h: string): Uint8Array {
  return Uint8Array.from(Buffer.from(h.replace(/^0x/, ''), 'hex'));
}
function u32(n: number): string {
  return n.toString(16).padStart(8, '0');
}

const LOOP = bytes(`6000 5b 6001 01 80 63${u32(1_000_000)} 11 6002 57 00`.replaceAll(' ', ''));
const MIX = bytes(
  `6000 5b 80 6000 52 6000 51 679e3779b97f4a7c15 02 81 18 6020 52 6040 6000 20 6003 1c 50 6001 01 80 63${u32(200_000)} 11 6002 57 00`.replaceAll(
    ' ',
    '',
  ),
);
// The callee returns one word; the caller calls it 20,000 times: PUSH1 0 (i) JUMPDEST, CALL(gas,
// OTHER, 0, 0, 0, 0, 32), POP, i+1, loop.
const CALLEE = bytes('602a60005260206000f3');
const CALLS = bytes(
  `6000 5b 6020 6000 6000 6000 6000 73${OTHER.toString(16).padStart(40, '0')} 5a f1 50 6001 01 80 63${u32(20_000)} 11 6002 57 00`.replaceAll(
    ' ',
    '',
  ),
);

/** Accounts in a map: the state both in-process engines start from. */
interface Genesis {
  code: Map<bigint, Uint8Array>;
  balance: Map<bigint, bigint>;
  storage: Map<bigint, Map<bigint, bigint>>;
}

class GenesisReader implements StateReader {
  constructor(private readonly g: Genesis) {}
  account(address: bigint): AccountRecord | null {
    const code = this.g.code.get(address);
    const balance = this.g.balance.get(address);
    if (code === undefined && balance === undefined) return null;
    return {
      nonce: code ? 1n : 0n,
      balance: balance ?? 0n,
      codeHash: code ? keccak256(code) : EMPTY_CODE_HASH,
      hasStorage: (this.g.storage.get(address)?.size ?? 0) > 0,
    };
  }
  code(_hash: Uint8Array, address: bigint): Uint8Array {
    return this.g.code.get(address) ?? new Uint8Array(0);
  }
  storage(address: bigint, slot: bigint): bigint {
    return this.g.storage.get(address)?.get(slot) ?? 0n;
  }
}

const BLOCK: BlockEnv = {
  number: 1n,
  timestamp: 1_700_000_000n,
  coinbase: 0xc014ba5en,
  gasLimit: 1_000_000_000n,
  difficulty: 0n,
  prevRandao: 0n,
  baseFee: 7n,
  excessBlobGas: 0n,
  chainId: 1n,
  blockHash: () => 0n,
};

/**
 * The least of the runs: on a machine shared with other work, the runs a neighbour slowed down are
 * the noise, and the fastest is the closest to the work itself.
 */
function least(xs: number[]): number {
  return Math.min(...xs);
}

function cpuMs(): number {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
}

async function timed(run: () => unknown): Promise<number> {
  const samples: number[] = [];
  await run(); // warm-up
  (globalThis as { gc?: () => void }).gc?.();
  for (let i = 0; i < RUNS; i++) {
    const t = cpuMs();
    await run();
    samples.push(cpuMs() - t);
  }
  return least(samples);
}

// ---------------------------------------------------------------- our EVM

function oursCall(genesis: Genesis, code: bigint): () => void {
  return () => {
    const world = new WorldState(new GenesisReader(genesis));
    const m = new Machine(RULES, world, BLOCK, PRECOMPILES);
    const r = m.call(CALLER, code, 0n, new Uint8Array(0), GAS);
    if (!r.success) throw new Error(`our EVM: ${r.error}`);
  };
}

// ---------------------------------------------------------------- ethereumjs

function common(): Common {
  return new Common({ chain: Mainnet, hardfork: Hardfork.Prague });
}

async function ejsVm(genesis: Genesis): Promise<VM> {
  const vm = await createVM({
    common: common(),
    stateManager: new MerkleStateManager({ caches: new Caches() }),
  });
  const sm = vm.stateManager;
  const addresses = new Set([...genesis.code.keys(), ...genesis.balance.keys()]);
  for (const a of addresses) {
    const address = new Address(addressBytes(a));
    const code = genesis.code.get(a);
    await sm.putAccount(address, new EjsAccount(code ? 1n : 0n, genesis.balance.get(a) ?? 0n));
    if (code) await sm.putCode(address, code);
    for (const [slot, value] of genesis.storage.get(a) ?? []) {
      await sm.putStorage(
        address,
        Buffer.from(slot.toString(16).padStart(64, '0'), 'hex'),
        bigintBytes(value),
      );
    }
  }
  await sm.checkpoint();
  await sm.commit();
  return vm;
}

function bigintBytes(v: bigint): Uint8Array {
  const h = v.toString(16);
  return bytes(h.length % 2 ? `0${h}` : h);
}

function ejsCall(vm: VM, code: bigint): () => Promise<void> {
  const to = new Address(addressBytes(code));
  const caller = new Address(addressBytes(CALLER));
  return async () => {
    await vm.stateManager.checkpoint();
    const r = await vm.evm.runCall({ to, caller, gasLimit: GAS, data: new Uint8Array(0) });
    await vm.stateManager.revert();
    if (r.execResult.exceptionError) throw new Error(`ethereumjs: ${r.execResult.exceptionError.error}`);
  };
}

// ---------------------------------------------------------------- the ERC-20 workload

interface Erc20 {
  genesis: Genesis;
  token: bigint;
  ours: Transaction[];
  signed: LegacyTx[];
}

const SENDERS = 1000;

/** Token deployed and minted to SENDERS senders (by our EVM), and one signed transfer per sender. */
function erc20Workload(): Erc20 {
  const { Token } = compileContracts(join(ROOT, 'bench', 'contracts', 'Mainnet.sol'));
  if (!Token) throw new Error('no Token in Mainnet.sol');
  const keys = Array.from({ length: SENDERS }, (_, i) => keccak256(Uint8Array.of(1, i >> 8, i & 255)));
  const senders = keys.map((k) =>
    bytesToBigint(keccak256(secp256k1.publicKeyCreate(k, false).subarray(1)), 12, 20),
  );
  const genesis: Genesis = { code: new Map(), balance: new Map(), storage: new Map() };
  for (const s of [...senders, CALLER]) genesis.balance.set(s, 10n ** 20n);
  const reader = new GenesisReader(genesis);
  const world = new WorldState(reader);
  const base: Omit<Transaction, 'sender' | 'nonce' | 'to' | 'data'> = {
    type: 0,
    gasLimit: 10_000_000n,
    gasPrice: 10n,
    maxFeePerGas: 0n,
    maxPriorityFeePerGas: 0n,
    value: 0n,
    accessList: [],
    blobVersionedHashes: [],
    maxFeePerBlobGas: 0n,
    authorizationList: [],
  };
  const deploy = applyTransaction(world, BLOCK, RULES, PRECOMPILES, {
    ...base,
    gasLimit: 30_000_000n,
    sender: CALLER,
    nonce: 0n,
    to: null,
    data: bytes(encodeDeployData({ abi: Token.abi, bytecode: Token.bytecode, args: ['Bench'] })),
  });
  const token = deploy.createdAddress;
  if (token === null) throw new Error(`deploy failed: ${deploy.error}`);
  const recipients = senders.map((_, i) => 0xbeef000000000000000000000000000000000000n + BigInt(i));
  const mint = applyTransaction(world, BLOCK, RULES, PRECOMPILES, {
    ...base,
    gasLimit: 1_000_000_000n,
    sender: CALLER,
    nonce: 1n,
    to: token,
    data: bytes(
      encodeFunctionData({
        abi: Token.abi,
        functionName: 'mintMany',
        args: [senders.map((s) => `0x${s.toString(16).padStart(40, '0')}` as Hex), 1_000_000n],
      }),
    ),
  });
  if (!mint.success) throw new Error(`mint failed: ${mint.error}`);
  for (const change of world.takeChanges()) {
    if (change.account === null) continue;
    if (change.account.code.length > 0) genesis.code.set(change.address, change.account.code);
    if (change.slots.size > 0) genesis.storage.set(change.address, change.slots);
  }
  const c = common();
  const ours: Transaction[] = [];
  const signed: LegacyTx[] = [];
  senders.forEach((sender, i) => {
    const data = bytes(
      encodeFunctionData({
        abi: Token.abi,
        functionName: 'transfer',
        args: [`0x${(recipients[i] as bigint).toString(16).padStart(40, '0')}` as Hex, 1n],
      }),
    );
    ours.push({ ...base, gasLimit: 100_000n, sender, nonce: 0n, to: token, data });
    const tx = createLegacyTx(
      {
        nonce: 0n,
        gasPrice: 10n,
        gasLimit: 100_000n,
        to: createAddressFromString(hex(addressBytes(token))),
        data,
      },
      { common: c },
    ).sign(keys[i] as Uint8Array);
    tx.getSenderAddress(); // recovered once, before timing, as ours are given their sender
    signed.push(tx);
  });
  return { genesis, token, ours, signed };
}

function oursTransfers(w: Erc20): () => void {
  return () => {
    const world = new WorldState(new GenesisReader(w.genesis));
    for (const tx of w.ours) {
      const r = applyTransaction(world, BLOCK, RULES, PRECOMPILES, tx);
      if (!r.success) throw new Error(`our transfer: ${r.error}`);
    }
  };
}

async function ejsTransfers(w: Erc20): Promise<() => Promise<void>> {
  const vm = await ejsVm(w.genesis);
  const block = createBlock(
    { header: { number: 1n, gasLimit: 1_000_000_000n, baseFeePerGas: 7n, timestamp: BLOCK.timestamp } },
    { common: vm.common },
  );
  return async () => {
    await vm.stateManager.checkpoint();
    for (const tx of w.signed) {
      const r = await runTx(vm, { tx, block, skipBlockGasLimitValidation: true });
      if (r.execResult.exceptionError)
        throw new Error(`ethereumjs transfer: ${r.execResult.exceptionError.error}`);
    }
    await vm.stateManager.revert();
  };
}

// ---------------------------------------------------------------- anvil

async function anvilCases(cases: Array<[string, Uint8Array]>): Promise<Map<string, number>> {
  const anvil = await startAnvil({ hardfork: 'prague' });
  const out = new Map<string, number>();
  try {
    const pid = childPid('anvil');
    if (pid === null) throw new Error('no /proc entry for anvil');
    const call = (code: Uint8Array | null) =>
      anvil.rpc('eth_call', [
        { from: hex(addressBytes(CALLER)), to: hex(addressBytes(CONTRACT)), gas: `0x${GAS.toString(16)}` },
        'latest',
        code ? { [hex(addressBytes(CONTRACT))]: { code: hex(code) } } : {},
      ]);
    const cpuOf = async (code: Uint8Array | null) => {
      await call(code);
      const samples: number[] = [];
      for (let i = 0; i < RUNS; i++) {
        const before = cpuSeconds(pid) ?? 0;
        // /proc counts in 10 ms ticks: enough calls per sample to make them small.
        const n = code ? 5 : 200;
        for (let k = 0; k < n; k++) await call(code);
        samples.push((((cpuSeconds(pid) ?? 0) - before) * 1000) / n);
      }
      return least(samples);
    };
    const empty = await cpuOf(null);
    for (const [name, code] of cases) out.set(name, Math.max(0, (await cpuOf(code)) - empty));
  } finally {
    await anvil.stop();
  }
  return out;
}

// ---------------------------------------------------------------- trie roots

/** CPU ms of one root over `n` hashed keys: src/evm/trie.ts against @ethereumjs/mpt. */
async function rootCase(n: number): Promise<{ ours: number; mpt: number }> {
  const entries: Array<[Uint8Array, Uint8Array]> = [];
  for (let i = 0; i < n; i++)
    entries.push([keccak256(Uint8Array.of(i >> 8, i & 255)), new Uint8Array(70).fill(i & 255)]);
  const rounds = Math.max(3, Math.floor(2000 / n));
  const ours = await timed(() => {
    for (let k = 0; k < rounds; k++) trieRoot(entries);
  });
  const mpt = await timed(async () => {
    for (let k = 0; k < rounds; k++) {
      const trie = await createMPT({ useKeyHashing: false });
      for (const [key, value] of entries) await trie.put(key, value);
      trie.root();
    }
  });
  return { ours: ours / rounds, mpt: mpt / rounds };
}

// ---------------------------------------------------------------- state tests

function stateTestsCpu(): { cases: number; ms: number } {
  const files: string[] = [];
  const visit = (p: string): void => {
    if (statSync(p).isDirectory()) for (const e of readdirSync(p).sort()) visit(join(p, e));
    else if (p.endsWith('.json')) files.push(p);
  };
  visit(join(ROOT, '..', 'shared', 'ethereum-tests'));
  let cases = 0;
  const t = cpuMs();
  for (const f of files) {
    for (const r of runStateTests(JSON.parse(readFileSync(f, 'utf8')))) {
      if (r.failure !== null) throw new Error(`${f} ${r.test}: ${r.failure}`);
      cases++;
    }
  }
  return { cases, ms: cpuMs() - t };
}

// ---------------------------------------------------------------- main

async function main(): Promise<void> {
  process.stdout.write(`${machineLine()}\nruns per case: ${RUNS} (CPU ms of the fastest run)\n`);
  const simple: Genesis = {
    code: new Map([
      [CONTRACT, LOOP],
      [OTHER, CALLEE],
    ]),
    balance: new Map([[CALLER, 10n ** 20n]]),
    storage: new Map(),
  };
  const loopsFor = (code: Uint8Array): Genesis => ({
    ...simple,
    code: new Map([...simple.code, [CONTRACT, code]]),
  });
  // Ours first, then ethereumjs: process.cpuUsage counts the garbage collector's threads too, and
  // ethereumjs's garbage, collected later, would be charged to whatever runs after it.
  const cases: Array<[string, Genesis]> = [
    ['loop', loopsFor(LOOP)],
    ['mix', loopsFor(MIX)],
    ['calls', loopsFor(CALLS)],
  ];
  const w = erc20Workload();
  const erc20 = `erc20 (${SENDERS} transfers)`;
  const ours = new Map<string, number>();
  for (const [name, g] of cases) ours.set(name, await timed(oursCall(g, CONTRACT)));
  ours.set(erc20, await timed(oursTransfers(w)));
  const ejs = new Map<string, number>();
  for (const [name, g] of cases) ejs.set(name, await timed(ejsCall(await ejsVm(g), CONTRACT)));
  ejs.set(erc20, await timed(await ejsTransfers(w)));
  const rows = [...ours].map(([name, o]) => ({ name, ours: o, ejs: ejs.get(name) ?? Number.NaN }));
  const anvil = await anvilCases([
    ['loop', LOOP],
    ['mix', MIX],
  ]);
  const out = [
    `${'case'.padEnd(24)} ${'ours'.padStart(9)} ${'ethereumjs'.padStart(11)} ${'anvil'.padStart(9)}  ejs/ours  ours/anvil`,
  ];
  for (const r of rows) {
    const a = anvil.get(r.name);
    out.push(
      `${r.name.padEnd(24)} ${r.ours.toFixed(1).padStart(9)} ${r.ejs.toFixed(1).padStart(11)} ${(a === undefined ? '—' : a.toFixed(1)).padStart(9)}  ${(r.ejs / r.ours).toFixed(1).padStart(8)}  ${(a === undefined ? '—' : (r.ours / a).toFixed(1)).padStart(10)}`,
    );
  }
  process.stdout.write(`${out.join('\n')}\n`);
  for (const n of [10, 100, 2000]) {
    const r = await rootCase(n);
    process.stdout.write(
      `state root of ${n} accounts: trie.ts ${r.ours.toFixed(3)} ms, @ethereumjs/mpt ${r.mpt.toFixed(3)} ms (×${(r.mpt / r.ours).toFixed(1)})\n`,
    );
  }
  if (process.env.BENCH_STATETESTS === '1') {
    const s = stateTestsCpu();
    process.stdout.write(`state tests: ${s.cases} cases, ${(s.ms / 1000).toFixed(1)} s CPU on one thread\n`);
  }
}

if (process.env.BENCH_ONLY === 'erc20-ours') {
  const w = erc20Workload();
  const run = oursTransfers(w);
  for (let i = 0; i < Number(process.env.BENCH_LOOPS ?? 20); i++) {
    const t = cpuMs();
    run();
    if (i % 5 === 4) process.stdout.write(`erc20 ours ${(cpuMs() - t).toFixed(1)} ms\n`);
  }
} else await main();
