import type { EVM } from '@ethereumjs/evm';

// The parts of ethereumjs's interpreter internals the geth tracers read (as vmTrace.ts does).
export interface RunState {
  programCounter: number;
  gasLeft: bigint;
  gasRefund: bigint;
  memoryWordCount: bigint;
  stack: { _store: bigint[]; _len: number; peek(n?: number): bigint[] };
  memory: { _store: Uint8Array; read(offset: number, size: number): Uint8Array };
  interpreter: { getAddress(): { bytes: Uint8Array } };
}
interface OpEntry {
  opcodeInfo: { isAsync: boolean };
  opHandler: (runState: RunState, common: unknown) => unknown;
}
interface InterpreterResult {
  exceptionError?: unknown;
  runState?: RunState;
}
type RunInterpreter = (message: { depth: number }, opts?: unknown) => Promise<InterpreterResult>;
interface EvmInternals {
  _opcodeMap: Array<OpEntry | undefined>;
  runInterpreter: RunInterpreter;
}

/**
 * Wraps opcode handlers and the interpreter of one EVM until `restore` is called. `after` runs once
 * the op's handler returned without throwing, with the stack items it was given (top first).
 */
export class EvmPatch {
  private readonly originals = new Map<number, OpEntry | undefined>();
  private interpreter: { own: boolean; original: RunInterpreter } | null = null;

  constructor(private readonly evm: EVM) {}

  afterOp(
    codes: readonly number[],
    inputs: number,
    after: (runState: RunState, args: bigint[]) => void,
  ): void {
    const map = (this.evm as unknown as EvmInternals)._opcodeMap;
    for (const code of codes) {
      const entry = map[code];
      if (!entry || this.originals.has(code)) continue;
      this.originals.set(code, entry);
      const handler = entry.opHandler;
      // The interpreter awaits only handlers it knows to be async, so each wrapper keeps its kind.
      const opHandler = entry.opcodeInfo.isAsync
        ? async (runState: RunState, common: unknown) => {
            const args = runState.stack.peek(Math.min(inputs, runState.stack._len));
            await handler(runState, common);
            after(runState, args);
          }
        : (runState: RunState, common: unknown) => {
            const args = runState.stack.peek(Math.min(inputs, runState.stack._len));
            handler(runState, common);
            after(runState, args);
          };
      map[code] = { ...entry, opHandler };
    }
  }

  /**
   * `before` runs, and is awaited, before each of the `codes` ops runs, with the stack items it will
   * take (top first). Only for ops whose handlers are async (the CALL family and CREATEs): the
   * interpreter awaits nothing else.
   */
  beforeAsyncOp(
    codes: readonly number[],
    inputs: number,
    before: (runState: RunState, args: bigint[]) => Promise<void>,
  ): void {
    const map = (this.evm as unknown as EvmInternals)._opcodeMap;
    for (const code of codes) {
      const entry = map[code];
      if (!entry?.opcodeInfo.isAsync || this.originals.has(code)) continue;
      this.originals.set(code, entry);
      const handler = entry.opHandler;
      const opHandler = async (runState: RunState, common: unknown) => {
        await before(runState, runState.stack.peek(Math.min(inputs, runState.stack._len)));
        await handler(runState, common);
      };
      map[code] = { ...entry, opHandler };
    }
  }

  /** `after` sees each interpreter run (a frame with code) as it returns. */
  afterInterpreter(after: (message: { depth: number }, result: InterpreterResult) => void): void {
    if (this.interpreter) return;
    const internals = this.evm as unknown as EvmInternals;
    const original = internals.runInterpreter;
    this.interpreter = { own: Object.hasOwn(internals, 'runInterpreter'), original };
    const evm = this.evm;
    internals.runInterpreter = async (message, opts) => {
      const result = await original.call(evm, message, opts);
      after(message, result);
      return result;
    };
  }

  restore(): void {
    const internals = this.evm as unknown as EvmInternals;
    for (const [code, entry] of this.originals) internals._opcodeMap[code] = entry;
    this.originals.clear();
    if (this.interpreter) {
      if (this.interpreter.own) internals.runInterpreter = this.interpreter.original;
      else delete (internals as Partial<EvmInternals>).runInterpreter;
      this.interpreter = null;
    }
  }
}
