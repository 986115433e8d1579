import type { EVM } from '@ethereumjs/evm';
import { Op } from '../../../src/evm/opcodes.ts';
import { chargeOutput } from '../../../src/exec/responseLimit.ts';
import {
  FORWARDS_GAS,
  MEM_WRITTEN,
  type MemWindow,
  opName,
  PUSHED,
} from '../../../src/exec/tracing/vmTraceOps.ts';
import { toHex } from '../../../src/primitives/hex.ts';
import type { ExecutionTracer, FrameStart } from './hooks.ts';

/** OpenEthereum's vmTrace of one call, plus the `op` mnemonic (as Erigon and Reth add it). */
export interface VmTrace {
  code: string;
  ops: VmOp[];
}

export interface VmOp {
  /** Gas charged for the op; for CALL-family and CREATE ops including the gas handed to the callee. */
  cost: number;
  /** What the op did; null when it failed (it halted the frame exceptionally). */
  ex: VmExecuted | null;
  pc: number;
  /** The frame a CALL-family or CREATE op entered, also for EOAs and precompiles. */
  sub: VmTrace | null;
  op: string;
}

export interface VmExecuted {
  /** The memory window the op wrote, read after it ran; null for other ops and empty windows. */
  mem: { off: number; data: string } | null;
  /** The stack items the op left, bottom to top. */
  push: string[];
  store: { key: string; val: string } | null;
  /** Gas remaining after the op (after the sub-call returned, for CALL-family and CREATE). */
  used: number;
}

// The parts of ethereumjs's interpreter internals the tracer reads. Internal, so pinned by the tests.
interface RunState {
  programCounter: number;
  gasLeft: bigint;
  code: Uint8Array;
  stack: { _store: bigint[]; _len: number };
  memory: { _store: Uint8Array };
  /** Set by a CALL/CREATE gas handler: the gas the new frame gets (63/64 rule applied, no stipend). */
  messageGasLimit?: bigint;
}
interface OpcodeInfo {
  code: number;
  fullName: string;
  feeBigInt: bigint;
  isAsync: boolean;
  dynamicGas: boolean;
  isInvalid: boolean;
}
type OpHandler = (runState: RunState, common: unknown) => unknown;
type GasHandler = (runState: RunState, gas: bigint, common: unknown) => Promise<bigint> | bigint;
interface OpEntry {
  opcodeInfo: OpcodeInfo;
  opHandler: OpHandler;
  gasHandler?: GasHandler;
}
interface InterpreterResult {
  exceptionError?: unknown;
  runState?: RunState;
}
type RunInterpreter = (message: { code?: unknown }, opts?: unknown) => Promise<InterpreterResult>;
interface EvmInternals {
  _opcodeMap: Array<OpEntry | undefined>;
  runInterpreter: RunInterpreter;
}

interface Frame {
  trace: VmTrace;
  /** The op whose handler runs (or ran last): a frame started now is its `sub`. */
  current: VmOp | null;
  /** The op of the parent frame that made this one. */
  parentOp: VmOp | null;
  /** The EVM sent a message for it; frames the EVM refused (depth, balance) are never entered. */
  entered: boolean;
  /** An op handler threw, so the op that ended the frame is already recorded. */
  halted: boolean;
}

const EMPTY_FRAME = (): VmTrace => ({ code: '0x', ops: [] });

// The least JSON one op renders to (`{"cost":3,"ex":null,"pc":0,"sub":null,"op":"STOP"}`), charged
// to the job's answer-size bound as it is recorded (src/exec/responseLimit.ts).
const OP_MIN_JSON_BYTES = 48;
// `{"mem":null,"push":[],"store":null,"used":0}`, less the `null` it replaces.
const EX_MIN_JSON_BYTES = 40;

/**
 * Records the vmTrace of one transaction. Instead of the EVM's `step` event, which builds a step
 * object with a copy of the whole stack and memory for every op, the tracer wraps the opcode
 * handlers of its EVM while it is attached: an op is recorded when its handler starts (the gas is
 * charged by then) and completed when it returns, reading only the stack items it left and the memory
 * window it wrote. Ops that fail before their handler runs (out of gas, invalid opcode, a gas handler
 * that throws) are recorded when the interpreter returns, from the program counter it stopped at.
 *
 * Semantics follow OpenEthereum: no STOP is recorded for code that runs off its end; a failed op has
 * `ex: null`, except that a JUMP to a bad destination keeps its `ex` (OpenEthereum checks the
 * destination after recording the jump). Ops OpenEthereum's pre-checks reject unrecorded (undefined
 * opcodes, stack underflow or overflow) are recorded too, with `ex: null` and what ethereumjs charged.
 */
export class VmTracer implements ExecutionTracer {
  private root: VmTrace | null = null;
  private readonly frames: Frame[] = [];
  private top: Frame | undefined;
  /** Gas the last dynamic gas handler computed, until the op it belongs to is recorded; -1 if none. */
  private charge = -1n;
  private readonly originals: Array<OpEntry | undefined>;
  private readonly originalRunInterpreter: RunInterpreter;
  private readonly ownRunInterpreter: boolean;
  private attached = true;
  private readonly onMessage = (): void => {
    if (this.top) this.top.entered = true;
  };

  constructor(private readonly evm: EVM) {
    const internals = evm as unknown as EvmInternals;
    const map = internals._opcodeMap;
    this.originals = map.slice();
    for (let code = 0; code < map.length; code++) {
      const entry = map[code];
      if (entry) map[code] = this.wrap(code, entry);
    }
    this.ownRunInterpreter = Object.hasOwn(internals, 'runInterpreter');
    const runInterpreter = internals.runInterpreter;
    this.originalRunInterpreter = runInterpreter;
    internals.runInterpreter = async (message, opts) => {
      const frame = this.top;
      if (frame && message.code instanceof Uint8Array) frame.trace.code = toHex(message.code);
      const result = await runInterpreter.call(evm, message, opts);
      if (frame && result.exceptionError !== undefined && !frame.halted && result.runState) {
        this.recordUnhandledFailure(frame, result.runState);
      }
      return result;
    };
    // Registered after TraceHooks' listener, so it runs right after that listener's frameStart.
    evm.events.on('beforeMessage', this.onMessage);
  }

  frameStart(start: FrameStart): void {
    const creation = start.kind === 'create' || start.kind === 'create2';
    const trace: VmTrace = { code: creation ? toHex(start.input) : '0x', ops: [] };
    const parent = this.top;
    const parentOp = parent?.current ?? null;
    if (parentOp) parentOp.sub = trace;
    else if (!parent && !this.root) this.root = trace;
    const frame: Frame = { trace, current: null, parentOp, entered: false, halted: false };
    this.frames.push(frame);
    this.top = frame;
  }

  frameEnd(): void {
    const frame = this.frames.pop();
    this.top = this.frames[this.frames.length - 1];
    // OpenEthereum makes no subtrace for a call the EVM refused: the op just pushes 0.
    if (frame && !frame.entered && frame.parentOp?.sub === frame.trace) frame.parentOp.sub = null;
  }

  /** The finished trace; also detaches from the EVM. */
  result(): VmTrace {
    this.detach();
    return this.root ?? EMPTY_FRAME();
  }

  detach(): void {
    if (!this.attached) return;
    this.attached = false;
    const internals = this.evm as unknown as EvmInternals;
    const map = internals._opcodeMap;
    for (let code = 0; code < this.originals.length; code++) map[code] = this.originals[code];
    if (this.ownRunInterpreter) internals.runInterpreter = this.originalRunInterpreter;
    else delete (internals as Partial<EvmInternals>).runInterpreter;
    this.evm.events.off('beforeMessage', this.onMessage);
  }

  private wrap(code: number, entry: OpEntry): OpEntry {
    const info = entry.opcodeInfo;
    const wrapped: OpEntry = { ...entry };
    const gasHandler = entry.gasHandler;
    if (info.dynamicGas && gasHandler) {
      wrapped.gasHandler = async (runState, gas, common) => {
        const charged = await gasHandler(runState, gas, common);
        this.charge = charged;
        return charged;
      };
    }
    // The EVM rejects an invalid opcode before its handler; recordUnhandledFailure sees it.
    if (info.isInvalid) return wrapped;
    const handler = entry.opHandler;
    const name = opName(code, info.fullName, info.isInvalid);
    const pushed = PUSHED[code] ?? 0;
    const window = MEM_WRITTEN.get(code) ?? null;
    const forwards = FORWARDS_GAS.has(code);
    const sstore = code === Op.SSTORE;
    // The interpreter awaits only handlers it knows to be async, so each wrapper keeps its kind.
    wrapped.opHandler = info.isAsync
      ? async (runState, common) => {
          const frame = this.top;
          if (!frame) return handler(runState, common);
          const op = this.begin(frame, runState, info, name, forwards);
          const mem = window && memWindow(window, runState.stack);
          const store = sstore ? storeArgs(runState.stack) : null;
          try {
            await handler(runState, common);
          } catch (e) {
            this.halt(frame, op, runState, e);
            throw e;
          }
          op.ex = executed(runState, pushed, mem, store);
        }
      : (runState, common) => {
          const frame = this.top;
          if (!frame) return handler(runState, common);
          const op = this.begin(frame, runState, info, name, forwards);
          const mem = window && memWindow(window, runState.stack);
          try {
            handler(runState, common);
          } catch (e) {
            this.halt(frame, op, runState, e);
            throw e;
          }
          op.ex = executed(runState, pushed, mem, null);
        };
    return wrapped;
  }

  /** Records an op whose gas has just been charged and whose handler is about to run. */
  private begin(frame: Frame, runState: RunState, info: OpcodeInfo, name: string, forwards: boolean): VmOp {
    let cost = info.dynamicGas && this.charge >= 0n ? this.charge : info.feeBigInt;
    this.charge = -1n;
    // ethereumjs charges a sub-call's gas when it returns; OpenEthereum counts it in the op's cost.
    if (forwards) cost += runState.messageGasLimit ?? 0n;
    // The interpreter advances the program counter before it calls the handler.
    const op: VmOp = { cost: Number(cost), ex: null, pc: runState.programCounter - 1, sub: null, op: name };
    chargeOutput(OP_MIN_JSON_BYTES);
    frame.trace.ops.push(op);
    frame.current = op;
    return op;
  }

  /** A handler threw: STOP, RETURN, SELFDESTRUCT and REVERT end the frame normally; the rest failed. */
  private halt(frame: Frame, op: VmOp, runState: RunState, e: unknown): void {
    frame.halted = true;
    const error = (e as { error?: unknown } | null)?.error;
    if (
      error === 'stop' ||
      error === 'revert' ||
      (typeof error === 'string' && error.startsWith('invalid JUMP'))
    ) {
      op.ex = { mem: null, push: [], store: null, used: Number(runState.gasLeft) };
    }
  }

  /** The frame failed before the handler of the op at the stopped program counter ran. */
  private recordUnhandledFailure(frame: Frame, runState: RunState): void {
    const pc = runState.programCounter;
    const code = runState.code;
    const byte = code[pc];
    const info = byte === undefined ? undefined : this.originals[byte]?.opcodeInfo;
    if (byte === undefined || !info) return;
    const cost = info.dynamicGas && this.charge >= 0n ? this.charge : info.feeBigInt;
    this.charge = -1n;
    frame.trace.ops.push({
      cost: Number(cost),
      ex: null,
      pc,
      sub: null,
      op: opName(byte, info.fullName, info.isInvalid),
    });
  }
}

type Window = { off: number; len: number } | null;

/** The window an op will write, from its arguments; null when empty (OpenEthereum shows none). */
function memWindow(spec: MemWindow, stack: RunState['stack']): Window {
  const lenAt = 'size' in spec ? -1 : spec.len;
  if (stack._len <= Math.max(spec.off, lenAt)) return null;
  const top = stack._len - 1;
  const off = stack._store[top - spec.off] ?? 0n;
  const len = 'size' in spec ? BigInt(spec.size) : (stack._store[top - spec.len] ?? 0n);
  // A window beyond the safe integers could only be paid for by running out of gas.
  if (len === 0n || off + len > BigInt(Number.MAX_SAFE_INTEGER)) return null;
  return { off: Number(off), len: Number(len) };
}

function storeArgs(stack: RunState['stack']): [bigint, bigint] | null {
  if (stack._len < 2) return null;
  return [stack._store[stack._len - 1] ?? 0n, stack._store[stack._len - 2] ?? 0n];
}

function executed(
  runState: RunState,
  pushed: number,
  mem: Window,
  store: [bigint, bigint] | null,
): VmExecuted {
  const stack = runState.stack;
  const count = Math.min(pushed, stack._len);
  const push = new Array<string>(count);
  // The `ex` object's least JSON, each pushed item quoted with its comma, and two hex digits per
  // byte of the memory window the op shows.
  let bytes = EX_MIN_JSON_BYTES + (mem ? 2 * mem.len : 0);
  for (let i = 0, at = stack._len - count; i < count; i++, at++) {
    const item = `0x${(stack._store[at] ?? 0n).toString(16)}`;
    push[i] = item;
    bytes += item.length + 3;
  }
  chargeOutput(bytes);
  return {
    mem: mem && { off: mem.off, data: readMemory(runState.memory._store, mem.off, mem.len) },
    push,
    store: store && { key: `0x${store[0].toString(16)}`, val: `0x${store[1].toString(16)}` },
    used: Number(runState.gasLeft),
  };
}

/** ethereumjs grows its buffer lazily: bytes past it are memory that was paid for but never written. */
function readMemory(buffer: Uint8Array, off: number, len: number): string {
  const end = Math.min(off + len, buffer.length);
  const have = end > off ? end - off : 0;
  const hex = have > 0 ? Buffer.from(buffer.buffer, buffer.byteOffset + off, have).toString('hex') : '';
  return `0x${hex}${'00'.repeat(len - have)}`;
}
