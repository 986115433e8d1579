import type { ForkRules } from '../../../evm/forks.ts';
import type { EvmTracer, FrameEnd, FrameStart, StepTracer, StepView } from '../../../evm/hooks.ts';
import { Op, opcodeName, opTables } from '../../../evm/opcodes.ts';
import type { WorldState } from '../../../evm/state.ts';
import { toHex, wordHex } from '../../../primitives/hex.ts';
import { chargeOutput } from '../../responseLimit.ts';
import { bigMax } from '../../transaction.ts';
import { gethErrorText, gethOpName } from './errors.ts';
import {
  type Cell,
  memoryWords,
  PRE_EXECUTION_ERRORS,
  type StructLog,
  structLogBytes,
  toJson,
} from './structLog.ts';
import type { StructLoggerOptions, TxOutcome } from './types.ts';

const {
  EXP,
  KECCAK256,
  BALANCE,
  CALLDATACOPY,
  CODECOPY,
  EXTCODESIZE,
  EXTCODECOPY,
  RETURNDATACOPY,
  EXTCODEHASH,
  MLOAD,
  MSTORE,
  MSTORE8,
  SLOAD,
  SSTORE,
  MCOPY,
  LOG0,
  LOG4,
  CREATE,
  CALL,
  CALLCODE,
  RETURN,
  DELEGATECALL,
  CREATE2,
  STATICCALL,
  REVERT,
  SELFDESTRUCT,
} = Op;
const CALL_STIPEND = 2300n;
const NEW_ACCOUNT_GAS = 25000;
const ADDRESS_MASK = (1n << 160n) - 1n;
// Ops whose gas depends on their operands or the state: what they find is kept until they end.
const DYNAMIC = new Set<number>([
  EXP,
  KECCAK256,
  BALANCE,
  CALLDATACOPY,
  CODECOPY,
  EXTCODESIZE,
  EXTCODECOPY,
  RETURNDATACOPY,
  EXTCODEHASH,
  MLOAD,
  MSTORE,
  MSTORE8,
  SLOAD,
  SSTORE,
  MCOPY,
  ...Array.from({ length: LOG4 - LOG0 + 1 }, (_, n) => LOG0 + n),
  CREATE,
  CREATE2,
  SELFDESTRUCT,
]);
// They read the account on top.
const ACCOUNT_OPS = new Set<number>([BALANCE, EXTCODESIZE, EXTCODECOPY, EXTCODEHASH, SELFDESTRUCT]);
// SLOAD, the account reads and the CALL family.
const ACCESS_OPS = new Set<number>([
  SLOAD,
  BALANCE,
  EXTCODESIZE,
  EXTCODECOPY,
  EXTCODEHASH,
  CALL,
  CALLCODE,
  DELEGATECALL,
  STATICCALL,
]);
// Frontier's and later forks' code deposit: 200 gas a byte, charged after the initcode's last op.
const CODE_DEPOSIT_GAS = 200n;

/** An op recorded whose cost is not known yet: it shows in the frame's next step, or its end. */
interface Pending {
  log: StructLog;
  gas: number;
  op: number;
  /** What the op found, for its cost should it run out of gas (see `outOfGasCost`). */
  found: Found | null;
}

/** The stack's top items, the memory size and the state an op's gas depends on, as it starts. */
interface Found {
  a: bigint;
  b: bigint;
  c: bigint;
  d: bigint;
  memWords: number;
  returnDataLength: number;
  /** The account or slot the op reads was cold. */
  cold: boolean;
  /** SSTORE: the slot's value now and at the start of the transaction; SELFDESTRUCT: heir empty. */
  current: bigint;
  original: bigint;
  empty: boolean;
  balance: bigint;
}

interface Frame {
  /** Gas the frame was given. */
  startGas: bigint;
  creation: boolean;
  /** A creation with no initcode: ethereumjs runs no interpreter for it, so nothing is logged. */
  silent: boolean;
  pending: Pending | null;
  /** A call's log and the gas it handed on, should the EVM refuse the call before it ran. */
  refusable: { log: StructLog; handed: number } | null;
}

/**
 * geth's struct logger on the EVM of src/evm, answering what the ethereumjs path's StructLogger (now
 * the tests' oracle, test/support/ethereumjsOracle/geth/structLogger.ts) answered. The
 * interpreter's step hook gives each op's registers before it runs; its cost is the gas the
 * frame's next step finds missing, or, for a CALL or CREATE, what the op reports paying
 * (`callCost`), or what is left when the frame ends. Only what the options ask for is copied out of
 * the live stack and memory. Slots come from the world state, read as the op runs.
 */
export class EvmStructLogger {
  private readonly logs: StructLog[] = [];
  private readonly frames: Frame[] = [];
  private readonly storage = new Map<bigint, Map<string, Cell>>();
  private readonly staticGas: Float64Array;
  private readonly names: Array<string | undefined> = new Array(256);
  private top: FrameEnd | null = null;
  /** A CREATE's log, until its frame starts: geth leaves the gas handed on out of its cost. */
  private creating: StructLog | null = null;

  constructor(
    private readonly options: StructLoggerOptions,
    private readonly world: WorldState,
    private readonly rules: ForkRules,
  ) {
    this.staticGas = opTables(rules).gas;
  }

  readonly tracer: EvmTracer = {
    frameStart: (start) => this.frameStart(start),
    frameEnd: (end) => this.frameEnd(end),
    step: {
      step: (view) => this.step(view),
      callCost: (cost) => this.callCost(cost),
    } satisfies StepTracer,
  };

  private frameStart(start: FrameStart): void {
    const creating = this.creating;
    this.creating = null;
    let refusable: Frame['refusable'] = null;
    const creation = start.kind === 'create' || start.kind === 'create2';
    if (start.depth > 0 && !creation) {
      // ethereumjs charges a callee's gas when it returns; geth counts it in the CALL's cost. Here
      // `callCost` included it already; what StructLogger adds to the last log is added only when
      // that log is not the call's own (its `limit` was reached).
      const last = this.logs[this.logs.length - 1];
      const stipend = start.value > 0n && (start.kind === 'call' || start.kind === 'callcode');
      const handed = Number(start.gas - (stipend ? CALL_STIPEND : 0n));
      let log = this.callLogged;
      if (!log && last && last.depth === start.depth) {
        last.gasCost += handed;
        log = last;
      }
      if (log) refusable = { log, handed };
    } else if (creating && start.depth > 0) {
      creating.gasCost -= Number(start.gas);
    }
    this.callLogged = null;
    // ethereumjs counts the refunds of the EVM only, not EIP-7702's for authorities that exist.
    if (start.depth === 0) this.baseRefund = this.world.refund;
    this.frames.push({
      startGas: start.gas,
      creation,
      silent: creation && start.input.length === 0,
      pending: null,
      refusable,
    });
  }

  /** The refund counter as the transaction's frame started. */
  private baseRefund = 0;
  /** The log whose cost `callCost` set, so the callee's start does not add its gas again. */
  private callLogged: StructLog | null = null;

  private frameEnd(end: FrameEnd): void {
    const frame = this.frames.pop();
    if (!frame) return;
    // ethereumjs reports a call refused for its depth or an unaffordable value with no gas handed on.
    if (frame.refusable && (end.error === 'insufficient balance' || end.error === 'call depth'))
      frame.refusable.log.gasCost -= frame.refusable.handed;
    const pending = frame.pending;
    if (pending) {
      if (end.error === null || end.error === 'revert' || end.error === 'code store out of gas') {
        // What the frame kept is what its last op left (a creation's deposit taken off after it).
        let left = frame.startGas - end.gasUsed;
        if (frame.creation && end.error === null) left += CODE_DEPOSIT_GAS * BigInt(end.output.length);
        if (pending.op !== RETURN && pending.op !== REVERT) pending.log.gasCost = pending.gas - Number(left);
      } else if (pending.op !== RETURN && pending.op !== REVERT) {
        const oog = end.error === 'out of gas' && !end.failedOp?.sentry && pending.found;
        pending.log.gasCost = oog ? this.outOfGasCost(pending.op, oog) : this.failedCost(pending.op);
        if (oog && pending.op === SSTORE)
          setRefund(pending.log, (pending.log.refund ?? 0) + this.sstoreRefund(oog));
      }
    }
    const error =
      end.error && PRE_EXECUTION_ERRORS.has(end.error) ? gethErrorText(end.error, end.failedOp) : null;
    const last = this.logs[this.logs.length - 1];
    if (error && last && last.depth === end.depth + 1 && last.error === undefined) last.error = error;
    if (this.frames.length === 0) this.top = end;
  }

  /**
   * What ethereumjs charged an op that failed, its constant gas (the gas left is gone). From
   * EIP-2929 on, ethereumjs charges the warm access of the ops that read an account or a slot with
   * their access cost, not as constant gas.
   */
  private failedCost(op: number): number {
    const cost = this.staticGas[op] as number;
    if (!Number.isFinite(cost)) return 0;
    return this.rules.accessLists && ACCESS_OPS.has(op) ? cost - this.rules.warmAccess : cost;
  }

  private callCost(cost: number): void {
    const frame = this.frames[this.frames.length - 1];
    const pending = frame?.pending;
    if (!pending) return;
    frame.pending = null;
    pending.log.gasCost = (this.staticGas[pending.op] as number) + cost;
    if (pending.op === CREATE || pending.op === CREATE2) this.creating = pending.log;
    else this.callLogged = pending.log;
  }

  private step(view: StepView): void {
    const frame = this.frames[this.frames.length - 1];
    if (!frame || frame.silent) return;
    const pending = frame.pending;
    if (pending) {
      pending.log.gasCost = pending.gas - view.gas;
      // ethereumjs's gas function of SSTORE moves the refund counter before the op is logged.
      if (pending.op === SSTORE) setRefund(pending.log, view.refund - this.baseRefund);
      frame.pending = null;
    }
    const { limit } = this.options;
    if (limit > 0 && this.logs.length >= limit) return;
    const op = view.opcode;
    const log: StructLog = {
      pc: view.pc,
      op: this.names[op] ?? this.name(op),
      gas: view.gas,
      gasCost: 0,
      depth: view.depth + 1,
    };
    const stack = view.stack;
    const sp = view.sp;
    if (!this.options.disableStack) {
      const items = new Array<string>(sp);
      for (let i = 0; i < sp; i++) items[i] = `0x${(stack[i] as bigint).toString(16)}`;
      log.stack = items;
    }
    if (this.options.enableReturnData && view.returnData.length > 0) log.returnData = toHex(view.returnData);
    if (this.options.enableMemory && view.memSize > 0)
      log.memory = memoryWords(view.memory, view.memSize / 32);
    if (!this.options.disableStorage && (op === SLOAD || op === SSTORE) && sp > 0) {
      const key = stack[sp - 1] as bigint;
      if (op === SLOAD) {
        const slots = this.slotsOf(view.address);
        const value = this.world.storage(this.world.account(view.address), key);
        slots.set(wordHex(key), { value: wordHex(value) });
        log.storage = [...slots];
      } else if (sp >= 2) {
        const slots = this.slotsOf(view.address);
        slots.set(wordHex(key), { value: wordHex(stack[sp - 2] as bigint) });
        log.storage = [...slots];
      }
    }
    const refund = view.refund - this.baseRefund;
    if (refund > 0) log.refund = refund;
    if (op === RETURN || op === REVERT) log.gasCost = memoryExpansion(view);
    chargeOutput(structLogBytes(log));
    this.logs.push(log);
    frame.pending = { log, gas: view.gas, op, found: DYNAMIC.has(op) ? this.found(view) : null };
  }

  private found(view: StepView): Found {
    const s = view.stack;
    const sp = view.sp;
    const rules = this.rules;
    const world = this.world;
    const found: Found = {
      a: s[sp - 1] ?? 0n,
      b: (sp > 1 ? s[sp - 2] : 0n) ?? 0n,
      c: (sp > 2 ? s[sp - 3] : 0n) ?? 0n,
      d: (sp > 3 ? s[sp - 4] : 0n) ?? 0n,
      memWords: view.memSize / 32,
      returnDataLength: view.returnData.length,
      cold: false,
      current: 0n,
      original: 0n,
      empty: false,
      balance: 0n,
    };
    const op = view.opcode;
    if (sp === 0) return found;
    if (op === SLOAD || op === SSTORE) {
      const account = world.account(view.address);
      found.cold = rules.accessLists && !(account.warmSlots?.has(found.a) ?? false);
      if (op === SSTORE) {
        found.current = world.storage(account, found.a);
        found.original = world.committedStorage(account, found.a);
      }
    } else if (ACCOUNT_OPS.has(op)) {
      const account = world.account(found.a & ADDRESS_MASK);
      found.cold = rules.accessLists && !account.warm;
      found.empty = rules.emptyIsAbsent ? account.isEmpty() : !account.exists;
      found.balance = world.account(view.address).balance;
    }
    return found;
  }

  /**
   * What ethereumjs charged an op that ran out of gas: its whole cost, worked out before it found
   * the gas short (src/evm stops at the first part it cannot pay). The CALL family's and a sentry's
   * gas functions fail by themselves: only their constant gas (failedCost).
   */
  private outOfGasCost(op: number, f: Found): number {
    const rules = this.rules;
    const staticGas = this.staticGas[op] as number;
    const words = (n: bigint) => (n + 31n) / 32n;
    let cost: bigint;
    switch (op) {
      case EXP:
        cost = BigInt(staticGas) + BigInt(rules.expByteGas * byteLength(f.b));
        break;
      case KECCAK256:
        cost = BigInt(staticGas) + memory(f.a, f.b, f.memWords) + 6n * words(f.b);
        break;
      case CALLDATACOPY:
      case CODECOPY:
        cost = BigInt(staticGas) + memory(f.a, f.c, f.memWords) + 3n * words(f.c);
        break;
      case RETURNDATACOPY: // out of the return data, its gas function fails by itself
        if (f.b + f.c > BigInt(f.returnDataLength)) return this.failedCost(op);
        cost = BigInt(staticGas) + memory(f.a, f.c, f.memWords) + 3n * words(f.c);
        break;
      case EXTCODECOPY:
        cost = BigInt(this.access(op, f.cold)) + memory(f.b, f.d, f.memWords) + 3n * words(f.d);
        break;
      case MCOPY:
        cost = BigInt(staticGas) + memory(bigMax(f.a, f.b), f.c, f.memWords) + 3n * words(f.c);
        break;
      case MLOAD:
      case MSTORE:
        cost = BigInt(staticGas) + memory(f.a, 32n, f.memWords);
        break;
      case MSTORE8:
        cost = BigInt(staticGas) + memory(f.a, 1n, f.memWords);
        break;
      case SLOAD:
      case BALANCE:
      case EXTCODESIZE:
      case EXTCODEHASH:
        cost = BigInt(this.access(op, f.cold));
        break;
      case SSTORE:
        cost = BigInt(this.sstoreCost(f));
        break;
      case CREATE:
      case CREATE2: {
        const perWord = BigInt(rules.initCodeWordGas + (op === CREATE2 ? 6 : 0));
        cost = BigInt(staticGas) + memory(f.b, f.c, f.memWords) + perWord * words(f.c);
        break;
      }
      case SELFDESTRUCT: {
        let extra = 0;
        if (f.cold) extra += rules.coldAccountAccess;
        if (rules.selfDestructNewAccount && f.empty && (!rules.emptyIsAbsent || f.balance !== 0n))
          extra += NEW_ACCOUNT_GAS;
        cost = BigInt(staticGas + extra);
        break;
      }
      default:
        if (op >= LOG0 && op <= LOG4) {
          cost = BigInt(staticGas) + memory(f.a, f.b, f.memWords) + 8n * f.b;
          break;
        }
        return this.failedCost(op);
    }
    return Number(cost);
  }

  /** The gas of an op that reads an account or a slot, warm or cold. */
  private access(op: number, cold: boolean): number {
    const rules = this.rules;
    const staticGas = this.staticGas[op] as number;
    if (!rules.accessLists) return staticGas;
    // The constant gas of these ops is the warm access; a cold one costs the cold access instead.
    if (!cold) return staticGas;
    return staticGas - rules.warmAccess + (op === SLOAD ? rules.coldSload : rules.coldAccountAccess);
  }

  /** What SSTORE adds to the refund counter, as src/evm's interpreter adds it. */
  private sstoreRefund(f: Found): number {
    const sstore = this.rules.sstore;
    const value = f.b;
    if (sstore.scheme === 'simple') return f.current !== 0n && value === 0n ? sstore.clearRefund : 0;
    if (f.current === value) return 0;
    if (f.original === f.current) return f.original !== 0n && value === 0n ? sstore.clearRefund : 0;
    let refund = 0;
    if (f.original !== 0n) {
      if (f.current === 0n) refund -= sstore.clearRefund;
      else if (value === 0n) refund += sstore.clearRefund;
    }
    if (f.original === value) refund += (f.original === 0n ? sstore.set : sstore.reset) - sstore.noop;
    return refund;
  }

  /** SSTORE's gas as src/evm's interpreter charges it (its constant gas is none). */
  private sstoreCost(f: Found): number {
    const sstore = this.rules.sstore;
    const value = f.b;
    let extra = f.cold ? this.rules.coldSload : 0;
    if (sstore.scheme === 'simple')
      return extra + (f.current === 0n && value !== 0n ? sstore.set : sstore.reset);
    if (f.current === value) return extra + sstore.noop;
    if (f.original === f.current) extra += f.original === 0n ? sstore.set : sstore.reset;
    else extra += sstore.noop;
    return extra;
  }

  /**
   * geth's name of the op in this fork, worked out once per op. ethereumjs runs a byte its fork does
   * not define as INVALID (0xfe), and the struct logger names it so.
   */
  private name(op: number): string {
    const name = this.rules.opcodes[op] === 1 ? gethOpName(op, opcodeName(op)) : 'INVALID';
    this.names[op] = name;
    return name;
  }

  private slotsOf(address: bigint): Map<string, Cell> {
    let slots = this.storage.get(address);
    if (!slots) {
      slots = new Map();
      this.storage.set(address, slots);
    }
    return slots;
  }

  result(outcome: TxOutcome): unknown {
    const top = this.top;
    const failed = top?.error != null;
    // geth returns the output when the call succeeded or reverted, nothing for other failures.
    const returnValue = !top || (failed && top.error !== 'revert') ? '0x' : toHex(top.output);
    return { gas: Number(outcome.gasUsed), failed, returnValue, structLogs: this.logs.map(toJson) };
  }
}

/** A log's refund once its op moved the counter (a log without one has no `refund` field). */
function setRefund(log: StructLog, refund: number): void {
  if (refund > 0) log.refund = refund;
  else if (log.refund !== undefined) delete log.refund;
}

/** Memory expansion to cover [offset, offset + size), from `memWords` words. */
function memory(offset: bigint, size: bigint, memWords: number): bigint {
  if (size === 0n) return 0n;
  const words = (offset + size + 31n) / 32n;
  const before = BigInt(memWords);
  if (words <= before) return 0n;
  const cost = (w: bigint) => 3n * w + (w * w) / 512n;
  return cost(words) - cost(before);
}

function byteLength(value: bigint): number {
  return value === 0n ? 0 : Math.ceil(value.toString(16).length / 2);
}

/** The memory RETURN or REVERT pays for before it ends the frame (ethereumjs's cost for them). */
function memoryExpansion(view: StepView): number {
  if (view.sp < 2) return 0;
  const offset = view.stack[view.sp - 1] as bigint;
  const size = view.stack[view.sp - 2] as bigint;
  if (size === 0n) return 0;
  const words = (offset + size + 31n) / 32n;
  const before = BigInt(view.memSize / 32);
  if (words <= before) return 0;
  const cost = (w: bigint) => 3n * w + (w * w) / 512n;
  return Number(cost(words) - cost(before));
}
