/**
 * What the EVM tells a tracer, from within. Frame events are checked once per event (a null check
 * when nobody listens); per-step data is recorded only for a tracer that asks for it (`step`).
 * Everything here is plain data of the EVM's own (bigints, bytes), nothing of ethereumjs's.
 */

export type FrameKind = 'call' | 'callcode' | 'delegatecall' | 'staticcall' | 'create' | 'create2';

/** Why a frame failed, one name per kind of failure; each tracer dialect words them its own way. */
export type FrameError =
  | 'revert'
  | 'out of gas'
  | 'code store out of gas'
  | 'invalid jump'
  | 'invalid opcode'
  | 'stack underflow'
  | 'stack overflow'
  | 'static state change'
  | 'insufficient balance'
  | 'call depth'
  | 'create collision'
  | 'code size'
  | 'initcode size'
  | 'invalid code'
  | 'precompile failed'
  | 'return data out of bounds'
  | 'nonce overflow';

export interface FrameStart {
  kind: FrameKind;
  /** 0 for the transaction's own frame. */
  depth: number;
  /** The caller: for delegatecall and callcode the calling contract (whose storage the code uses). */
  from: bigint;
  /** The account called (for delegatecall/callcode the code's account); a creation's new address. */
  to: bigint;
  /** The account whose storage and balance the code uses (`to`, or `from` for delegatecall/callcode). */
  address: bigint;
  value: bigint;
  /** Gas handed to the frame (after the 63/64 rule, the stipend included; top: limit − intrinsic). */
  gas: bigint;
  input: Uint8Array;
  precompile: boolean;
  /** EIP-7702: the code ran is the delegate's, at this address (null when none). */
  delegate: bigint | null;
}

export interface FrameEnd {
  depth: number;
  gasUsed: bigint;
  /** Returned or reverted data (a creation's deployed code on success). */
  output: Uint8Array;
  error: FrameError | null;
  /**
   * A creation's address, whatever its outcome, once it was attempted (a collision included); null
   * for calls and for creations refused before (depth, balance).
   */
  createdAddress: bigint | null;
  /** geth's text for a precompile's rejection of its input ('precompile failed'). */
  precompileError?: string;
  /**
   * For an invalid opcode or a stack error: the op that failed and the stack depth it found (geth
   * prints both). For an SSTORE stopped by EIP-2200's sentry, that op with `sentry`.
   */
  failedOp?: { opcode: number; stackLength: number; sentry?: true };
}

export interface SelfDestructEvent {
  address: bigint;
  beneficiary: bigint;
  /** The balance sent to the beneficiary. */
  balance: bigint;
}

/**
 * A frame's registers as an op finds them, for a step tracer. It is the interpreter's own frame,
 * valid only during the `step` call (the stack and memory are the live buffers: copy what is kept).
 */
export interface StepView {
  readonly pc: number;
  /** The op about to run. */
  readonly opcode: number;
  /** Gas left before it (a number: a step tracer runs transactions of at most 2^52 gas). */
  readonly gas: number;
  /** 0 for the transaction's frame. */
  readonly depth: number;
  /** Items `stack[0..sp)`, the top at `sp − 1`. */
  readonly stack: readonly bigint[];
  readonly sp: number;
  /** Bytes `memory[0..memSize)`. */
  readonly memory: Uint8Array;
  readonly memSize: number;
  /** What the frame's last call or creation returned. */
  readonly returnData: Uint8Array;
  /** The transaction's refund counter. */
  readonly refund: number;
  /** The account whose code runs (storage owner). */
  readonly address: bigint;
  /** The code running: `bytes` is padded past `length` (src/evm/code.ts), so `pc ≥ length` is the STOP off its end. */
  readonly code: { readonly bytes: Uint8Array; readonly length: number };
  /** Gas held beyond `gas` (non-zero only above 2^52: src/evm/interpreter.ts). */
  readonly bank: bigint;
  /** The frame may not change state (a STATICCALL, or under one). */
  readonly isStatic: boolean;
}

/**
 * Per-step recording, for the tracers that need it (vmTrace, struct logs). `step` comes before each
 * op, before any check; what an op did shows in the next step of its frame (gas and stack after
 * it), or in the frame's end. A CALL-family or CREATE op also reports what it paid before its callee
 * started: its own gas, memory, and the gas handed on (the stipend excluded), as geth counts a
 * call's cost. With no step tracer the interpreter pays one null check per op.
 */
export interface StepTracer {
  step(view: StepView): void;
  callCost?(cost: number): void;
}

/** What a tracer may listen to; any member may be left out. */
export interface EvmTracer {
  frameStart?(frame: FrameStart): void;
  frameEnd?(end: FrameEnd): void;
  log?(address: bigint, topics: readonly bigint[], data: Uint8Array): void;
  storageWrite?(address: bigint, slot: bigint, value: bigint): void;
  selfDestruct?(event: SelfDestructEvent): void;
  /** First read of an account in the transaction (prestateTracer's accounts). */
  accountRead?(address: bigint): void;
  /** First read of a slot in the transaction (prestateTracer's storage). */
  storageRead?(address: bigint, slot: bigint): void;
  step?: StepTracer;
}
