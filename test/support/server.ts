import { join } from 'node:path';
import { after, before } from 'node:test';
import { type App, buildApp, DEFAULT_CONFIG } from '../../src/app.ts';
import { readChainSpec } from '../../src/chain/genesis.ts';
import { DEFAULT_LIMITS, type LimitOverrides, withLimits } from '../../src/config/limits.ts';
import { importChain } from '../../src/ingest/importer.ts';
import { openLmdbStore } from '../../src/store/lmdb/index.ts';
import type { ChainStore } from '../../src/store/types.ts';
import { KeyRing } from '../../src/transport/apiKeys.ts';
import { CONFORMANCE, tempDir } from './cli.ts';
import { rpc } from './rpcClient.ts';

export const TEST_KEY = 'test-key-0123456789';

export interface RunningServer {
  app: App;
  store: ChainStore;
  /** HTTP endpoint with the test key: `http://127.0.0.1:PORT/v3/KEY`. */
  url: string;
  /** WebSocket endpoint with the test key. */
  wsUrl: string;
  base: string;
  wsBase: string;
  rpc<T = unknown>(method: string, params?: unknown[]): Promise<T>;
  close(): Promise<void>;
}

/** A datadir holding the imported execution-apis conformance chain (54 blocks). */
export async function importConformanceChain(): Promise<{ datadir: string; cleanup: () => void }> {
  const dir = tempDir('ethtrace-conformance-');
  const store = await openLmdbStore(dir.path);
  try {
    await importChain({
      store,
      spec: readChainSpec(join(CONFORMANCE, 'genesis.json')),
      files: [join(CONFORMANCE, 'chain.rlp')],
      verifyStateRoot: true,
    });
  } finally {
    await store.close();
  }
  return { datadir: dir.path, cleanup: dir.cleanup };
}

/** A real server on port 0 over a datadir, accepting TEST_KEY (or every key with `keys: null`). */
export async function startServer(
  datadir: string,
  opts: { keys?: readonly string[] | null; limits?: LimitOverrides; log?: (line: string) => void } = {},
): Promise<RunningServer> {
  const store = await openLmdbStore(datadir, { readOnly: true });
  const keys = opts.keys === null ? null : KeyRing.from(opts.keys ?? [TEST_KEY], null);
  const app = await buildApp(
    { ...DEFAULT_CONFIG, limits: withLimits(DEFAULT_LIMITS, opts.limits), port: 0, keys },
    {
      store,
      datadir,
      ...(opts.log ? { log: opts.log } : process.env.ETHTRACE_TEST_LOG ? {} : { log: () => {} }),
    },
  );
  const { httpUrl, wsUrl } = await app.listen();
  const url = `${httpUrl}/v3/${TEST_KEY}`;
  return {
    app,
    store,
    url,
    wsUrl: `${wsUrl}/ws/v3/${TEST_KEY}`,
    base: httpUrl,
    wsBase: wsUrl,
    rpc: <T>(method: string, params: unknown[] = []) => rpc<T>(url, method, params),
    async close() {
      await app.close();
      await store.close();
    },
  };
}

/**
 * The conformance chain served for the enclosing describe: imported and started in a `before`
 * registered here (so a suite's own `before` hooks, registered after, can use it), closed and removed
 * after. The getter throws outside the suite's tests.
 */
export function conformanceServerForSuite(): () => RunningServer {
  let chain: { datadir: string; cleanup: () => void } | undefined;
  let server: RunningServer | undefined;
  before(async () => {
    chain = await importConformanceChain();
    server = await startServer(chain.datadir);
  });
  after(async () => {
    await server?.close();
    chain?.cleanup();
  });
  return () => {
    if (!server) throw new Error('the conformance server of this suite is not running');
    return server;
  };
}
