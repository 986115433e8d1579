import type { ChainReader } from '../../chain/reader.ts';
import type { CallLimits } from '../../config/limits.ts';
import type { BlockOverrides, CallRequest, StateOverrides, TraceTypes } from '../../core/call.ts';
import { formatCallTrace } from '../../wire/callTrace.ts';
import { CallValidationError } from '../callValidation.ts';
import { defaultEngine, type Engine } from '../evmEngine.ts';
import { EvmCallSession } from '../evmSession.ts';
import { CallSession, type StateAccess } from '../session.ts';
import { ConflictBoard, type PartBoard, type PartResult } from '../speculation.ts';

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

function openSession(
  chain: ChainReader,
  limits: CallLimits,
  job: Pick<CallManyJob, 'blockHash' | 'stateOverrides' | 'blockOverrides'>,
): Promise<{ session: CallSession }> {
  return CallSession.openAt(chain, job.blockHash, {
    gasCap: limits.gasCap,
    ...(job.stateOverrides ? { stateOverrides: job.stateOverrides } : {}),
    ...(job.blockOverrides ? { blockOverrides: job.blockOverrides } : {}),
  });
}

/** The session on src/evm, where it can serve the calls: not yet with a vmTrace among them. */
function openEvmSession(
  chain: ChainReader,
  limits: CallLimits,
  job: Pick<CallManyJob, 'blockHash' | 'stateOverrides' | 'blockOverrides' | 'calls'>,
  engine: Engine,
): Promise<EvmCallSession | null> | null {
  if (engine !== 'evm') return null;
  if (job.calls.some((c) => c.types.vmTrace)) return null;
  return EvmCallSession.openAt(chain, job.blockHash, {
    gasCap: limits.gasCap,
    ...(job.stateOverrides ? { stateOverrides: job.stateOverrides } : {}),
    ...(job.blockOverrides ? { blockOverrides: job.blockOverrides } : {}),
  });
}

/** trace_callMany (and trace_call, trace_rawTransaction): the calls in order, traced, as JSON bytes. */
export async function runCallMany(
  chain: ChainReader,
  limits: CallLimits,
  job: CallManyJob,
  engine: Engine = defaultEngine(),
): Promise<Uint8Array> {
  const session =
    (await openEvmSession(chain, limits, job, engine)) ?? (await openSession(chain, limits, job)).session;
  try {
    const results: unknown[] = [];
    for (const [index, { call, types }] of job.calls.entries()) {
      results.push(formatCallTrace(await session.trace(call, index, types)));
    }
    return Buffer.from(JSON.stringify(job.single ? (results[0] ?? null) : results));
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
  engine: Engine = defaultEngine(),
): Promise<PartResult> {
  const session =
    (await openEvmSession(chain, limits, job, engine)) ?? (await openSession(chain, limits, job)).session;
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
        results.push(Buffer.from(JSON.stringify(formatCallTrace(trace))));
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
