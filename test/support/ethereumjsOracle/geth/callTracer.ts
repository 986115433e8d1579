import type { EVM } from '@ethereumjs/evm';
import { setLengthLeft } from '@ethereumjs/util';
import { chargeOutput } from '../../../../src/exec/responseLimit.ts';
import { revertReason } from '../../../../src/exec/revertReason.ts';
import { gethErrorText } from '../../../../src/exec/tracing/geth/errors.ts';
import { quantityToHex, toHex, wordHex } from '../../../../src/primitives/hex.ts';
import type { FrameEnd, FrameKind, FrameStart, SelfDestruct } from '../hooks.ts';
import { EvmPatch } from './evmPatch.ts';
import type { GethTracer, TxContext, TxOutcome } from './types.ts';

/** geth's callFrame JSON (eth/tracers/native/call.go). */
interface CallFrame {
  type: string;
  from: string;
  gas: string;
  gasUsed: string;
  to?: string;
  input: string;
  output?: string;
  error?: string;
  revertReason?: string;
  calls?: CallFrame[];
  logs?: CallLog[];
  value?: string;
}

interface CallLog {
  address: string;
  topics: string[];
  data: string;
  /** Calls of the frame made before the log: where it sits among them. */
  position: string;
}

interface Open {
  frame: CallFrame;
  calls: CallFrame[];
  logs: CallLog[];
  /** geth's revertedSnapshot: the frame failed, so its logs (and its callees') never happened. */
  failed: boolean;
}

const TYPES: Record<FrameKind, string> = {
  call: 'CALL',
  callcode: 'CALLCODE',
  delegatecall: 'DELEGATECALL',
  staticcall: 'STATICCALL',
  create: 'CREATE',
  create2: 'CREATE2',
};

/** LOG0 … LOG4, indexed by their topic count. */
const LOG_OPS = [0xa0, 0xa1, 0xa2, 0xa3, 0xa4];
const EMPTY = new Uint8Array();

// The least JSON a call frame renders to (type, from, to, gas, gasUsed, input, value).
const FRAME_MIN_JSON_BYTES = 120;

/**
 * geth's callTracer: the call tree of one transaction, each frame with the gas it was given and
 * used, its input and output, its error (and the decoded revert reason), and with `withLog` the logs
 * it emitted, placed among its calls. The top frame has the transaction's gas limit and the
 * receipt's gas used (intrinsic gas and refunds included), as geth reports them.
 */
export class CallTracer implements GethTracer {
  private readonly stack: Open[] = [];
  private root: Open | null = null;
  /** Frames entered, counted also when `onlyTopCall` leaves them out. */
  private depth = 0;
  private patch: EvmPatch | null = null;

  constructor(
    private readonly tx: TxContext,
    private readonly config: { onlyTopCall: boolean; withLog: boolean },
  ) {}

  attach(evm: EVM): void {
    if (!this.config.withLog) return;
    const patch = new EvmPatch(evm);
    this.patch = patch;
    // LOGn takes offset, size and n topics: each op is wrapped with its own count, since the stack
    // below its arguments belongs to the contract, not to the log.
    for (const [topicCount, op] of LOG_OPS.entries()) {
      patch.afterOp([op], 2 + topicCount, (runState, args) => {
        const [offset = 0n, size = 0n, ...topics] = args;
        this.log(
          runState.interpreter.getAddress().bytes,
          topics,
          size === 0n ? EMPTY : runState.memory.read(Number(offset), Number(size)),
        );
      });
    }
  }

  /** A log the running frame emitted (its op succeeded); kept with `withLog` only. */
  log(address: Uint8Array, topics: readonly bigint[], data: Uint8Array): void {
    const open = this.stack[this.stack.length - 1];
    if (!open || (this.config.onlyTopCall && this.depth > 1)) return;
    open.logs.push({
      address: toHex(address),
      topics: topics.map((t) => wordHex(t)),
      data: data.length === 0 ? '0x' : toHex(data),
      position: quantityToHex(open.calls.length),
    });
  }

  detach(): void {
    this.patch?.restore();
    this.patch = null;
  }

  frameStart(start: FrameStart): void {
    this.depth++;
    if (this.config.onlyTopCall && start.depth > 0) return;
    // Charged to the job's answer-size bound (src/exec/responseLimit.ts), so a loop of calls stops
    // growing the trace once it passes the bound.
    chargeOutput(FRAME_MIN_JSON_BYTES + 2 * start.input.length);
    const frame: CallFrame = {
      type: TYPES[start.kind],
      from: toHex(start.from),
      gas: quantityToHex(start.depth === 0 ? this.tx.gasLimit : start.gas),
      gasUsed: '0x0',
      input: toHex(start.input),
    };
    if (start.to) frame.to = toHex(start.to);
    if (start.kind !== 'staticcall') frame.value = quantityToHex(start.value);
    const open: Open = { frame, calls: [], logs: [], failed: false };
    if (!this.root) this.root = open;
    this.stack.push(open);
  }

  frameEnd(end: FrameEnd): void {
    this.depth--;
    if (this.config.onlyTopCall && this.depth > 0) return;
    const open = this.stack.pop();
    if (!open) return;
    const frame = open.frame;
    frame.gasUsed = quantityToHex(end.gasUsed);
    const creation = frame.type === 'CREATE' || frame.type === 'CREATE2';
    if (creation && end.createdAddress) frame.to = toHex(end.createdAddress);
    if (end.error === null) {
      if (end.output.length > 0) frame.output = toHex(end.output);
    } else {
      frame.error = gethErrorText(end.error, end.failedOp, end.precompileError);
      open.failed = true;
      if (creation) delete frame.to;
      if (end.error === 'revert' && end.output.length > 0) {
        frame.output = toHex(end.output);
        const reason = revertReason(end.output);
        if (reason !== null) frame.revertReason = reason;
      }
    }
    if (open.calls.length > 0) frame.calls = open.calls;
    if (open.logs.length > 0) frame.logs = open.logs;
    this.stack[this.stack.length - 1]?.calls.push(frame);
    if (open.failed) for (const child of open.calls) dropLogs(child);
    if (open.failed) delete frame.logs;
  }

  selfDestruct(event: SelfDestruct): void {
    // geth reports SELFDESTRUCT as a frame one level down: never the top call.
    if (this.config.onlyTopCall) return;
    this.stack[this.stack.length - 1]?.calls.push({
      type: 'SELFDESTRUCT',
      from: toHex(event.address),
      gas: '0x0',
      gasUsed: '0x0',
      to: toHex(setLengthLeft(event.beneficiary, 20)),
      input: '0x',
      value: quantityToHex(event.balance),
    });
  }

  async result(outcome: TxOutcome): Promise<unknown> {
    const root = this.root;
    if (!root) {
      return {
        type: this.tx.creation ? 'CREATE' : 'CALL',
        from: toHex(this.tx.from),
        gas: quantityToHex(this.tx.gasLimit),
        gasUsed: quantityToHex(outcome.gasUsed),
        to: toHex(this.tx.to),
        input: '0x',
        value: quantityToHex(this.tx.value),
      };
    }
    root.frame.gasUsed = quantityToHex(outcome.gasUsed);
    return root.frame;
  }
}

function dropLogs(frame: CallFrame): void {
  delete frame.logs;
  for (const child of frame.calls ?? []) dropLogs(child);
}
