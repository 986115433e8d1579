// The datadir's LMDB store, opened in the role its caller needs: the chain store (an imported,
// followed or dev chain), or, in upstream mode, the chain store and the upstream cache over one
// environment (environment.ts).

import type { ChainStore, UpstreamDatadir } from '../types.ts';
import { LmdbChainStore } from './chainStore.ts';
import { openLmdbEnvironment } from './environment.ts';
import { LmdbUpstreamCache } from './upstreamCache.ts';

export { storeExists } from './environment.ts';

export async function openLmdbStore(path: string, opts: { readOnly?: boolean } = {}): Promise<ChainStore> {
  return new LmdbChainStore(await openLmdbEnvironment(path, opts.readOnly ?? false, false));
}

/**
 * The store of a datadir that caches a chain read from an upstream node (always writable): its
 * blocks and receipts read as a chain store's, the rest of what is cached through the cache. Closing
 * the chain store closes the environment both share.
 */
export async function openUpstreamCache(path: string): Promise<UpstreamDatadir> {
  const env = await openLmdbEnvironment(path, false, true);
  return { chain: new LmdbChainStore(env), cache: new LmdbUpstreamCache(env) };
}
