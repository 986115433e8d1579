// The frame hooks of src/evm (hooks.ts) against what today's tracers are fed: the same transaction
// runs on @ethereumjs/vm with TraceHooks (test/support/ethereumjsOracle/hooks.ts) attached and on our EVM, and
// the two sequences of frame starts and ends must agree field by field: every kind of call and
// creation, value transfers, a precompile, a revert with data, out of gas, an invalid opcode, a stack
// underflow, a static-call violation, a refused transfer and a CREATE2 collision.

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createBlock } from '@ethereumjs/block';
import { Common, Hardfork, Mainnet } from '@ethereumjs/common';
import type { EVM, InterpreterStep } from '@ethereumjs/evm';
import { Caches, MerkleStateManager } from '@ethereumjs/statemanager';
import { createLegacyTx } from '@ethereumjs/tx';
import { Address, Account as EjsAccount } from '@ethereumjs/util';
import { createVM, runTx } from '@ethereumjs/vm';
import secp256k1 from 'secp256k1';
import type { BlockEnv } from '../../src/evm/env.ts';
import { forkRules } from '../../src/evm/forks.ts';
import type { EvmTracer } from '../../src/evm/hooks.ts';
import { precompilesFor } from '../../src/evm/precompiles/index.ts';
import { type AccountRecord, EMPTY_CODE_HASH, type StateReader, WorldState } from '../../src/evm/state.ts';
import { applyTransaction } from '../../src/evm/transaction.ts';
import { addressBytes, bytesToBigint } from '../../src/evm/words.ts';
import { keccak256 } from '../../src/primitives/keccak.ts';
import { type ExecutionTracer, TraceHooks } from '../support/ethereumjsOracle/hooks.ts';

/** A tiny assembler: op names, and PUSHes written as `0x…` (the width from the digits). */
const OPS: Record<string, number> = {
  STOP: 0x00,
  ADD: 0x01,
  MSTORE: 0x52,
  MSTORE8: 0x53,
  SSTORE: 0x55,
  JUMP: 0x56,
  JUMPDEST: 0x5b,
  POP: 0x50,
  GAS: 0x5a,
  LOG0: 0xa0,
  CREATE: 0xf0,
  CALL: 0xf1,
  CALLCODE: 0xf2,
  RETURN: 0xf3,
  DELEGATECALL: 0xf4,
  CREATE2: 0xf5,
  STATICCALL: 0xfa,
  REVERT: 0xfd,
  INVALID: 0xfe,
};
function asm(source: string): Uint8Array {
  const out: number[] = [];
  for (const word of source.trim().split(/\s+/)) {
    if (word.startsWith('0x')) {
      const hex = word.slice(2).length % 2 ? `0${word.slice(2)}` : word.slice(2);
      const bytes = Buffer.from(hex, 'hex');
      out.push(0x5f + bytes.length, ...bytes);
    } else {
      const op = OPS[word];
      if (op === undefined) throw new Error(`unknown op ${word}`);
      out.push(op);
    }
  }
  return Uint8Array.from(out);
}

const A = 0xa0n;
const B = 0xb0n;
const C = 0xc0n;
const D = 0xd0n;
const E = 0xe0n;
const F = 0xf0n;
const G = 0x60n;
const hex = (a: bigint) => `0x${a.toString(16)}`;
// CALL-family: gas, to, [value], in offset, in size, out offset, out size (pushed in reverse).
const call = (to: bigint, value: string, gas = 'GAS') =>
  `0x20 0x0 0x20 0x0 ${value} ${hex(to)} ${gas} CALL POP`;
const CODE = new Map<bigint, Uint8Array>([
  [C, asm('0x1 0x0 SSTORE 0xaa 0x0 MSTORE 0x20 0x0 LOG0 0x20 0x0 RETURN')],
  [B, asm(`0x20 0x0 0x0 0x0 ${hex(C)} GAS DELEGATECALL POP 0x20 0x0 RETURN`)],
  [D, asm('0xbb 0x0 MSTORE 0x20 0x0 REVERT')],
  [E, asm('JUMPDEST 0x0 JUMP')],
  [F, asm('INVALID')],
  [G, asm('0x1 ADD')],
  [
    A,
    asm(
      [
        call(B, '0x1', '0x186a0'),
        `0x0 0x0 0x0 0x0 ${hex(C)} 0x7530 STATICCALL POP`,
        '0x20 0x0 0x20 0x0 0x2 GAS STATICCALL POP',
        // ecrecover with too little gas: the precompile fails out of gas.
        '0x0 0x0 0x80 0x0 0x1 0x64 STATICCALL POP',
        // BN254 addition of a point not on the curve: the precompile rejects its input.
        '0x1 0x0 MSTORE 0x0 0x0 0x80 0x0 0x6 0x7530 STATICCALL POP',
        `0x0 0x0 0x0 0x0 0x0 ${hex(B)} 0x186a0 CALLCODE POP`,
        call(D, '0x0'),
        call(E, '0x0', '0xc350'),
        call(F, '0x0', '0x7530'),
        call(G, '0x0', '0x7530'),
        call(B, '0xffffffffffffffffffffffffffffff'),
        // Initcode deploying one STOP: PUSH1 0 PUSH1 0 MSTORE8 PUSH1 1 PUSH1 0 RETURN, at 22..32.
        '0x60006000536001' + '6000f3 0x0 MSTORE',
        '0xa 0x16 0x0 CREATE POP',
        '0x7 0xa 0x16 0x0 CREATE2 POP',
        '0x7 0xa 0x16 0x0 CREATE2 POP',
        'STOP',
      ].join(' '),
    ),
  ],
]);

const KEY = keccak256(Uint8Array.of(7));
const SENDER = bytesToBigint(keccak256(secp256k1.publicKeyCreate(KEY, false).subarray(1)), 12, 20);
const BALANCE = 10n ** 18n;

interface Event {
  event: 'start' | 'end';
  [field: string]: unknown;
}

const h = (b: Uint8Array | null | undefined) => (b ? `0x${Buffer.from(b).toString('hex')}` : null);
const addr = (a: bigint) => `0x${a.toString(16).padStart(40, '0')}`;

interface Step {
  pc: number;
  opcode: number;
  gas: bigint;
  depth: number;
  stack: bigint[];
  memory: string | null;
  refund: bigint;
  address: string;
}

async function ethereumjsFrames(steps: Step[]): Promise<Event[]> {
  const common = new Common({ chain: Mainnet, hardfork: Hardfork.Prague });
  const vm = await createVM({ common, stateManager: new MerkleStateManager({ caches: new Caches() }) });
  for (const [a, code] of CODE) {
    const address = new Address(addressBytes(a));
    await vm.stateManager.putAccount(address, new EjsAccount(1n, a === A ? 1000n : 0n));
    await vm.stateManager.putCode(address, code);
  }
  await vm.stateManager.putAccount(new Address(addressBytes(SENDER)), new EjsAccount(0n, BALANCE));
  const hooks = new TraceHooks(vm.evm as EVM);
  const events: Event[] = [];
  const tracer: ExecutionTracer = {
    frameStart: (f) =>
      events.push({
        event: 'start',
        kind: f.kind,
        depth: f.depth,
        from: h(f.from),
        to: f.kind === 'create' || f.kind === 'create2' ? null : h(f.to),
        value: f.value,
        gas: f.gas,
        input: h(f.input),
        precompile: f.precompile,
      }),
    frameEnd: (e) =>
      events.push({
        event: 'end',
        gasUsed: e.gasUsed,
        output: h(e.output),
        error: e.error,
        createdAddress: h(e.createdAddress),
        failedOp: e.failedOp ?? null,
      }),
  };
  const tx = createLegacyTx(
    { nonce: 0n, gasPrice: 10n, gasLimit: 3_000_000n, to: new Address(addressBytes(A)) },
    { common },
  ).sign(KEY);
  (vm.evm as EVM).events?.on('step', (step: InterpreterStep) => {
    steps.push({
      pc: step.pc,
      opcode: step.opcode.code,
      gas: step.gasLeft,
      depth: step.depth,
      stack: [...step.stack],
      memory: h(step.memory.subarray(0, Number(step.memoryWordCount) * 32)),
      refund: step.gasRefund,
      address: h(step.address.bytes) ?? '',
    });
  });
  hooks.attach(tracer, tx.getSenderAddress().bytes);
  const block = createBlock(
    { header: { number: 1n, gasLimit: 30_000_000n, baseFeePerGas: 7n, timestamp: 1000n } },
    { common },
  );
  await runTx(vm, { tx, block, skipBlockGasLimitValidation: true });
  hooks.attach(null);
  // TraceHooks reports a frame the EVM refused (balance, depth) itself, at its own count of open
  // frames, which includes the transaction's sender: one more than the depth of a frame that ran.
  // ethereumjs words a BN254 precompile's rejection of its input as a revert (all gas consumed); the
  // EVM of src/evm says the precompile failed, as geth does (with geth's text, FrameEnd.precompileError).
  for (const [i, e] of events.entries()) {
    const next = events[i + 1];
    if (e.event === 'start' && e.precompile && next?.event === 'end' && next.error === 'revert')
      next.error = 'precompile failed';
    if (e.event === 'start' && next?.event === 'end' && next.error === 'insufficient balance')
      e.depth = Number(e.depth) - 1;
  }
  return events;
}

function ourFrames(steps: Step[]): Event[] {
  const reader: StateReader = {
    account(a): AccountRecord | null {
      const code = CODE.get(a);
      if (code)
        return { nonce: 1n, balance: a === A ? 1000n : 0n, codeHash: keccak256(code), hasStorage: false };
      if (a === SENDER) return { nonce: 0n, balance: BALANCE, codeHash: EMPTY_CODE_HASH, hasStorage: false };
      return null;
    },
    code: (_hash, a) => CODE.get(a) ?? new Uint8Array(0),
    storage: () => 0n,
  };
  const block: BlockEnv = {
    number: 1n,
    timestamp: 1000n,
    coinbase: 0n,
    gasLimit: 30_000_000n,
    difficulty: 0n,
    prevRandao: 0n,
    baseFee: 7n,
    excessBlobGas: 0n,
    chainId: 1n,
    blockHash: () => 0n,
  };
  const events: Event[] = [];
  const tracer: EvmTracer = {
    frameStart: (f) =>
      events.push({
        event: 'start',
        kind: f.kind,
        depth: f.depth,
        // TraceHooks names the storage owner as `from` of a frame a delegatecall or callcode made.
        from: addr(f.from),
        to: f.kind === 'create' || f.kind === 'create2' ? null : addr(f.to),
        value: f.value,
        gas: f.gas,
        input: h(f.input),
        precompile: f.precompile,
      }),
    frameEnd: (e) =>
      events.push({
        event: 'end',
        gasUsed: e.gasUsed,
        output: h(e.output),
        error: e.error,
        createdAddress: e.createdAddress === null ? null : addr(e.createdAddress),
        failedOp: e.failedOp ?? null,
      }),
    step: {
      step: (v) => {
        // ethereumjs sends no step for the STOP of code that runs off its end (geth logs one).
        if (v.opcode === 0 && CODE.get(v.address)?.length === v.pc) return;
        steps.push({
          pc: v.pc,
          opcode: v.opcode,
          gas: BigInt(v.gas),
          depth: v.depth,
          stack: v.stack.slice(0, v.sp),
          memory: h(v.memory.subarray(0, v.memSize)),
          refund: BigInt(v.refund),
          address: h(addressBytes(v.address)) ?? '',
        });
      },
    },
  };
  const rules = forkRules('Prague');
  applyTransaction(
    new WorldState(reader),
    block,
    rules,
    precompilesFor(rules.precompiles),
    {
      type: 0,
      sender: SENDER,
      nonce: 0n,
      gasLimit: 3_000_000n,
      gasPrice: 10n,
      maxFeePerGas: 0n,
      maxPriorityFeePerGas: 0n,
      to: A,
      value: 0n,
      data: new Uint8Array(0),
      accessList: [],
      blobVersionedHashes: [],
      maxFeePerBlobGas: 0n,
      authorizationList: [],
    },
    tracer,
  );
  return events;
}

describe('frame hooks against the ones today’s tracers are fed', () => {
  it('report the same frames, gas, outputs and errors as TraceHooks on ethereumjs', async () => {
    const theirs = await ethereumjsFrames([]);
    const ours = ourFrames([]);
    assert.ok(theirs.length >= 30, `${theirs.length} events`);
    for (let i = 0; i < Math.max(theirs.length, ours.length); i++) {
      assert.deepEqual(ours[i], theirs[i], `event ${i}`);
    }
  });
});

describe('step hook against ethereumjs’s step events', () => {
  it('shows each op with the pc, gas, depth, stack, memory and refund ethereumjs shows', async () => {
    const theirs: Step[] = [];
    const ours: Step[] = [];
    await ethereumjsFrames(theirs);
    ourFrames(ours);
    assert.ok(theirs.length > 200, `${theirs.length} steps`);
    for (let i = 0; i < Math.max(theirs.length, ours.length); i++)
      assert.deepEqual(ours[i], theirs[i], `step ${i}`);
  });
});
