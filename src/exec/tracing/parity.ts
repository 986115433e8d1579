import { quantityToHex, toHex } from '../../primitives/hex.ts';
import { chargeOutput } from '../responseLimit.ts';
import type { ExecutionTracer, FrameEnd, FrameError, FrameStart, SelfDestruct } from './frames.ts';

/** Parity (OpenEthereum) error strings, as Reth and Infura print them. */
const PARITY_ERRORS: Record<FrameError, string> = {
  revert: 'Reverted',
  'out of gas': 'Out of gas',
  'code store out of gas': 'Out of gas',
  'invalid jump': 'Bad jump destination',
  'invalid opcode': 'Bad instruction',
  'stack underflow': 'Stack underflow',
  'stack overflow': 'Out of stack',
  'static state change': 'Mutable Call In Static Context',
  'insufficient balance': 'Insufficient balance for transfer',
  'call depth': 'Call too deep',
  'create collision': 'Contract address collision',
  'code size': 'Contract code size limit exceeded',
  'initcode size': 'Contract code size limit exceeded',
  'invalid code': 'Invalid code',
  'precompile failed': 'Built-in failed',
  'return data out of bounds': 'Out of bounds',
  'nonce overflow': 'Nonce overflow',
  other: 'Internal error',
};

interface Node {
  start: FrameStart;
  end?: FrameEnd;
  suicide?: SelfDestruct;
  children: Node[];
}

/** Wire shape of one Parity trace entry. */
export type ParityTrace = Record<string, unknown>;

// The least JSON a call entry renders to (action with from, to, gas, value, input; result; the rest).
const ENTRY_MIN_JSON_BYTES = 200;

/**
 * Builds the Parity call tree of one transaction: pre-order entries with traceAddress and subtraces.
 * Zero-value calls to precompiles below the top level are left out, as OpenEthereum, Erigon and
 * revm-inspectors all do; a SELFDESTRUCT is a `suicide` child of the frame that ran it.
 */
export class ParityCallTracer implements ExecutionTracer {
  private readonly roots: Node[] = [];
  private readonly stack: Array<Node | null> = [];

  frameStart(start: FrameStart): void {
    const hidden = start.precompile && start.depth > 0 && start.value === 0n;
    const node: Node | null = hidden ? null : { start, children: [] };
    // Charged to the job's answer-size bound (src/exec/responseLimit.ts): a loop of calls makes
    // hundreds of thousands of entries, and the trace stops growing once they pass the bound.
    if (node) chargeOutput(ENTRY_MIN_JSON_BYTES + 2 * start.input.length);
    const parent = this.stack[this.stack.length - 1];
    if (node) {
      if (parent) parent.children.push(node);
      else if (this.stack.length === 0) this.roots.push(node);
    }
    this.stack.push(node);
  }

  frameEnd(end: FrameEnd): void {
    const node = this.stack.pop();
    if (node) node.end = end;
  }

  selfDestruct(event: SelfDestruct): void {
    const frame = this.stack[this.stack.length - 1];
    frame?.children.push({
      start: {
        kind: 'call',
        depth: frame.start.depth + 1,
        from: event.address,
        to: null,
        value: 0n,
        gas: 0n,
        input: new Uint8Array(),
        precompile: false,
      },
      suicide: event,
      children: [],
    });
  }

  traces(): ParityTrace[] {
    const out: ParityTrace[] = [];
    const walk = (node: Node, address: number[]) => {
      out.push(entry(node, address));
      for (const [i, child] of node.children.entries()) walk(child, [...address, i]);
    };
    for (const root of this.roots) walk(root, []);
    return out;
  }
}

function entry(node: Node, traceAddress: number[]): ParityTrace {
  const { start, end, suicide } = node;
  const common = { subtraces: node.children.length, traceAddress };
  if (suicide) {
    return {
      action: {
        address: toHex(suicide.address),
        balance: quantityToHex(suicide.balance),
        refundAddress: toHex(suicide.beneficiary),
      },
      result: null,
      ...common,
      type: 'suicide',
    };
  }
  const error = end?.error
    ? start.precompile && end.error !== 'out of gas'
      ? 'Built-in failed'
      : PARITY_ERRORS[end.error]
    : undefined;
  // Reverted frames keep their result (gas used and revert data); other failures, and any failure
  // of a built-in, have none.
  const keepsResult = !end?.error || (end.error === 'revert' && !start.precompile);
  const isCreate = start.kind === 'create' || start.kind === 'create2';
  if (isCreate) {
    return {
      action: {
        creationMethod: start.kind,
        from: toHex(start.from),
        gas: quantityToHex(start.gas),
        init: toHex(start.input),
        value: quantityToHex(start.value),
      },
      ...(error ? { error } : {}),
      result:
        keepsResult && end
          ? {
              address: toHex(end.createdAddress ?? new Uint8Array(20)),
              code: toHex(end.output),
              gasUsed: quantityToHex(end.gasUsed),
            }
          : null,
      ...common,
      type: 'create',
    };
  }
  return {
    action: {
      callType: start.kind,
      from: toHex(start.from),
      gas: quantityToHex(start.gas),
      input: toHex(start.input),
      to: toHex(start.to ?? new Uint8Array(20)),
      value: quantityToHex(start.kind === 'staticcall' ? 0n : start.value),
    },
    ...(error ? { error } : {}),
    result: keepsResult && end ? { gasUsed: quantityToHex(end.gasUsed), output: toHex(end.output) } : null,
    ...common,
    type: 'call',
  };
}
