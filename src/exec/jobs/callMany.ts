import type { ChainReader } from '../../chain/reader.ts';
import type { CallLimits } from '../../config/limits.ts';
import type { BlockOverrides, CallRequest, StateOverrides, TraceTypes } from '../../core/call.ts';
import { callTraceJson } from '../../wire/callTrace.ts';
import { CallValidationError } from '../callValidation.ts';
import { EvmCallSession } from '../evmSession.ts';
import type { CallTrace, StateAccess } from '../sessionTypes.ts';
import { ConflictBoard, type PartBoard, type PartResult } from '../speculation.ts';
import { vmTraceJson } from '../tracing/evmVmTrace.ts';

/** One call of a trace_callMany with the trace types asked for it. */
export interface TracedCall {
  call: CallRequest;
  types: TraceTypes;
}

export interface CallManyJob {
  blockHash: Uint8Array;
  calls: TracedCall[];
  stateOverrides?: StateOverrides;
  blockOverrides?: BlockOverrides;
  /** trace_call and trace_rawTransaction answer one object, not an array. */
  single: boolean;
}

/** Part of a trace_callMany run speculatively: some of its calls, each with its index in the request. */
export interface CallManyPartJob extends Partial<PartBoard> {
  blockHash: Uint8Array;
  calls: TracedCall[];
  indices: number[];
  stateOverrides?: StateOverrides;
  blockOverrides?: BlockOverrides;
}

/** The session the calls run in, on src/evm. */
function openSession(
  chain: ChainReader,
  limits: CallLimits,
  job: Pick<CallManyJob, 'blockHash' | 'stateOverrides' | 'blockOverrides'>,
): Promise<EvmCallSession> {
  return EvmCallSession.openAt(chain, job.blockHash, {
    gasCap: limits.gasCap,
    ...(job.stateOverrides ? { stateOverrides: job.stateOverrides } : {}),
    ...(job.blockOverrides ? { blockOverrides: job.blockOverrides } : {}),
  });
}

const OPEN = Buffer.from('[');
const COMMA = Buffer.from(',');
const CLOSE = Buffer.from(']');

/** One call's answer as JSON bytes (the tests' oracle renders its own with it too). */
export function traceJson(trace: Omit<CallTrace, 'vmTrace'> & { vmTrace: object | null }): Buffer {
  return callTraceJson(trace, vmTraceJson(trace.vmTrace));
}

/** trace_callMany (and trace_call, trace_rawTransaction): the calls in order, traced, as JSON bytes. */
export async function runCallMany(
  chain: ChainReader,
  limits: CallLimits,
  job: CallManyJob,
): Promise<Uint8Array> {
  const session = await openSession(chain, limits, job);
  try {
    const results: Buffer[] = [];
    for (const [index, { call, types }] of job.calls.entries()) {
      if (index > 0) results.push(COMMA);
      results.push(traceJson(await session.trace(call, index, types)));
    }
    return job.single ? (results[0] ?? Buffer.from('null')) : Buffer.concat([OPEN, ...results, CLOSE]);
  } finally {
    session.close();
  }
}

/**
 * Runs a part's calls in order on the block's state (and the request's overrides), noting what each
 * read and changed; the main thread checks that against the other parts (src/exec/speculation.ts).
 */
export async function runCallManyPart(
  chain: ChainReader,
  limits: CallLimits,
  job: CallManyPartJob,
): Promise<PartResult> {
  const session = await openSession(chain, limits, job);
  try {
    session.recordAccess();
    const results: Uint8Array[] = [];
    const access: StateAccess[] = [];
    const board = job.board === undefined ? null : new ConflictBoard(job.board, job.part ?? 0);
    for (const [i, { call, types }] of job.calls.entries()) {
      // Another part found a conflict: the request will run serially, so stop here.
      if (board?.lost) return { results, access };
      const mark = session.mark();
      try {
        const trace = await session.trace(call, job.indices[i] ?? i, types);
        results.push(traceJson(trace));
      } catch (e) {
        // Maybe only because this part lacks another part's effects: the main thread sees the part
        // as unfinished and runs the request serially, which gives the real answer.
        if (e instanceof CallValidationError) return { results, access };
        throw e;
      }
      const noted = session.access(mark);
      access.push(noted);
      if (board && !board.post(job.indices[i] ?? i, noted)) return { results, access };
    }
    return { results, access };
  } finally {
    session.close();
  }
}
