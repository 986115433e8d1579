import type { FrameEnd as EvmFrameEnd, FrameStart as EvmFrameStart, EvmTracer } from '../../evm/hooks.ts';
import type { StateReader, WorldState } from '../../evm/state.ts';
import { addressBytes, wordBytes } from '../../evm/words.ts';
import { bytesKey } from '../../primitives/hex.ts';
import type { AccountChange, AccountView } from '../stateAccess.ts';
import type { ExecutionTracer } from './frames.ts';

// The tracers of src/exec/tracing (Parity's, geth's) hear frames in the terms of tracing/frames.ts,
// which the ethereumjs path fed (the tests' oracle still does: test/support/ethereumjsOracle/hooks.ts);
// these adapters feed them from the EVM of src/evm, and record what a stateDiff needs from its world
// state.

const CALL_DEPTH_LIMIT = 1024;

/**
 * Frame events of src/evm as the exec tracers' (addresses as bytes). Where the two EVMs' events
 * differ, the tracers' shape is kept: a creation's `to` is null until it ends, and a call the EVM
 * refused before its frame (depth, an unaffordable value) is never a precompile's, as TraceHooks
 * reports such calls.
 */
export function adaptTracer(tracer: ExecutionTracer, world: WorldState): EvmTracer {
  return {
    frameStart(f: EvmFrameStart) {
      const creation = f.kind === 'create' || f.kind === 'create2';
      tracer.frameStart({
        kind: f.kind,
        depth: f.depth,
        from: addressBytes(f.from),
        to: creation ? null : addressBytes(f.to),
        value: f.value,
        gas: f.gas,
        input: f.input,
        precompile: f.precompile && !refused(f, world),
      });
    },
    frameEnd(e: EvmFrameEnd) {
      tracer.frameEnd({
        gasUsed: e.gasUsed,
        output: e.output,
        error: e.error,
        createdAddress: e.createdAddress === null ? null : addressBytes(e.createdAddress),
        ...(e.failedOp ? { failedOp: e.failedOp } : {}),
        ...(e.precompileError === undefined ? {} : { precompileError: e.precompileError }),
      });
    },
    ...(tracer.selfDestruct
      ? {
          selfDestruct: (s) =>
            tracer.selfDestruct?.({
              address: addressBytes(s.address),
              beneficiary: addressBytes(s.beneficiary),
              balance: s.balance,
            }),
        }
      : {}),
  };
}

/** The EVM will refuse this frame before it runs (src/evm/interpreter.ts enterCall's first checks). */
function refused(f: EvmFrameStart, world: WorldState): boolean {
  if (f.depth > CALL_DEPTH_LIMIT) return true;
  if ((f.kind !== 'call' && f.kind !== 'callcode') || f.value === 0n) return false;
  const caller = world.cached(f.from);
  return caller !== undefined && caller.balance < f.value;
}

/** Several EVM tracers on one execution. */
export function allEvmTracers(tracers: Array<EvmTracer | null>): EvmTracer | null {
  const active = tracers.filter((t): t is EvmTracer => t !== null);
  if (active.length <= 1) return active[0] ?? null;
  const withStart = active.filter((t) => t.frameStart);
  const withEnd = active.filter((t) => t.frameEnd);
  const withDestruct = active.filter((t) => t.selfDestruct);
  const withLog = active.filter((t) => t.log);
  const withWrite = active.filter((t) => t.storageWrite);
  const withAccountRead = active.filter((t) => t.accountRead);
  const withStorageRead = active.filter((t) => t.storageRead);
  const steps = active.filter((t) => t.step);
  const out: EvmTracer = {
    frameStart: (f) => {
      for (const t of withStart) t.frameStart?.(f);
    },
    frameEnd: (e) => {
      for (const t of withEnd) t.frameEnd?.(e);
    },
  };
  if (withDestruct.length > 0)
    out.selfDestruct = (s) => {
      for (const t of withDestruct) t.selfDestruct?.(s);
    };
  if (withLog.length > 0)
    out.log = (a, topics, data) => {
      for (const t of withLog) t.log?.(a, topics, data);
    };
  if (withWrite.length > 0)
    out.storageWrite = (a, slot, v) => {
      for (const t of withWrite) t.storageWrite?.(a, slot, v);
    };
  if (withAccountRead.length > 0)
    out.accountRead = (a) => {
      for (const t of withAccountRead) t.accountRead?.(a);
    };
  if (withStorageRead.length > 0)
    out.storageRead = (a, slot) => {
      for (const t of withStorageRead) t.storageRead?.(a, slot);
    };
  if (steps.length === 1) out.step = steps[0]?.step as NonNullable<EvmTracer['step']>;
  else if (steps.length > 1) throw new Error('one step tracer at a time');
  return out;
}

interface Known {
  view: AccountView | null;
  /** Slot values as of the end of the last transaction, for slots written in this run. */
  slots: Map<bigint, bigint>;
  /** The storage was wiped in this run: slots not in `slots` are zero. */
  wiped: boolean;
}

/**
 * What each transaction of a run changed, before and after, in the form `buildStateDiff` takes
 * (src/exec/tracing/stateDiff.ts). Values before come from what earlier transactions of the run
 * left, or from the state the run started on. A wiped account lists the slots the run wrote before
 * (as the ethereumjs path's overlay held them): the flat history cannot list the others.
 */
export class StateDiffRecorder {
  private readonly known = new Map<bigint, Known>();
  /** Slots each open frame wrote (a failed frame's writes are dropped), for wiped accounts. */
  private frames: Array<Array<[bigint, bigint]>> = [];
  private written: Array<[bigint, bigint]> = [];
  /** Accounts whose storage the last transaction wiped (a self-destruct, an EIP-161 deletion). */
  wiped: bigint[] = [];

  constructor(
    private readonly world: WorldState,
    private readonly reader: StateReader,
  ) {}

  /** Listens for storage writes, to list a wiped account's slots. */
  readonly tracer: EvmTracer = {
    frameStart: () => {
      this.frames.push([]);
    },
    frameEnd: (e) => {
      const writes = this.frames.pop() ?? [];
      if (e.error !== null) return;
      const parent = this.frames[this.frames.length - 1] ?? this.written;
      for (const w of writes) parent.push(w);
    },
    storageWrite: (address, slot) => {
      (this.frames[this.frames.length - 1] ?? this.written).push([address, slot]);
    },
  };

  /** What changed since the last call, and nothing to report (system writes before the first transaction). */
  skip(): void {
    this.take(false);
  }

  /** A transaction abandoned midway (state missing: src/exec/fetchingState.ts): its open frames go. */
  abandon(): void {
    this.frames = [];
  }

  /** What the transaction just ended changed. */
  changes(): AccountChange[] {
    return this.take(true);
  }

  private take(report: boolean): AccountChange[] {
    const out: AccountChange[] = [];
    const writtenBy = new Map<bigint, bigint[]>();
    for (const [address, slot] of this.written) {
      let list = writtenBy.get(address);
      if (!list) {
        list = [];
        writtenBy.set(address, list);
      }
      list.push(slot);
    }
    this.written = [];
    this.frames = [];
    this.wiped = [];
    for (const change of this.world.takeChanges()) {
      const address = change.address;
      let known = this.known.get(address);
      const before = known ? known.view : this.baseView(address);
      const after = change.account && {
        nonce: change.account.nonce,
        balance: change.account.balance,
        code: change.account.code,
      };
      const slots = new Set<bigint>(change.slots.keys());
      if (change.storageCleared) {
        for (const slot of known?.slots.keys() ?? []) slots.add(slot);
        for (const slot of writtenBy.get(address) ?? []) slots.add(slot);
      }
      const storage: AccountChange['storage'] = new Map();
      const valueBefore = (slot: bigint): bigint => {
        const held = known?.slots.get(slot);
        if (held !== undefined) return held;
        return known?.wiped ? 0n : this.reader.storage(address, slot);
      };
      if (!known) {
        known = { view: before, slots: new Map(), wiped: false };
        this.known.set(address, known);
      }
      for (const slot of slots) {
        const then = report ? valueBefore(slot) : 0n;
        const now = change.slots.get(slot) ?? 0n;
        if (report) {
          const key = wordBytes(slot);
          storage.set(bytesKey(key), { slot: key, before: minimal(then), after: minimal(now) });
        }
      }
      if (change.storageCleared) {
        this.wiped.push(address);
        known.wiped = true;
        known.slots.clear();
      }
      for (const slot of slots) known.slots.set(slot, change.slots.get(slot) ?? 0n);
      known.view = after;
      if (report) out.push({ address: addressBytes(address), before, after, storage });
    }
    return out;
  }

  private baseView(address: bigint): AccountView | null {
    const record = this.reader.account(address);
    if (record === null) return null;
    return {
      nonce: record.nonce,
      balance: record.balance,
      code: this.reader.code(record.codeHash, address),
    };
  }
}

function minimal(value: bigint): Uint8Array {
  if (value === 0n) return new Uint8Array(0);
  const word = wordBytes(value);
  let i = 0;
  while (word[i] === 0) i++;
  return word.subarray(i);
}

const hex40 = (address: bigint): string => address.toString(16).padStart(40, '0');
const hex64 = (slot: bigint): string => slot.toString(16).padStart(64, '0');

/**
 * What an execution read and changed, as `accessKeys` (src/exec/stateAccess.ts) names the pieces of
 * state, for speculative parallel execution (src/exec/speculation.ts). Reads come from the world
 * state's read observer; `unnoted` is an account whose reads outside any frame are not noted (a
 * replay's coinbase, which every transaction's fee payment reads).
 */
export class AccessRecorder {
  private reads = new Set<string>();
  private depth = 0;

  constructor(private readonly unnoted: bigint | null = null) {}

  readonly tracer: EvmTracer = {
    frameStart: () => {
      this.depth++;
    },
    frameEnd: () => {
      this.depth--;
    },
    accountRead: (address) => {
      if (this.depth === 0 && address === this.unnoted) return;
      this.reads.add(hex40(address));
    },
    storageRead: (address, slot) => {
      this.reads.add(`${hex40(address)}:${hex64(slot)}`);
    },
  };

  /** A read made outside the EVM (a call's sender, looked up before it runs). */
  noteAccount(address: bigint): void {
    this.reads.add(hex40(address));
  }

  /** A transaction abandoned midway: its frames never ended. Its reads stay (its rerun makes them too). */
  abandon(): void {
    this.depth = 0;
  }

  /** The reads since the last take. */
  takeReads(): string[] {
    const reads = [...this.reads];
    this.reads = new Set();
    this.depth = 0;
    return reads;
  }
}

/** The keys whose value a transaction changed, from its changes (StateDiffRecorder) and wipes. */
export function changedKeys(changes: readonly AccountChange[], wiped: readonly bigint[]): string[] {
  const keys: string[] = [];
  for (const change of changes) {
    const owner = Buffer.from(change.address).toString('hex');
    if (!sameView(change.before, change.after)) keys.push(owner);
    for (const [, s] of change.storage) {
      if (!sameBytes(s.before, s.after)) keys.push(`${owner}:${Buffer.from(s.slot).toString('hex')}`);
    }
  }
  for (const address of wiped) keys.push(`${hex40(address)}!`);
  return keys;
}

function sameView(a: AccountView | null, b: AccountView | null): boolean {
  if (a === null || b === null) return a === b;
  return a.nonce === b.nonce && a.balance === b.balance && sameBytes(a.code, b.code);
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}
