import { bytesKey } from '../../../primitives/hex.ts';
import type { FrameError } from '../frames.ts';

// geth's struct log entries as both struct loggers render them (src/exec/tracing/geth/evmStructLogger.ts
// on src/evm; the tests' oracle on ethereumjs).

/** One entry of `structLogs`, in geth's legacy JSON (eth/tracers/logger.structLogLegacy). */
export interface StructLog {
  pc: number;
  op: string;
  gas: number;
  gasCost: number;
  depth: number;
  error?: string;
  stack?: string[];
  returnData?: string;
  memory?: string[];
  /** Slot → value cell; a cell is filled when its read settles (see StateReader). */
  storage?: Array<[string, Cell]>;
  refund?: number;
}

export type Cell = { value: string | Promise<string> };

// geth checks the stack and static gas before it records an op, so an op that fails on these is
// recorded with the error; any later failure (a revert, a bad jump) leaves the op without one.
export const PRE_EXECUTION_ERRORS: ReadonlySet<FrameError> = new Set([
  'out of gas',
  'stack underflow',
  'stack overflow',
]);

export function toJson(log: StructLog): unknown {
  if (!log.storage) return log;
  const storage: Record<string, string> = {};
  for (const [slot, cell] of log.storage) storage[slot] = cell.value as string;
  return { ...log, storage };
}

/** Memory as geth shows it: 32-byte words; ethereumjs grows its buffer lazily, so pad with zeros. */
export function memoryWords(memory: Uint8Array, words: number): string[] {
  const out = new Array<string>(words);
  for (let i = 0; i < words; i++) {
    const start = i * 32;
    const chunk = memory.subarray(Math.min(start, memory.length), Math.min(start + 32, memory.length));
    out[i] = `0x${bytesKey(chunk).padEnd(64, '0')}`;
  }
  return out;
}

/**
 * The least JSON a struct log renders to, charged to the job's answer-size bound as it is recorded
 * (src/exec/responseLimit.ts): the fixed fields, `"0x0",` per stack item, a quoted 64-digit word per
 * memory word.
 */
export function structLogBytes(log: StructLog): number {
  return 48 + (log.stack?.length ?? 0) * 6 + (log.memory?.length ?? 0) * 67;
}
