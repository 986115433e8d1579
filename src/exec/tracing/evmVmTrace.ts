import type { ForkRules } from '../../evm/forks.ts';
import type { EvmTracer, FrameEnd, FrameError, FrameStart, StepView } from '../../evm/hooks.ts';
import { Op, opcodeName, opTables } from '../../evm/opcodes.ts';
import type { WorldState } from '../../evm/state.ts';
import { toHex } from '../../primitives/hex.ts';
import { chargeOutput } from '../responseLimit.ts';
import { MEM_WRITTEN, type MemWindow, PUSHED } from './vmTraceOps.ts';

// The vmTrace (OpenEthereum's) recorded on the EVM of src/evm from its step hook, byte for byte
// what the ethereumjs path recorded (test/support/ethereumjsOracle/vmTrace.ts, the tests' oracle), written straight as JSON bytes: no
// tree of objects to build and then stringify. An op is noted at its step; what it did (gas left,
// items pushed, the memory window written) is read at the next step of its frame, or at the frame's
// end for the op that ended it, and the op is rendered then (its subtrace, if any, has ended by
// then). A frame's text is made at its end. A CALL-family or CREATE op's cost is its own gas plus
// the gas handed on, as the interpreter reports it (`callCost`), since the callee's gas comes back
// before the next step.
//
// An op that fails is shown with `ex: null` and the cost the ethereumjs path showed, which is what
// ethereumjs's gas handler computed for it before the failure (the oracle's vmTrace.ts records
// it): its constant fee when the handler itself refuses the op (a CALL without the gas, a state
// change in a static frame, SSTORE under its EIP-2200 sentry, stack errors), or else the whole
// price of the op, also past the gas left. src/evm stops charging at the first shortfall, so that
// price is computed here from the op's arguments, noted at its step; the state it depends on
// (warm or cold, a slot's values, a beneficiary's existence) is noted only when the frame's gas is
// low enough for the op to fail on it.

const OP_MIN_JSON_BYTES = 48;
const EX_MIN_JSON_BYTES = 40;

const {
  STOP,
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
  JUMP,
  JUMPI,
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
  INVALID,
  PREVRANDAO,
} = Op;

const ADDRESS_MASK = (1n << 160n) - 1n;
/** More than any op's price beyond memory and copying (SSTORE 22100, SELFDESTRUCT 32600). */
const STATE_PRICE_BOUND = 64_000;
const CALL_STIPEND = 2300;

/** Errors of frames the EVM refused before entering: ethereumjs sent no message, so no subtrace. */
const REFUSALS: ReadonlySet<FrameError> = new Set(['call depth', 'insufficient balance', 'nonce overflow']);
/** Errors with which an op that halted its frame still completed (a creation's code refused after). */
const HALTED_OK: ReadonlySet<FrameError | null> = new Set([
  null,
  'revert',
  'code size',
  'invalid code',
  'code store out of gas',
]);

/** Ops with a price beyond their constant fee, whose arguments are noted for a failure's cost. */
const DYNAMIC = new Uint8Array(256);
for (const op of [
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
  CREATE,
  CREATE2,
  RETURN,
  REVERT,
  SELFDESTRUCT,
])
  DYNAMIC[op] = 1;
for (let op = LOG0; op <= LOG4; op++) DYNAMIC[op] = 1;

const WINDOWS: Array<MemWindow | undefined> = new Array(256);
for (const [op, w] of MEM_WRITTEN) WINDOWS[op] = w;

/** Per fork: op names, the constant gas src/evm charges, and the constant fee ethereumjs shows. */
interface ForkTables {
  names: string[];
  gas: Float64Array;
  ejsFee: Float64Array;
}
const forkTables = new WeakMap<ForkRules, ForkTables>();

function tablesFor(rules: ForkRules): ForkTables {
  const cached = forkTables.get(rules);
  if (cached) return cached;
  const ops = opTables(rules);
  const names: string[] = [];
  const gas = new Float64Array(256);
  const ejsFee = new Float64Array(256);
  for (let op = 0; op < 256; op++) {
    const defined = rules.opcodes[op] === 1;
    names.push(
      op === INVALID
        ? 'INVALID'
        : !defined
          ? `opcode 0x${op.toString(16)} not defined`
          : op === PREVRANDAO && rules.proofOfStake
            ? 'PREVRANDAO'
            : (opcodeName(op) ?? `opcode 0x${op.toString(16)} not defined`),
    );
    const g = ops.gas[op] as number;
    gas[op] = Number.isFinite(g) ? g : 0;
    ejsFee[op] = gas[op] as number;
  }
  // ethereumjs prices LOGn's topics, and from EIP-2929 the warm access of these ops, in their
  // dynamic part: their fee alone is less than src/evm's constant gas.
  for (let op = LOG0 + 1; op <= LOG4; op++) ejsFee[op] = 375;
  if (rules.accessLists) {
    for (const op of [
      BALANCE,
      EXTCODESIZE,
      EXTCODECOPY,
      EXTCODEHASH,
      SLOAD,
      CALL,
      CALLCODE,
      DELEGATECALL,
      STATICCALL,
    ])
      ejsFee[op] = 0;
  }
  const tables = { names, gas, ejsFee };
  forkTables.set(rules, tables);
  return tables;
}

/** One frame being traced, with its last op until what that op did is known. */
interface Open {
  code: string;
  /** The frame's ops, rendered, comma-separated. */
  ops: JsonWriter;
  /** The parent had an op running when this frame started (every frame but the transaction's). */
  child: boolean;
  creation: boolean;
  started: boolean;
  startGas: bigint;
  /** An op is noted and not yet rendered. */
  pending: boolean;
  pc: number;
  /** The pending op's subtrace, rendered; null for none. */
  sub: JsonWriter | null;
  opcode: number;
  gasBefore: number;
  /** The cost the interpreter reported for a CALL-family or CREATE op; -1 if none. */
  callCost: number;
  winOff: number;
  /** 0: no memory window shown. */
  winLen: number;
  store: boolean;
  storeKey: bigint;
  storeVal: bigint;
  // For a failure's cost: the op's arguments, memory size and the state it prices.
  args: [bigint, bigint, bigint, bigint];
  memSize: number;
  returnDataSize: number;
  isStatic: boolean;
  noted: boolean;
  warm: boolean;
  current: bigint;
  original: bigint;
  newAccount: boolean;
}

/** A vmTrace rendered as JSON bytes, embedded as they are in an answer (src/exec/jobs/replay.ts, callMany.ts). */
export class RenderedVmTrace {
  constructor(readonly json: Uint8Array) {}
}

/** The JSON of a vmTrace as bytes, rendered already or a tree of objects (the ethereumjs path's). */
export function vmTraceJson(trace: RenderedVmTrace | object | null): Uint8Array {
  return trace instanceof RenderedVmTrace ? trace.json : Buffer.from(JSON.stringify(trace));
}

const EMPTY_TRACE = Buffer.from('{"code":"0x","ops":[]}');

const HEX = new Uint8Array(16);
for (let i = 0; i < 16; i++) HEX[i] = '0123456789abcdef'.charCodeAt(i);

/**
 * A growable buffer of JSON text as bytes (all of it ASCII). Strings built op by op and joined are
 * ropes that V8 flattens at a cost several times their length; bytes are written once.
 */
class JsonWriter {
  buf: Buffer = Buffer.allocUnsafe(1024);
  len = 0;

  private room(n: number): void {
    if (this.len + n <= this.buf.length) return;
    let size = this.buf.length * 2;
    while (size < this.len + n) size *= 2;
    const grown = Buffer.allocUnsafe(size);
    this.buf.copy(grown, 0, 0, this.len);
    this.buf = grown;
  }

  text(s: string): void {
    const n = s.length;
    this.room(n);
    // A call into the runtime costs more than copying a short string here.
    if (n > 64) {
      this.len += this.buf.write(s, this.len, 'latin1');
      return;
    }
    const buf = this.buf;
    let at = this.len;
    for (let i = 0; i < n; i++) buf[at++] = s.charCodeAt(i);
    this.len = at;
  }

  bytes(b: Uint8Array, from = 0, to = b.length): void {
    this.room(to - from);
    this.buf.set(b.subarray(from, to), this.len);
    this.len += to - from;
  }

  /** A JSON number: a safe integer written digit by digit, else as JavaScript prints it (JSON's form). */
  num(n: number): void {
    if (!Number.isSafeInteger(n) || n < 0) {
      this.text(String(n));
      return;
    }
    this.room(16);
    const buf = this.buf;
    let digits = 1;
    for (let v = n; v >= 10; v = Math.floor(v / 10)) digits++;
    let at = this.len + digits;
    this.len = at;
    let v = n;
    do {
      const q = Math.floor(v / 10);
      buf[--at] = 48 + (v - q * 10);
      v = q;
    } while (v > 0);
  }

  /** `"0x…"` of a word, no leading zeros. */
  word(v: bigint): void {
    this.text(`"0x${v.toString(16)}"`);
  }

  /** `"0x…"` of `len` bytes of memory at `off`; bytes past `size` read as zero. */
  memory(memory: Uint8Array, size: number, off: number, len: number): void {
    this.room(4 + 2 * len);
    const buf = this.buf;
    let at = this.len;
    buf[at++] = 0x22;
    buf[at++] = 0x30;
    buf[at++] = 0x78;
    const end = Math.min(off + len, size);
    for (let i = off; i < end; i++) {
      const b = memory[i] as number;
      buf[at++] = HEX[b >> 4] as number;
      buf[at++] = HEX[b & 15] as number;
    }
    for (let i = Math.max(end, off); i < off + len; i++) {
      buf[at++] = 0x30;
      buf[at++] = 0x30;
    }
    buf[at++] = 0x22;
    this.len = at;
  }
}

/**
 * Records the vmTrace of one transaction or call on src/evm (an EvmTracer with a step hook): the
 * JSON of the tree the ethereumjs path's VmTracer made (now the tests' oracle,
 * test/support/ethereumjsOracle/vmTrace.ts).
 */
export class EvmVmTracer {
  private root: Uint8Array | null = null;
  /** Writers of frames that ended, for the next frames (a transaction makes many, of few depths). */
  private readonly spare: JsonWriter[] = [];
  private readonly frames: Open[] = [];
  private top: Open | undefined;
  private readonly t: ForkTables;

  constructor(
    private readonly world: WorldState,
    private readonly rules: ForkRules,
  ) {
    this.t = tablesFor(rules);
  }

  /** The tracer to hand the EVM. */
  readonly tracer: EvmTracer = {
    frameStart: (f) => this.frameStart(f),
    frameEnd: (e) => this.frameEnd(e),
    step: {
      step: (view) => this.step(view),
      callCost: (cost) => {
        if (this.top) this.top.callCost = cost;
      },
    },
  };

  private writer(): JsonWriter {
    return this.spare.pop() ?? new JsonWriter();
  }

  private recycle(w: JsonWriter): void {
    w.len = 0;
    this.spare.push(w);
  }

  /** The finished trace. */
  result(): RenderedVmTrace {
    return new RenderedVmTrace(this.root ?? EMPTY_TRACE);
  }

  frameStart(start: Pick<FrameStart, 'kind' | 'input' | 'gas'>): void {
    const creation = start.kind === 'create' || start.kind === 'create2';
    const frame: Open = {
      code: creation ? toHex(start.input) : '0x',
      ops: this.writer(),
      child: this.top?.pending ?? false,
      creation,
      started: false,
      startGas: start.gas,
      pending: false,
      pc: 0,
      sub: null,
      opcode: 0,
      gasBefore: 0,
      callCost: -1,
      winOff: 0,
      winLen: 0,
      store: false,
      storeKey: 0n,
      storeVal: 0n,
      args: [0n, 0n, 0n, 0n],
      memSize: 0,
      returnDataSize: 0,
      isStatic: false,
      noted: false,
      warm: false,
      current: 0n,
      original: 0n,
      newAccount: false,
    };
    this.frames.push(frame);
    this.top = frame;
  }

  frameEnd(end: Pick<FrameEnd, 'error' | 'gasUsed'>): void {
    const frame = this.frames.pop();
    this.top = this.frames[this.frames.length - 1];
    if (!frame) return;
    if (frame.pending) this.finish(frame, end);
    const parent = this.top;
    const ops = frame.ops;
    if (frame.child && parent) {
      // OpenEthereum makes no subtrace for a call the EVM refused: the op just pushes 0.
      if (end.error === null || !REFUSALS.has(end.error)) {
        const sub = this.writer();
        sub.text(`{"code":"${frame.code}","ops":[`);
        sub.bytes(ops.buf, 0, ops.len);
        sub.text(']}');
        parent.sub = sub;
      }
    } else if (!parent && this.root === null) {
      const root = new JsonWriter();
      root.text(`{"code":"${frame.code}","ops":[`);
      root.bytes(ops.buf, 0, ops.len);
      root.text(']}');
      this.root = root.buf.subarray(0, root.len);
    }
    if (frame.sub !== null) this.recycle(frame.sub);
    this.recycle(ops);
  }

  private step(view: StepView): void {
    const f = this.top;
    if (f === undefined) return;
    const gas = view.bank === 0n ? view.gas : view.gas + Number(view.bank);
    if (f.pending) this.complete(f, view, gas);
    if (!f.started) {
      f.started = true;
      if (!f.creation) f.code = toHex(view.code.bytes.subarray(0, view.code.length));
    }
    const pc = view.pc;
    // The STOP the code runs into past its end: OpenEthereum records none.
    if (pc >= view.code.length) return;
    const opcode = view.opcode;
    chargeOutput(OP_MIN_JSON_BYTES);
    f.pending = true;
    f.pc = pc;
    if (f.sub !== null) this.recycle(f.sub);
    f.sub = null;
    f.opcode = opcode;
    f.gasBefore = gas;
    f.callCost = -1;
    const s = view.stack;
    const sp = view.sp;
    const w = WINDOWS[opcode];
    f.winLen = 0;
    if (w !== undefined) {
      const lenAt = 'size' in w ? -1 : w.len;
      if (sp > Math.max(w.off, lenAt)) {
        const off = s[sp - 1 - w.off] as bigint;
        const len = 'size' in w ? BigInt(w.size) : (s[sp - 1 - w.len] as bigint);
        // A window beyond the safe integers could only be paid for by running out of gas.
        if (len !== 0n && off + len <= BigInt(Number.MAX_SAFE_INTEGER)) {
          f.winOff = Number(off);
          f.winLen = Number(len);
        }
      }
    }
    f.store = false;
    if (opcode === SSTORE && sp >= 2) {
      f.store = true;
      f.storeKey = s[sp - 1] as bigint;
      f.storeVal = s[sp - 2] as bigint;
    }
    if (DYNAMIC[opcode] === 1) this.note(f, view, opcode, gas);
  }

  /** What a priced op's failure would need: its arguments, and the state it prices when it may fail. */
  private note(f: Open, view: StepView, opcode: number, gas: number): void {
    const s = view.stack;
    const sp = view.sp;
    const args = f.args;
    args[0] = sp > 0 ? (s[sp - 1] as bigint) : 0n;
    args[1] = sp > 1 ? (s[sp - 2] as bigint) : 0n;
    args[2] = sp > 2 ? (s[sp - 3] as bigint) : 0n;
    args[3] = sp > 3 ? (s[sp - 4] as bigint) : 0n;
    f.memSize = view.memSize;
    f.returnDataSize = view.returnData.length;
    f.isStatic = view.isStatic;
    f.noted = false;
    if (gas >= STATE_PRICE_BOUND && opcode !== EXTCODECOPY) return;
    const world = this.world;
    switch (opcode) {
      case BALANCE:
      case EXTCODESIZE:
      case EXTCODECOPY:
      case EXTCODEHASH:
        f.warm = world.isWarm(args[0] & ADDRESS_MASK);
        f.noted = true;
        break;
      case SLOAD:
        f.warm = world.cached(view.address)?.warmSlots?.has(args[0]) ?? false;
        f.noted = true;
        break;
      case SSTORE: {
        if (sp < 2) break;
        const account = world.account(view.address);
        f.warm = account.warmSlots?.has(args[0]) ?? false;
        f.original = world.committedStorage(account, args[0]);
        f.current = account.current.get(args[0]) ?? f.original;
        f.noted = true;
        break;
      }
      case SELFDESTRUCT: {
        if (sp < 1 || view.isStatic) break;
        const heir = world.account(args[0] & ADDRESS_MASK);
        f.warm = heir.warm;
        const rules = this.rules;
        f.newAccount = rules.emptyIsAbsent
          ? (world.cached(view.address)?.balance ?? 0n) > 0n && heir.isEmpty()
          : rules.selfDestructNewAccount && !heir.exists;
        f.noted = true;
        break;
      }
    }
  }

  /** The frame's last op completed: what it left, read now. */
  private complete(f: Open, view: StepView, gasAfter: number): void {
    f.pending = false;
    const cost = f.callCost >= 0 ? (this.t.gas[f.opcode] as number) + f.callCost : f.gasBefore - gasAfter;
    const w = this.opStart(f, cost);
    w.text(',"ex":{"mem":');
    if (f.winLen === 0) w.text('null');
    else {
      w.text('{"off":');
      w.num(f.winOff);
      w.text(',"data":');
      w.memory(view.memory, view.memSize, f.winOff, f.winLen);
      w.text('}');
    }
    w.text(',"push":[');
    const stack = view.stack;
    const sp = view.sp;
    const count = Math.min(PUSHED[f.opcode] as number, sp);
    const pushFrom = w.len;
    for (let at = sp - count; at < sp; at++) {
      if (at > sp - count) w.text(',');
      w.word(stack[at] as bigint);
    }
    // As the ethereumjs path counts it: the `ex` object's least JSON, each item with its comma and
    // quotes, two hex digits per byte of the window.
    chargeOutput(EX_MIN_JSON_BYTES + 2 * f.winLen + (w.len - pushFrom) + (count > 0 ? 1 : 0));
    w.text('],"store":');
    if (f.store) {
      w.text('{"key":');
      w.word(f.storeKey);
      w.text(',"val":');
      w.word(f.storeVal);
      w.text('}');
    } else w.text('null');
    w.text(',"used":');
    w.num(gasAfter);
    w.text('}');
    this.opEnd(f, w);
  }

  /** `{"cost":N` of the op, after the comma that parts it from the one before. */
  private opStart(f: Open, cost: number): JsonWriter {
    const w = f.ops;
    w.text(w.len === 0 ? '{"cost":' : ',{"cost":');
    w.num(cost);
    return w;
  }

  /** `,"pc":N,"sub":…,"op":"NAME"}` of the op. */
  private opEnd(f: Open, w: JsonWriter): void {
    w.text(',"pc":');
    w.num(f.pc);
    w.text(',"sub":');
    const sub = f.sub;
    if (sub === null) w.text('null');
    else {
      w.bytes(sub.buf, 0, sub.len);
      this.recycle(sub);
      f.sub = null;
    }
    w.text(`,"op":"${this.t.names[f.opcode]}"}`);
  }

  /** The frame ended at its last op: an op that halted it, or one that failed. */
  private finish(f: Open, end: Pick<FrameEnd, 'error' | 'gasUsed'>): void {
    f.pending = false;
    const opcode = f.opcode;
    const error = end.error;
    let cost: number;
    if (
      (opcode === STOP || opcode === RETURN || opcode === REVERT || opcode === SELFDESTRUCT) &&
      HALTED_OK.has(error)
    ) {
      // Read from the op's arguments, not the frame's end: a creation's code deposit comes after.
      if (opcode === STOP) cost = 0;
      else if (opcode === SELFDESTRUCT) cost = f.gasBefore - Number(f.startGas - end.gasUsed);
      else cost = Number(memoryCost(f.memSize, f.args[0], f.args[1]));
    } else if ((opcode === JUMP || opcode === JUMPI) && error === 'invalid jump') {
      // OpenEthereum checks the destination after recording the jump.
      cost = this.t.gas[opcode] as number;
    } else {
      const w = this.opStart(f, this.failureCost(f, error));
      w.text(',"ex":null');
      this.opEnd(f, w);
      return;
    }
    chargeOutput(EX_MIN_JSON_BYTES);
    const w = this.opStart(f, cost);
    w.text(',"ex":{"mem":null,"push":[],"store":null,"used":');
    w.num(f.gasBefore - cost);
    w.text('}');
    this.opEnd(f, w);
  }

  /** What ethereumjs's gas handler priced a failed op at (see the note at the top). */
  private failureCost(f: Open, error: FrameError | null): number {
    const opcode = f.opcode;
    const fee = this.t.ejsFee[opcode] as number;
    const rules = this.rules;
    const [a0, a1, a2, a3] = f.args;
    if (error === 'initcode size' && (opcode === CREATE || opcode === CREATE2)) {
      // ethereumjs refuses the size in the op's handler, after charging it (when it could) with the
      // gas it would hand on, all but a 64th of what was left (EIP-3860 came after EIP-150).
      const price =
        BigInt(fee) +
        memoryCost(f.memSize, a1, a2) +
        BigInt(rules.initCodeWordGas) * ((a2 + 31n) / 32n) +
        (opcode === CREATE2 ? 6n * ((a2 + 31n) / 32n) : 0n);
      const left = BigInt(f.gasBefore) - price;
      return Number(left < 0n ? price : price + left - left / 64n);
    }
    if (error !== 'out of gas' || DYNAMIC[opcode] !== 1) return fee;
    const copyWords = (len: bigint) => (len === 0n ? 0n : 3n * ((len + 31n) / 32n));
    let extra = 0n;
    switch (opcode) {
      case EXP: {
        if (a1 === 0n) break;
        extra = BigInt(Math.ceil(a1.toString(2).length / 8) * rules.expByteGas);
        break;
      }
      case KECCAK256:
        extra = memoryCost(f.memSize, a0, a1) + 6n * ((a1 + 31n) / 32n);
        break;
      case CALLDATACOPY:
      case CODECOPY:
        extra = memoryCost(f.memSize, a0, a2) + copyWords(a2);
        break;
      case RETURNDATACOPY:
        if (a1 + a2 > BigInt(f.returnDataSize)) return fee;
        extra = memoryCost(f.memSize, a0, a2) + copyWords(a2);
        break;
      case EXTCODECOPY:
        extra = memoryCost(f.memSize, a1, a3) + this.access(f) + copyWords(a3);
        break;
      case BALANCE:
      case EXTCODESIZE:
      case EXTCODEHASH:
        extra = this.access(f);
        break;
      case MLOAD:
      case MSTORE:
        extra = memoryCost(f.memSize, a0, 32n);
        break;
      case MSTORE8:
        extra = memoryCost(f.memSize, a0, 1n);
        break;
      case SLOAD:
        if (rules.accessLists) extra = BigInt(f.warm ? rules.warmAccess : rules.coldSload);
        break;
      case SSTORE: {
        const sstore = rules.sstore;
        if (f.isStatic || !f.noted || (sstore.sentry && f.gasBefore <= CALL_STIPEND)) return fee;
        extra = BigInt(this.sstorePrice(f) + (rules.accessLists && !f.warm ? rules.coldSload : 0));
        break;
      }
      case MCOPY: {
        const first = memoryCost(f.memSize, a1, a2);
        const grown = a2 === 0n ? f.memSize : Math.max(f.memSize, wordsEnd(a1, a2));
        extra = copyWords(a2) + first + memoryCost(grown, a0, a2);
        break;
      }
      case CREATE:
      case CREATE2:
        if (f.isStatic) return fee;
        extra =
          memoryCost(f.memSize, a1, a2) +
          BigInt(rules.initCodeWordGas) * ((a2 + 31n) / 32n) +
          (opcode === CREATE2 ? 6n * ((a2 + 31n) / 32n) : 0n);
        break;
      case RETURN:
      case REVERT:
        extra = memoryCost(f.memSize, a0, a1);
        break;
      case SELFDESTRUCT:
        if (f.isStatic || !f.noted) return fee;
        extra =
          (rules.accessLists && !f.warm ? BigInt(rules.coldAccountAccess) : 0n) +
          (f.newAccount ? 25_000n : 0n);
        break;
      default:
        if (opcode >= LOG0 && opcode <= LOG4) {
          if (f.isStatic) return fee;
          extra = memoryCost(f.memSize, a0, a1) + 375n * BigInt(opcode - LOG0) + 8n * a1;
        }
    }
    return Number(BigInt(fee) + extra);
  }

  /** EIP-2929's account access as ethereumjs prices it (all of it in the dynamic part). */
  private access(f: Open): bigint {
    const rules = this.rules;
    if (!rules.accessLists) return 0n;
    return BigInt(f.warm ? rules.warmAccess : rules.coldAccountAccess);
  }

  /** SSTORE's price by its slot's values (src/evm/interpreter.ts's rule, without the access). */
  private sstorePrice(f: Open): number {
    const sstore = this.rules.sstore;
    const value = f.storeVal;
    const current = f.current;
    if (sstore.scheme === 'simple') return current === 0n && value !== 0n ? sstore.set : sstore.reset;
    if (current === value) return sstore.noop;
    if (f.original === current) return f.original === 0n ? sstore.set : sstore.reset;
    return sstore.noop;
  }
}

/** Memory words past `offset + length`, in bytes (for a second expansion after a first). */
function wordsEnd(offset: bigint, length: bigint): number {
  const end = offset + length;
  return end > BigInt(Number.MAX_SAFE_INTEGER) ? Number.MAX_SAFE_INTEGER : Number(((end + 31n) / 32n) * 32n);
}

/** Gas of growing memory of `memSize` bytes to cover [offset, offset + length), as ethereumjs counts it. */
function memoryCost(memSize: number, offset: bigint, length: bigint): bigint {
  if (length === 0n) return 0n;
  const words = (offset + length + 31n) / 32n;
  const current = BigInt(Math.ceil(memSize / 32));
  if (words <= current) return 0n;
  return words * 3n + (words * words) / 512n - (current * 3n + (current * current) / 512n);
}
