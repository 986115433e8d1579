import { BLOCK_FORKS, type ChainSpec, parseChainSpec } from '../chain/genesis.ts';
import { knownNetwork, runnableConfig } from '../chain/networks.ts';
import { UpstreamError, UserError } from '../core/errors.ts';
import type { UpstreamReader } from './client.ts';

/** What the chain's rules were learnt from, said at start. */
export type SpecSource = 'genesis file' | 'known network' | 'debug_chainConfig' | 'anvil_nodeInfo';

// Time forks in activation order, as anvil names them (lower-cased) and as geth's config keys.
const TIME_FORKS = ['shanghai', 'cancun', 'prague', 'osaka', 'bpo1', 'bpo2', 'bpo3', 'bpo4', 'bpo5'] as const;

// geth's blob parameters per fork (params/config.go), for a dev node that names only its fork.
const BLOB_SCHEDULE: Record<string, { target: number; max: number; baseFeeUpdateFraction: number }> = {
  cancun: { target: 3, max: 6, baseFeeUpdateFraction: 3338477 },
  prague: { target: 6, max: 9, baseFeeUpdateFraction: 5007716 },
  osaka: { target: 6, max: 9, baseFeeUpdateFraction: 5007716 },
};

/**
 * The rules of the upstream's chain, which ethtrace needs to run its blocks: from a genesis file
 * when one is given (it must be the upstream's chain); for a public network ethtrace knows (mainnet,
 * Sepolia, Holesky, Hoodi by chain id and genesis hash: src/chain/networks.ts), its known schedule,
 * which needs nothing of a provider that serves no debug namespace and names mainnet's merge by
 * block where geth's config gives only its total difficulty; else asked of the upstream: geth, Reth
 * and ethtrace answer `debug_chainConfig` with geth's chain config; anvil answers `anvil_nodeInfo`
 * with the one fork it runs from genesis. A node that answers none has an unknown fork schedule, and
 * ethtrace refuses to start rather than run (and report in eth_config) rules it guessed: it needs
 * `--genesis`.
 */
export async function discoverSpec(
  client: UpstreamReader,
  genesis: ChainSpec | null,
): Promise<{ spec: ChainSpec; source: SpecSource }> {
  const [chainIdHex, block0] = await Promise.all([
    client.request<string>('eth_chainId', []),
    client.request<Record<string, unknown> | null>('eth_getBlockByNumber', ['0x0', false]),
  ]);
  const chainId = BigInt(chainIdHex);
  if (block0 === null) throw new UserError('the upstream serves no block 0: is it a full node of the chain?');
  if (genesis) {
    if (genesis.chainId !== chainId)
      throw new UserError(`--genesis is chain ${genesis.chainId}, the upstream serves chain ${chainId}`);
    return { spec: genesis, source: 'genesis file' };
  }
  const network = typeof block0.hash === 'string' ? knownNetwork(chainId, block0.hash) : null;
  if (network) return { spec: specOf(runnableConfig(network), block0), source: 'known network' };
  const config = (await optional(client.request<Record<string, unknown>>('debug_chainConfig', []))) ?? null;
  if (config !== null && typeof config === 'object') {
    return { spec: specOf({ ...config, chainId: Number(chainId) }, block0), source: 'debug_chainConfig' };
  }
  const info: { hardFork?: unknown } | undefined = await optional(
    client.request<{ hardFork?: unknown }>('anvil_nodeInfo', []),
  );
  if (info && typeof info.hardFork === 'string') {
    return { spec: specOf(devNodeConfig(info.hardFork, chainId), block0), source: 'anvil_nodeInfo' };
  }
  throw new UserError(
    `the upstream (chain ${chainId}) is no public network ethtrace knows and answers neither debug_chainConfig nor anvil_nodeInfo, so its fork schedule is unknown: give its genesis file with --genesis`,
  );
}

/** A call that the upstream may not offer: its answer, or undefined when it refuses the method. */
async function optional<T>(call: Promise<T>): Promise<T | undefined> {
  try {
    return await call;
  } catch (e) {
    if (e instanceof UpstreamError) return undefined;
    throw e;
  }
}

/** geth's chain config of a dev node running `hardFork` (anvil's name) from genesis. */
function devNodeConfig(hardFork: string, chainId: bigint): Record<string, unknown> {
  const fork = hardFork.toLowerCase();
  const config: Record<string, unknown> = { chainId: Number(chainId), terminalTotalDifficulty: 0 };
  for (const block of BLOCK_FORKS) config[block] = 0;
  const at = TIME_FORKS.indexOf(fork as (typeof TIME_FORKS)[number]);
  if (at === -1 && !['paris', 'merge'].includes(fork))
    throw new UserError(`the upstream runs fork ${hardFork}, which ethtrace does not know: give --genesis`);
  const active = TIME_FORKS.slice(0, at + 1);
  for (const time of active) config[`${time}Time`] = 0;
  config.blobSchedule = Object.fromEntries(
    active.filter((f) => BLOB_SCHEDULE[f]).map((f) => [f, BLOB_SCHEDULE[f]]),
  );
  return config;
}

/** A ChainSpec from a chain config and the upstream's block 0 (its alloc is not needed: state is read). */
function specOf(config: Record<string, unknown>, block0: Record<string, unknown>): ChainSpec {
  const field = (name: string, fallback: string) =>
    typeof block0[name] === 'string' ? block0[name] : fallback;
  return parseChainSpec(
    {
      config,
      nonce: field('nonce', '0x0'),
      timestamp: field('timestamp', '0x0'),
      extraData: field('extraData', '0x'),
      gasLimit: field('gasLimit', '0x1c9c380'),
      difficulty: field('difficulty', '0x0'),
      mixHash: field('mixHash', `0x${'0'.repeat(64)}`),
      coinbase: field('miner', `0x${'0'.repeat(40)}`),
      ...(typeof block0.baseFeePerGas === 'string' ? { baseFeePerGas: block0.baseFeePerGas } : {}),
      alloc: {},
    },
    'the upstream chain config',
  );
}
