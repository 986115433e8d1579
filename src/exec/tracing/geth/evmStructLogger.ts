import type { ForkRules } from '../../../evm/forks.ts';
import type { EvmTracer, FrameEnd, FrameStart, StepTracer, StepView } from '../../../evm/hooks.ts';
import { opcodeName, opTables } from '../../../evm/opcodes.ts';
import type { WorldState } from '../../../evm/state.ts';
import { toHex, wordHex } from '../../../primitives/hex.ts';
import { chargeOutput } from '../../responseLimit.ts';
import { gethErrorText, gethOpName } from './errors.ts';
import {
  type Cell,
  memoryWords,
  PRE_EXECUTION_ERRORS,
  type StructLog,
  structLogBytes,
  toJson,
} from './structLogger.ts';
import type { StructLoggerOptions, TxOutcome } from './types.ts';

const SLOAD = 0x54;
const SSTORE = 0x55;
const RETURN = 0xf3;
const REVERT = 0xfd;
const CREATE = 0xf0;
const CREATE2 = 0xf5;
const CALL_STIPEND = 2300n;
// Frontier's and later forks' code deposit: 200 gas a byte, charged after the initcode's last op.
const CODE_DEPOSIT_GAS = 200n;

/** An op recorded whose cost is not known yet: it shows in the frame's next step, or its end. */
interface Pending {
  log: StructLog;
  gas: number;
  op: number;
}

interface Frame {
  /** Gas the frame was given. */
  startGas: bigint;
  creation: boolean;
  /** A creation with no initcode: ethereumjs runs no interpreter for it, so nothing is logged. */
  silent: boolean;
  pending: Pending | null;
}

/**
 * geth's struct logger on the EVM of src/evm, answering what StructLogger (structLogger.ts) answers
 * on ethereumjs. The interpreter's step hook gives each op's registers before it runs; its cost is
 * the gas the frame's next step finds missing, or, for a CALL or CREATE, what the op reports paying
 * (`callCost`), or what is left when the frame ends. Only what the options ask for is copied out of
 * the live stack and memory. Slots come from the world state, read as the op runs.
 */
export class EvmStructLogger {
  private readonly logs: StructLog[] = [];
  private readonly frames: Frame[] = [];
  private readonly storage = new Map<bigint, Map<string, Cell>>();
  private readonly staticGas: Float64Array;
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
    const creation = start.kind === 'create' || start.kind === 'create2';
    if (start.depth > 0 && !creation) {
      // ethereumjs charges a callee's gas when it returns; geth counts it in the CALL's cost. Here
      // `callCost` included it already; what StructLogger adds to the last log is added only when
      // that log is not the call's own (its `limit` was reached).
      const last = this.logs[this.logs.length - 1];
      if (last && last.depth === start.depth && this.callLogged !== last) {
        const stipend = start.value > 0n && (start.kind === 'call' || start.kind === 'callcode');
        last.gasCost += Number(start.gas - (stipend ? CALL_STIPEND : 0n));
      }
    } else if (creating && start.depth > 0) {
      creating.gasCost -= Number(start.gas);
    }
    this.callLogged = null;
    this.frames.push({
      startGas: start.gas,
      creation,
      silent: creation && start.input.length === 0,
      pending: null,
    });
  }

  /** The log whose cost `callCost` set, so the callee's start does not add its gas again. */
  private callLogged: StructLog | null = null;

  private frameEnd(end: FrameEnd): void {
    const frame = this.frames.pop();
    if (!frame) return;
    const pending = frame.pending;
    if (pending) {
      if (end.error === null || end.error === 'revert' || end.error === 'code store out of gas') {
        // What the frame kept is what its last op left (a creation's deposit taken off after it).
        let left = frame.startGas - end.gasUsed;
        if (frame.creation && end.error === null) left += CODE_DEPOSIT_GAS * BigInt(end.output.length);
        if (pending.op !== RETURN && pending.op !== REVERT) pending.log.gasCost = pending.gas - Number(left);
      } else if (pending.op !== RETURN && pending.op !== REVERT) {
        pending.log.gasCost = this.failedCost(pending.op);
      }
    }
    const error =
      end.error && PRE_EXECUTION_ERRORS.has(end.error) ? gethErrorText(end.error, end.failedOp) : null;
    const last = this.logs[this.logs.length - 1];
    if (error && last && last.depth === end.depth + 1 && last.error === undefined) last.error = error;
    if (this.frames.length === 0) this.top = end;
  }

  /** What ethereumjs charged an op that failed, its constant gas: the gas left is gone. */
  private failedCost(op: number): number {
    const cost = this.staticGas[op] as number;
    return Number.isFinite(cost) ? cost : 0;
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
      frame.pending = null;
    }
    const { limit } = this.options;
    if (limit > 0 && this.logs.length >= limit) return;
    const op = view.opcode;
    const known = this.rules.opcodes[op] === 1 ? opcodeName(op) : null;
    const log: StructLog = {
      pc: view.pc,
      op: gethOpName(op, known),
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
    if (view.refund > 0) log.refund = view.refund;
    if (op === RETURN || op === REVERT) log.gasCost = memoryExpansion(view);
    chargeOutput(structLogBytes(log));
    this.logs.push(log);
    frame.pending = { log, gas: view.gas, op };
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
