import { type EVM, type EVMResult, getActivePrecompiles, type Message } from '@ethereumjs/evm';
import { type Address, bigIntToBytes, bytesToUnprefixedHex, setLengthLeft } from '@ethereumjs/util';
import type {
  ExecutionTracer,
  FrameEnd,
  FrameError,
  FrameKind,
  FrameStart,
  SelfDestruct,
} from '../../../src/exec/tracing/frames.ts';
import { precompileFailure } from './precompileFailure.ts';

export { allOf } from '../../../src/exec/tracing/frames.ts';
export type { ExecutionTracer, FrameEnd, FrameError, FrameKind, FrameStart, SelfDestruct };

const OPCODE_KIND: ReadonlyMap<number, FrameKind> = new Map([
  [0xf0, 'create'],
  [0xf1, 'call'],
  [0xf2, 'callcode'],
  [0xf4, 'delegatecall'],
  [0xf5, 'create2'],
  [0xfa, 'staticcall'],
]);
const SELFDESTRUCT = 0xff;

type OpEntry = {
  opHandler: (runState: RunState, common: unknown) => unknown;
  gasHandler?: (runState: RunState, gas: bigint, common: unknown) => unknown;
};
type RunState = {
  gasLeft: bigint;
  stack: { peek(n?: number): bigint[] };
  memory: { read(offset: number, size: number): Uint8Array };
  /** Gas the dynamic gas handler computed for the next frame (63/64 rule applied, no stipend yet). */
  messageGasLimit?: bigint;
  interpreter: { getAddress(): Address; getExternalBalance(address: Address): Promise<bigint> };
};

// Stack positions (from the top) of the value and calldata arguments of each frame-making opcode.
const ARGS: Record<FrameKind, { value?: number; to?: number; offset: number; size: number; depth: number }> =
  {
    call: { to: 1, value: 2, offset: 3, size: 4, depth: 7 },
    callcode: { to: 1, value: 2, offset: 3, size: 4, depth: 7 },
    delegatecall: { to: 1, offset: 2, size: 3, depth: 6 },
    staticcall: { to: 1, offset: 2, size: 3, depth: 6 },
    create: { value: 0, offset: 1, size: 2, depth: 3 },
    create2: { value: 0, offset: 1, size: 2, depth: 4 },
  };
const CALL_STIPEND = 2300n;

/**
 * Connects tracers to one EVM. The call kind of each frame comes from the opcode that made it (the
 * CALL-family and CREATE handlers are wrapped), because ethereumjs messages cannot tell a CALL inside a
 * static frame from a STATICCALL. A CALL or CREATE that fails before a frame exists (insufficient
 * balance, depth) makes no message, so the wrapper reports that frame itself.
 */
export class TraceHooks {
  private tracer: ExecutionTracer | null = null;
  private pendingKind: FrameKind | null = null;
  /**
   * Each open frame's message (the transaction's sender below them): the parent's context address
   * (storage owner) is a child's `from`. Messages are kept rather than their `to`, because a
   * creation's address is only set on its message after `beforeMessage` (ethereumjs's
   * `_executeCreate`), and frames its constructor opens must name it.
   */
  private readonly frames: Array<Message | Uint8Array> = [];
  private readonly precompiles: ReadonlySet<string>;

  constructor(evm: EVM) {
    this.precompiles = new Set(getActivePrecompiles(evm.common).keys());
    this.wrapOpcodes(evm);
    evm.events.on('beforeMessage', (message: Message) => this.onMessage(message));
    evm.events.on('afterMessage', (result: EVMResult) => this.onResult(result));
  }

  /** Traces the next transaction with `tracer` (null: stop tracing). */
  attach(tracer: ExecutionTracer | null, txSender?: Uint8Array): void {
    this.tracer = tracer;
    this.frames.length = 0;
    this.pendingKind = null;
    if (txSender) this.frames.push(txSender);
  }

  private wrapOpcodes(evm: EVM): void {
    const map = (evm as unknown as { _opcodeMap: Record<number, OpEntry | undefined> })._opcodeMap;
    for (const [opcode, kind] of OPCODE_KIND) {
      const entry = map[opcode];
      if (!entry) continue;
      const original = entry.opHandler;
      map[opcode] = {
        ...entry,
        opHandler: async (runState: RunState, common: unknown) => {
          if (!this.tracer) return original(runState, common);
          // Read before the handler pops them: needed if the EVM refuses the frame.
          const stack = runState.stack.peek(ARGS[kind].depth);
          const gas = runState.messageGasLimit ?? 0n;
          this.pendingKind = kind;
          await original(runState, common);
          if (this.pendingKind !== null) this.reportUnstartedFrame(kind, runState, stack, gas);
          this.pendingKind = null;
        },
      };
    }
    markSentryTraps(map);
    const selfDestruct = map[SELFDESTRUCT];
    if (selfDestruct) {
      const original = selfDestruct.opHandler;
      map[SELFDESTRUCT] = {
        ...selfDestruct,
        opHandler: async (runState: RunState, common: unknown) => {
          if (this.tracer?.selfDestruct) {
            const [beneficiary] = runState.stack.peek(1);
            const address = runState.interpreter.getAddress();
            const balance = await runState.interpreter.getExternalBalance(address);
            this.tracer.selfDestruct({
              address: address.bytes,
              beneficiary: setLengthLeft(bigIntToBytes(beneficiary ?? 0n), 20),
              balance,
            });
          }
          return original(runState, common);
        },
      };
    }
  }

  /** A CALL/CREATE that the EVM refused before making a frame (depth limit or unaffordable value). */
  private reportUnstartedFrame(
    kind: FrameKind,
    runState: RunState,
    stack: bigint[],
    messageGas: bigint,
  ): void {
    const tracer = this.tracer;
    if (!tracer) return;
    const args = ARGS[kind];
    const value = args.value === undefined ? 0n : (stack[args.value] ?? 0n);
    const to = args.to === undefined ? null : setLengthLeft(bigIntToBytes(stack[args.to] ?? 0n), 20);
    const size = Number(stack[args.size] ?? 0n);
    const input =
      size === 0 ? new Uint8Array() : runState.memory.read(Number(stack[args.offset] ?? 0n), size).slice();
    const gas = messageGas + (value > 0n && (kind === 'call' || kind === 'callcode') ? CALL_STIPEND : 0n);
    const depth = this.frames.length;
    tracer.frameStart({
      kind,
      depth,
      from: runState.interpreter.getAddress().bytes,
      to,
      value,
      gas,
      input,
      precompile: false,
    });
    tracer.frameEnd({
      gasUsed: 0n,
      output: new Uint8Array(),
      error: depth > 1024 ? 'call depth' : 'insufficient balance',
      createdAddress: null,
    });
  }

  private onMessage(message: Message): void {
    const tracer = this.tracer;
    if (!tracer) return;
    const isCreate = message.to === undefined;
    const kind =
      message.depth === 0
        ? isCreate
          ? 'create'
          : 'call'
        : (this.pendingKind ?? (isCreate ? 'create' : 'call'));
    this.pendingKind = null;
    // The codeAddress getter throws for creations, which have neither a code address nor a `to`.
    const codeAddress = isCreate ? undefined : message.codeAddress;
    const parent = this.frames[this.frames.length - 1];
    const from = parent === undefined ? message.caller.bytes : contextAddress(parent);
    this.frames.push(message);
    tracer.frameStart({
      kind,
      depth: message.depth,
      from,
      to: codeAddress ? codeAddress.bytes : null,
      value: message.value,
      gas: message.gasLimit,
      // The message's data can be a view of the caller's memory, which later writes change.
      input: message.data.slice(),
      precompile: codeAddress !== undefined && this.precompiles.has(bytesToUnprefixedHex(codeAddress.bytes)),
    });
  }

  private onResult(result: EVMResult): void {
    const tracer = this.tracer;
    if (!tracer) return;
    this.frames.pop();
    const exec = result.execResult;
    const failure = exec.exceptionError ? precompileFailure(exec.exceptionError) : undefined;
    // A failed precompile is out of gas or failed, whatever ethereumjs called it (BN254's input
    // errors come back as a revert, which the precompile did not do).
    const error = failure
      ? failure.outOfGas
        ? 'out of gas'
        : 'precompile failed'
      : exec.exceptionError
        ? normaliseError(exec.exceptionError.error)
        : null;
    const failedOp = error === null || failure ? undefined : failedOpOf(error, exec.runState);
    tracer.frameEnd({
      gasUsed: exec.executionGasUsed,
      output: exec.returnValue.slice(),
      error,
      createdAddress: result.createdAddress?.bytes ?? null,
      ...(failedOp ? { failedOp } : {}),
      ...(failure && !failure.outOfGas ? { precompileError: failure.text } : {}),
    });
  }
}

function contextAddress(frame: Message | Uint8Array): Uint8Array {
  if (frame instanceof Uint8Array) return frame;
  // Set for every message that runs code (a creation gets its address before its initcode runs), so
  // only a frame with no code, which opens no child, could lack it.
  return frame.to?.bytes ?? new Uint8Array(20);
}

// ethereumjs's EVMError texts → one name per failure kind. Each dialect has one table of its words for
// these kinds: Parity's in tracing/parity.ts, geth's in tracing/geth/errors.ts.
const ERRORS: ReadonlyMap<string, FrameError> = new Map([
  ['revert', 'revert'],
  ['out of gas', 'out of gas'],
  ['code store out of gas', 'code store out of gas'],
  ['invalid JUMP', 'invalid jump'],
  ['invalid opcode', 'invalid opcode'],
  ['stack underflow', 'stack underflow'],
  ['stack overflow', 'stack overflow'],
  ['static state change', 'static state change'],
  ['insufficient balance', 'insufficient balance'],
  ['create collision', 'create collision'],
  ['code size to deposit exceeds maximum code size', 'code size'],
  ['initcode exceeds max initcode size', 'initcode size'],
  ['invalid bytecode deployed', 'invalid code'],
  ['invalid input length', 'precompile failed'],
  ['invalid EOF format', 'invalid code'],
  ['return data out of bounds', 'return data out of bounds'],
  ['value overflow', 'other'],
  ['nonce overflow', 'nonce overflow'],
  // Precompile input errors (BN254, BLS12-381, KZG) all mean the built-in failed.
  ['point not on curve', 'precompile failed'],
  ['input is empty', 'precompile failed'],
  ['fp point not in field', 'precompile failed'],
  ['kzg commitment does not match versioned hash', 'precompile failed'],
  ['kzg inputs invalid', 'precompile failed'],
  ['kzg proof invalid', 'precompile failed'],
]);

/**
 * For an invalid opcode or a stack error, the op that failed and the stack it found (geth names
 * both). The byte is read from the code: ethereumjs files every byte it does not define under
 * INVALID (0xfe), where geth names the op it is in later forks (SHR before Constantinople). For an
 * out-of-gas SSTORE at EIP-2200's sentry, the op marked `sentry` (ethereumjs traps there with its
 * plain out of gas; `markSentryTraps` sees it).
 */
export function failedOpOf(error: FrameError, state: FailedState | undefined): FrameEnd['failedOp'] {
  if (!state) return undefined;
  if (error === 'out of gas') {
    return isSentryTrap(state)
      ? { opcode: SSTORE, stackLength: state.stack.length, sentry: true }
      : undefined;
  }
  if (error !== 'invalid opcode' && error !== 'stack underflow' && error !== 'stack overflow')
    return undefined;
  const opcode =
    error === 'invalid opcode' ? (state.code[state.programCounter] ?? state.opCode) : state.opCode;
  return { opcode, stackLength: state.stack.length };
}

/** The parts of ethereumjs's run state, as a failed frame leaves it, that `failedOpOf` reads. */
interface FailedState {
  opCode: number;
  programCounter: number;
  code: Uint8Array;
  stack: { length: number };
  gasLeft?: bigint;
  interpreter?: {
    _evm: { common: { gteHardfork(hardfork: string): boolean; isActivatedEIP(eip: number): boolean } };
  };
}

const SSTORE = 0x55;
// EIP-2200: an SSTORE fails unless more than the call stipend is left.
const SSTORE_SENTRY_GAS = 2300n;

function isSentryTrap(state: FailedState): boolean {
  return (
    state.opCode === SSTORE &&
    state.interpreter !== undefined &&
    sentryFrames.has(state.interpreter) &&
    sentryApplies(state.interpreter._evm.common)
  );
}

/**
 * The frames (by interpreter, which a frame's result keeps) that reached an SSTORE with 2300 gas
 * or less. The gas left a failed frame reports cannot tell: an SSTORE that passed the sentry and
 * could not pay its cost leaves 0, as does one reached with no gas at all. The SSTORE's gas
 * handler is where ethereumjs checks the sentry, so that is where it is seen; it costs a
 * comparison per SSTORE and makes no promise of its own.
 */
const sentryFrames = new WeakSet<object>();

function markSentryTraps(map: Record<number, OpEntry | undefined>): void {
  const entry = map[SSTORE];
  const gasHandler = entry?.gasHandler;
  if (!entry || !gasHandler) return;
  map[SSTORE] = {
    ...entry,
    gasHandler: (runState: RunState, gas: bigint, common: unknown) => {
      if (runState.gasLeft <= SSTORE_SENTRY_GAS) sentryFrames.add(runState.interpreter);
      return gasHandler(runState, gas, common);
    },
  };
}

// ethereumjs checks the sentry from Istanbul on (EIP-2200 is no EIP of its fork lists), except in
// the stateless (Verkle) schedules; before Istanbul an SSTORE costs 5000 or more and running out
// of it is plain out of gas.
function sentryApplies(
  common: { gteHardfork(hardfork: string): boolean; isActivatedEIP(eip: number): boolean } | undefined,
): boolean {
  if (!common) return false;
  if (common.isActivatedEIP(8038)) return true;
  return common.gteHardfork('istanbul') && !common.isActivatedEIP(6800) && !common.isActivatedEIP(7864);
}

export function normaliseError(error: string): FrameError {
  // Some errors carry a location suffix ("invalid JUMP at pc 12 …").
  const known = ERRORS.get(error) ?? ERRORS.get(error.split(' at ')[0] ?? error);
  return known ?? (error.includes('precompile') ? 'precompile failed' : 'other');
}
