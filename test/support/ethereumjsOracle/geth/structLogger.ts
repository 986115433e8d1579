import type { EVM, InterpreterStep } from '@ethereumjs/evm';
import { chargeOutput } from '../../../../src/exec/responseLimit.ts';
import { gethErrorText, gethOpName } from '../../../../src/exec/tracing/geth/errors.ts';
import {
  type Cell,
  memoryWords,
  PRE_EXECUTION_ERRORS,
  type StructLog,
  structLogBytes,
  toJson,
} from '../../../../src/exec/tracing/geth/structLog.ts';
import { bigintWord, toHex, wordHex } from '../../../../src/primitives/hex.ts';
import type { FrameEnd, FrameKind, FrameStart } from '../hooks.ts';
import { EvmPatch, type RunState } from './evmPatch.ts';
import {
  type GethTracer,
  type StateReader,
  type StructLoggerOptions,
  settled,
  stateReader,
  type TxOutcome,
} from './types.ts';

interface Frame {
  kind: FrameKind;
  depth: number;
  /** The last op of the frame, to tell code that ran off its end. */
  lastOp: number;
  /** geth's interpreter returnData: what the frame's last sub-call returned. */
  returnData: Uint8Array;
}

const SLOAD = 0x54;
const SSTORE = 0x55;
const STOP = 0x00;
const RETURN = 0xf3;
const SELFDESTRUCT = 0xff;
const CALL_STIPEND = 2300n;
const EMPTY = new Uint8Array();

/**
 * geth's default tracer, the struct logger: one entry per op executed, with the gas before it and
 * what it costs (for CALL-family ops including the gas handed to the callee, without the stipend, as
 * geth charges it), the stack and memory as the op finds them, and for SLOAD/SSTORE the slots of
 * the contract touched so far in the transaction. Built on the EVM's `step` event, which is listened
 * to only while the transaction runs. Code that runs off its end gets geth's implicit STOP.
 */
export class StructLogger implements GethTracer {
  private readonly logs: StructLog[] = [];
  private readonly frames: Frame[] = [];
  private readonly storage = new Map<string, Map<string, Cell>>();
  private readonly pending: Promise<unknown>[] = [];
  private reader: StateReader | null = null;
  private patch: EvmPatch | null = null;
  private evm: EVM | null = null;
  private top: FrameEnd | null = null;

  constructor(private readonly options: StructLoggerOptions) {}

  attach(evm: EVM): void {
    this.evm = evm;
    this.reader = stateReader(evm);
    this.patch = new EvmPatch(evm);
    this.patch.afterInterpreter((_message, result) => this.onInterpreterEnd(result));
    evm.events.on('step', this.onStep);
  }

  detach(): void {
    this.evm?.events.off('step', this.onStep);
    this.patch?.restore();
    this.patch = null;
    this.evm = null;
  }

  frameStart(start: FrameStart): void {
    if (start.depth > 0 && start.kind !== 'create' && start.kind !== 'create2') {
      // ethereumjs charges a callee's gas when it returns; geth counts it in the CALL's cost.
      const last = this.logs[this.logs.length - 1];
      if (last && last.depth === start.depth) {
        const stipend = start.value > 0n && (start.kind === 'call' || start.kind === 'callcode');
        last.gasCost += Number(start.gas - (stipend ? CALL_STIPEND : 0n));
      }
    }
    this.frames.push({ kind: start.kind, depth: start.depth, lastOp: -1, returnData: EMPTY });
  }

  frameEnd(end: FrameEnd): void {
    const frame = this.frames.pop();
    if (!frame) return;
    const error =
      end.error && PRE_EXECUTION_ERRORS.has(end.error) ? gethErrorText(end.error, end.failedOp) : null;
    const last = this.logs[this.logs.length - 1];
    if (error && last && last.depth === frame.depth + 1 && last.error === undefined) last.error = error;
    const parent = this.frames[this.frames.length - 1];
    if (!parent) {
      this.top = end;
      return;
    }
    // geth keeps a creation's output as return data only when it reverted.
    const creation = frame.kind === 'create' || frame.kind === 'create2';
    parent.returnData = creation && end.error !== 'revert' ? EMPTY : end.output;
  }

  private readonly onStep = (step: InterpreterStep): void => {
    const frame = this.frames[this.frames.length - 1];
    const code = step.opcode.code;
    if (frame) frame.lastOp = code;
    const { limit } = this.options;
    if (limit > 0 && this.logs.length >= limit) return;
    const invalid = step.opcode.name === 'INVALID';
    const log: StructLog = {
      pc: step.pc,
      op: gethOpName(code, invalid ? null : step.opcode.name),
      gas: Number(step.gasLeft),
      gasCost: Number(step.opcode.dynamicFee ?? BigInt(step.opcode.fee)),
      depth: step.depth + 1,
    };
    const stack = step.stack;
    if (!this.options.disableStack) log.stack = stack.map((v) => `0x${v.toString(16)}`);
    if (this.options.enableReturnData && frame && frame.returnData.length > 0)
      log.returnData = toHex(frame.returnData);
    if (this.options.enableMemory && step.memoryWordCount > 0n)
      log.memory = memoryWords(step.memory, Number(step.memoryWordCount));
    if (!this.options.disableStorage && (code === SLOAD || code === SSTORE)) {
      const slots = this.slotsOf(step.address.toString());
      const key = stack[stack.length - 1];
      if (code === SLOAD && key !== undefined) {
        slots.set(wordHex(key), this.read(step.address.bytes, key));
        log.storage = [...slots];
      } else if (code === SSTORE && key !== undefined && stack.length >= 2) {
        slots.set(wordHex(key), { value: wordHex(stack[stack.length - 2] ?? 0n) });
        log.storage = [...slots];
      }
    }
    if (step.gasRefund > 0n) log.refund = Number(step.gasRefund);
    chargeOutput(structLogBytes(log));
    this.logs.push(log);
  };

  /** geth runs the STOP past the end of code (its GetOp reads past the end as STOP); ethereumjs stops. */
  private onInterpreterEnd(result: { exceptionError?: unknown; runState?: RunState }): void {
    const frame = this.frames[this.frames.length - 1];
    const runState = result.runState;
    if (!frame || !runState || result.exceptionError !== undefined) return;
    if (frame.lastOp === STOP || frame.lastOp === RETURN || frame.lastOp === SELFDESTRUCT) return;
    const { limit } = this.options;
    if (limit > 0 && this.logs.length >= limit) return;
    const log: StructLog = {
      pc: runState.programCounter,
      op: 'STOP',
      gas: Number(runState.gasLeft),
      gasCost: 0,
      depth: frame.depth + 1,
    };
    const stack = runState.stack;
    if (!this.options.disableStack)
      log.stack = stack._store.slice(0, stack._len).map((v) => `0x${v.toString(16)}`);
    if (this.options.enableReturnData && frame.returnData.length > 0)
      log.returnData = toHex(frame.returnData);
    const words = Number(runState.memoryWordCount);
    if (this.options.enableMemory && words > 0) log.memory = memoryWords(runState.memory._store, words);
    if (runState.gasRefund > 0n) log.refund = Number(runState.gasRefund);
    chargeOutput(structLogBytes(log));
    this.logs.push(log);
  }

  private slotsOf(address: string): Map<string, Cell> {
    let slots = this.storage.get(address);
    if (!slots) {
      slots = new Map();
      this.storage.set(address, slots);
    }
    return slots;
  }

  private read(address: Uint8Array, slot: bigint): Cell {
    const cell: Cell = { value: '' };
    const reading = settled(this.reader?.storage(address, bigintWord(slot)) ?? Promise.resolve(EMPTY));
    cell.value = reading.then((v) => {
      cell.value = wordHex(v);
      return cell.value;
    });
    this.pending.push(cell.value);
    return cell;
  }

  async result(outcome: TxOutcome): Promise<unknown> {
    await Promise.all(this.pending);
    const top = this.top;
    const failed = top?.error != null;
    // geth returns the output when the call succeeded or reverted, nothing for other failures.
    const returnValue = !top || (failed && top.error !== 'revert') ? '0x' : toHex(top.output);
    return {
      gas: Number(outcome.gasUsed),
      failed,
      returnValue,
      structLogs: this.logs.map(toJson),
    };
  }
}
