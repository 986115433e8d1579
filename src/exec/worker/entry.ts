// The module each execution worker runs (see src/exec/pool): it opens the chain store read-only and
// serves the execution API (src/exec/api.ts). Answers leave the worker as JSON already encoded to
// bytes and are transferred, so nothing large is copied, structured-cloned or encoded on the main
// thread.
import { ChainReader } from '../../chain/reader.ts';
import { readStoredSpec } from '../../chain/storedSpec.ts';
import type { CallLimits } from '../../config/limits.ts';
import { openLmdbStore } from '../../store/lmdb/index.ts';
import { openUpstreamWorkerStore, type UpstreamWorkerSource } from '../../upstream/open.ts';
import { type ExecutionApi, executionApi } from '../api.ts';
import type { Handlers, WorkerContext } from '../pool/protocol.ts';

export interface ExecutionWorkerData {
  datadir: string;
  limits: CallLimits;
  /** Present in upstream mode: the chain is read from an upstream node, the datadir is its cache. */
  upstream?: UpstreamWorkerSource;
}

export async function init(data: ExecutionWorkerData, context: WorkerContext): Promise<Handlers> {
  // Upstream mode: the worker's reads of the upstream are asked of the main thread, which owns the
  // one client (one read per call in flight, the rate limit kept for all).
  const store = data.upstream
    ? await openUpstreamWorkerStore(data.datadir, data.upstream, (ask) => context.ask(ask))
    : await openLmdbStore(data.datadir, { readOnly: true });
  const spec = await readStoredSpec(store);
  if (spec === null) throw new Error(`no chain in ${data.datadir}`);
  const api: ExecutionApi = executionApi(new ChainReader(store, spec), data.limits);
  // A dev chain grows while workers run: reading the head first renews this thread's read snapshot,
  // so a job sees every block committed before it was sent (upstream mode: the head last recorded).
  return Object.fromEntries(
    Object.entries(api).map(([kind, handler]: [string, (payload: never) => Promise<unknown>]) => [
      kind,
      async (payload: never) => {
        await store.getHead();
        return handler(payload);
      },
    ]),
  );
}
