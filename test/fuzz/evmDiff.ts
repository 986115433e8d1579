// The runner of the differential EVM fuzzer: one generated case (test/fuzz/evmGen.ts) runs on the
// EVM of src/evm and on @ethereumjs/vm (a test-only oracle here), transaction by transaction, and
// everything observable is compared: accepted or refused, gas used, status, return data, logs, the
// created address, the state root after each transaction (and, when roots differ, which accounts
// and fields), and the call frames (kind, depth, from, to, value, gas, gas used, error, output).
// Frames on ethereumjs come from its own `beforeMessage`/`afterMessage` events, not from the
// project's tracing code. KNOWN_DIFFERENCES lists where ethereumjs is wrong and why; only those are
// skipped.

import { createBlock } from '@ethereumjs/block';
import { Common, Hardfork, Mainnet } from '@ethereumjs/common';
import type { EVM, EVMResult, Message } from '@ethereumjs/evm';
import { Caches, MerkleStateManager } from '@ethereumjs/statemanager';
import {
  createAccessList2930Tx,
  createBlob4844Tx,
  createEOACode7702Tx,
  createFeeMarket1559Tx,
  createLegacyTx,
  type TypedTransaction,
} from '@ethereumjs/tx';
import { Address, bytesToBigInt, Account as EjsAccount } from '@ethereumjs/util';
import { createVM, runTx, type VM } from '@ethereumjs/vm';
import secp256k1 from 'secp256k1';
import { chainCrypto } from '../../src/chain/crypto.ts';
import type { BlockEnv } from '../../src/evm/env.ts';
import { type ForkName, forkRules } from '../../src/evm/forks.ts';
import type { EvmTracer, FrameKind } from '../../src/evm/hooks.ts';
import { precompilesFor } from '../../src/evm/precompiles/index.ts';
import { encodeBigint, encodeBytes, encodeList } from '../../src/evm/rlp.ts';
import { type AccountRecord, EMPTY_CODE_HASH, type StateReader, WorldState } from '../../src/evm/state.ts';
import {
  type Authorization,
  applyTransaction,
  InvalidTransaction,
  type Transaction,
} from '../../src/evm/transaction.ts';
import { type AccountLeaf, stateRoot, storageRoot } from '../../src/evm/trie.ts';
import { addressBytes, bytesToBigint, wordBytes } from '../../src/evm/words.ts';
import { allEvmTracers } from '../../src/exec/tracing/evmAdapter.ts';
import { EvmVmTracer } from '../../src/exec/tracing/evmVmTrace.ts';
import { keccak256 } from '../../src/primitives/keccak.ts';
import { allOf, type ExecutionTracer, TraceHooks } from '../support/ethereumjsOracle/hooks.ts';
import { VmTracer } from '../support/ethereumjsOracle/vmTrace.ts';
import { CHAIN_ID, type FuzzCase, type FuzzTx, KEY_ADDRESSES, KEYS } from './evmGen.ts';

/** ethereumjs's name of each fork the fuzzer runs. */
const HARDFORKS: Readonly<Record<string, Hardfork>> = {
  Frontier: Hardfork.Chainstart,
  Homestead: Hardfork.Homestead,
  EIP150: Hardfork.TangerineWhistle,
  EIP158: Hardfork.SpuriousDragon,
  Byzantium: Hardfork.Byzantium,
  Constantinople: Hardfork.Constantinople,
  ConstantinopleFix: Hardfork.Petersburg,
  Istanbul: Hardfork.Istanbul,
  Berlin: Hardfork.Berlin,
  London: Hardfork.London,
  Paris: Hardfork.Paris,
  Shanghai: Hardfork.Shanghai,
  Cancun: Hardfork.Cancun,
  Prague: Hardfork.Prague,
  Osaka: Hardfork.Osaka,
  BPO1: Hardfork.Bpo1,
  BPO2: Hardfork.Bpo2,
};

/** One frame as both sides are made to describe it. */
export interface FrameRecord {
  kind: FrameKind | 'call in static context';
  depth: number;
  from: string;
  to: string;
  value: string;
  gas: string;
  gasUsed: string;
  error: string | null;
  output: string;
  precompile: boolean;
}

export interface TxOutcome {
  /** null: accepted. */
  rejected: string | null;
  gasUsed: string;
  blobGasUsed: string;
  success: boolean;
  output: string;
  logs: string[];
  createdAddress: string | null;
  frames: FrameRecord[];
  /** Our frames refused before they ran (depth, balance, nonce), which ethereumjs does not report. */
  refused: string[];
  /** Frames as TraceHooks (test/support/ethereumjsOracle/hooks.ts) reports them (ours: the same view of our hooks). */
  hooked: FrameRecord[];
  /** What else ran, for the coverage line (ours only). */
  notes: string[];
  /** The Parity vmTrace as JSON: src/exec/tracing/evmVmTrace.ts on ours, vmTrace.ts on ethereumjs. */
  vmTrace: string;
  root: string;
}

/** A difference the fuzzer found. */
export interface Difference {
  caseIndex: number;
  fork: ForkName;
  tx: number;
  what: string;
  ours: string;
  theirs: string;
  /** A frame's both sides, when the difference is in a frame. */
  frame?: { ours: FrameRecord | undefined; theirs: FrameRecord | undefined };
}

/** A difference where ethereumjs is wrong: the fuzzer counts it and goes on. */
export interface KnownDifference {
  name: string;
  why: string;
  matches(d: Difference): boolean;
}

/** Precompiles whose input length ethereumjs checks before their price: BN254 pairing, BLS12-381. */
const LENGTH_FIRST: ReadonlySet<string> = new Set(['0x8', '0xb', '0xc', '0xd', '0xe', '0xf', '0x10', '0x11']);

/** A difference in one field of a frame, as ethereumjs's events or TraceHooks report it. */
const frameField = (d: Difference, field: string) =>
  d.what === `frame ${field}` || d.what === `hooks frame ${field}`;

export const KNOWN_DIFFERENCES: readonly KnownDifference[] = [
  {
    name: 'bn254 rejection worded as revert',
    why:
      'ethereumjs ends a BN254 precompile (0x06–0x08) that rejects its input (a point off the curve, a ' +
      'coordinate past the field) with a revert; geth and src/evm say the precompile failed. Gas, ' +
      'status and state agree: only the error class differs.',
    matches: (d) =>
      frameField(d, 'error') &&
      d.frame?.ours?.precompile === true &&
      ['0x6', '0x7', '0x8'].includes(d.frame.ours.to) &&
      d.ours === 'precompile failed' &&
      d.theirs === 'revert',
  },
  {
    name: 'returndatacopy past the end worded as out of gas',
    why:
      'EIP-211: a RETURNDATACOPY reading past the return data fails the frame; geth (and src/evm) call ' +
      'it "return data out of bounds", ethereumjs "out of gas". Both consume all the gas.',
    matches: (d) =>
      frameField(d, 'error') && d.ours === 'return data out of bounds' && d.theirs === 'out of gas',
  },
  {
    name: 'code deposit out of gas worded as out of gas',
    why:
      'From Homestead a creation that cannot pay for its code fails; geth (and src/evm) call it "code ' +
      'store out of gas", ethereumjs "out of gas". Gas and state agree.',
    matches: (d) =>
      frameField(d, 'error') &&
      d.ours === 'code store out of gas' &&
      d.theirs === 'out of gas' &&
      d.fork !== 'Frontier',
  },
  {
    name: 'Frontier code deposit shortfall returns nothing',
    why:
      'In Frontier a creation that cannot pay for its code keeps its account, codeless, and the error ' +
      'is "code store out of gas"; geth (and src/evm) return the code it could not store as the ' +
      "frame's output, ethereumjs returns nothing.",
    matches: (d) =>
      (frameField(d, 'output') || d.what === 'output') &&
      d.fork === 'Frontier' &&
      d.frame?.ours?.error === 'code store out of gas' &&
      d.theirs === '0x',
  },
  {
    name: 'code starting with 0xEF checked after the deposit',
    why:
      'EIP-3541: a creation returning code that starts with 0xEF fails; geth (and src/evm) check that ' +
      'before charging the code deposit ("invalid code"), ethereumjs after it, so when the deposit is ' +
      'unaffordable it says "out of gas". All the gas is consumed either way.',
    matches: (d) => frameField(d, 'error') && d.ours === 'invalid code' && d.theirs === 'out of gas',
  },
  {
    name: 'precompile input length checked before the price',
    why:
      'ethereumjs rejects a BN254 pairing or BLS12-381 input of a bad length before it prices it; geth ' +
      '(and src/evm) price it first (whole pairs), so with too little gas it is out of gas. All the gas ' +
      'is consumed either way.',
    matches: (d) =>
      frameField(d, 'error') &&
      d.frame?.ours?.precompile === true &&
      LENGTH_FIRST.has(d.frame.ours.to) &&
      d.ours === 'out of gas' &&
      d.theirs === 'precompile failed',
  },
  {
    name: 'static-context write checked before gas',
    why:
      'ethereumjs fails a state change in a static context before it charges for it; src/evm first ' +
      "charges SSTORE's EIP-2200 sentry and a value-carrying CALL's cold access (geth charges all of " +
      "an op's gas before that check), so with too little for those it is out of gas. All the gas is " +
      'consumed either way.',
    matches: (d) => frameField(d, 'error') && d.ours === 'out of gas' && d.theirs === 'static state change',
  },
  {
    name: 'static-context write checked before the stack',
    why:
      'A state-changing op in a static context with too few stack items: geth (and src/evm) check the ' +
      'stack before the op runs ("stack underflow"), ethereumjs says "static state change". Both end ' +
      'the frame with all its gas.',
    matches: (d) =>
      frameField(d, 'error') && d.ours === 'stack underflow' && d.theirs === 'static state change',
  },
  {
    name: 'stack checked after gas',
    why:
      'An op with too few stack items and too little gas: geth (and src/evm) check the stack before ' +
      'charging ("stack underflow"), ethereumjs charges first ("out of gas"). Both end the frame with ' +
      'all its gas.',
    matches: (d) => frameField(d, 'error') && d.ours === 'stack underflow' && d.theirs === 'out of gas',
  },
  {
    name: 'initcode size worded as out of gas',
    why:
      'EIP-3860: a CREATE of initcode past the limit fails the frame; ethereumjs says "out of gas", geth ' +
      'wraps it as out of gas too ("out of gas: max initcode size exceeded"); src/evm keeps the finer ' +
      'class for each tracer to word. Gas and state agree.',
    matches: (d) => frameField(d, 'error') && d.ours === 'initcode size' && d.theirs === 'out of gas',
  },
  // What TraceHooks (test/support/ethereumjsOracle/hooks.ts, the oracle's tracers' view of
  // ethereumjs) gets wrong; src/evm is the one that follows geth, and the tracers run on it.
  {
    name: 'TraceHooks: a creation refused for its nonce called insufficient balance',
    why:
      'A CREATE from an account at nonce 2^64−1 is refused before a frame (EIP-2681; geth: nonce ' +
      'uint64 overflow). TraceHooks reports every refused frame below the depth limit as "insufficient ' +
      'balance".',
    matches: (d) =>
      d.what === 'hooks frame error' && d.ours === 'nonce overflow' && d.theirs === 'insufficient balance',
  },
  {
    name: 'TraceHooks: blake2f final flag rejection unnamed',
    why:
      'blake2f (0x09) rejects a final-block flag other than 0 or 1 (geth: "invalid final flag"); ethereumjs ' +
      'says "value out of range", which TraceHooks does not know as a precompile failure and calls "other".',
    matches: (d) =>
      d.what === 'hooks frame error' &&
      d.frame?.ours?.to === '0x9' &&
      d.ours === 'precompile failed' &&
      d.theirs === 'other',
  },
  {
    name: 'TraceHooks: a refused call to a precompile not marked as one',
    why:
      'A call to a precompile refused before a frame (a value the caller cannot pay) is still a call to ' +
      'a precompile; TraceHooks reports every refused frame with precompile false.',
    matches: (d) =>
      d.what === 'hooks frame precompile' &&
      d.ours === 'true' &&
      d.theirs === 'false' &&
      (d.frame?.ours?.error === 'insufficient balance' || d.frame?.ours?.error === 'call depth'),
  },
  {
    name: 'TraceHooks: a refused delegatecall without its value',
    why:
      'A DELEGATECALL carries the value of the frame that makes it; geth tells tracers that value even ' +
      'when the call is refused (here at the depth limit). TraceHooks reports 0 for a refused one.',
    matches: (d) =>
      d.what === 'hooks frame value' &&
      d.frame?.ours?.kind === 'delegatecall' &&
      d.theirs === '0x0' &&
      (d.frame.ours.error === 'call depth' || d.frame.ours.error === 'insufficient balance'),
  },
];

const hex = (b: Uint8Array) => `0x${Buffer.from(b).toString('hex')}`;
const big = (v: bigint) => `0x${v.toString(16)}`;

/** ethereumjs's error texts as the names of src/evm/hooks.ts's FrameError. */
const ERROR_NAMES: Readonly<Record<string, string>> = {
  'out of gas': 'out of gas',
  'code store out of gas': 'code store out of gas',
  'code size to deposit exceeds maximum code size': 'code size',
  'stack underflow': 'stack underflow',
  'stack overflow': 'stack overflow',
  'invalid JUMP': 'invalid jump',
  'invalid opcode': 'invalid opcode',
  revert: 'revert',
  'static state change': 'static state change',
  'create collision': 'create collision',
  'insufficient balance': 'insufficient balance',
  'invalid bytecode deployed': 'invalid code',
  'initcode exceeds max initcode size': 'initcode size',
  'invalid input length': 'precompile failed',
  'point not on curve': 'precompile failed',
  'input is empty': 'precompile failed',
  'fp point not in field': 'precompile failed',
  'kzg commitment does not match versioned hash': 'precompile failed',
  'kzg inputs invalid': 'precompile failed',
  'kzg proof invalid': 'precompile failed',
  // blake2f's final-block flag other than 0 or 1.
  'value out of range': 'precompile failed',
};

/** The hash BLOCKHASH gives for block n on both sides (as geth's state tests: keccak of n in decimal). */
function blockHashOf(n: bigint): Uint8Array {
  return keccak256(new TextEncoder().encode(n.toString()));
}

const SECP256K1_N = 0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141n;

function signAuthorization(key: Uint8Array, chainId: bigint, address: bigint, nonce: bigint, highS: boolean) {
  const message = keccak256(
    Uint8Array.from([
      0x05,
      ...encodeList([encodeBigint(chainId), encodeBytes(addressBytes(address)), encodeBigint(nonce)]),
    ]),
  );
  const { signature, recid } = secp256k1.ecdsaSign(message, key);
  const r = bytesToBigint(signature, 0, 32);
  let s = bytesToBigint(signature, 32, 32);
  let yParity = BigInt(recid);
  if (highS) {
    s = SECP256K1_N - s;
    yParity ^= 1n;
  }
  return { chainId, address, nonce, yParity, r, s } satisfies Authorization;
}

interface PostAccount {
  nonce: bigint;
  balance: bigint;
  codeHash: Uint8Array;
  code: Uint8Array;
  storage: Map<bigint, bigint>;
}

/** The state our side holds between transactions: the pre-state with each transaction's changes. */
class Post implements StateReader {
  readonly accounts = new Map<bigint, PostAccount>();

  account(address: bigint): AccountRecord | null {
    const a = this.accounts.get(address);
    if (a === undefined) return null;
    return { nonce: a.nonce, balance: a.balance, codeHash: a.codeHash, hasStorage: a.storage.size > 0 };
  }

  code(_hash: Uint8Array, address: bigint): Uint8Array {
    return this.accounts.get(address)?.code ?? new Uint8Array(0);
  }

  storage(address: bigint, slot: bigint): bigint {
    return this.accounts.get(address)?.storage.get(slot) ?? 0n;
  }

  nonce(address: bigint): bigint {
    return this.accounts.get(address)?.nonce ?? 0n;
  }

  leaves(): Map<bigint, AccountLeaf> {
    const out = new Map<bigint, AccountLeaf>();
    for (const [address, a] of this.accounts)
      out.set(address, {
        nonce: a.nonce,
        balance: a.balance,
        codeHash: a.codeHash,
        storageRoot: storageRoot(a.storage),
      });
    return out;
  }
}

const REFUSALS: ReadonlySet<string> = new Set(['call depth', 'insufficient balance', 'nonce overflow']);

/** Our side: one WorldState over the block's transactions (as block.ts runs them). */
class Ours {
  readonly post = new Post();
  private readonly world: WorldState;
  private readonly rules;
  private readonly block: BlockEnv;

  constructor(readonly c: FuzzCase) {
    for (const a of c.accounts) {
      this.post.accounts.set(a.address, {
        nonce: a.nonce,
        balance: a.balance,
        code: a.code,
        codeHash: a.code.length === 0 ? EMPTY_CODE_HASH : keccak256(a.code),
        storage: new Map(a.storage),
      });
    }
    // The world reads a snapshot: the post map changes under it only between transactions, after
    // the world has taken what it changed.
    this.world = new WorldState(this.post);
    this.rules = forkRules(c.fork);
    this.block = {
      ...c.block,
      chainId: CHAIN_ID,
      blockHash: (n) => bytesToBigint(blockHashOf(n)),
    };
  }

  root(): string {
    return hex(stateRoot(this.post.leaves()));
  }

  run(tx: Transaction): TxOutcome {
    const frames: FrameRecord[] = [];
    const hooked: FrameRecord[] = [];
    const notes: string[] = [];
    const open: Array<{ record: FrameRecord; raw: FrameRecord; isStatic: boolean }> = [];
    const tracer: EvmTracer = {
      selfDestruct: () => notes.push('self-destruct'),
      log: () => notes.push('log'),
      frameStart: (f) => {
        const parent = open[open.length - 1];
        const isStatic = f.kind === 'staticcall' || (parent?.isStatic ?? false);
        if (f.delegate !== null) notes.push('delegated code run');
        const record: FrameRecord = {
          kind: f.kind,
          depth: f.depth,
          from: big(f.from),
          to: big(f.to),
          value: big(f.value),
          gas: big(f.gas),
          gasUsed: '',
          error: null,
          output: '',
          precompile: f.precompile,
        };
        // ethereumjs's message has no CALLCODE flag: one to the calling account itself reads as a CALL.
        if (record.kind === 'callcode' && f.to === f.from) record.kind = 'call';
        // Nor a STATICCALL flag: in a static context a CALL and a STATICCALL read the same.
        if ((record.kind === 'call' || record.kind === 'staticcall') && parent?.isStatic)
          record.kind = 'call in static context';
        // As TraceHooks reports it: the opcode's kind, refused frames included.
        const raw: FrameRecord = { ...record, kind: f.kind };
        open.push({ record, raw, isStatic });
        frames.push(record);
        hooked.push(raw);
      },
      frameEnd: (e) => {
        const top = open.pop();
        if (!top) throw new Error('frame end without a start');
        for (const r of [top.record, top.raw]) {
          r.gasUsed = big(e.gasUsed);
          r.error = e.error;
          r.output = hex(e.output);
        }
        // TraceHooks names a creation's address at its end, and none for one refused before it began.
        if (top.raw.kind === 'create' || top.raw.kind === 'create2')
          top.raw.to = e.createdAddress === null ? '' : big(e.createdAddress);
      },
    };
    let outcome: TxOutcome;
    const vm = new EvmVmTracer(this.world, this.rules);
    try {
      const r = applyTransaction(
        this.world,
        this.block,
        this.rules,
        precompilesFor(this.rules.precompiles),
        tx,
        allEvmTracers([tracer, vm.tracer]),
      );
      outcome = {
        rejected: null,
        gasUsed: big(r.gasUsed),
        blobGasUsed: big(r.blobGasUsed),
        success: r.success,
        output: hex(r.output),
        logs: r.logs.map((l) => `${big(l.address)} ${l.topics.map(big).join(',')} ${hex(l.data)}`),
        createdAddress: r.createdAddress === null ? null : big(r.createdAddress),
        // ethereumjs sends no message for a call or creation refused for depth, balance or nonce.
        frames: frames.filter((f) => !REFUSALS.has(f.error ?? '')),
        refused: frames.flatMap((f) => (REFUSALS.has(f.error ?? '') ? [f.error ?? ''] : [])),
        hooked,
        notes,
        vmTrace: Buffer.from(vm.result().json).toString(),
        root: '',
      };
    } catch (e) {
      if (!(e instanceof InvalidTransaction)) throw e;
      outcome = {
        rejected: e.code,
        gasUsed: '',
        blobGasUsed: '',
        success: false,
        output: '',
        logs: [],
        createdAddress: null,
        frames: [],
        refused: [],
        hooked: [],
        notes: [],
        vmTrace: '',
        root: '',
      };
    }
    for (const change of this.world.takeChanges()) {
      if (change.account === null) {
        this.post.accounts.delete(change.address);
        continue;
      }
      const before = this.post.accounts.get(change.address);
      const storage = change.storageCleared || !before ? new Map<bigint, bigint>() : before.storage;
      for (const [slot, value] of change.slots) {
        if (value === 0n) storage.delete(slot);
        else storage.set(slot, value);
      }
      this.post.accounts.set(change.address, { ...change.account, storage });
    }
    outcome.root = this.root();
    return outcome;
  }
}

let kzgCrypto: ReturnType<typeof chainCrypto>['kzg'] | undefined;

/** ethereumjs's side: a VM with the case's pre-state, its frames heard through its message events. */
class Theirs {
  private constructor(
    readonly vm: VM,
    readonly common: Common,
    readonly hooks: TraceHooks,
  ) {}

  static async create(c: FuzzCase): Promise<Theirs> {
    const hardfork = HARDFORKS[c.fork];
    if (hardfork === undefined) throw new Error(`ethereumjs has no fork ${c.fork}`);
    kzgCrypto ??= chainCrypto().kzg;
    const common = new Common({
      chain: Mainnet,
      hardfork,
      ...(kzgCrypto ? { customCrypto: { kzg: kzgCrypto } } : {}),
    });
    const vm = await createVM({
      common,
      stateManager: new MerkleStateManager({ caches: new Caches() }),
      blockchain: {
        getBlock: async (n: number) => ({ hash: () => blockHashOf(BigInt(n)) }),
        putBlock: async () => {},
        shallowCopy() {
          return this;
        },
      },
    });
    for (const a of c.accounts) {
      const address = new Address(addressBytes(a.address));
      await vm.stateManager.putAccount(address, new EjsAccount(a.nonce, a.balance));
      if (a.code.length > 0) await vm.stateManager.putCode(address, a.code);
      for (const [slot, value] of a.storage)
        if (value !== 0n) await vm.stateManager.putStorage(address, wordBytes(slot), trimmed(value));
    }
    // The second view of the frames, what today's tracers are fed; it goes when the tracers have
    // moved onto src/evm and TraceHooks is deleted (issue 20).
    return new Theirs(vm, common, new TraceHooks(vm.evm as EVM));
  }

  async root(): Promise<string> {
    return hex(await this.vm.stateManager.getStateRoot());
  }

  block(c: FuzzCase) {
    const rules = forkRules(c.fork);
    const b = c.block;
    return createBlock(
      {
        header: {
          number: b.number,
          timestamp: b.timestamp,
          coinbase: new Address(addressBytes(b.coinbase)),
          gasLimit: b.gasLimit,
          difficulty: b.difficulty,
          ...(rules.proofOfStake ? { mixHash: wordBytes(b.prevRandao) } : {}),
          ...(rules.baseFee ? { baseFeePerGas: b.baseFee } : {}),
          ...(rules.blobs ? { excessBlobGas: b.excessBlobGas, blobGasUsed: 0n } : {}),
        },
      },
      { common: this.common },
    );
  }

  async run(c: FuzzCase, tx: Transaction, fuzz: FuzzTx): Promise<TxOutcome> {
    const evm = this.vm.evm as EVM;
    const frames: FrameRecord[] = [];
    const open: Array<{ record: FrameRecord; message: Message; isStatic: boolean }> = [];
    const sender = tx.sender;
    const onMessage = (m: Message) => {
      const parent = open[open.length - 1];
      const creation = m.to === undefined;
      let kind: FrameRecord['kind'];
      if (creation) kind = m.salt ? 'create2' : 'create';
      else if (m.delegatecall) kind = 'delegatecall';
      else if (m.to !== undefined && !m.codeAddress.equals(m.to)) kind = 'callcode';
      else if (m.isStatic) kind = parent?.isStatic ? 'call in static context' : 'staticcall';
      else kind = 'call';
      // The calling frame's storage owner (a creation's address is set on its message once it runs).
      const from = parent ? (parent.message.to?.bytes ?? new Uint8Array(20)) : addressBytes(sender);
      const record: FrameRecord = {
        kind,
        depth: m.depth,
        from: big(bytesToBigInt(from)),
        to: creation ? '' : big(bytesToBigInt(m.codeAddress.bytes)),
        value: big(m.value),
        gas: big(m.gasLimit),
        gasUsed: '',
        error: null,
        output: '',
        precompile: false,
      };
      open.push({ record, message: m, isStatic: m.isStatic });
      frames.push(record);
    };
    const onResult = (r: EVMResult) => {
      const top = open.pop();
      if (!top) throw new Error('afterMessage without a message');
      const x = r.execResult;
      top.record.gasUsed = big(x.executionGasUsed);
      // "invalid JUMP at <code hash>/<address>:<pc>": the kind is what is compared.
      const text = x.exceptionError?.error.replace(/ at 0x.*$/, '');
      top.record.error = text === undefined ? null : (ERROR_NAMES[text] ?? `ethereumjs: ${text}`);
      top.record.output = hex(x.returnValue);
      if (top.record.to === '')
        top.record.to = r.createdAddress ? big(bytesToBigInt(r.createdAddress.bytes)) : '';
    };
    const hooked: FrameRecord[] = [];
    const openHooked: FrameRecord[] = [];
    const addressOf = (b: Uint8Array | null) => (b === null ? '' : big(bytesToBigInt(b)));
    const hookTracer: ExecutionTracer = {
      frameStart: (f) => {
        const record: FrameRecord = {
          kind: f.kind,
          depth: f.depth,
          from: addressOf(f.from),
          to: addressOf(f.to),
          value: big(f.value),
          gas: big(f.gas),
          gasUsed: '',
          error: null,
          output: '',
          precompile: f.precompile,
        };
        openHooked.push(record);
        hooked.push(record);
      },
      frameEnd: (e) => {
        const record = openHooked.pop();
        if (!record) throw new Error('TraceHooks: an end without a start');
        record.gasUsed = big(e.gasUsed);
        record.error = e.error;
        record.output = hex(e.output);
        if (record.kind === 'create' || record.kind === 'create2') record.to = addressOf(e.createdAddress);
        // TraceHooks gives a frame the EVM refused the depth of its own count of open frames, which
        // includes the sender: one more than ours (docs/evm.md names this quirk).
        if (e.error === 'insufficient balance' || e.error === 'call depth') record.depth -= 1;
      },
    };
    // Made after TraceHooks, so its message listener runs after the hooks' (as ParityTracers makes it).
    const vm = new VmTracer(evm);
    this.hooks.attach(allOf([hookTracer, vm]), addressBytes(sender));
    evm.events.on('beforeMessage', onMessage);
    evm.events.on('afterMessage', onResult);
    try {
      let ejsTx: TypedTransaction;
      try {
        ejsTx = this.transaction(tx, fuzz);
      } catch (e) {
        return rejected(e, await this.root());
      }
      let result: Awaited<ReturnType<typeof runTx>>;
      try {
        result = await runTx(this.vm, { tx: ejsTx, block: this.block(c) });
      } catch (e) {
        return rejected(e, await this.root());
      }
      const x = result.execResult;
      return {
        rejected: null,
        gasUsed: big(result.totalGasSpent),
        blobGasUsed: big(result.blobGasUsed ?? 0n),
        success: x.exceptionError === undefined,
        output: hex(x.returnValue),
        logs: result.receipt.logs.map(
          ([address, topics, data]) =>
            `${big(bytesToBigInt(address))} ${topics.map((t) => big(bytesToBigInt(t))).join(',')} ${hex(data)}`,
        ),
        createdAddress: result.createdAddress ? big(bytesToBigInt(result.createdAddress.bytes)) : null,
        frames,
        refused: [],
        hooked,
        notes: [],
        vmTrace: JSON.stringify(vm.result()),
        root: await this.root(),
      };
    } finally {
      vm.detach();
      this.hooks.attach(null);
      evm.events.off('beforeMessage', onMessage);
      evm.events.off('afterMessage', onResult);
    }
  }

  private transaction(tx: Transaction, fuzz: FuzzTx): TypedTransaction {
    const common = this.common;
    const key = KEYS[fuzz.sender] as Uint8Array;
    const base = {
      nonce: tx.nonce,
      gasLimit: tx.gasLimit,
      ...(tx.to === null ? {} : { to: new Address(addressBytes(tx.to)) }),
      value: tx.value,
      data: tx.data,
    };
    const accessList = tx.accessList.map((e) => ({
      address: hex(addressBytes(e.address)) as `0x${string}`,
      storageKeys: e.storageKeys.map((k) => hex(wordBytes(k)) as `0x${string}`),
    }));
    const fees = { maxFeePerGas: tx.maxFeePerGas, maxPriorityFeePerGas: tx.maxPriorityFeePerGas };
    switch (tx.type) {
      case 0:
        return createLegacyTx({ ...base, gasPrice: tx.gasPrice }, { common }).sign(key);
      case 1:
        return createAccessList2930Tx(
          { ...base, chainId: CHAIN_ID, gasPrice: tx.gasPrice, accessList },
          { common },
        ).sign(key);
      case 2:
        return createFeeMarket1559Tx({ ...base, chainId: CHAIN_ID, ...fees, accessList }, { common }).sign(
          key,
        );
      case 3:
        return createBlob4844Tx(
          {
            ...base,
            chainId: CHAIN_ID,
            ...fees,
            accessList,
            maxFeePerBlobGas: tx.maxFeePerBlobGas,
            blobVersionedHashes: tx.blobVersionedHashes.map((h) => hex(wordBytes(h)) as `0x${string}`),
          },
          { common },
        ).sign(key);
      default:
        return createEOACode7702Tx(
          {
            ...base,
            chainId: CHAIN_ID,
            ...fees,
            accessList,
            authorizationList: tx.authorizationList.map((a) => ({
              chainId: big(a.chainId) as `0x${string}`,
              address: hex(addressBytes(a.address)) as `0x${string}`,
              nonce: big(a.nonce) as `0x${string}`,
              yParity: big(a.yParity) as `0x${string}`,
              r: big(a.r) as `0x${string}`,
              s: big(a.s) as `0x${string}`,
            })),
          },
          { common },
        ).sign(key);
    }
  }
}

function rejected(e: unknown, root: string): TxOutcome {
  return {
    rejected: e instanceof Error ? (e.message.split('\n')[0]?.slice(0, 120) ?? 'error') : String(e),
    gasUsed: '',
    blobGasUsed: '',
    success: false,
    output: '',
    logs: [],
    createdAddress: null,
    frames: [],
    refused: [],
    hooked: [],
    notes: [],
    vmTrace: '',
    root,
  };
}

function trimmed(value: bigint): Uint8Array {
  const w = wordBytes(value);
  let i = 0;
  while (i < 31 && w[i] === 0) i++;
  return w.subarray(i);
}

/** The transaction as src/evm takes it, nonces resolved against the state before it. */
function ourTransaction(t: FuzzTx, post: Post): Transaction {
  const sender = KEY_ADDRESSES[t.sender] as bigint;
  const nonceOf = (address: bigint, delta: bigint) => {
    const n = post.nonce(address) + delta;
    return n < 0n ? 0n : n;
  };
  const authorizations: Authorization[] = [];
  const seen = new Map<bigint, bigint>();
  for (const a of t.authorizations) {
    const authority = KEY_ADDRESSES[a.signer] as bigint;
    // The sender's nonce moves before authorizations apply; a second one of an authority sees the first.
    const bump = (authority === sender ? 1n : 0n) + (seen.get(authority) ?? 0n);
    seen.set(authority, (seen.get(authority) ?? 0n) + 1n);
    const nonce = nonceOf(authority, a.nonceDelta + bump);
    authorizations.push(
      signAuthorization(KEYS[a.signer] as Uint8Array, a.chainId, a.address, nonce, a.highS),
    );
  }
  return {
    type: t.type,
    sender,
    nonce: nonceOf(sender, t.nonceDelta),
    gasLimit: t.gasLimit,
    gasPrice: t.gasPrice,
    maxFeePerGas: t.maxFeePerGas,
    maxPriorityFeePerGas: t.maxPriorityFeePerGas,
    to: t.to,
    value: t.value,
    data: t.data,
    accessList: t.accessList,
    blobVersionedHashes: t.blobVersionedHashes,
    maxFeePerBlobGas: t.maxFeePerBlobGas,
    authorizationList: authorizations,
  };
}

/** Which accounts differ, when roots do: nonce, balance, code and the slots either side knows. */
async function accountDiffs(c: FuzzCase, ours: Ours, theirs: Theirs): Promise<string[]> {
  const addresses = new Set<bigint>([...ours.post.accounts.keys(), ...c.accounts.map((a) => a.address)]);
  addresses.add(c.block.coinbase);
  const out: string[] = [];
  for (const address of addresses) {
    const mine = ours.post.accounts.get(address);
    const a = new Address(addressBytes(address));
    const their = await theirs.vm.stateManager.getAccount(a);
    const fields: string[] = [];
    if ((mine === undefined) !== (their === undefined)) {
      out.push(`${big(address)} exists: ours ${mine !== undefined}, theirs ${their !== undefined}`);
      continue;
    }
    if (mine === undefined || their === undefined) continue;
    if (mine.nonce !== their.nonce) fields.push(`nonce ${mine.nonce} vs ${their.nonce}`);
    if (mine.balance !== their.balance) fields.push(`balance ${mine.balance} vs ${their.balance}`);
    if (hex(mine.codeHash) !== hex(their.codeHash)) fields.push('code');
    if (hex(storageRoot(mine.storage)) !== hex(their.storageRoot)) {
      const slots = new Set<bigint>([...mine.storage.keys(), 0n, 1n, 2n, 3n, 4n, 5n, 6n, 7n]);
      for (const slot of slots) {
        const v = bytesToBigInt(await theirs.vm.stateManager.getStorage(a, wordBytes(slot)));
        const m = mine.storage.get(slot) ?? 0n;
        if (v !== m) fields.push(`slot ${slot}: ${big(m)} vs ${big(v)}`);
      }
      if (fields.length === 0) fields.push('storage (a slot outside 0..7)');
    }
    if (fields.length > 0) out.push(`${big(address)} ${fields.join('; ')}`);
  }
  return out;
}

export interface CaseReport {
  differences: Difference[];
  /** Differences skipped as known, by name. */
  known: Map<string, number>;
  txs: number;
  /** What ran, for the coverage line: transaction types, refusals, frame kinds and errors. */
  seen: Map<string, number>;
}

const FRAME_FIELDS = ['kind', 'depth', 'from', 'to', 'value', 'gas', 'gasUsed', 'error', 'output'] as const;
/** TraceHooks also says which frames are precompiles (ethereumjs's messages do not). */
const HOOK_FIELDS = [...FRAME_FIELDS, 'precompile'] as const;

/** Runs one case on both EVMs and lists what differs (known differences counted apart). */
export async function runCase(
  c: FuzzCase,
  /** Sees both outcomes of each transaction (to look into a difference). */
  inspect?: (tx: number, ours: TxOutcome, theirs: TxOutcome) => void,
): Promise<CaseReport> {
  const ours = new Ours(c);
  const theirs = await Theirs.create(c);
  const found: Difference[] = [];
  const add = (tx: number, what: string, o: unknown, t: unknown, frame?: Difference['frame']) =>
    found.push({
      caseIndex: c.index,
      fork: c.fork,
      tx,
      what,
      ours: String(o),
      theirs: String(t),
      ...(frame ? { frame } : {}),
    });
  const preOurs = ours.root();
  const preTheirs = await theirs.root();
  if (preOurs !== preTheirs) add(-1, 'pre-state root', preOurs, preTheirs);
  const compareFrames = (i: number, prefix: string, ours: FrameRecord[], theirs: FrameRecord[]) => {
    for (let f = 0; f < Math.max(ours.length, theirs.length); f++) {
      const frame = { ours: ours[f], theirs: theirs[f] };
      if (frame.ours === undefined || frame.theirs === undefined) {
        add(i, `${prefix}frame count`, ours.length, theirs.length, frame);
        return;
      }
      let differs = false;
      for (const key of prefix === '' ? FRAME_FIELDS : HOOK_FIELDS) {
        if (frame.ours[key] !== frame.theirs[key]) {
          add(i, `${prefix}frame ${key}`, frame.ours[key], frame.theirs[key], frame);
          differs = true;
        }
      }
      // Past the first differing frame the rest follow from it.
      if (differs) return;
    }
  };
  const seen = new Map<string, number>();
  const count = (key: string) => seen.set(key, (seen.get(key) ?? 0) + 1);
  for (const [i, fuzz] of c.txs.entries()) {
    const tx = ourTransaction(fuzz, ours.post);
    const a = ours.run(tx);
    const b = await theirs.run(c, tx, fuzz);
    inspect?.(i, a, b);
    count(a.rejected === null ? `type ${tx.type}` : `tx refused: ${a.rejected}`);
    for (const f of a.frames) {
      count(f.precompile ? 'precompile' : f.kind);
      if (f.error) count(f.error);
    }
    for (const r of a.refused) count(`refused frame: ${r}`);
    for (const note of a.notes) count(note);
    if (tx.authorizationList.length > 0 && a.rejected === null) count('authorizations');
    if (a.frames.some((f) => f.depth >= 64)) count('depth ≥ 64');
    if ((a.rejected === null) !== (b.rejected === null)) {
      add(i, 'accepted', a.rejected ?? 'accepted', b.rejected ?? 'accepted');
    } else if (a.rejected === null) {
      if (a.gasUsed !== b.gasUsed) add(i, 'gas used', a.gasUsed, b.gasUsed);
      if (a.blobGasUsed !== b.blobGasUsed) add(i, 'blob gas used', a.blobGasUsed, b.blobGasUsed);
      if (a.success !== b.success) add(i, 'status', a.success, b.success);
      const top = { ours: a.frames[0], theirs: b.frames[0] };
      if (a.output !== b.output) add(i, 'output', a.output, b.output, top);
      // A failed creation has no address on our side (a receipt names it anyway, from the nonce);
      // ethereumjs gives the one it tried.
      if (a.success && a.createdAddress !== b.createdAddress)
        add(i, 'created address', a.createdAddress, b.createdAddress);
      if (a.logs.join('\n') !== b.logs.join('\n')) add(i, 'logs', a.logs.join(' | '), b.logs.join(' | '));
      compareFrames(i, '', a.frames, b.frames);
      compareFrames(i, 'hooks ', a.hooked, b.hooked);
      if (a.vmTrace !== b.vmTrace) {
        let at = 0;
        while (a.vmTrace[at] === b.vmTrace[at]) at++;
        const from = Math.max(0, at - 150);
        add(i, 'vmTrace', `…${a.vmTrace.slice(from, at + 150)}`, `…${b.vmTrace.slice(from, at + 150)}`);
      }
    }
    if (a.root !== b.root) {
      add(i, 'state root', a.root, b.root);
      for (const line of await accountDiffs(c, ours, theirs)) add(i, 'account', line, '');
      break;
    }
  }
  const known = new Map<string, number>();
  const differences = found.filter((d) => {
    const k = KNOWN_DIFFERENCES.find((x) => x.matches(d));
    if (k) known.set(k.name, (known.get(k.name) ?? 0) + 1);
    return k === undefined;
  });
  return { differences, known, txs: c.txs.length, seen };
}

/** A difference on one line, with what reproduces it. */
export function describe(d: Difference, seed: number): string {
  const frame = d.frame?.ours ?? d.frame?.theirs;
  const where = frame ? ` [${frame.kind} depth ${frame.depth} to ${frame.to}]` : '';
  return `case ${d.caseIndex} (FUZZ_SEED=${seed}) ${d.fork} tx ${d.tx}: ${d.what}${where}: ours ${d.ours}, ethereumjs ${d.theirs}`;
}
