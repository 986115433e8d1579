// The case generator of the differential EVM fuzzer (test/fuzz/evmDiff.ts runs what it makes): a
// pre-state of a few contracts with generated code, senders and odd accounts, a block, and a few
// transactions of the types the fork allows (and now and then one it does not). Code is made of
// snippets that each set up their arguments and run one interesting operation, so that most of a
// program runs instead of stopping at its first op: arithmetic and environment reads saved to
// storage, memory at edge offsets, every kind of call and creation with values and gas at their
// edges, precompiles with edge inputs, logs, transient storage, SSTORE patterns that refund,
// RETURNDATACOPY past the end, jumps to bad destinations, stack underflow and overflow, recursion to
// the depth limit, reverts, out of gas and self-destruct as a frame's last op.
//
// Everything a case holds is drawn from one seeded generator; nonces of transactions and
// authorizations are given as offsets from the account's nonce when the transaction runs (a
// rejected transaction does not move it), so the runner resolves them.

import secp256k1 from 'secp256k1';
import { FORK_NAMES, type ForkName, type ForkRules, forkRules } from '../../src/evm/forks.ts';
import { create2Address, createAddress } from '../../src/evm/interpreter.ts';
import { opTables } from '../../src/evm/opcodes.ts';
import { precompilesFor } from '../../src/evm/precompiles/index.ts';
import { bytesToBigint } from '../../src/evm/words.ts';
import { keccak256 } from '../../src/primitives/keccak.ts';

/** sfc32 seeded through splitmix32: small, fast, and the same sequence on every platform. */
export class Rng {
  private a: number;
  private b: number;
  private c: number;
  private d: number;

  constructor(seed: number) {
    let s = seed >>> 0;
    const next = () => {
      s = (s + 0x9e3779b9) | 0;
      let z = s;
      z = Math.imul(z ^ (z >>> 16), 0x85ebca6b);
      z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35);
      return (z ^ (z >>> 16)) >>> 0;
    };
    this.a = next();
    this.b = next();
    this.c = next();
    this.d = next();
    for (let i = 0; i < 12; i++) this.u32();
  }

  u32(): number {
    const t = (((this.a + this.b) | 0) + this.d) | 0;
    this.d = (this.d + 1) | 0;
    this.a = this.b ^ (this.b >>> 9);
    this.b = (this.c + (this.c << 3)) | 0;
    this.c = (this.c << 21) | (this.c >>> 11);
    this.c = (this.c + t) | 0;
    return t >>> 0;
  }

  /** An integer in [0, n). */
  int(n: number): number {
    return Math.floor((this.u32() / 2 ** 32) * n);
  }

  chance(p: number): boolean {
    return this.u32() / 2 ** 32 < p;
  }

  pick<T>(items: readonly T[]): T {
    const item = items[this.int(items.length)];
    if (item === undefined) throw new Error('pick from an empty list');
    return item;
  }

  bytes(n: number): Uint8Array {
    const out = new Uint8Array(n);
    for (let i = 0; i < n; i++) out[i] = this.u32() & 0xff;
    return out;
  }

  word(bits = 256): bigint {
    return bytesToBigint(this.bytes(Math.ceil(bits / 8))) & ((1n << BigInt(bits)) - 1n);
  }
}

/** The forks both sides know (ethereumjs's Mainnet common names BPO1 and BPO2, not BPO3–5). */
export const FUZZ_FORKS: readonly ForkName[] = FORK_NAMES.filter(
  (f) => f !== 'BPO3' && f !== 'BPO4' && f !== 'BPO5',
);

export interface FuzzAccount {
  address: bigint;
  nonce: bigint;
  balance: bigint;
  code: Uint8Array;
  storage: Map<bigint, bigint>;
}

export interface FuzzAuthorization {
  chainId: bigint;
  address: bigint;
  /** Index into KEYS of the authority. */
  signer: number;
  /** The authority's nonce when the authorization is applied, plus this. */
  nonceDelta: bigint;
  /** Sign with s in the upper half (EIP-2 makes it invalid). */
  highS: boolean;
}

export interface FuzzTx {
  type: number;
  /** Index into KEYS. */
  sender: number;
  /** The sender's nonce when the transaction runs, plus this. */
  nonceDelta: bigint;
  to: bigint | null;
  value: bigint;
  gasLimit: bigint;
  data: Uint8Array;
  gasPrice: bigint;
  maxFeePerGas: bigint;
  maxPriorityFeePerGas: bigint;
  accessList: Array<{ address: bigint; storageKeys: bigint[] }>;
  blobVersionedHashes: bigint[];
  maxFeePerBlobGas: bigint;
  authorizations: FuzzAuthorization[];
}

export interface FuzzBlock {
  number: bigint;
  timestamp: bigint;
  coinbase: bigint;
  gasLimit: bigint;
  difficulty: bigint;
  prevRandao: bigint;
  baseFee: bigint;
  excessBlobGas: bigint;
}

export interface FuzzCase {
  /** Its position in the run: the case is made from (seed, index) alone. */
  index: number;
  fork: ForkName;
  block: FuzzBlock;
  accounts: FuzzAccount[];
  txs: FuzzTx[];
}

/** Fixed keys: two funded senders and an authority that is only ever a signer. */
export const KEYS: readonly Uint8Array[] = [1, 2, 3].map((i) => keccak256(Uint8Array.of(0xf0, i)));
export const KEY_ADDRESSES: readonly bigint[] = KEYS.map((k) =>
  bytesToBigint(keccak256(secp256k1.publicKeyCreate(k, false).subarray(1)), 12, 20),
);
export const CHAIN_ID = 1n;

const CONTRACT_BASE = 0xc0de00n;
const EMPTY_ACCOUNT = 0xe0e0n;
const ABSENT = 0xabcdefn;
const COINBASE = 0xc01bn;
const DELEGATED = 0xde1e9a7edn;

// Opcodes the snippets write.
const STOP = 0x00;
const ADD = 0x01;
const SUB = 0x03;
const EXP = 0x0a;
const ISZERO = 0x15;
const KECCAK256 = 0x20;
const ADDRESS = 0x30;
const BALANCE = 0x31;
const CALLDATALOAD = 0x35;
const CALLDATACOPY = 0x37;
const CODECOPY = 0x39;
const EXTCODESIZE = 0x3b;
const EXTCODECOPY = 0x3c;
const RETURNDATASIZE = 0x3d;
const RETURNDATACOPY = 0x3e;
const EXTCODEHASH = 0x3f;
const BLOCKHASH = 0x40;
const NUMBER = 0x43;
const SELFBALANCE = 0x47;
const BLOBHASH = 0x49;
const POP = 0x50;
const MLOAD = 0x51;
const MSTORE = 0x52;
const MSTORE8 = 0x53;
const SLOAD = 0x54;
const SSTORE = 0x55;
const JUMP = 0x56;
const JUMPI = 0x57;
const MSIZE = 0x59;
const GAS = 0x5a;
const JUMPDEST = 0x5b;
const TLOAD = 0x5c;
const TSTORE = 0x5d;
const MCOPY = 0x5e;
const PUSH0 = 0x5f;
const DUP1 = 0x80;
const LOG0 = 0xa0;
const CREATE = 0xf0;
const CALL = 0xf1;
const CALLCODE = 0xf2;
const RETURN = 0xf3;
const DELEGATECALL = 0xf4;
const CREATE2 = 0xf5;
const STATICCALL = 0xfa;
const REVERT = 0xfd;
const INVALID = 0xfe;
const SELFDESTRUCT = 0xff;

/** Ops that read the environment and push one word (each saved to storage by its snippet). */
const ENV_OPS = [
  0x30, 0x32, 0x33, 0x34, 0x36, 0x38, 0x3a, 0x3d, 0x41, 0x42, 0x43, 0x44, 0x45, 0x46, 0x47, 0x48, 0x4a, 0x58,
  0x59, 0x5a,
];
/** Pure ops on words. */
const WORD_OPS = [
  0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0a, 0x0b, 0x10, 0x11, 0x12, 0x13, 0x14, 0x15, 0x16,
  0x17, 0x18, 0x19, 0x1a, 0x1b, 0x1c, 0x1d, 0x1e,
];
const OSAKA_TABLES = opTables(forkRules('Osaka'));

const U256 = (1n << 256n) - 1n;
const INTERESTING_WORDS: readonly bigint[] = [
  0n,
  1n,
  2n,
  3n,
  7n,
  31n,
  32n,
  33n,
  255n,
  256n,
  (1n << 64n) - 1n,
  1n << 128n,
  1n << 255n,
  (1n << 255n) - 1n,
  U256,
  U256 - 1n,
];
const SMALL_OFFSETS: readonly bigint[] = [0n, 1n, 31n, 32n, 64n, 100n, 0x200n];
const EDGE_OFFSETS: readonly bigint[] = [0x10000n, 0xffffffn, 1n << 32n, 1n << 64n, U256];
const SMALL_SIZES: readonly bigint[] = [0n, 1n, 20n, 32n, 33n, 64n, 0x100n];
const EDGE_SIZES: readonly bigint[] = [0x10000n, 0x100000n, 1n << 32n, U256];

/** A minimal assembler: pushes take the narrowest PUSH (PUSH0 only where the fork has it). */
export class Asm {
  readonly out: number[] = [];
  constructor(private readonly push0: boolean) {}

  get pc(): number {
    return this.out.length;
  }

  op(...ops: number[]): this {
    this.out.push(...ops);
    return this;
  }

  push(value: bigint | number): this {
    let v = BigInt(value);
    if (v < 0n) v &= U256;
    if (v === 0n && this.push0) return this.op(PUSH0);
    const bytes: number[] = [];
    while (v > 0n) {
      bytes.unshift(Number(v & 0xffn));
      v >>= 8n;
    }
    if (bytes.length === 0) bytes.push(0);
    return this.op(0x5f + bytes.length, ...bytes);
  }

  /** A PUSH of exactly `width` bytes (for jump targets patched later). */
  pushWide(value: number, width: number): number {
    const at = this.out.length;
    this.op(0x5f + width);
    for (let i = width - 1; i >= 0; i--) this.out.push((value >>> (8 * i)) & 0xff);
    return at;
  }

  patch(at: number, value: number, width: number): void {
    for (let i = 0; i < width; i++) this.out[at + 1 + i] = (value >>> (8 * (width - 1 - i))) & 0xff;
  }

  /** Writes `data` to memory at `offset` (whole words; the tail of the last word is zeros). */
  memory(offset: number, data: Uint8Array): this {
    for (let i = 0; i < data.length; i += 32) {
      const word = new Uint8Array(32);
      word.set(data.subarray(i, i + 32));
      this.push(bytesToBigint(word))
        .push(offset + i)
        .op(MSTORE);
    }
    return this;
  }

  bytes(): Uint8Array {
    return Uint8Array.from(this.out);
  }
}

/** What the code generator may use for the program of one account. */
interface Context {
  rng: Rng;
  rules: ForkRules;
  /** Addresses worth calling, reading or paying. */
  targets: bigint[];
  /** The account this code runs as (for self-calls). */
  self: bigint;
  /** Snippets still allowed to nest more code (initcode within initcode). */
  nesting: number;
  /** Storage slot the next saved result goes to. */
  slot: number;
}

function word(ctx: Context): bigint {
  const r = ctx.rng;
  if (r.chance(0.5)) return r.pick(INTERESTING_WORDS);
  if (r.chance(0.5)) return BigInt(r.int(0x10000));
  if (r.chance(0.3)) return r.pick(ctx.targets);
  return r.word();
}

function offset(ctx: Context): bigint {
  return ctx.rng.chance(0.06) ? ctx.rng.pick(EDGE_OFFSETS) : ctx.rng.pick(SMALL_OFFSETS);
}

function size(ctx: Context): bigint {
  return ctx.rng.chance(0.05) ? ctx.rng.pick(EDGE_SIZES) : ctx.rng.pick(SMALL_SIZES);
}

/** The value on top of the stack goes to the next slot (a result the state root then shows). */
function save(a: Asm, ctx: Context): void {
  a.push(ctx.slot++ % 8).op(SSTORE);
}

function target(ctx: Context): bigint {
  const r = ctx.rng;
  if (r.chance(0.15)) return ctx.self;
  if (r.chance(0.15)) return BigInt(1 + r.int(0x11));
  if (r.chance(0.03)) return 0x100n;
  return r.pick(ctx.targets);
}

/** An input for a precompile: empty, short, of the right length with edge or random content. */
export function precompileInput(rng: Rng, address: number): Uint8Array {
  const choice = rng.int(10);
  if (choice === 0) return new Uint8Array(0);
  if (choice === 1) return rng.bytes(1 + rng.int(40));
  const lengths: Record<number, number[]> = {
    1: [128],
    5: [96],
    6: [128],
    7: [96],
    8: [0, 192, 384, 191],
    9: [213, 212],
    10: [192],
    11: [256],
    12: [160, 320, 480],
    13: [512],
    14: [288, 576],
    15: [384, 0],
    16: [64],
    17: [128],
    256: [160],
  };
  const n = rng.pick(lengths[address] ?? [32, 64, 100]);
  const data = choice < 5 ? new Uint8Array(n) : rng.bytes(n);
  if (address === 5 && n >= 96) {
    // modexp: small lengths (real work) or huge ones (a price past any gas).
    const len = (v: number) => {
      const w = new Uint8Array(32);
      w[31] = v & 0xff;
      w[30] = (v >>> 8) & 0xff;
      return w;
    };
    data.set(len(rng.int(40)), 0);
    data.set(rng.chance(0.1) ? new Uint8Array(32).fill(0xff) : len(rng.int(40)), 32);
    data.set(len(rng.int(40)), 64);
  }
  if ((address === 6 || address === 7) && choice === 4) {
    // The generator (1, 2), a point on the curve.
    data[31] = 1;
    data[63] = 2;
  }
  if (address === 9 && n === 213) {
    data.fill(0, 0, 3);
    data[3] = rng.int(16);
    data[212] = rng.pick([0, 1, 2]);
  }
  if (address === 1 && choice < 7) {
    data.fill(0, 32, 63);
    data[63] = rng.pick([27, 28, 29, 0]);
  }
  return data;
}

/** Initcode: what a CREATE runs (deploying code, reverting, failing, self-destructing, …). */
function initCode(ctx: Context): Uint8Array {
  const r = ctx.rng;
  const a = new Asm(ctx.rules.opcodes[PUSH0] === 1);
  const kind = r.int(12);
  const deploy = (runtime: Uint8Array) => {
    a.memory(0, runtime).push(runtime.length).push(0).op(RETURN);
  };
  switch (kind) {
    case 0:
      break; // empty
    case 1:
      a.push(0xbb).push(0).op(MSTORE).push(32).push(0).op(REVERT);
      break;
    case 2:
      a.op(INVALID);
      break;
    case 3: {
      // A loop that runs out of gas.
      const at = a.pc;
      a.op(JUMPDEST).push(at).op(JUMP);
      break;
    }
    case 4:
      a.push(r.pick(ctx.targets)).op(SELFDESTRUCT);
      break;
    case 5:
      // Code past EIP-170's limit (or exactly at it).
      a.push(r.chance(0.5) ? 0x6001 : 0x6000)
        .push(0)
        .op(RETURN);
      break;
    case 6:
      deploy(Uint8Array.of(0xef, ...r.bytes(r.int(4))));
      break;
    case 7:
      a.push(1).push(0).op(SSTORE).push(1).push(0).op(TSTORE);
      deploy(Uint8Array.of(0x60, 0x01, 0x60, 0x00, 0x55, 0x00));
      break;
    default: {
      if (ctx.nesting > 0 && r.chance(0.5)) {
        const inner: Context = { ...ctx, nesting: ctx.nesting - 1, slot: 0 };
        const body = program(inner, 1 + r.int(4));
        a.op(...body);
      }
      deploy(
        ctx.nesting > 0
          ? Uint8Array.from(program({ ...ctx, nesting: 0, slot: 0 }, 1 + r.int(4)))
          : r.bytes(r.int(8)),
      );
    }
  }
  return a.bytes();
}

type Snippet = (a: Asm, ctx: Context) => void;

const SNIPPETS: Array<[number, Snippet]> = [
  // Arithmetic on edge words.
  [
    6,
    (a, ctx) => {
      const op = ctx.rng.pick(WORD_OPS);
      const pops = OSAKA_TABLES.minStack[op] ?? 2;
      for (let i = 0; i < pops; i++) a.push(word(ctx));
      a.op(op);
      save(a, ctx);
    },
  ],
  // The environment (GAS and MSIZE included).
  [
    4,
    (a, ctx) => {
      a.op(ctx.rng.pick(ENV_OPS));
      save(a, ctx);
    },
  ],
  // Account reads.
  [
    3,
    (a, ctx) => {
      a.push(target(ctx)).op(ctx.rng.pick([BALANCE, EXTCODESIZE, EXTCODEHASH]));
      save(a, ctx);
    },
  ],
  [
    1,
    (a, ctx) => {
      a.push(size(ctx)).push(offset(ctx)).push(offset(ctx)).push(target(ctx)).op(EXTCODECOPY);
    },
  ],
  // Memory.
  [
    4,
    (a, ctx) => {
      const r = ctx.rng;
      switch (r.int(7)) {
        case 0:
          a.push(word(ctx)).push(offset(ctx)).op(MSTORE);
          break;
        case 1:
          a.push(word(ctx)).push(offset(ctx)).op(MSTORE8);
          break;
        case 2:
          a.push(offset(ctx)).op(MLOAD);
          save(a, ctx);
          break;
        case 3:
          a.push(size(ctx)).push(offset(ctx)).push(offset(ctx)).op(MCOPY);
          break;
        case 4:
          a.push(size(ctx))
            .push(offset(ctx))
            .push(offset(ctx))
            .op(r.pick([CALLDATACOPY, CODECOPY]));
          break;
        case 5:
          a.push(size(ctx)).push(offset(ctx)).op(KECCAK256);
          save(a, ctx);
          break;
        default:
          a.op(MSIZE);
          save(a, ctx);
      }
    },
  ],
  // Storage: set, reset, clear (refunds), read; transient storage.
  [
    5,
    (a, ctx) => {
      const r = ctx.rng;
      const slot = r.int(4);
      switch (r.int(5)) {
        case 0:
          a.push(r.pick([0n, 1n, 2n, word(ctx)]))
            .push(slot)
            .op(SSTORE);
          break;
        case 1:
          a.push(1).push(slot).op(SSTORE).push(0).push(slot).op(SSTORE);
          break;
        case 2:
          a.push(slot).op(SLOAD);
          save(a, ctx);
          break;
        case 3:
          a.push(word(ctx)).push(slot).op(TSTORE).push(slot).op(TLOAD);
          save(a, ctx);
          break;
        default:
          a.push(slot).op(TLOAD);
          save(a, ctx);
      }
    },
  ],
  // Logs.
  [
    2,
    (a, ctx) => {
      const topics = ctx.rng.int(5);
      for (let i = 0; i < topics; i++) a.push(word(ctx));
      a.push(size(ctx))
        .push(offset(ctx))
        .op(LOG0 + topics);
    },
  ],
  // Calls of every kind.
  [
    8,
    (a, ctx) => {
      const r = ctx.rng;
      const op = r.pick([CALL, CALL, CALLCODE, DELEGATECALL, STATICCALL]);
      const to = target(ctx);
      const precompile = to <= 0x11n || to === 0x100n;
      let inSize = size(ctx);
      const inOffset = r.chance(0.8) ? 0n : offset(ctx);
      if (precompile && r.chance(0.8)) {
        const input = precompileInput(r, Number(to));
        a.memory(0, input);
        inSize = BigInt(input.length);
      }
      a.push(r.chance(0.8) ? r.pick([0n, 32n, 64n]) : size(ctx));
      a.push(r.chance(0.8) ? 0n : offset(ctx));
      a.push(inSize).push(inOffset);
      if (op === CALL || op === CALLCODE) {
        if (r.chance(0.6)) a.push(0);
        else if (r.chance(0.3)) a.op(SELFBALANCE).push(r.int(2)).op(ADD);
        else a.push(r.pick([1n, 1000n, 10n ** 18n, U256]));
      }
      a.push(to);
      if (r.chance(0.5)) a.op(GAS);
      else a.push(r.pick([0n, 1n, 100n, 700n, 2300n, 5000n, 30000n, 100000n, BigInt(r.int(1 << 20)), U256]));
      a.op(op);
      if (r.chance(0.6)) save(a, ctx);
      else a.op(POP);
      if (r.chance(0.4)) {
        a.op(RETURNDATASIZE);
        save(a, ctx);
      }
    },
  ],
  // A precompile the fork has (or the next address), with an edge input and gas around its price.
  [
    3,
    (a, ctx) => {
      const r = ctx.rng;
      const addresses = [...precompilesFor(ctx.rules.precompiles).keys()];
      const address = r.chance(0.9) ? r.pick(addresses) : Math.max(...addresses) + 1;
      const input = precompileInput(r, address);
      a.memory(0, input);
      const op = r.pick([CALL, STATICCALL, DELEGATECALL, CALLCODE]);
      a.push(r.pick([0n, 32n, 64n, 128n]))
        .push(0)
        .push(input.length)
        .push(0);
      if (op === CALL || op === CALLCODE) a.push(r.chance(0.8) ? 0n : 1n);
      a.push(address);
      if (r.chance(0.5)) a.op(GAS);
      else a.push(r.pick([0n, 3000n, 3450n, 15n, 600n, 45000n, 100000n, BigInt(r.int(200000))]));
      a.op(op);
      save(a, ctx);
      a.push(0).op(MLOAD);
      save(a, ctx);
    },
  ],
  // RETURNDATACOPY at the edges of the last return data.
  [
    2,
    (a, ctx) => {
      const r = ctx.rng;
      a.push(r.pick([0n, 1n, 32n, 33n, 64n]));
      if (r.chance(0.5)) a.push(r.int(3)).op(RETURNDATASIZE, SUB);
      else a.push(r.pick([0n, 1n, 32n, U256]));
      a.push(offset(ctx)).op(RETURNDATACOPY);
    },
  ],
  // Creations: CREATE and CREATE2 (twice with one salt: a collision), with values.
  [
    4,
    (a, ctx) => {
      const r = ctx.rng;
      const code = initCode(ctx);
      a.memory(0, code);
      const op = r.pick([CREATE, CREATE2]);
      const times = op === CREATE2 && r.chance(0.3) ? 2 : 1;
      const salt = r.pick([0n, 1n, r.word()]);
      for (let i = 0; i < times; i++) {
        if (op === CREATE2) a.push(salt);
        a.push(r.chance(0.05) ? r.pick([0xc001n, 0xc000n, U256]) : BigInt(code.length)).push(0);
        if (r.chance(0.7)) a.push(0);
        else a.push(r.pick([1n, 1000n, 10n ** 18n, U256]));
        a.op(op);
        if (r.chance(0.5)) {
          // Call what was made.
          a.push(0).op(DUP1, DUP1, DUP1, DUP1, 0x85, GAS, CALL, POP);
        }
        save(a, ctx);
      }
    },
  ],
  // Jumps: over a snippet (valid), to a bad destination, conditionally.
  [
    2,
    (a, ctx) => {
      const r = ctx.rng;
      if (r.chance(0.5)) {
        const conditional = r.chance(0.5);
        if (conditional) a.push(r.int(2));
        const at = a.pushWide(0, 2);
        a.op(conditional ? JUMPI : JUMP);
        a.push(r.int(2)).op(ISZERO, ISZERO);
        const dest = a.pc;
        a.op(JUMPDEST);
        a.patch(at, dest, 2);
      } else {
        a.push(r.int(2))
          .push(r.pick([0n, 1n, 3n, BigInt(a.pc + 2), 0xffffn, U256]))
          .op(r.pick([JUMP, JUMPI]));
      }
    },
  ],
  // Stack edges: an op with too little on the stack, a loop that pushes until 1024 overflows.
  [
    1,
    (a, ctx) => {
      if (ctx.rng.chance(0.5)) {
        a.op(ctx.rng.pick([ADD, POP, SSTORE, 0x90, 0x8f, CALL]));
      } else {
        const at = a.pc;
        a.op(JUMPDEST, ADDRESS).push(at).op(JUMP);
      }
    },
  ],
  // Recursion: the account calls itself with all its gas, or all but 100 (before EIP-150 a call may
  // not ask for more than is left after its own price, and so reaches the depth limit).
  [
    1,
    (a, ctx) => {
      const r = ctx.rng;
      const withValue = r.chance(0.5);
      a.push(0).push(0).push(0).push(0);
      if (withValue) a.push(0);
      a.op(ADDRESS);
      if (r.chance(0.5)) a.op(GAS);
      else a.push(100).op(GAS, SUB);
      a.op(withValue ? CALL : r.pick([DELEGATECALL, STATICCALL]));
      save(a, ctx);
    },
  ],
  // BLOCKHASH (the 256 before, the current, far past) and BLOBHASH.
  [
    1,
    (a, ctx) => {
      if (ctx.rng.chance(0.5)) a.push(ctx.rng.pick([0n, 1n, 2n, 256n, 257n])).op(NUMBER, SUB, BLOCKHASH);
      else a.push(ctx.rng.pick([0n, 1n, 5n, U256])).op(BLOBHASH);
      save(a, ctx);
    },
  ],
  // EXP with a large exponent (its price by byte).
  [
    1,
    (a, ctx) => {
      a.push(word(ctx)).push(word(ctx)).op(EXP);
      save(a, ctx);
    },
  ],
  // A calldata word.
  [
    1,
    (a, ctx) => {
      a.push(ctx.rng.pick([0n, 4n, 32n, U256])).op(CALLDATALOAD);
      save(a, ctx);
    },
  ],
];
const SNIPPET_WEIGHT = SNIPPETS.reduce((sum, [w]) => sum + w, 0);

/** The last op of a program (or none: running off the end stops). */
function ending(a: Asm, ctx: Context): void {
  const r = ctx.rng;
  switch (r.int(10)) {
    case 0:
      a.op(STOP);
      break;
    case 1:
      a.push(size(ctx)).push(offset(ctx)).op(RETURN);
      break;
    case 2:
      a.push(r.pick([0n, 32n, 64n]))
        .push(0)
        .op(REVERT);
      break;
    case 3:
      a.op(INVALID);
      break;
    case 4:
      a.push(target(ctx)).op(SELFDESTRUCT);
      break;
    case 5: {
      const at = a.pc;
      a.op(JUMPDEST).push(at).op(JUMP);
      break;
    }
    case 6:
      a.push(32).push(0).op(RETURN);
      break;
    default:
  }
}

/** A program of `n` snippets and an ending. */
function program(ctx: Context, n: number): number[] {
  const a = new Asm(ctx.rules.opcodes[PUSH0] === 1);
  for (let i = 0; i < n; i++) {
    let roll = ctx.rng.int(SNIPPET_WEIGHT);
    for (const [weight, snippet] of SNIPPETS) {
      roll -= weight;
      if (roll < 0) {
        snippet(a, ctx);
        break;
      }
    }
  }
  ending(a, ctx);
  return a.out;
}

/** A delegation designator (EIP-7702) to `address`. */
export function delegation(address: bigint): Uint8Array {
  const out = new Uint8Array(23);
  out.set([0xef, 0x01, 0x00]);
  for (let i = 0; i < 20; i++) out[22 - i] = Number((address >> BigInt(8 * i)) & 0xffn);
  return out;
}

/** Case `index` of the run seeded with `seed`. */
export function generateCase(seed: number, index: number, fork?: ForkName): FuzzCase {
  const rng = new Rng((seed ^ Math.imul(index + 1, 0x9e3779b1)) >>> 0);
  const chosen = fork ?? rng.pick(FUZZ_FORKS);
  const rules = forkRules(chosen);
  const contracts = Array.from({ length: 2 + rng.int(4) }, (_, i) => CONTRACT_BASE + BigInt(i));
  const targets = [...contracts, ...KEY_ADDRESSES, EMPTY_ACCOUNT, ABSENT, COINBASE, DELEGATED, 0x1n, 0x4n];
  const accounts: FuzzAccount[] = [];
  for (const address of contracts) {
    const ctx: Context = { rng, rules, targets, self: address, nesting: 1, slot: 0 };
    const storage = new Map<bigint, bigint>();
    const filled = rng.chance(0.5);
    for (let s = 0; s < 4 && filled; s++) {
      if (rng.chance(0.5)) storage.set(BigInt(s), word(ctx));
    }
    accounts.push({
      address,
      nonce: rng.pick([0n, 1n, 1n, 5n, (1n << 64n) - 1n]),
      balance: rng.pick([0n, 1n, 10n ** 6n, 10n ** 18n]),
      code: Uint8Array.from(program(ctx, 1 + rng.int(10))),
      storage,
    });
  }
  const richest = 10n ** 20n;
  accounts.push({
    address: KEY_ADDRESSES[0] as bigint,
    nonce: rng.pick([0n, 0n, 3n]),
    balance: rng.chance(0.9) ? richest : 10n ** 9n,
    code: new Uint8Array(0),
    storage: new Map(),
  });
  accounts.push({
    address: KEY_ADDRESSES[1] as bigint,
    nonce: 0n,
    balance: richest,
    // Before EIP-7702 a sender with code is refused (EIP-3607); after it, a delegated one is not.
    code: rng.chance(0.05)
      ? rng.chance(0.5)
        ? delegation(contracts[0] as bigint)
        : Uint8Array.of(0)
      : new Uint8Array(0),
    storage: new Map(),
  });
  // An EOA delegated (EIP-7702) to a contract, a precompile, another delegated account or nothing
  // there; before Prague its code is just code that starts with 0xEF.
  accounts.push({
    address: DELEGATED,
    nonce: 1n,
    balance: rng.pick([0n, 10n ** 18n]),
    code: delegation(rng.pick([contracts[0] as bigint, 0x4n, KEY_ADDRESSES[1] as bigint, ABSENT])),
    storage: new Map(),
  });
  if (rng.chance(0.5))
    accounts.push({
      address: EMPTY_ACCOUNT,
      nonce: 0n,
      balance: 0n,
      code: new Uint8Array(0),
      storage: new Map(),
    });
  // An account in the way of the first creation of a contract or sender (EIP-684, EIP-7610).
  if (rng.chance(0.2)) {
    const creator = rng.chance(0.5) ? (contracts[0] as bigint) : (KEY_ADDRESSES[0] as bigint);
    const nonce = accounts.find((x) => x.address === creator)?.nonce ?? 0n;
    const kind = rng.int(3);
    accounts.push({
      address: createAddress(creator, nonce),
      nonce: kind === 0 ? 1n : 0n,
      balance: 1n,
      code: kind === 1 ? Uint8Array.of(0) : new Uint8Array(0),
      storage: kind === 2 ? new Map([[1n, 1n]]) : new Map(),
    });
  }
  if (rng.chance(0.1)) {
    // A CREATE2 target already taken (empty initcode, salt 0).
    accounts.push({
      address: create2Address(contracts[0] as bigint, 0n, new Uint8Array(0)),
      nonce: 1n,
      balance: 0n,
      code: new Uint8Array(0),
      storage: new Map(),
    });
  }
  const baseFee = rules.baseFee ? rng.pick([7n, 1000n, 10n ** 9n]) : 0n;
  const block: FuzzBlock = {
    number: BigInt(1000 + rng.int(1000)),
    timestamp: BigInt(1_700_000_000 + rng.int(1000)),
    coinbase: rng.chance(0.8) ? COINBASE : rng.pick(targets),
    gasLimit: 30_000_000n,
    difficulty: rules.proofOfStake ? 0n : BigInt(131072 + rng.int(1 << 20)),
    prevRandao: rules.proofOfStake ? rng.word() : 0n,
    baseFee,
    excessBlobGas: rules.blobs ? rng.pick([0n, 0n, 10n ** 6n, 10n ** 8n]) : 0n,
  };
  const txs: FuzzTx[] = [];
  const count = 1 + rng.int(4);
  for (let i = 0; i < count; i++) txs.push(transaction(rng, rules, contracts, targets, baseFee));
  return { index, fork: chosen, block, accounts, txs };
}

function transaction(
  rng: Rng,
  rules: ForkRules,
  contracts: bigint[],
  targets: bigint[],
  baseFee: bigint,
): FuzzTx {
  const allowed = [...rules.txTypes];
  // Now and then a type the fork does not know (refused on both sides).
  const type = rng.chance(0.05) ? rng.int(5) : rng.pick(allowed);
  const creation = rng.chance(0.1) && type !== 3 && type !== 4;
  const ctx: Context = { rng, rules, targets, self: 0n, nesting: 1, slot: 0 };
  const to = creation ? null : rng.chance(0.85) ? rng.pick(contracts) : target(ctx);
  const data = creation
    ? initCode(ctx)
    : to !== null && (to <= 0x11n || to === 0x100n)
      ? precompileInput(rng, Number(to))
      : rng.chance(0.5)
        ? new Uint8Array(0)
        : rng.bytes(rng.int(70));
  const price = baseFee + rng.pick([0n, 1n, 1000n]);
  const tx: FuzzTx = {
    type,
    sender: rng.chance(0.8) ? 0 : 1,
    nonceDelta: rng.chance(0.03) ? rng.pick([-1n, 1n]) : 0n,
    to,
    value: rng.chance(0.7) ? 0n : rng.chance(0.1) ? 10n ** 21n : rng.pick([1n, 10n ** 15n]),
    gasLimit: rng.chance(0.05)
      ? rng.pick([21000n, 21001n, 53000n, (1n << 24n) + 1n, 30_000_001n])
      : rng.pick([60_000n, 200_000n, 1_000_000n, 3_000_000n]),
    data,
    gasPrice: rng.chance(0.03) && baseFee > 0n ? baseFee - 1n : price,
    maxFeePerGas: rng.chance(0.03) && baseFee > 0n ? baseFee - 1n : price + rng.pick([0n, 5n]),
    maxPriorityFeePerGas: rng.chance(0.03) ? 10n ** 12n : rng.pick([0n, 1n, 2n]),
    accessList: [],
    blobVersionedHashes: [],
    maxFeePerBlobGas: 0n,
    authorizations: [],
  };
  if (type !== 0 && rng.chance(0.5)) {
    for (let i = rng.int(3); i > 0; i--) {
      tx.accessList.push({
        address: rng.pick(targets),
        storageKeys: Array.from({ length: rng.int(3) }, () => BigInt(rng.int(4))),
      });
    }
  }
  if (type === 3) {
    const n = rng.chance(0.05) ? rng.pick([0, 7, 10]) : 1 + rng.int(3);
    for (let i = 0; i < n; i++) {
      const hash = rng.word();
      const version = rng.chance(0.03) ? 2n : 1n;
      tx.blobVersionedHashes.push((hash & ((1n << 248n) - 1n)) | (version << 248n));
    }
    tx.maxFeePerBlobGas = rng.chance(0.05) ? 0n : rng.pick([1n, 10n ** 9n]);
  }
  if (type === 4) {
    const n = rng.chance(0.05) ? 0 : 1 + rng.int(3);
    for (let i = 0; i < n; i++) {
      tx.authorizations.push({
        chainId: rng.chance(0.85) ? rng.pick([0n, CHAIN_ID]) : 2n,
        address: rng.chance(0.15) ? 0n : rng.chance(0.1) ? BigInt(1 + rng.int(10)) : rng.pick(contracts),
        signer: rng.int(3),
        nonceDelta: rng.chance(0.1) ? rng.pick([-1n, 1n, 2n]) : 0n,
        highS: rng.chance(0.03),
      });
    }
  }
  return tx;
}
