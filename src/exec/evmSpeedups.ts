import type { EVM } from '@ethereumjs/evm';

// Work ethereumjs's interpreter repeats that a replay of a real block pays for many times over,
// found by profiling bench/mainnet.ts (docs/performance.md). Each change keeps the EVM's behaviour
// exactly; test/diff and the conformance suite compare every answer.

type JumpAnalysis = { jumps: Uint8Array; pushes: Record<number, bigint>; opcodesCached: unknown[] };
interface InterpreterPrototype {
  _getValidJumpDestinations(this: InterpreterLike, code: Uint8Array): JumpAnalysis;
  runStep(this: InterpreterLike, opEntry?: StepEntry): Promise<void> | undefined;
}
interface InterpreterLike {
  _evm: {
    _opcodeMap: unknown;
    DEBUG: boolean;
    events: { listenerCount(event: string): number };
  };
  _runState: {
    programCounter: number;
    eip7928PostTargetCallOog?: unknown;
    env: { chargeCodeAccesses?: boolean; accessWitness?: { commit(): void } };
  };
  common: CommonLike;
  profilerOpts?: { enabled?: boolean };
  useGas(amount: bigint, context: unknown): void;
}
interface CommonLike {
  isActivatedEIP(eip: number): boolean;
}
/** Whether a fork charges gas per code chunk read (EIP-6800, EIP-7864), per Common. */
const chunkCharging = new WeakMap<CommonLike, boolean>();
// Asked once per opcode: the last answer saves the WeakMap lookup (a thread runs one fork at a time).
let lastCommon: CommonLike | null = null;
let lastCharges = false;
function chargesCodeChunks(common: CommonLike): boolean {
  if (common === lastCommon) return lastCharges;
  let charges = chunkCharging.get(common);
  if (charges === undefined) {
    charges = common.isActivatedEIP(6800) || common.isActivatedEIP(7864);
    chunkCharging.set(common, charges);
  }
  lastCommon = common;
  lastCharges = charges;
  return charges;
}

interface StepEntry {
  opcodeInfo: { feeBigInt: bigint; dynamicGas: boolean; isAsync: boolean; isInvalid: boolean };
  opHandler: (runState: unknown, common: unknown) => unknown;
}
interface TableCache {
  /** The table's entries when these analyses were made. */
  entries: unknown[];
  byCode: WeakMap<Uint8Array, JumpAnalysis>;
}

function sameEntries(a: readonly unknown[], b: readonly unknown[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/**
 * ethereumjs analyses a contract's code (jump destinations, PUSH values as BigInts, the op entry
 * of every byte) at the start of every frame that runs it: a token called 300 times in a block is
 * analysed 300 times (6.6% of a mainnet-like replay's CPU). The analysis depends only on the code
 * and on the EVM's opcode table (the entries it caches per byte), and nothing writes to it
 * afterwards (the interpreter only reads `validJumps`, `cachedPushes` and the cached entries), so
 * it is kept per table, as long as the table's entries stay the same, and per code array. A
 * code array is the overlay's one copy per code hash (OverlayStateManager.codeOf), so the cache
 * lives as long as the request's state does and no longer.
 *
 * The Interpreter class is not exported; its module is the one the package's entry loads, found
 * next to it, so this patches the class the EVM really uses.
 */
let interpreterPatched: Promise<void> | null = null;

export function patchInterpreter(): Promise<void> {
  interpreterPatched ??= (async () => {
    // import.meta.resolve resolves as `import` does (the ESM build); require would give the CJS one.
    const url = new URL('interpreter.js', import.meta.resolve('@ethereumjs/evm')).href;
    const { Interpreter } = (await import(url)) as { Interpreter?: { prototype: InterpreterPrototype } };
    const proto = Interpreter?.prototype;
    if (typeof proto?._getValidJumpDestinations !== 'function' || typeof proto.runStep !== 'function') {
      throw new Error(`@ethereumjs/evm changed: ${url} has no Interpreter._getValidJumpDestinations/runStep`);
    }
    const analyse = proto._getValidJumpDestinations;
    const byTable = new WeakMap<object, TableCache>();
    proto._getValidJumpDestinations = function (this: InterpreterLike, code: Uint8Array): JumpAnalysis {
      const table = this._evm._opcodeMap;
      if (!Array.isArray(table)) return analyse.call(this, code);
      let cache = byTable.get(table);
      // Tracers swap entries of the table while they run (tracing/vmTrace.ts, geth/evmPatch.ts):
      // an analysis holds the entries it saw, so any change starts the cache afresh. 256
      // comparisons per frame against an analysis of the whole code.
      if (!cache || !sameEntries(cache.entries, table)) {
        cache = { entries: table.slice(), byCode: new WeakMap() };
        byTable.set(table, cache);
      }
      let analysis = cache.byCode.get(code);
      if (!analysis) {
        analysis = analyse.call(this, code);
        cache.byCode.set(code, analysis);
      }
      return analysis;
    };

    // The interpreter awaits runStep for every opcode, and runStep is an async function: each op
    // makes and settles a promise even when nothing in it waits (PUSH, DUP, ADD, JUMP: most ops).
    // For an op with a fixed gas cost and a synchronous handler, and nothing that observes steps
    // (no `step` listener, no debug logging or profiler), this does what runStep does for it
    // (charge the fixed gas, which throws when it runs out, advance the program counter, run the
    // handler, commit the access witness) without the promise. Every other op, and any op with an
    // EIP-7928 call outcome pending, goes to ethereumjs's runStep unchanged.
    const runStep = proto.runStep;
    proto.runStep = function (this: InterpreterLike, opEntry?: StepEntry): Promise<void> | undefined {
      const info = opEntry?.opcodeInfo;
      const evm = this._evm;
      const runState = this._runState;
      if (
        opEntry === undefined ||
        info === undefined ||
        info.dynamicGas ||
        info.isAsync ||
        info.isInvalid ||
        evm.DEBUG ||
        this.profilerOpts?.enabled === true ||
        runState.eip7928PostTargetCallOog !== undefined ||
        (runState.env.chargeCodeAccesses === true && chargesCodeChunks(this.common)) ||
        evm.events.listenerCount('step') > 0
      ) {
        return runStep.call(this, opEntry);
      }
      this.useGas(info.feeBigInt, info);
      runState.programCounter++;
      const handler = opEntry.opHandler;
      handler(runState, this.common);
      runState.env.accessWitness?.commit();
      return undefined;
    };
  })();
  return interpreterPatched;
}

type RunState = {
  stack: { pop(): bigint; popN(n: number): bigint[]; push(value: bigint): void };
  memory: { write(offset: number, size: number, value: Uint8Array): void };
};
type OpEntry = { opHandler: (runState: RunState, common: unknown) => unknown };

const MSTORE = 0x52;
/** MSTORE copies its word into memory at once, so one buffer serves every MSTORE of the thread. */
const word = new Uint8Array(32);
const wordView = new DataView(word.buffer);

/**
 * MSTORE, the most frequent memory write of compiled Solidity, made its 32 bytes with
 * `setLengthLeft(bigIntToBytes(word), 32)`, which pads through array spreads: 3% of a mainnet-like
 * replay and much of its garbage. Here the stack word is written as four big-endian 64-bit halves
 * (setBigUint64 keeps the low 64 bits of what it is given), the same 32 bytes. Memory expansion and
 * gas stay with the opcode's gas handler, as before.
 */
export function fastOpcodes(evm: EVM): void {
  const map = (evm as unknown as { _opcodeMap: Record<number, OpEntry | undefined> })._opcodeMap;
  const entry = map[MSTORE];
  if (!entry) return;
  map[MSTORE] = {
    ...entry,
    opHandler: (runState: RunState) => {
      const [offset, value] = runState.stack.popN(2) as [bigint, bigint];
      wordView.setBigUint64(0, value >> 192n);
      wordView.setBigUint64(8, value >> 128n);
      wordView.setBigUint64(16, value >> 64n);
      wordView.setBigUint64(24, value);
      runState.memory.write(Number(offset), 32, word);
    },
  };
}
