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
  /** A creation's new address on success; null otherwise. */
  createdAddress: bigint | null;
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
 * Per-step recording for tracers that need it (vmTrace, struct logs). The interpreter calls `before`
 * with the op about to run and the frame's registers, then `after` once it ran (not for ops that
 * failed or ended the frame). Gas values are numbers: a frame's gas never exceeds 2^53 while a step
 * tracer is attached (a transaction's gas limit is checked when it is attached).
 */
export interface StepTracer {
  before(
    pc: number,
    op: number,
    gas: number,
    cost: number,
    depth: number,
    stack: readonly bigint[],
    sp: number,
  ): void;
  after(gasLeft: number, stack: readonly bigint[], sp: number, memory: Uint8Array, memSize: number): void;
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
