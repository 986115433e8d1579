import { type App, buildApp, DEFAULT_CONFIG } from '../../src/app.ts';
import { readChainSpec } from '../../src/chain/genesis.ts';
import { DEFAULT_LIMITS } from '../../src/config/limits.ts';
import { type Follower, openFollow } from '../../src/ingest/follower.ts';
import type { ChainStore } from '../../src/store/types.ts';
import { DEFAULT_UPSTREAM_LIMITS, type UpstreamLimits } from '../../src/upstream/client.ts';
import { tempDir } from './cli.ts';
import { rpc } from './rpcClient.ts';
import { eventually } from './wsClient.ts';

export interface FollowServer {
  app: App;
  follower: Follower;
  store: ChainStore;
  /** HTTP endpoint (no key needed). */
  url: string;
  wsUrl: string;
  datadir: string;
  /** Every line the follower and the service logged, in order. */
  lines: string[];
  rpc<T = unknown>(method: string, params?: unknown[]): Promise<T>;
  /** Resolves once the follower's head is block `number` with `hash` (any hash when not given). */
  reaches(number: bigint, hash?: string, ms?: number): Promise<void>;
  /** Resolves once a logged line matches. */
  logged(pattern: RegExp, ms?: number): Promise<void>;
  /** Stops following and serving; the datadir stays unless it was made here and `keep` is not set. */
  close(opts?: { keep?: boolean }): Promise<void>;
}

/**
 * ethtrace following `urls` (`ethtrace start --upstream … --follow --genesis FILE`) in this process,
 * serving on port 0: the same openFollow and buildApp as the CLI, with the follower started once the
 * server listens. A fresh datadir unless `datadir` is given.
 */
export async function startFollowServer(
  urls: string[],
  opts: {
    genesis: string;
    verifyStateRoot?: boolean;
    datadir?: string;
    pollMs?: number;
    upstream?: Partial<UpstreamLimits>;
    batchBlocks?: number;
    maxReorgDepth?: number;
  },
): Promise<FollowServer> {
  const dir = opts.datadir ? null : tempDir('ethtrace-follow-');
  const datadir = opts.datadir ?? (dir as { path: string }).path;
  const lines: string[] = [];
  const log = (line: string) => {
    lines.push(line);
    if (process.env.ETHTRACE_TEST_LOG) process.stderr.write(`${line}\n`);
  };
  const { store, follower } = await openFollow(
    datadir,
    {
      urls,
      limits: { ...DEFAULT_UPSTREAM_LIMITS, ...opts.upstream },
      pollMs: opts.pollMs ?? 100,
      genesis: readChainSpec(opts.genesis),
      verifyStateRoot: opts.verifyStateRoot ?? true,
      ...(opts.batchBlocks === undefined ? {} : { batchBlocks: opts.batchBlocks }),
      ...(opts.maxReorgDepth === undefined ? {} : { maxReorgDepth: opts.maxReorgDepth }),
    },
    log,
  );
  let app: App;
  try {
    app = await buildApp(
      { ...DEFAULT_CONFIG, limits: DEFAULT_LIMITS, port: 0, keys: null },
      { store, datadir, log, syncing: () => follower.syncing() },
    );
  } catch (e) {
    await follower.stop();
    await store.close();
    throw e;
  }
  const { httpUrl, wsUrl } = await app.listen();
  follower.start();
  // A wait that times out says what the follower logged.
  const withLog = (wait: Promise<void>) =>
    wait.catch((e: Error) => {
      throw new Error(`${e.message}; the follower logged:\n  ${lines.join('\n  ')}`);
    });
  const head = async () => {
    const ref = await store.getHead();
    return ref && { number: ref.number, hash: `0x${Buffer.from(ref.hash).toString('hex')}` };
  };
  return {
    app,
    follower,
    store,
    url: httpUrl,
    wsUrl,
    datadir,
    lines,
    rpc: <T>(method: string, params: unknown[] = []) => rpc<T>(httpUrl, method, params),
    async reaches(number, hash, ms = 30_000) {
      await withLog(
        eventually(
          async () => {
            const h = await head();
            return h !== null && h.number === number && (hash === undefined || h.hash === hash);
          },
          `the follower's head at block ${number}${hash ? ` ${hash}` : ''}`,
          ms,
        ),
      );
    },
    async logged(pattern, ms = 30_000) {
      await withLog(
        eventually(() => lines.some((l) => pattern.test(l)), `a log line matching ${pattern}`, ms),
      );
    },
    async close({ keep = false } = {}) {
      await follower.stop();
      await app.close();
      await store.close();
      if (!keep) dir?.cleanup();
    },
  };
}
