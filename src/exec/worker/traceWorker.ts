// The module each execution worker runs (see src/exec/pool): it opens the chain store read-only and
// answers trace requests. Answers leave the worker as JSON text, so nothing large is structured-cloned
// or re-serialised on the main thread.
import { parseChainSpec } from '../../chain/genesis.ts';
import { readStoredSpec } from '../../ingest/importer.ts';
import { formatCallTrace } from '../../rpc/format/callTrace.ts';
import { ChainService } from '../../services/chain.ts';
import { type CallLimits, type ExecutionJob, runExecution } from '../../services/execution.ts';
import type { TracedCall } from '../../services/trace.ts';
import { openLmdbStore } from '../../store/lmdb/index.ts';
import type { BlockOverrides, StateOverrides } from '../callRequest.ts';
import { CallSession } from '../executor.ts';
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

export async function init(data: TraceWorkerData): Promise<Handlers> {
  const store = await openLmdbStore(data.datadir, { readOnly: true });
  const specJson = await readStoredSpec(store);
  if (specJson === null) throw new Error(`no chain in ${data.datadir}`);
  const chain = new ChainService(store, parseChainSpec(specJson, 'stored genesis'));
  const handlers: Handlers = {
    callMany: (job: CallManyJob) => runCallMany(chain, data.gasCap, job),
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

export async function runCallMany(chain: ChainService, gasCap: bigint, job: CallManyJob): Promise<string> {
  const header = await chain.header(job.blockHash);
  if (!header) throw new Error('block header missing from the store');
  const session = await CallSession.open(chain, header, {
    gasCap,
    ...(job.stateOverrides ? { stateOverrides: job.stateOverrides } : {}),
    ...(job.blockOverrides ? { blockOverrides: job.blockOverrides } : {}),
  });
  try {
    const results: unknown[] = [];
    for (const [index, { call, types }] of job.calls.entries()) {
      results.push(formatCallTrace(await session.trace(call, index, types)));
    }
    return JSON.stringify(job.single ? (results[0] ?? null) : results);
  } finally {
    session.close();
  }
}
