// What the tracers of src/exec/tracing see of an execution: frames, their ends and self-destructs,
// independent of the EVM that reports them (src/evm's hooks through tracing/evmAdapter.ts).

import type { FrameError as EvmFrameError } from '../../evm/hooks.ts';
export type FrameKind = 'call' | 'callcode' | 'delegatecall' | 'staticcall' | 'create' | 'create2';

/** A frame as the tracers see it, independent of the EVM. */
export interface FrameStart {
  kind: FrameKind;
  depth: number;
  /** The account whose code runs the call: for delegatecall/callcode the calling contract. */
  from: Uint8Array;
  /** Callee (code address for delegatecall/callcode); for creations the new address, known at the end. */
  to: Uint8Array | null;
  value: bigint;
  /** Gas handed to the frame (after the 63/64 rule, stipend included; top level: limit − intrinsic). */
  gas: bigint;
  input: Uint8Array;
  precompile: boolean;
}

export interface FrameEnd {
  gasUsed: bigint;
  output: Uint8Array;
  /** The EVM's error for a failed frame, normalised (see ERRORS); null on success. */
  error: FrameError | null;
  createdAddress: Uint8Array | null;
  /**
   * For an invalid opcode or a stack error: the op that failed and the stack it found (geth prints
   * both). For an SSTORE that ran out of gas at EIP-2200's sentry (2300 gas or less left), that op
   * with `sentry`: geth words it apart from other out-of-gas failures, OpenEthereum does not.
   */
  failedOp?: { opcode: number; stackLength: number; sentry?: true };
  /**
   * For a precompile that failed other than by running out of gas, its own error in geth's words
   * (`point is not on curve`, `invalid input length`). Parity's
   * dialect words every such failure `Built-in failed`.
   */
  precompileError?: string;
}

/** The EVM's failures, and `other` for a failure the oracle's ethereumjs names in words of its own. */
export type FrameError = EvmFrameError | 'other';

export interface SelfDestruct {
  address: Uint8Array;
  beneficiary: Uint8Array;
  balance: bigint;
}

/** Several tracers on one execution, in order. */
export function allOf(tracers: Array<ExecutionTracer | null>): ExecutionTracer | null {
  const active = tracers.filter((t): t is ExecutionTracer => t !== null);
  if (active.length <= 1) return active[0] ?? null;
  return {
    frameStart: (f) => {
      for (const t of active) t.frameStart(f);
    },
    frameEnd: (e) => {
      for (const t of active) t.frameEnd(e);
    },
    selfDestruct: (s) => {
      for (const t of active) t.selfDestruct?.(s);
    },
  };
}

/** What a tracer may listen to. Only frames of the traced transaction are reported. */
export interface ExecutionTracer {
  frameStart(frame: FrameStart): void;
  frameEnd(end: FrameEnd): void;
  selfDestruct?(event: SelfDestruct): void;
}
