import { keccak256 } from '../primitives/keccak.ts';
import { analyse, type Code } from './code.ts';
import type { BlockEnv, TxEnv } from './env.ts';
import type { ForkRules } from './forks.ts';
import type { EvmTracer, FrameError, FrameKind, StepTracer, StepView } from './hooks.ts';
import { Op, type OpTables, opTables } from './opcodes.ts';
import { type Precompile, PrecompileError } from './precompiles/index.ts';
import { encodeBigint, encodeBytes, encodeList } from './rlp.ts';
import { Account, type WorldState } from './state.ts';
import {
  ADDRESS_MASK,
  addressBytes,
  bytesToBigint,
  loadWord,
  readWord,
  SIGN_BIT,
  WORD_MASK,
  WORD_MODULUS,
  wordBytes,
  writeWord,
} from './words.ts';

/**
 * The interpreter: one synchronous loop per frame over code analysed once per code hash, with gas
 * as a JS number, and per call depth a pooled frame with a preallocated stack and a memory buffer
 * that grows by doubling and is kept for the next frame at that depth. Calls do not recurse in JS: a CALL or CREATE
 * saves the frame's registers and returns to `runFrames`, which runs the child and then resumes the
 * parent, so 1024 nested calls need no deep JS stack.
 *
 * Gas: a frame's gas is a number up to GAS_CHUNK; a transaction's gas limit can exceed 2^53 (state
 * tests use 2^63), so the rest waits in a bigint `bank` that is drawn on only when the number runs
 * out. The hot path compares numbers; only GAS, calls and the rare top-up see the bank.
 */

const STACK_LIMIT = 1024;
const CALL_DEPTH_LIMIT = 1024;
/** Largest memory a frame may address: beyond it expansion costs more gas than any block has. */
const MEMORY_LIMIT = 0x1_0000_0000;
const MEMORY_LIMIT_BIG = BigInt(MEMORY_LIMIT);
/** Most gas a frame holds as a number; the rest is in its bank (see above). */
const GAS_CHUNK = 2 ** 52;
/** A frame's first memory buffer, and the largest one a pooled frame keeps for the next. */
const MEMORY_INITIAL = 1024;
const MEMORY_KEPT = 1024 * 1024;
const GAS_CHUNK_BIG = BigInt(GAS_CHUNK);
const CALL_STIPEND = 2300;
const CALL_VALUE_GAS = 9000;
const NEW_ACCOUNT_GAS = 25000;
const CODE_DEPOSIT_GAS = 200;
const NO_BYTES = new Uint8Array(0);
const EMPTY_KECCAK = bytesToBigint(keccak256(NO_BYTES));

// How a frame's loop ends.
const STOPPED = 1;
const RETURNED = 2;
const REVERTED = 3;
const FAILED = 4;
/** The frame started a child frame (m.child) and waits for it. */
const SUSPENDED = 5;
/** A call or creation finished at once (a precompile, no code, a refusal): the frame goes on. */
const CONTINUE = 0;

// Frame errors, as indexes into ERROR_NAMES.
const E_OUT_OF_GAS = 0;
const E_CODE_STORE_OUT_OF_GAS = 1;
const E_INVALID_JUMP = 2;
const E_INVALID_OPCODE = 3;
const E_STACK_UNDERFLOW = 4;
const E_STACK_OVERFLOW = 5;
const E_STATIC = 6;
const E_INSUFFICIENT_BALANCE = 7;
const E_CALL_DEPTH = 8;
const E_COLLISION = 9;
const E_CODE_SIZE = 10;
const E_INITCODE_SIZE = 11;
const E_INVALID_CODE = 12;
const E_PRECOMPILE = 13;
const E_RETURN_DATA = 14;
const E_NONCE_OVERFLOW = 15;
const ERROR_NAMES: readonly FrameError[] = [
  'out of gas',
  'code store out of gas',
  'invalid jump',
  'invalid opcode',
  'stack underflow',
  'stack overflow',
  'static state change',
  'insufficient balance',
  'call depth',
  'create collision',
  'code size',
  'initcode size',
  'invalid code',
  'precompile failed',
  'return data out of bounds',
  'nonce overflow',
];

const {
  CREATE: OP_CREATE,
  CALL: OP_CALL,
  CALLCODE: OP_CALLCODE,
  DELEGATECALL: OP_DELEGATECALL,
  CREATE2: OP_CREATE2,
  STATICCALL: OP_STATICCALL,
  SSTORE: OP_SSTORE,
} = Op;

const KIND_OF: Readonly<Record<number, FrameKind>> = {
  [OP_CREATE]: 'create',
  [OP_CALL]: 'call',
  [OP_CALLCODE]: 'callcode',
  [OP_DELEGATECALL]: 'delegatecall',
  [OP_CREATE2]: 'create2',
  [OP_STATICCALL]: 'staticcall',
};

const NO_ACCOUNT = new Account(-1n);
const NO_CODE: Code = analyse(NO_BYTES);

/** One call frame's registers. Frames are pooled by depth and reused. */
export class Frame implements StepView {
  readonly stack: bigint[] = new Array<bigint>(STACK_LIMIT).fill(0n);
  sp = 0;
  pc = 0;
  gas = 0;
  bank = 0n;
  code: Code = NO_CODE;
  /** The frame's memory: a buffer kept by the pooled frame, grown by doubling; memSize is in use. */
  memory = new Uint8Array(MEMORY_INITIAL);
  view = new DataView(this.memory.buffer);
  memSize = 0;
  /** Bytes of `memory` below this may hold an earlier frame's data; above it the buffer is zero. */
  dirty = 0;
  returnData: Uint8Array = NO_BYTES;
  /** The opcode that made the frame (OP_CALL or OP_CREATE for a transaction's own). */
  op: number = OP_CALL;
  depth = 0;
  address = 0n;
  caller = 0n;
  value = 0n;
  account: Account = NO_ACCOUNT;
  input: Uint8Array = NO_BYTES;
  isStatic = false;
  checkpoint = 0;
  output: Uint8Array = NO_BYTES;
  error = -1;
  /** Where the parent wants the output (calls). */
  retOffset = 0;
  retSize = 0;
  /** Gas the frame was given, for tracers. */
  startGas = 0n;
  /** The op that failed and the stack it found (tracers); the SSTORE sentry case. */
  failedOp = -1;
  failedStack = 0;
  sentry = false;
  parent: Frame | null = null;
  /** For a step tracer: the op about to run, and the refund counter (kept only while tracing). */
  opcode = 0;
  refund = 0;
}

const framePool: Frame[] = [];
function frameAt(depth: number): Frame {
  let f = framePool[depth];
  if (f === undefined) {
    f = new Frame();
    framePool[depth] = f;
  }
  return f;
}

/** How a message (a transaction's call or creation, or a system call) ended. */
export interface MessageResult {
  success: boolean;
  /** Gas left, to be refunded to the sender. */
  gasLeft: bigint;
  /** Returned or reverted data; a creation's output is its deployed code. */
  output: Uint8Array;
  error: FrameError | 'revert' | null;
  createdAddress: bigint | null;
}

/**
 * Everything one run of the interpreter shares: the fork's rules and tables, the state, the block
 * and transaction, precompiles, the tracer, the memory buffer.
 */
export class Machine {
  readonly tables: OpTables;
  tx: TxEnv = { origin: 0n, gasPrice: 0n, blobHashes: [], blobBaseFee: 0n };
  /** The child frame a SUSPENDED frame waits for. */
  child: Frame | null = null;
  // The outcome of the last frame or immediate call: read by the parent or the caller of runMessage.
  resultStatus = STOPPED;
  resultOutput: Uint8Array = NO_BYTES;
  resultGas = 0;
  resultBank = 0n;
  resultError = -1;
  resultAddress = -1n;
  /** The last frame was a Frontier creation that could not pay for its code (kept, codeless). */
  resultShortfall = false;

  constructor(
    readonly rules: ForkRules,
    readonly world: WorldState,
    readonly block: BlockEnv,
    readonly precompiles: ReadonlyMap<number, Precompile>,
    public tracer: EvmTracer | null = null,
  ) {
    this.tables = opTables(rules);
  }

  /** The precompiles by full address when some were moved (eth_simulateV1); null: `precompiles`. */
  relocated: ReadonlyMap<bigint, Precompile> | null = null;

  precompileAt(address: bigint): Precompile | undefined {
    if (this.relocated !== null) return this.relocated.get(address);
    return address <= 0xffffn ? this.precompiles.get(Number(address)) : undefined;
  }

  /** Runs a transaction's (or system) call; `gas` is what is left after intrinsic gas. */
  call(caller: bigint, to: bigint, value: bigint, input: Uint8Array, gas: bigint): MessageResult {
    const world = this.world;
    const target = world.account(to);
    const code = this.rules.delegation ? resolveDelegation(this, target) : target;
    const frame = enterCall(
      this,
      null,
      OP_CALL,
      caller,
      to,
      to,
      code,
      value,
      input,
      gasNumber(gas),
      gasBank(gas),
      false,
      0,
      0,
      0,
    );
    if (frame !== null) runFrames(this, frame);
    return this.messageResult(false);
  }

  /** Runs a transaction's creation at `address` (the sender's nonce is raised here, as by CREATE). */
  create(caller: bigint, value: bigint, initCode: Uint8Array, gas: bigint): MessageResult {
    const frame = enterCreate(
      this,
      null,
      OP_CREATE,
      caller,
      value,
      initCode,
      0n,
      gasNumber(gas),
      gasBank(gas),
      0,
    );
    if (frame !== null) runFrames(this, frame);
    return this.messageResult(true);
  }

  private messageResult(creation: boolean): MessageResult {
    const status = this.resultStatus;
    // geth counts a Frontier creation that kept its account but not its code as failed.
    const success = (status === STOPPED || status === RETURNED) && !this.resultShortfall;
    return {
      success,
      gasLeft: BigInt(this.resultGas) + this.resultBank,
      output: this.resultOutput,
      error: success
        ? null
        : status === REVERTED
          ? 'revert'
          : this.resultShortfall
            ? 'code store out of gas'
            : (ERROR_NAMES[this.resultError] ?? 'out of gas'),
      createdAddress: creation && success ? this.resultAddress : null,
    };
  }
}

function gasNumber(gas: bigint): number {
  return gas > GAS_CHUNK_BIG ? GAS_CHUNK : Number(gas);
}
function gasBank(gas: bigint): bigint {
  return gas > GAS_CHUNK_BIG ? gas - GAS_CHUNK_BIG : 0n;
}

/** Draws on the frame's bank so that `need` gas is there; the new gas, or -1 if it cannot be. */
function topUp(f: Frame, gas: number, need: number): number {
  if (f.bank === 0n || need === Number.POSITIVE_INFINITY) return -1;
  const total = BigInt(gas) + f.bank;
  const wanted = BigInt(need);
  if (total < wanted) return -1;
  const target = total < GAS_CHUNK_BIG + wanted ? total : GAS_CHUNK_BIG + wanted;
  f.bank = total - target;
  return Number(target);
}

/** Adds gas handed back by a child; what exceeds GAS_CHUNK goes to the bank. */
function giveBack(f: Frame, gas: number, bank: bigint): void {
  let g = f.gas + gas;
  let b = f.bank + bank;
  if (g > GAS_CHUNK) {
    b += BigInt(g - GAS_CHUNK);
    g = GAS_CHUNK;
  }
  f.gas = g;
  f.bank = b;
}

/** Gas of `words` words of memory: 3 per word plus words²/512, exact below 2^32 words. */
function memoryCost(words: number): number {
  const q = Math.floor(words / 512);
  const r = words - q * 512;
  return 3 * words + 512 * q * q + 2 * q * r + Math.floor((r * r) / 512);
}

/** End of the memory region [offset, offset+size) with size > 0, or -1 if beyond any gas. */
function regionEnd(offset: bigint, size: bigint): number {
  if (offset >= MEMORY_LIMIT_BIG || size >= MEMORY_LIMIT_BIG) return -1;
  const end = Number(offset) + Number(size);
  return end > MEMORY_LIMIT ? -1 : end;
}

/** Expands the frame's memory to cover `end` (> its size), paying for it; new gas, or -1. */
function expandMemory(f: Frame, end: number, gas: number): number {
  const words = Math.ceil(end / 32);
  const cost = memoryCost(words) - memoryCost(f.memSize / 32);
  let g = gas;
  if (cost > g) {
    g = topUp(f, g, cost);
    if (g < 0) return -1;
  }
  growMemory(f, words * 32);
  return g - cost;
}

function growMemory(f: Frame, size: number): void {
  const from = f.memSize;
  if (size > f.memory.length) {
    let capacity = Math.max(f.memory.length * 2, MEMORY_INITIAL);
    while (capacity < size) capacity *= 2;
    const grown = new Uint8Array(capacity);
    grown.set(f.memory.subarray(0, from));
    f.memory = grown;
    f.view = new DataView(grown.buffer);
    f.dirty = from;
  } else if (from < f.dirty) {
    // An earlier frame at this depth may have left its bytes here.
    f.memory.fill(0, from, Math.min(size, f.dirty));
  }
  if (size > f.dirty) f.dirty = size;
  f.memSize = size;
}

/** A pooled frame's memory for a new frame: emptied, and not kept if a past frame grew it large. */
function resetMemory(f: Frame): void {
  f.memSize = 0;
  if (f.memory.length > MEMORY_KEPT) {
    f.memory = new Uint8Array(MEMORY_INITIAL);
    f.view = new DataView(f.memory.buffer);
    f.dirty = 0;
  }
}

/** Copies `src[srcOffset..srcOffset+size)` into memory at `at`, zeros beyond the end of `src`. */
function copyToMemory(f: Frame, at: number, src: Uint8Array, srcOffset: bigint, size: number): void {
  const mem = f.memory;
  if (srcOffset >= BigInt(src.length)) {
    mem.fill(0, at, at + size);
    return;
  }
  const from = Number(srcOffset);
  const available = Math.min(size, src.length - from);
  mem.set(src.subarray(from, from + available), at);
  if (available < size) mem.fill(0, at + available, at + size);
}

function words(size: number): number {
  return Math.ceil(size / 32);
}

function byteLength(value: bigint): number {
  if (value === 0n) return 0;
  return Math.ceil(value.toString(16).length / 2);
}

/** EIP-7702: the account whose code runs when `account` is called (itself unless it delegates). */
function resolveDelegation(m: Machine, account: Account): Account {
  const target = delegationTarget(m.world, account);
  return target === null ? account : m.world.account(target);
}

/** The address an EIP-7702 delegation designator (0xef0100 ‖ address) points to, or null. */
export function delegationTarget(world: WorldState, account: Account): bigint | null {
  if (!account.hasCode) return null;
  const code = account.code(world.reader);
  if (code.length !== 23 || code[0] !== 0xef || code[1] !== 0x01 || code[2] !== 0x00) return null;
  return bytesToBigint(code, 3, 20);
}

// ------------------------------------------------------------------------------------------------
// The loop

function run(m: Machine, f: Frame): number {
  const code = f.code.bytes;
  const codeLength = f.code.length;
  const jumpdests = f.code.jumpdests;
  const pushes = f.code.pushes;
  const tables = m.tables;
  const staticGas = tables.gas;
  const minStack = tables.minStack;
  const maxStack = tables.maxStack;
  const rules = m.rules;
  const world = m.world;
  const s = f.stack;
  const step: StepTracer | null = m.tracer?.step ?? null;
  let sp = f.sp;
  let pc = f.pc;
  let gas = f.gas;
  let mem = f.memory;
  let view = f.view;
  let status = 0;
  let error = -1;
  let op = 0;

  loop: for (;;) {
    op = code[pc] as number;
    if (step !== null) {
      f.pc = pc;
      f.sp = sp;
      f.gas = gas;
      f.opcode = op;
      f.refund = world.refund;
      step.step(f);
    }
    if (sp < (minStack[op] as number)) {
      error = rules.opcodes[op] === 1 ? E_STACK_UNDERFLOW : E_INVALID_OPCODE;
      break;
    }
    if (sp > (maxStack[op] as number)) {
      error = E_STACK_OVERFLOW;
      break;
    }
    const cost = staticGas[op] as number;
    if (cost > gas) {
      if (cost === Number.POSITIVE_INFINITY) {
        error = E_INVALID_OPCODE;
        break;
      }
      gas = topUp(f, gas, cost);
      if (gas < 0) {
        error = E_OUT_OF_GAS;
        break;
      }
    }
    gas -= cost;

    switch (op) {
      case 0x00: // STOP
        status = STOPPED;
        break loop;
      case 0x01: {
        // ADD
        const r = (s[sp - 1] as bigint) + (s[sp - 2] as bigint);
        s[sp - 2] = r > WORD_MASK ? r - WORD_MODULUS : r;
        sp--;
        break;
      }
      case 0x02: {
        // MUL
        const r = (s[sp - 1] as bigint) * (s[sp - 2] as bigint);
        s[sp - 2] = r > WORD_MASK ? r & WORD_MASK : r;
        sp--;
        break;
      }
      case 0x03: {
        // SUB
        const r = (s[sp - 1] as bigint) - (s[sp - 2] as bigint);
        s[sp - 2] = r < 0n ? r + WORD_MODULUS : r;
        sp--;
        break;
      }
      case 0x04: {
        // DIV
        const b = s[sp - 2] as bigint;
        s[sp - 2] = b === 0n ? 0n : (s[sp - 1] as bigint) / b;
        sp--;
        break;
      }
      case 0x05: {
        // SDIV
        const a = s[sp - 1] as bigint;
        const b = s[sp - 2] as bigint;
        if (b === 0n) s[sp - 2] = 0n;
        else {
          const q = (a >= SIGN_BIT ? a - WORD_MODULUS : a) / (b >= SIGN_BIT ? b - WORD_MODULUS : b);
          s[sp - 2] = q < 0n ? q + WORD_MODULUS : q & WORD_MASK;
        }
        sp--;
        break;
      }
      case 0x06: {
        // MOD
        const b = s[sp - 2] as bigint;
        s[sp - 2] = b === 0n ? 0n : (s[sp - 1] as bigint) % b;
        sp--;
        break;
      }
      case 0x07: {
        // SMOD
        const a = s[sp - 1] as bigint;
        const b = s[sp - 2] as bigint;
        if (b === 0n) s[sp - 2] = 0n;
        else {
          const r = (a >= SIGN_BIT ? a - WORD_MODULUS : a) % (b >= SIGN_BIT ? b - WORD_MODULUS : b);
          s[sp - 2] = r < 0n ? r + WORD_MODULUS : r;
        }
        sp--;
        break;
      }
      case 0x08: {
        // ADDMOD
        const n = s[sp - 3] as bigint;
        s[sp - 3] = n === 0n ? 0n : ((s[sp - 1] as bigint) + (s[sp - 2] as bigint)) % n;
        sp -= 2;
        break;
      }
      case 0x09: {
        // MULMOD
        const n = s[sp - 3] as bigint;
        s[sp - 3] = n === 0n ? 0n : ((s[sp - 1] as bigint) * (s[sp - 2] as bigint)) % n;
        sp -= 2;
        break;
      }
      case 0x0a: {
        // EXP
        const base = s[sp - 1] as bigint;
        const exponent = s[sp - 2] as bigint;
        const extra = rules.expByteGas * byteLength(exponent);
        if (extra > gas) {
          gas = topUp(f, gas, extra);
          if (gas < 0) {
            error = E_OUT_OF_GAS;
            break loop;
          }
        }
        gas -= extra;
        s[sp - 2] = exp(base, exponent);
        sp--;
        break;
      }
      case 0x0b: {
        // SIGNEXTEND
        const b = s[sp - 1] as bigint;
        if (b < 31n) {
          const x = s[sp - 2] as bigint;
          const bit = b * 8n + 7n;
          const low = (1n << (bit + 1n)) - 1n;
          s[sp - 2] = ((x >> bit) & 1n) === 1n ? (x | (WORD_MASK ^ low)) & WORD_MASK : x & low;
        }
        sp--;
        break;
      }
      case 0x10: // LT
        s[sp - 2] = (s[sp - 1] as bigint) < (s[sp - 2] as bigint) ? 1n : 0n;
        sp--;
        break;
      case 0x11: // GT
        s[sp - 2] = (s[sp - 1] as bigint) > (s[sp - 2] as bigint) ? 1n : 0n;
        sp--;
        break;
      case 0x12: {
        // SLT
        const a = s[sp - 1] as bigint;
        const b = s[sp - 2] as bigint;
        const an = a >= SIGN_BIT;
        s[sp - 2] = an !== b >= SIGN_BIT ? (an ? 1n : 0n) : a < b ? 1n : 0n;
        sp--;
        break;
      }
      case 0x13: {
        // SGT
        const a = s[sp - 1] as bigint;
        const b = s[sp - 2] as bigint;
        const an = a >= SIGN_BIT;
        s[sp - 2] = an !== b >= SIGN_BIT ? (an ? 0n : 1n) : a > b ? 1n : 0n;
        sp--;
        break;
      }
      case 0x14: // EQ
        s[sp - 2] = s[sp - 1] === s[sp - 2] ? 1n : 0n;
        sp--;
        break;
      case 0x15: // ISZERO
        s[sp - 1] = s[sp - 1] === 0n ? 1n : 0n;
        break;
      case 0x16: // AND
        s[sp - 2] = (s[sp - 1] as bigint) & (s[sp - 2] as bigint);
        sp--;
        break;
      case 0x17: // OR
        s[sp - 2] = (s[sp - 1] as bigint) | (s[sp - 2] as bigint);
        sp--;
        break;
      case 0x18: // XOR
        s[sp - 2] = (s[sp - 1] as bigint) ^ (s[sp - 2] as bigint);
        sp--;
        break;
      case 0x19: // NOT
        s[sp - 1] = WORD_MASK ^ (s[sp - 1] as bigint);
        break;
      case 0x1a: {
        // BYTE
        const i = s[sp - 1] as bigint;
        s[sp - 2] = i < 32n ? ((s[sp - 2] as bigint) >> (8n * (31n - i))) & 0xffn : 0n;
        sp--;
        break;
      }
      case 0x1b: {
        // SHL
        const shift = s[sp - 1] as bigint;
        if (shift < 256n) {
          const r = (s[sp - 2] as bigint) << shift;
          s[sp - 2] = r > WORD_MASK ? r & WORD_MASK : r;
        } else s[sp - 2] = 0n;
        sp--;
        break;
      }
      case 0x1c: {
        // SHR
        const shift = s[sp - 1] as bigint;
        s[sp - 2] = shift < 256n ? (s[sp - 2] as bigint) >> shift : 0n;
        sp--;
        break;
      }
      case 0x1d: {
        // SAR
        const shift = s[sp - 1] as bigint;
        const v = s[sp - 2] as bigint;
        if (v < SIGN_BIT) s[sp - 2] = shift < 256n ? v >> shift : 0n;
        else s[sp - 2] = shift < 256n ? ((v - WORD_MODULUS) >> shift) & WORD_MASK : WORD_MASK;
        sp--;
        break;
      }
      case 0x1e: {
        // CLZ (EIP-7939)
        const v = s[sp - 1] as bigint;
        s[sp - 1] = BigInt(v === 0n ? 256 : 256 - v.toString(2).length);
        break;
      }
      case 0x20: {
        // KECCAK256
        const offset = s[sp - 1] as bigint;
        const size = s[sp - 2] as bigint;
        sp--;
        if (size === 0n) {
          s[sp - 1] = EMPTY_KECCAK;
          break;
        }
        const end = regionEnd(offset, size);
        if (end < 0) {
          error = E_OUT_OF_GAS;
          break loop;
        }
        const n = Number(size);
        const extra = 6 * words(n);
        if (extra > gas) {
          gas = topUp(f, gas, extra);
          if (gas < 0) {
            error = E_OUT_OF_GAS;
            break loop;
          }
        }
        gas -= extra;
        if (end > f.memSize) {
          gas = expandMemory(f, end, gas);
          if (gas < 0) {
            error = E_OUT_OF_GAS;
            break loop;
          }
          mem = f.memory;
          view = f.view;
        }
        const at = end - n;
        s[sp - 1] = bytesToBigint(keccak256(mem.subarray(at, at + n)), 0, 32);
        break;
      }
      case 0x30: // ADDRESS
        s[sp++] = f.address;
        break;
      case 0x31: {
        // BALANCE
        const account = world.account((s[sp - 1] as bigint) & ADDRESS_MASK);
        if (rules.accessLists && world.warmAccount(account)) {
          const extra = rules.coldAccountAccess - rules.warmAccess;
          if (extra > gas) {
            gas = topUp(f, gas, extra);
            if (gas < 0) {
              error = E_OUT_OF_GAS;
              break loop;
            }
          }
          gas -= extra;
        }
        s[sp - 1] = account.balance;
        break;
      }
      case 0x32: // ORIGIN
        s[sp++] = m.tx.origin;
        break;
      case 0x33: // CALLER
        s[sp++] = f.caller;
        break;
      case 0x34: // CALLVALUE
        s[sp++] = f.value;
        break;
      case 0x35: {
        // CALLDATALOAD
        const offset = s[sp - 1] as bigint;
        const input = f.input;
        s[sp - 1] =
          offset < MEMORY_LIMIT_BIG && Number(offset) < input.length ? loadWord(input, Number(offset)) : 0n;
        break;
      }
      case 0x36: // CALLDATASIZE
        s[sp++] = BigInt(f.input.length);
        break;
      case 0x37: // CALLDATACOPY
      case 0x39: // CODECOPY
      case 0x3e: {
        // RETURNDATACOPY
        const memOffset = s[sp - 1] as bigint;
        const dataOffset = s[sp - 2] as bigint;
        const size = s[sp - 3] as bigint;
        sp -= 3;
        if (size === 0n) {
          if (op === 0x3e && dataOffset > BigInt(f.returnData.length)) {
            error = E_RETURN_DATA;
            break loop;
          }
          break;
        }
        const end = regionEnd(memOffset, size);
        if (end < 0) {
          error = E_OUT_OF_GAS;
          break loop;
        }
        const n = Number(size);
        const extra = 3 * words(n);
        if (extra > gas) {
          gas = topUp(f, gas, extra);
          if (gas < 0) {
            error = E_OUT_OF_GAS;
            break loop;
          }
        }
        gas -= extra;
        if (end > f.memSize) {
          gas = expandMemory(f, end, gas);
          if (gas < 0) {
            error = E_OUT_OF_GAS;
            break loop;
          }
          mem = f.memory;
          view = f.view;
        }
        if (op === 0x37) copyToMemory(f, end - n, f.input, dataOffset, n);
        else if (op === 0x39) copyToMemory(f, end - n, code.subarray(0, codeLength), dataOffset, n);
        else {
          const data = f.returnData;
          if (dataOffset + size > BigInt(data.length)) {
            error = E_RETURN_DATA;
            break loop;
          }
          const from = Number(dataOffset);
          mem.set(data.subarray(from, from + n), end - n);
        }
        break;
      }
      case 0x38: // CODESIZE
        s[sp++] = BigInt(codeLength);
        break;
      case 0x3a: // GASPRICE
        s[sp++] = m.tx.gasPrice;
        break;
      case 0x3b: // EXTCODESIZE
      case 0x3f: {
        // EXTCODEHASH
        const account = world.account((s[sp - 1] as bigint) & ADDRESS_MASK);
        if (rules.accessLists && world.warmAccount(account)) {
          const extra = rules.coldAccountAccess - rules.warmAccess;
          if (extra > gas) {
            gas = topUp(f, gas, extra);
            if (gas < 0) {
              error = E_OUT_OF_GAS;
              break loop;
            }
          }
          gas -= extra;
        }
        if (op === 0x3b) s[sp - 1] = account.hasCode ? BigInt(account.code(world.reader).length) : 0n;
        else s[sp - 1] = !account.exists || account.isEmpty() ? 0n : bytesToBigint(account.codeHash, 0, 32);
        break;
      }
      case 0x3c: {
        // EXTCODECOPY
        const account = world.account((s[sp - 1] as bigint) & ADDRESS_MASK);
        const memOffset = s[sp - 2] as bigint;
        const codeOffset = s[sp - 3] as bigint;
        const size = s[sp - 4] as bigint;
        sp -= 4;
        let extra = 0;
        let end = 0;
        if (size !== 0n) {
          end = regionEnd(memOffset, size);
          if (end < 0) {
            error = E_OUT_OF_GAS;
            break loop;
          }
          extra = 3 * words(Number(size));
        }
        if (rules.accessLists && world.warmAccount(account))
          extra += rules.coldAccountAccess - rules.warmAccess;
        if (extra > gas) {
          gas = topUp(f, gas, extra);
          if (gas < 0) {
            error = E_OUT_OF_GAS;
            break loop;
          }
        }
        gas -= extra;
        if (size === 0n) break;
        if (end > f.memSize) {
          gas = expandMemory(f, end, gas);
          if (gas < 0) {
            error = E_OUT_OF_GAS;
            break loop;
          }
          mem = f.memory;
          view = f.view;
        }
        const n = Number(size);
        copyToMemory(f, end - n, account.code(world.reader), codeOffset, n);
        break;
      }
      case 0x3d: // RETURNDATASIZE
        s[sp++] = BigInt(f.returnData.length);
        break;
      case 0x40: {
        // BLOCKHASH
        const n = s[sp - 1] as bigint;
        const current = m.block.number;
        s[sp - 1] = n < current && n + 256n >= current ? m.block.blockHash(n) : 0n;
        break;
      }
      case 0x41: // COINBASE
        s[sp++] = m.block.coinbase;
        break;
      case 0x42: // TIMESTAMP
        s[sp++] = m.block.timestamp;
        break;
      case 0x43: // NUMBER
        s[sp++] = m.block.number;
        break;
      case 0x44: // DIFFICULTY, PREVRANDAO
        s[sp++] = rules.proofOfStake ? m.block.prevRandao : m.block.difficulty;
        break;
      case 0x45: // GASLIMIT
        s[sp++] = m.block.gasLimit;
        break;
      case 0x46: // CHAINID
        s[sp++] = m.block.chainId;
        break;
      case 0x47: // SELFBALANCE
        s[sp++] = f.account.balance;
        break;
      case 0x48: // BASEFEE
        s[sp++] = m.block.baseFee;
        break;
      case 0x49: {
        // BLOBHASH
        const i = s[sp - 1] as bigint;
        const hashes = m.tx.blobHashes;
        s[sp - 1] = i < BigInt(hashes.length) ? (hashes[Number(i)] as bigint) : 0n;
        break;
      }
      case 0x4a: // BLOBBASEFEE
        s[sp++] = m.tx.blobBaseFee;
        break;
      case 0x50: // POP
        sp--;
        break;
      case 0x51: {
        // MLOAD
        const offset = s[sp - 1] as bigint;
        if (offset > MEMORY_LIMIT_BIG) {
          error = E_OUT_OF_GAS;
          break loop;
        }
        const at = Number(offset);
        if (at + 32 > f.memSize) {
          gas = expandMemory(f, at + 32, gas);
          if (gas < 0) {
            error = E_OUT_OF_GAS;
            break loop;
          }
          mem = f.memory;
          view = f.view;
        }
        s[sp - 1] = readWord(view, at);
        break;
      }
      case 0x52: {
        // MSTORE
        const offset = s[sp - 1] as bigint;
        if (offset > MEMORY_LIMIT_BIG) {
          error = E_OUT_OF_GAS;
          break loop;
        }
        const at = Number(offset);
        if (at + 32 > f.memSize) {
          gas = expandMemory(f, at + 32, gas);
          if (gas < 0) {
            error = E_OUT_OF_GAS;
            break loop;
          }
          mem = f.memory;
          view = f.view;
        }
        writeWord(view, at, s[sp - 2] as bigint);
        sp -= 2;
        break;
      }
      case 0x53: {
        // MSTORE8
        const offset = s[sp - 1] as bigint;
        if (offset > MEMORY_LIMIT_BIG) {
          error = E_OUT_OF_GAS;
          break loop;
        }
        const at = Number(offset);
        if (at + 1 > f.memSize) {
          gas = expandMemory(f, at + 1, gas);
          if (gas < 0) {
            error = E_OUT_OF_GAS;
            break loop;
          }
          mem = f.memory;
          view = f.view;
        }
        mem[at] = Number((s[sp - 2] as bigint) & 0xffn);
        sp -= 2;
        break;
      }
      case 0x54: {
        // SLOAD
        const slot = s[sp - 1] as bigint;
        const account = f.account;
        if (rules.accessLists && world.warmSlot(account, slot)) {
          const extra = rules.coldSload - rules.warmAccess;
          if (extra > gas) {
            gas = topUp(f, gas, extra);
            if (gas < 0) {
              error = E_OUT_OF_GAS;
              break loop;
            }
          }
          gas -= extra;
        }
        s[sp - 1] = world.storage(account, slot);
        break;
      }
      case 0x55: {
        // SSTORE
        const sstore = rules.sstore;
        if (sstore.sentry && gas <= CALL_STIPEND && f.bank === 0n) {
          error = E_OUT_OF_GAS;
          f.sentry = true;
          break loop;
        }
        if (f.isStatic) {
          error = E_STATIC;
          break loop;
        }
        const slot = s[sp - 1] as bigint;
        const value = s[sp - 2] as bigint;
        sp -= 2;
        const account = f.account;
        let extra = 0;
        if (rules.accessLists && world.warmSlot(account, slot)) extra = rules.coldSload;
        const current = world.storage(account, slot);
        if (sstore.scheme === 'simple') {
          if (current === 0n && value !== 0n) extra += sstore.set;
          else {
            extra += sstore.reset;
            if (current !== 0n && value === 0n) world.addRefund(sstore.clearRefund);
          }
        } else if (current === value) {
          extra += sstore.noop;
        } else {
          const original = world.committedStorage(account, slot);
          if (original === current) {
            if (original === 0n) extra += sstore.set;
            else {
              extra += sstore.reset;
              if (value === 0n) world.addRefund(sstore.clearRefund);
            }
          } else {
            extra += sstore.noop;
            if (original !== 0n) {
              if (current === 0n) world.subRefund(sstore.clearRefund);
              else if (value === 0n) world.addRefund(sstore.clearRefund);
            }
            if (original === value)
              world.addRefund((original === 0n ? sstore.set : sstore.reset) - sstore.noop);
          }
        }
        if (extra > gas) {
          gas = topUp(f, gas, extra);
          if (gas < 0) {
            error = E_OUT_OF_GAS;
            break loop;
          }
        }
        gas -= extra;
        world.setStorage(account, slot, value);
        m.tracer?.storageWrite?.(f.address, slot, value);
        break;
      }
      case 0x56: {
        // JUMP
        const dest = s[sp - 1] as bigint;
        // A destination beyond the code (even beyond 2^53) indexes nothing: no bound check needed.
        if (jumpdests[Number(dest)] !== 1) {
          error = E_INVALID_JUMP;
          break loop;
        }
        sp--;
        pc = Number(dest);
        continue;
      }
      case 0x57: {
        // JUMPI
        if (s[sp - 2] !== 0n) {
          const dest = s[sp - 1] as bigint;
          if (jumpdests[Number(dest)] !== 1) {
            error = E_INVALID_JUMP;
            break loop;
          }
          sp -= 2;
          pc = Number(dest);
          continue;
        }
        sp -= 2;
        break;
      }
      case 0x58: // PC
        s[sp++] = BigInt(pc);
        break;
      case 0x59: // MSIZE
        s[sp++] = BigInt(f.memSize);
        break;
      case 0x5a: // GAS
        s[sp++] = f.bank === 0n ? BigInt(gas) : BigInt(gas) + f.bank;
        break;
      case 0x5b: // JUMPDEST
        break;
      case 0x5c: // TLOAD
        s[sp - 1] = world.transientStorage(f.account, s[sp - 1] as bigint);
        break;
      case 0x5d: // TSTORE
        if (f.isStatic) {
          error = E_STATIC;
          break loop;
        }
        world.setTransientStorage(f.account, s[sp - 1] as bigint, s[sp - 2] as bigint);
        sp -= 2;
        break;
      case 0x5e: {
        // MCOPY
        const dst = s[sp - 1] as bigint;
        const src = s[sp - 2] as bigint;
        const size = s[sp - 3] as bigint;
        sp -= 3;
        if (size === 0n) break;
        let highest = src;
        if (dst > src) highest = dst;
        const end = regionEnd(highest, size);
        if (end < 0) {
          error = E_OUT_OF_GAS;
          break loop;
        }
        const n = Number(size);
        const extra = 3 * words(n);
        if (extra > gas) {
          gas = topUp(f, gas, extra);
          if (gas < 0) {
            error = E_OUT_OF_GAS;
            break loop;
          }
        }
        gas -= extra;
        if (end > f.memSize) {
          gas = expandMemory(f, end, gas);
          if (gas < 0) {
            error = E_OUT_OF_GAS;
            break loop;
          }
          mem = f.memory;
          view = f.view;
        }
        const from = Number(src);
        mem.copyWithin(Number(dst), from, from + n);
        break;
      }
      case 0x5f: // PUSH0
        s[sp++] = 0n;
        break;
      case 0x60: // PUSH1
        s[sp++] = pushes[pc] as bigint;
        pc += 2;
        continue;
      case 0x61: // PUSH2
        s[sp++] = pushes[pc] as bigint;
        pc += 3;
        continue;
      case 0x62:
      case 0x63:
      case 0x64:
      case 0x65:
      case 0x66:
      case 0x67:
      case 0x68:
      case 0x69:
      case 0x6a:
      case 0x6b:
      case 0x6c:
      case 0x6d:
      case 0x6e:
      case 0x6f:
      case 0x70:
      case 0x71:
      case 0x72:
      case 0x73:
      case 0x74:
      case 0x75:
      case 0x76:
      case 0x77:
      case 0x78:
      case 0x79:
      case 0x7a:
      case 0x7b:
      case 0x7c:
      case 0x7d:
      case 0x7e:
      case 0x7f: {
        // PUSH3..PUSH32
        s[sp++] = pushes[pc] as bigint;
        pc += op - 0x5e;
        continue;
      }
      case 0x80:
      case 0x81:
      case 0x82:
      case 0x83:
      case 0x84:
      case 0x85:
      case 0x86:
      case 0x87:
      case 0x88:
      case 0x89:
      case 0x8a:
      case 0x8b:
      case 0x8c:
      case 0x8d:
      case 0x8e:
      case 0x8f: // DUP1..DUP16
        s[sp] = s[sp - (op - 0x7f)] as bigint;
        sp++;
        break;
      case 0x90:
      case 0x91:
      case 0x92:
      case 0x93:
      case 0x94:
      case 0x95:
      case 0x96:
      case 0x97:
      case 0x98:
      case 0x99:
      case 0x9a:
      case 0x9b:
      case 0x9c:
      case 0x9d:
      case 0x9e:
      case 0x9f: {
        // SWAP1..SWAP16
        const other = sp - 2 - (op - 0x90);
        const top = s[sp - 1] as bigint;
        s[sp - 1] = s[other] as bigint;
        s[other] = top;
        break;
      }
      case 0xa0:
      case 0xa1:
      case 0xa2:
      case 0xa3:
      case 0xa4: {
        // LOG0..LOG4
        if (f.isStatic) {
          error = E_STATIC;
          break loop;
        }
        const offset = s[sp - 1] as bigint;
        const size = s[sp - 2] as bigint;
        const topicCount = op - 0xa0;
        const topics: bigint[] = [];
        for (let i = 0; i < topicCount; i++) topics.push(s[sp - 3 - i] as bigint);
        sp -= 2 + topicCount;
        let data = NO_BYTES;
        if (size !== 0n) {
          const end = regionEnd(offset, size);
          if (end < 0) {
            error = E_OUT_OF_GAS;
            break loop;
          }
          const n = Number(size);
          const extra = 8 * n;
          if (extra > gas) {
            gas = topUp(f, gas, extra);
            if (gas < 0) {
              error = E_OUT_OF_GAS;
              break loop;
            }
          }
          gas -= extra;
          if (end > f.memSize) {
            gas = expandMemory(f, end, gas);
            if (gas < 0) {
              error = E_OUT_OF_GAS;
              break loop;
            }
            mem = f.memory;
            view = f.view;
          }
          data = mem.slice(end - n, end);
        }
        world.addLog({ address: f.address, topics, data });
        m.tracer?.log?.(f.address, topics, data);
        break;
      }
      case 0xf0: // CREATE
      case 0xf5: // CREATE2
      case 0xf1: // CALL
      case 0xf2: // CALLCODE
      case 0xf4: // DELEGATECALL
      case 0xfa: {
        // STATICCALL
        f.sp = sp;
        f.pc = pc + 1;
        f.gas = gas;
        const outcome = op === 0xf0 || op === 0xf5 ? createOp(m, f, op) : callOp(m, f, op);
        if (outcome === SUSPENDED) return SUSPENDED;
        if (outcome === FAILED) {
          error = f.error;
          sp = f.sp;
          break loop;
        }
        sp = f.sp;
        gas = f.gas;
        pc = f.pc;
        mem = f.memory;
        view = f.view;
        continue;
      }
      case 0xf3: // RETURN
      case 0xfd: {
        // REVERT
        const offset = s[sp - 1] as bigint;
        const size = s[sp - 2] as bigint;
        sp -= 2;
        f.output = NO_BYTES;
        if (size !== 0n) {
          const end = regionEnd(offset, size);
          if (end < 0) {
            error = E_OUT_OF_GAS;
            break loop;
          }
          if (end > f.memSize) {
            gas = expandMemory(f, end, gas);
            if (gas < 0) {
              error = E_OUT_OF_GAS;
              break loop;
            }
            mem = f.memory;
          }
          f.output = mem.slice(end - Number(size), end);
        }
        status = op === 0xf3 ? RETURNED : REVERTED;
        break loop;
      }
      case 0xff: {
        // SELFDESTRUCT
        f.sp = sp;
        f.gas = gas;
        if (selfDestructOp(m, f) === FAILED) {
          error = f.error;
          sp = f.sp;
          break loop;
        }
        sp = f.sp;
        gas = f.gas;
        status = STOPPED;
        break loop;
      }
      default:
        error = E_INVALID_OPCODE;
        break loop;
    }
    pc++;
  }

  f.pc = pc;
  f.sp = sp;
  if (error >= 0) {
    f.error = error;
    f.failedOp = op;
    f.failedStack = sp;
    f.gas = 0;
    f.bank = 0n;
    f.output = NO_BYTES;
    return FAILED;
  }
  f.gas = gas;
  if (status === STOPPED) f.output = NO_BYTES;
  return status;
}

/** base^exponent mod 2^256 by squaring. */
function exp(base: bigint, exponent: bigint): bigint {
  if (exponent === 0n) return 1n;
  if (base === 0n || base === 1n) return base;
  if (base === 2n) return exponent < 256n ? 1n << exponent : 0n;
  let result = 1n;
  let b = base;
  let e = exponent;
  while (e > 0n) {
    if ((e & 1n) === 1n) result = (result * b) & WORD_MASK;
    e >>= 1n;
    if (e > 0n) b = (b * b) & WORD_MASK;
  }
  return result;
}

// ------------------------------------------------------------------------------------------------
// Frames: entering, finishing, resuming

/** Runs frames until `top` has finished; its outcome is left in m.result*. */
function runFrames(m: Machine, top: Frame): void {
  let f = top;
  for (;;) {
    const status = run(m, f);
    if (status === SUSPENDED) {
      f = m.child as Frame;
      continue;
    }
    finishFrame(m, f, status);
    const parent = f.parent;
    if (parent === null || f === top) return;
    resume(m, parent, f.op, f.retOffset, f.retSize);
    f = parent;
  }
}

/** Settles a finished frame (code deposit, revert) and leaves its outcome in m.result*. */
function finishFrame(m: Machine, f: Frame, status: number): void {
  const world = m.world;
  const rules = m.rules;
  let st = status;
  let error = f.error;
  let output = f.output;
  const creation = f.op === OP_CREATE || f.op === OP_CREATE2;
  // Frontier's creation that cannot pay for its code: it succeeds, but geth's tracers see the error.
  let shortfall = false;
  if (creation && (st === STOPPED || st === RETURNED)) {
    const code = output;
    if (code.length > rules.maxCodeSize) {
      st = FAILED;
      error = E_CODE_SIZE;
    } else if (rules.rejectEfCode && code.length > 0 && code[0] === 0xef) {
      st = FAILED;
      error = E_INVALID_CODE;
    } else {
      const deposit = CODE_DEPOSIT_GAS * code.length;
      let gas = f.gas;
      if (deposit > gas) gas = topUp(f, gas, deposit);
      if (gas < 0) {
        if (rules.codeDepositOutOfGasFails) {
          st = FAILED;
          error = E_CODE_STORE_OUT_OF_GAS;
        } else {
          // Frontier kept the account without code, and the gas.
          shortfall = true;
        }
      } else {
        f.gas = gas - deposit;
        if (code.length > 0) world.setCode(f.account, code);
      }
    }
    if (st === FAILED) {
      f.gas = 0;
      f.bank = 0n;
    }
  }
  if (st === FAILED || st === REVERTED) world.revert(f.checkpoint);
  if (st === FAILED) output = NO_BYTES;
  m.resultStatus = st;
  m.resultOutput = output;
  m.resultGas = st === FAILED ? 0 : f.gas;
  m.resultBank = st === FAILED ? 0n : f.bank;
  m.resultError = st === FAILED ? error : -1;
  m.resultAddress = creation ? f.address : -1n;
  m.resultShortfall = shortfall;
  const tracer = m.tracer;
  if (tracer?.frameEnd) {
    tracer.frameEnd({
      depth: f.depth,
      gasUsed: f.startGas - (BigInt(m.resultGas) + m.resultBank),
      output,
      error:
        st === FAILED
          ? (ERROR_NAMES[error] ?? 'out of gas')
          : st === REVERTED
            ? 'revert'
            : shortfall
              ? 'code store out of gas'
              : null,
      createdAddress: creation ? f.address : null,
      ...(st === FAILED &&
      f.failedOp >= 0 &&
      (error === E_INVALID_OPCODE || error === E_STACK_UNDERFLOW || error === E_STACK_OVERFLOW)
        ? { failedOp: { opcode: f.failedOp, stackLength: f.failedStack } }
        : {}),
      ...(st === FAILED && f.sentry
        ? { failedOp: { opcode: OP_SSTORE, stackLength: f.failedStack, sentry: true as const } }
        : {}),
    });
  }
}

/** The parent takes the outcome in m.result* of the call or creation it made. */
function resume(m: Machine, parent: Frame, op: number, retOffset: number, retSize: number): void {
  const st = m.resultStatus;
  const success = st === STOPPED || st === RETURNED;
  const output = m.resultOutput;
  if (op === OP_CREATE || op === OP_CREATE2) {
    parent.stack[parent.sp++] = success ? m.resultAddress : 0n;
    parent.returnData = st === REVERTED ? output : NO_BYTES;
  } else {
    parent.stack[parent.sp++] = success ? 1n : 0n;
    if ((success || st === REVERTED) && retSize > 0 && output.length > 0) {
      const n = Math.min(retSize, output.length);
      parent.memory.set(output.subarray(0, n), retOffset);
    }
    parent.returnData = output;
  }
  giveBack(parent, m.resultGas, m.resultBank);
}

/**
 * Ends a call or creation at once, before any frame, with `gas` given back; for tracers, what it
 * consumed and the address a creation would have had.
 */
function refuse(
  m: Machine,
  error: number,
  gas: number,
  bank: bigint,
  depth: number,
  consumed = 0n,
  address: bigint | null = null,
  precompileError: string | null = null,
): null {
  m.resultStatus = FAILED;
  m.resultOutput = NO_BYTES;
  m.resultGas = gas;
  m.resultBank = bank;
  m.resultError = error;
  m.resultAddress = -1n;
  m.resultShortfall = false;
  m.tracer?.frameEnd?.({
    depth,
    gasUsed: consumed,
    output: NO_BYTES,
    error: ERROR_NAMES[error] ?? 'out of gas',
    createdAddress: address,
    ...(precompileError === null ? {} : { precompileError }),
  });
  return null;
}

function succeedAtOnce(
  m: Machine,
  output: Uint8Array,
  gas: number,
  bank: bigint,
  depth: number,
  used: bigint,
): null {
  m.resultStatus = RETURNED;
  m.resultOutput = output;
  m.resultGas = gas;
  m.resultBank = bank;
  m.resultError = -1;
  m.resultAddress = -1n;
  m.resultShortfall = false;
  m.tracer?.frameEnd?.({ depth, gasUsed: used, output, error: null, createdAddress: null });
  return null;
}

/**
 * Starts a call: the frame to run, or null when it finished at once (refused, a precompile, no
 * code), with its outcome in m.result*.
 */
function enterCall(
  m: Machine,
  parent: Frame | null,
  op: number,
  caller: bigint,
  address: bigint,
  codeAddress: bigint,
  codeAccount: Account,
  value: bigint,
  input: Uint8Array,
  gas: number,
  bank: bigint,
  isStatic: boolean,
  depth: number,
  retOffset: number,
  retSize: number,
): Frame | null {
  const world = m.world;
  const rules = m.rules;
  const precompile = m.precompileAt(codeAddress);
  const tracer = m.tracer;
  if (tracer?.frameStart) {
    tracer.frameStart({
      kind: KIND_OF[op] ?? 'call',
      depth,
      from: parent === null ? caller : parent.address,
      to: codeAddress,
      address,
      value,
      gas: BigInt(gas) + bank,
      input: input.slice(),
      precompile: precompile !== undefined,
      delegate: codeAccount.address === codeAddress ? null : codeAccount.address,
    });
  }
  if (depth > CALL_DEPTH_LIMIT) return refuse(m, E_CALL_DEPTH, gas, bank, depth);
  if ((op === OP_CALL || op === OP_CALLCODE) && value !== 0n && world.account(caller).balance < value)
    return refuse(m, E_INSUFFICIENT_BALANCE, gas, bank, depth);
  const checkpoint = world.checkpoint();
  if (op === OP_CALL) {
    const target = world.account(address);
    if (!target.exists) {
      if (precompile === undefined && rules.emptyIsAbsent && value === 0n)
        return succeedAtOnce(m, NO_BYTES, gas, bank, depth, 0n);
      world.createAccount(target);
    }
    if (value !== 0n) world.subBalance(world.account(caller), value);
    world.addBalance(target, value);
  } else if (op === OP_STATICCALL) {
    // geth touches the callee (a zero credit), which EIP-161 may then delete.
    world.addBalance(world.account(address), 0n);
  }
  if (precompile !== undefined) {
    const cost = precompile.gas(input);
    const available = BigInt(gas) + bank;
    if (!(cost <= gas || (Number.isFinite(cost) && BigInt(cost) <= available))) {
      world.revert(checkpoint);
      return refuse(m, E_OUT_OF_GAS, 0, 0n, depth, available);
    }
    const output = precompile.run(input);
    if (output instanceof PrecompileError) {
      world.revert(checkpoint);
      return refuse(m, E_PRECOMPILE, 0, 0n, depth, available, null, output.message);
    }
    const left = available - BigInt(cost);
    return succeedAtOnce(m, output, gasNumber(left), gasBank(left), depth, BigInt(cost));
  }
  if (!codeAccount.hasCode) return succeedAtOnce(m, NO_BYTES, gas, bank, depth, 0n);
  const f = frameAt(depth);
  f.parent = parent;
  f.op = op;
  f.depth = depth;
  f.code = codeAccount.analysedCode(world.reader);
  f.pc = 0;
  f.sp = 0;
  f.gas = gas;
  f.bank = bank;
  f.startGas = BigInt(gas) + bank;
  resetMemory(f);
  f.returnData = NO_BYTES;
  f.address = address;
  f.caller = caller;
  f.value = value;
  f.account = world.account(address);
  f.input = input;
  f.isStatic = isStatic;
  f.checkpoint = checkpoint;
  f.output = NO_BYTES;
  f.error = -1;
  f.failedOp = -1;
  f.sentry = false;
  f.retOffset = retOffset;
  f.retSize = retSize;
  return f;
}

/** CALL, CALLCODE, DELEGATECALL, STATICCALL. */
function callOp(m: Machine, f: Frame, op: number): number {
  const rules = m.rules;
  const world = m.world;
  const s = f.stack;
  let sp = f.sp;
  const requested = s[--sp] as bigint;
  const to = (s[--sp] as bigint) & ADDRESS_MASK;
  const value = op === OP_CALL || op === OP_CALLCODE ? (s[--sp] as bigint) : 0n;
  const inOffset = s[--sp] as bigint;
  const inSize = s[--sp] as bigint;
  const outOffset = s[--sp] as bigint;
  const outSize = s[--sp] as bigint;
  f.sp = sp;
  let end = 0;
  if (inSize !== 0n) {
    end = regionEnd(inOffset, inSize);
    if (end < 0) return fail(f, E_OUT_OF_GAS);
  }
  if (outSize !== 0n) {
    const e = regionEnd(outOffset, outSize);
    if (e < 0) return fail(f, E_OUT_OF_GAS);
    if (e > end) end = e;
  }
  const target = world.account(to);
  let cost = 0;
  if (rules.accessLists && world.warmAccount(target)) cost += rules.coldAccountAccess - rules.warmAccess;
  if (op === OP_CALL && value !== 0n && f.isStatic) {
    if (!charge(f, cost)) return fail(f, E_OUT_OF_GAS);
    return fail(f, E_STATIC);
  }
  if (end > f.memSize) cost += memoryCost(Math.ceil(end / 32)) - memoryCost(f.memSize / 32);
  if (value !== 0n) cost += CALL_VALUE_GAS;
  if (op === OP_CALL && (rules.emptyIsAbsent ? value !== 0n && target.isEmpty() : !target.exists))
    cost += NEW_ACCOUNT_GAS;
  let codeAccount = target;
  if (rules.delegation) {
    const delegate = delegationTarget(world, target);
    if (delegate !== null) {
      codeAccount = world.account(delegate);
      cost += world.warmAccount(codeAccount) ? rules.coldAccountAccess : rules.warmAccess;
    }
  }
  if (!charge(f, cost)) return fail(f, E_OUT_OF_GAS);
  // The gas the callee gets.
  let callGas: number;
  let callBank = 0n;
  if (f.bank === 0n) {
    const available = f.gas;
    if (rules.allButOne64th) {
      const cap = available - Math.floor(available / 64);
      callGas = requested < BigInt(cap) ? Number(requested) : cap;
    } else {
      if (requested > BigInt(available)) return fail(f, E_OUT_OF_GAS);
      callGas = Number(requested);
    }
    f.gas -= callGas;
  } else {
    const available = BigInt(f.gas) + f.bank;
    let given: bigint;
    if (rules.allButOne64th) {
      const cap = available - available / 64n;
      given = requested < cap ? requested : cap;
    } else {
      if (requested > available) return fail(f, E_OUT_OF_GAS);
      given = requested;
    }
    const left = available - given;
    f.gas = gasNumber(left);
    f.bank = gasBank(left);
    callGas = gasNumber(given);
    callBank = gasBank(given);
  }
  if (end > f.memSize) growMemory(f, Math.ceil(end / 32) * 32);
  m.tracer?.step?.callCost?.(cost + callGas);
  if (value !== 0n) callGas += CALL_STIPEND;
  // A view, not a copy: the caller's memory is not written while the callee runs (and a buffer grown
  // later is a new one, leaving this one as it was), and nothing keeps the view after the call.
  const inAt = Number(inOffset);
  const input = inSize === 0n ? NO_BYTES : f.memory.subarray(inAt, inAt + Number(inSize));
  const retOffset = outSize === 0n ? 0 : Number(outOffset);
  const retSize = outSize === 0n ? 0 : Number(outSize);
  let caller = f.address;
  let address = to;
  let frameValue = value;
  if (op === OP_CALLCODE) address = f.address;
  else if (op === OP_DELEGATECALL) {
    caller = f.caller;
    address = f.address;
    frameValue = f.value;
  }
  const child = enterCall(
    m,
    f,
    op,
    caller,
    address,
    to,
    codeAccount,
    frameValue,
    input,
    callGas,
    callBank,
    f.isStatic || op === OP_STATICCALL,
    f.depth + 1,
    retOffset,
    retSize,
  );
  if (child !== null) {
    m.child = child;
    return SUSPENDED;
  }
  resume(m, f, op, retOffset, retSize);
  return CONTINUE;
}

function charge(f: Frame, cost: number): boolean {
  if (cost <= f.gas) {
    f.gas -= cost;
    return true;
  }
  const g = topUp(f, f.gas, cost);
  if (g < 0) return false;
  f.gas = g - cost;
  return true;
}

function fail(f: Frame, error: number): number {
  f.error = error;
  return FAILED;
}

/** CREATE and CREATE2. */
function createOp(m: Machine, f: Frame, op: number): number {
  const rules = m.rules;
  const s = f.stack;
  let sp = f.sp;
  if (f.isStatic) return fail(f, E_STATIC);
  const value = s[--sp] as bigint;
  const offset = s[--sp] as bigint;
  const size = s[--sp] as bigint;
  const salt = op === OP_CREATE2 ? (s[--sp] as bigint) : 0n;
  f.sp = sp;
  let end = 0;
  let n = 0;
  if (size !== 0n) {
    end = regionEnd(offset, size);
    if (end < 0) return fail(f, E_OUT_OF_GAS);
    n = Number(size);
  }
  if (n > rules.maxInitCodeSize) return fail(f, E_INITCODE_SIZE);
  let cost = words(n) * (rules.initCodeWordGas + (op === OP_CREATE2 ? 6 : 0));
  if (end > f.memSize) cost += memoryCost(Math.ceil(end / 32)) - memoryCost(f.memSize / 32);
  if (!charge(f, cost)) return fail(f, E_OUT_OF_GAS);
  if (end > f.memSize) growMemory(f, Math.ceil(end / 32) * 32);
  // A view (see callOp): the code is copied when analysed.
  // A view (see callOp): analysing the code copies it.
  const initCode = n === 0 ? NO_BYTES : f.memory.subarray(end - n, end);
  let callGas: number;
  let callBank = 0n;
  if (f.bank === 0n) {
    callGas = rules.allButOne64th ? f.gas - Math.floor(f.gas / 64) : f.gas;
    f.gas -= callGas;
  } else {
    const available = BigInt(f.gas) + f.bank;
    const given = rules.allButOne64th ? available - available / 64n : available;
    const left = available - given;
    f.gas = gasNumber(left);
    f.bank = gasBank(left);
    callGas = gasNumber(given);
    callBank = gasBank(given);
  }
  m.tracer?.step?.callCost?.(cost + callGas);
  const child = enterCreate(m, f, op, f.address, value, initCode, salt, callGas, callBank, f.depth + 1);
  if (child !== null) {
    m.child = child;
    return SUSPENDED;
  }
  resume(m, f, op, 0, 0);
  return CONTINUE;
}

const CREATE2_PREFIX = Uint8Array.of(0xff);

/** The address a CREATE from `sender` at `nonce` makes. */
export function createAddress(sender: bigint, nonce: bigint): bigint {
  const encoded = encodeList([encodeBytes(addressBytes(sender)), encodeBigint(nonce)]);
  return bytesToBigint(keccak256(encoded), 12, 20);
}

/** The address a CREATE2 makes (EIP-1014). */
export function create2Address(sender: bigint, salt: bigint, initCode: Uint8Array): bigint {
  const data = new Uint8Array(85);
  data.set(CREATE2_PREFIX, 0);
  data.set(addressBytes(sender), 1);
  data.set(wordBytes(salt), 21);
  data.set(keccak256(initCode), 53);
  return bytesToBigint(keccak256(data), 12, 20);
}

const MAX_NONCE = 0xffffffffffffffffn;

/** Starts a creation: the frame to run its initcode, or null when it ended at once. */
function enterCreate(
  m: Machine,
  parent: Frame | null,
  op: number,
  caller: bigint,
  value: bigint,
  initCode: Uint8Array,
  salt: bigint,
  gas: number,
  bank: bigint,
  depth: number,
): Frame | null {
  const world = m.world;
  const rules = m.rules;
  const sender = world.account(caller);
  const address =
    op === OP_CREATE2 ? create2Address(caller, salt, initCode) : createAddress(caller, sender.nonce);
  const tracer = m.tracer;
  if (tracer?.frameStart) {
    tracer.frameStart({
      kind: KIND_OF[op] ?? 'create',
      depth,
      from: caller,
      to: address,
      address,
      value,
      gas: BigInt(gas) + bank,
      input: initCode.slice(),
      precompile: false,
      delegate: null,
    });
  }
  if (depth > CALL_DEPTH_LIMIT) return refuse(m, E_CALL_DEPTH, gas, bank, depth);
  if (value !== 0n && sender.balance < value) return refuse(m, E_INSUFFICIENT_BALANCE, gas, bank, depth);
  if (sender.nonce >= MAX_NONCE) return refuse(m, E_NONCE_OVERFLOW, gas, bank, depth);
  world.setNonce(sender, sender.nonce + 1n);
  const account = world.account(address);
  if (rules.accessLists) world.warmAccount(account);
  if (account.collides()) return refuse(m, E_COLLISION, 0, 0n, depth, BigInt(gas) + bank, address);
  const checkpoint = world.checkpoint();
  world.createContract(account);
  if (rules.emptyIsAbsent) world.setNonce(account, 1n);
  if (value !== 0n) world.subBalance(sender, value);
  world.addBalance(account, value);
  const f = frameAt(depth);
  f.parent = parent;
  f.op = op;
  f.depth = depth;
  f.code = analyse(initCode);
  f.pc = 0;
  f.sp = 0;
  f.gas = gas;
  f.bank = bank;
  f.startGas = BigInt(gas) + bank;
  resetMemory(f);
  f.returnData = NO_BYTES;
  f.address = address;
  f.caller = caller;
  f.value = value;
  f.account = account;
  f.input = NO_BYTES;
  f.isStatic = false;
  f.checkpoint = checkpoint;
  f.output = NO_BYTES;
  f.error = -1;
  f.failedOp = -1;
  f.sentry = false;
  f.retOffset = 0;
  f.retSize = 0;
  return f;
}

/** SELFDESTRUCT (its registers are in the frame); FAILED or STOPPED. */
function selfDestructOp(m: Machine, f: Frame): number {
  const rules = m.rules;
  const world = m.world;
  if (f.isStatic) return fail(f, E_STATIC);
  const beneficiary = (f.stack[--f.sp] as bigint) & ADDRESS_MASK;
  const heir = world.account(beneficiary);
  const self = f.account;
  let cost = 0;
  if (rules.accessLists && world.warmAccount(heir)) cost += rules.coldAccountAccess;
  if (rules.selfDestructNewAccount) {
    if (rules.emptyIsAbsent ? heir.isEmpty() && self.balance !== 0n : !heir.exists) cost += NEW_ACCOUNT_GAS;
  }
  if (!charge(f, cost)) return fail(f, E_OUT_OF_GAS);
  if (rules.selfDestructRefund > 0 && !self.selfDestructed) world.addRefund(rules.selfDestructRefund);
  const balance = self.balance;
  m.tracer?.selfDestruct?.({ address: f.address, beneficiary, balance });
  if (rules.selfDestructOnlyNew) {
    world.subBalance(self, balance);
    world.addBalance(heir, balance);
    if (self.createdInTx) {
      if (self.balance !== 0n) world.setBalance(self, 0n);
      world.selfDestruct(self);
    }
  } else {
    world.addBalance(heir, balance);
    if (self.balance !== 0n) world.setBalance(self, 0n);
    world.selfDestruct(self);
  }
  return STOPPED;
}
