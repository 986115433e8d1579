import { type App, buildApp, DEFAULT_CONFIG } from '../../src/app.ts';
import { DEFAULT_LIMITS, type LimitOverrides, withLimits } from '../../src/config/limits.ts';
import { DEFAULT_UPSTREAM_LIMITS, type UpstreamLimits } from '../../src/upstream/client.ts';
import { openUpstreamSource, type UpstreamSource } from '../../src/upstream/open.ts';
import { tempDir } from './cli.ts';

export interface UpstreamServer {
  app: App;
  source: UpstreamSource;
  /** HTTP endpoint (no key needed). */
  url: string;
  wsUrl: string;
  datadir: string;
  /** Round trips made to the upstream so far (by the main thread: the workers ask it for their reads). */
  roundTrips(): number;
  rpc<T = unknown>(method: string, params?: unknown[]): Promise<T>;
  /** The raw answer body of one request. */
  raw(method: string, params?: unknown[]): Promise<string>;
  close(): Promise<void>;
}

/**
 * ethtrace in upstream mode in this process, on port 0, over `urls`, with a fresh datadir as its
 * cache (or `datadir` to reuse one). Its head is polled every `pollMs` (short, so tests see new
 * blocks soon).
 */
export async function startUpstreamServer(
  urls: string[],
  opts: {
    limits?: LimitOverrides;
    upstream?: Partial<UpstreamLimits>;
    finalityDepth?: number;
    pollMs?: number;
    datadir?: string;
    log?: (line: string) => void;
  } = {},
): Promise<UpstreamServer> {
  const dir = opts.datadir ? null : tempDir('ethtrace-upstream-');
  const datadir = opts.datadir ?? (dir as { path: string }).path;
  const log =
    opts.log ??
    (process.env.ETHTRACE_TEST_LOG ? (line: string) => process.stderr.write(`${line}\n`) : () => {});
  const source = await openUpstreamSource(
    datadir,
    {
      urls,
      limits: { ...DEFAULT_UPSTREAM_LIMITS, ...opts.upstream },
      finalityDepth: opts.finalityDepth ?? 64,
      pollMs: opts.pollMs ?? 200,
      genesis: null,
    },
    log,
  );
  const limits = withLimits(DEFAULT_LIMITS, opts.limits);
  let app: App;
  try {
    app = await buildApp(
      { ...DEFAULT_CONFIG, limits, port: 0, keys: null },
      { store: source.store, datadir, upstream: source, log },
    );
  } catch (e) {
    source.head.stop();
    await source.store.close();
    throw e;
  }
  const { httpUrl, wsUrl } = await app.listen();
  let id = 0;
  const post = (method: string, params: unknown[]) =>
    fetch(httpUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: ++id, method, params }),
    });
  return {
    app,
    source,
    url: httpUrl,
    wsUrl,
    datadir,
    roundTrips: () => source.store.client.stats().roundTrips,
    async rpc<T>(method: string, params: unknown[] = []): Promise<T> {
      const body = (await (await post(method, params)).json()) as {
        result?: T;
        error?: { code: number; message: string };
      };
      if (body.error) throw Object.assign(new Error(body.error.message), { code: body.error.code });
      return body.result as T;
    },
    async raw(method: string, params: unknown[] = []): Promise<string> {
      return (await post(method, params)).text();
    },
    async close() {
      await app.close();
      await source.store.close();
      dir?.cleanup();
    },
  };
}
