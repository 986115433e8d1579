import { type ChainSpec, makeCommon } from '../chain/genesis.ts';
import { readStoredSpec, schemaRecord } from '../chain/storedSpec.ts';
import { DomainError, UserError } from '../core/errors.ts';
import type { LogLine } from '../core/log.ts';
import { toHex } from '../primitives/hex.ts';
import { openUpstreamCache } from '../store/lmdb/index.ts';
import type { ChainStore, UpstreamDatadir } from '../store/types.ts';
import { withUpstreamBudget } from './budget.ts';
import { describeCapabilities, discoverCapabilities } from './capabilities.ts';
import { UpstreamClient, type UpstreamLimits, type UpstreamReader } from './client.ts';
import { HeadTracker } from './head.ts';
import { UpstreamPrefetch } from './prefetch.ts';
import { type Ask, RemoteUpstreamReader } from './remote.ts';
import { discoverSpec } from './spec.ts';
import { type Capabilities, UpstreamStore } from './store.ts';
import { headerFromRpc } from './verify.ts';

/** How `ethtrace start --upstream` reads the upstream (flags → this, src/cli/startFlags.ts). */
export interface UpstreamConfig {
  /** Tried in order; a failing one is skipped until it answers again. */
  urls: string[];
  limits: UpstreamLimits;
  /** Blocks behind the head after which a block is final when the upstream has no finalized tag. */
  finalityDepth: number;
  /** How often the upstream's head is asked for. */
  pollMs: number;
  /** The chain's genesis file, for an upstream that cannot say its fork schedule. */
  genesis: ChainSpec | null;
}

/**
 * What a worker needs to open the same upstream source (plain data: it crosses to the worker). A
 * worker has no upstream client: it asks its main thread for every read (src/upstream/remote.ts).
 */
export interface UpstreamWorkerSource {
  capabilities: Capabilities;
}

/** The upstream source of the main thread: the store, its head tracker and the prefetcher. */
export interface UpstreamSource {
  store: UpstreamStore;
  head: HeadTracker;
  prefetch: UpstreamPrefetch;
  /** For the workers. */
  worker: UpstreamWorkerSource;
  /** What one client request may spend waiting for the upstream (src/upstream/budget.ts). */
  budgetMs: number;
  /** One line on how the chain's rules were learnt and which path each read takes. */
  description: string;
}

/** What a datadir records of the upstream chain it caches: a datadir caches one chain only. */
export const UPSTREAM_CHAIN_META = 'upstream-chain';

/**
 * Opens the datadir as the cache of the upstream's chain: the upstream's chain id, genesis and fork
 * schedule are learnt (and checked against what the datadir already caches), its capabilities are
 * probed, and its head is read once before anything is served. All of it within one budget for
 * upstream reads: an upstream that does not answer refuses the start (a UserError: one line) as
 * soon as a request to it would have been refused. With `ask` (an API process of `--processes`),
 * reads are asked of the process that owns the client instead of made here.
 */
export async function openUpstreamSource(
  datadir: string,
  config: UpstreamConfig,
  log: LogLine,
  opts: { ask?: Ask } = {},
): Promise<UpstreamSource> {
  // What the client logs while starting (a URL set aside) is held: a refused start says it in its
  // one line, and a start that succeeds logs it then.
  const held: Array<Parameters<LogLine>> = [];
  let holding = true;
  const hold: LogLine = (...line) => {
    if (holding) held.push(line);
    else log(...line);
  };
  try {
    const source = await withUpstreamBudget(config.limits.budgetMs, () =>
      open(datadir, config, hold, opts.ask),
    );
    holding = false;
    for (const line of held.splice(0)) log(...line);
    return source;
  } catch (e) {
    // The upstream's own refusals and faults are the operator's to act on, as a wrong flag is.
    if (e instanceof DomainError) throw new UserError(`the upstream cannot be read: ${e.message}`);
    throw e;
  }
}

async function open(
  datadir: string,
  config: UpstreamConfig,
  log: LogLine,
  ask: Ask | undefined,
): Promise<UpstreamSource> {
  const client: UpstreamReader =
    ask === undefined ? new UpstreamClient(config.urls, config.limits, log) : new RemoteUpstreamReader(ask);
  let cache: UpstreamDatadir | null = null;
  try {
    cache = await openUpstreamCache(datadir);
    const { spec, source } = await discoverSpec(client, config.genesis);
    const genesisHash = await upstreamGenesisHash(client, spec);
    await claimDatadir(cache.chain, datadir, spec, genesisHash);
    const capabilities = await discoverCapabilities(client);
    const store = new UpstreamStore(cache, client, spec, capabilities);
    const subscribeUrl = config.urls.find((url) => /^wss?:\/\//i.test(url));
    const head = new HeadTracker(
      store,
      {
        pollMs: config.pollMs,
        finalityDepth: config.finalityDepth,
        ...(subscribeUrl !== undefined && { subscribeUrl }),
      },
      log,
    );
    await head.start();
    return {
      store,
      head,
      prefetch: new UpstreamPrefetch(store),
      worker: { capabilities },
      budgetMs: config.limits.budgetMs,
      description: `chain ${spec.chainId} (rules from ${source}); ${describeCapabilities(capabilities)}`,
    };
  } catch (e) {
    await client.close();
    await cache?.chain.close();
    throw e;
  }
}

/** A worker's store over the same upstream and the same datadir cache; its reads are `ask`ed of its main thread. */
export async function openUpstreamWorkerStore(
  datadir: string,
  source: UpstreamWorkerSource,
  ask: Ask,
): Promise<UpstreamStore> {
  const cache = await openUpstreamCache(datadir);
  const spec = await readStoredSpec(cache.chain);
  if (spec === null) throw new Error(`no upstream chain recorded in ${datadir}`);
  return new UpstreamStore(cache, new RemoteUpstreamReader(ask), spec, source.capabilities);
}

/** The hash of the upstream's block 0, checked: its header must hash to it under the chain's rules. */
async function upstreamGenesisHash(client: UpstreamReader, spec: ChainSpec): Promise<Uint8Array> {
  const block0 = await client.request<unknown>('eth_getBlockByNumber', ['0x0', false]);
  return headerFromRpc(block0, makeCommon(spec)).hash();
}

/**
 * A datadir caches one upstream chain, and holds nothing else: a datadir with an imported or dev
 * chain, or the cache of another chain (by chain id and genesis hash), is refused.
 */
async function claimDatadir(
  cache: ChainStore,
  datadir: string,
  spec: ChainSpec,
  genesisHash: Uint8Array,
): Promise<void> {
  const identity = JSON.stringify({ chainId: spec.chainId.toString(), genesisHash: toHex(genesisHash) });
  const recorded = await cache.getMeta(UPSTREAM_CHAIN_META);
  if (recorded === null) {
    const head = await cache.getHead();
    if (head !== null || (await cache.getMeta('genesis')) !== null)
      throw new UserError(
        `${datadir} holds ${(await cache.getMeta('dev')) !== null ? 'a dev chain' : 'an imported chain'}, not an upstream's cache: give --upstream another --datadir`,
      );
  } else if (new TextDecoder().decode(recorded) !== identity) {
    const was = JSON.parse(new TextDecoder().decode(recorded)) as { chainId: string; genesisHash: string };
    throw new UserError(
      `${datadir} caches chain ${was.chainId} (genesis ${was.genesisHash}), but the upstream serves chain ${spec.chainId} (genesis ${toHex(genesisHash)}): give another --datadir`,
    );
  }
  const [schemaKey, schemaValue] = schemaRecord();
  await cache.putMeta(schemaKey, schemaValue);
  await cache.putMeta('genesis', new TextEncoder().encode(JSON.stringify(spec.json)));
  await cache.putMeta(UPSTREAM_CHAIN_META, new TextEncoder().encode(identity));
}
