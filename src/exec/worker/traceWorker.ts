// The module each execution worker runs (see src/exec/pool): it opens the chain store read-only and
// answers trace requests. Answers leave the worker as JSON already encoded to bytes and are
// transferred, so nothing large is copied, structured-cloned or encoded on the main thread.
import { parseChainSpec } from '../../chain/genesis.ts';
import { readStoredSpec } from '../../ingest/importer.ts';
import { ServerError } from '../../rpc/errors.ts';
import { formatCallTrace } from '../../rpc/format/callTrace.ts';
import { ChainService } from '../../services/chain.ts';
import { type CallLimits, type ExecutionJob, runExecution } from '../../services/execution.ts';
import type { PartResult } from '../../services/parallelCalls.ts';
import type { TracedCall } from '../../services/trace.ts';
import { openLmdbStore } from '../../store/lmdb/index.ts';
import type { BlockOverrides, StateOverrides } from '../callRequest.ts';
import { CallSession, CallValidationError, type StateAccess } from '../executor.ts';
import type { Handlers } from '../pool/pool.ts';
import { debugHandlers } from './debugHandlers.ts';
import { replayHandlers } from './replayHandlers.ts';

export interface TraceWorkerData {
  datadir: string;
  gasCap: bigint;
  callLimits: CallLimits;
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
export interface CallManyPartJob {
  blockHash: Uint8Array;
  calls: TracedCall[];
  indices: number[];
  stateOverrides?: StateOverrides;
  blockOverrides?: BlockOverrides;
}

export async function init(data: TraceWorkerData): Promise<Handlers> {
  const store = await openLmdbStore(data.datadir, { readOnly: true });
  const specJson = await readStoredSpec(store);
  if (specJson === null) throw new Error(`no chain in ${data.datadir}`);
  const chain = new ChainService(store, parseChainSpec(specJson, 'stored genesis'));
  const handlers: Handlers = {
    callMany: (job: CallManyJob) => runCallMany(chain, data.gasCap, job),
    callManyPart: (job: CallManyPartJob) => runCallManyPart(chain, data.gasCap, job),
    execution: (job: ExecutionJob) => runExecution(chain, data.callLimits, job),
    ...replayHandlers(chain),
    ...debugHandlers(chain),
  };
  // A dev chain grows while workers run: reading the head first renews this thread's read snapshot,
  // so a job sees every block committed before it was sent.
  return Object.fromEntries(
    Object.entries(handlers).map(([kind, handler]) => [
      kind,
      async (payload: never) => {
        await store.getHead();
        return handler(payload);
      },
    ]),
  );
}

async function openSession(
  chain: ChainService,
  gasCap: bigint,
  job: Pick<CallManyJob, 'blockHash' | 'stateOverrides' | 'blockOverrides'>,
): Promise<CallSession> {
  const header = await chain.header(job.blockHash);
  if (!header) throw new ServerError('block not found: the chain was rewound while it was traced');
  return CallSession.open(chain, header, {
    gasCap,
    ...(job.stateOverrides ? { stateOverrides: job.stateOverrides } : {}),
    ...(job.blockOverrides ? { blockOverrides: job.blockOverrides } : {}),
  });
}

export async function runCallMany(
  chain: ChainService,
  gasCap: bigint,
  job: CallManyJob,
): Promise<Uint8Array> {
  const session = await openSession(chain, gasCap, job);
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
 * read and changed; the main thread checks that against the other parts (services/parallelCalls.ts).
 */
export async function runCallManyPart(
  chain: ChainService,
  gasCap: bigint,
  job: CallManyPartJob,
): Promise<PartResult> {
  const session = await openSession(chain, gasCap, job);
  try {
    session.recordAccess();
    const results: Uint8Array[] = [];
    const access: StateAccess[] = [];
    for (const [i, { call, types }] of job.calls.entries()) {
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
      access.push(session.access(mark));
    }
    return { results, access };
  } finally {
    session.close();
  }
}
