import { forkId } from '../chain/forkId.ts';
import { TIME_FORKS } from '../chain/genesis.ts';
import { knownNetwork } from '../chain/networks.ts';
import type { ChainReader } from '../chain/reader.ts';
import { RequestFailed } from '../core/errors.ts';
import { depositContractOf, systemContracts } from '../evm/block.ts';
import { chainForkRules, type ForkName, forkByName } from '../evm/forks.ts';
import { PRECOMPILE_NAMES, precompilesFor } from '../evm/precompiles/index.ts';
import { quantityToHex, toHex } from '../primitives/hex.ts';

/** One fork's configuration as EIP-7910 reports it. */
export interface ForkConfig {
  /** When the fork began: 0 for a fork in force from genesis. */
  activationTime: number;
  /** Null before Cancun. */
  blobSchedule: { baseFeeUpdateFraction: number; max: number; target: number } | null;
  chainId: string;
  /** EIP-2124's fork hash once this fork has begun, every block fork counted as passed. */
  forkId: string;
  /** Name → address of every precompile the fork's EVM runs. */
  precompiles: Record<string, string>;
  /** Name → address of every system contract the fork's blocks use. */
  systemContracts: Record<string, string>;
}

/** The answer of eth_config (EIP-7910). */
export interface ChainConfig {
  current: ForkConfig | null;
  next: ForkConfig | null;
  last: ForkConfig | null;
}

interface TimeFork {
  name: ForkName;
  time: bigint;
}

// The largest block number: geth reports each configuration as if every block fork had passed.
const EVERY_BLOCK = 2n ** 64n - 1n;

/**
 * The chain's fork configuration around its head, from the chain spec this service runs blocks by
 * (imported, dev, followed or upstream: ChainReader.spec) and the EVM's own tables, so it reports the
 * rules actually applied. `current` is the fork in force at the head's timestamp, `next` the first
 * one scheduled after it and `last` the last one scheduled; each is null when there is none. As geth
 * answers, configurations are those of the timestamp forks, Shanghai on: EIP-7910 assumes a chain
 * past the merge, so before a chain's first timestamp fork `current` is null. Forks scheduled at one
 * time count as one, the latest of them: the rules in force from that time.
 */
export async function chainConfig(chain: ChainReader): Promise<ChainConfig> {
  const genesisHash = await chain.store.getCanonicalHash(0n);
  const genesis = genesisHash && (await chain.header(genesisHash));
  if (!genesisHash || !genesis) throw new RequestFailed('the chain has no genesis block');
  const head = await chain.header((await chain.head()).hash);
  if (!head) throw new RequestFailed('the head block is missing');

  const config = chain.spec.json.config as unknown as Record<string, unknown>;
  const schedule = isRecord(config.blobSchedule) ? config.blobSchedule : {};
  // A known network's fork id is geth's, from geth's own schedule: mainnet's names the merge by total
  // difficulty, where the spec ethtrace runs names it by block (src/chain/networks.ts).
  const idConfig = knownNetwork(chain.chainId, toHex(genesisHash))?.config ?? config;
  const deposit = depositContractOf(config);
  const forks = timeForks(config);

  const at = (time: bigint | undefined): ForkConfig | null => {
    if (time === undefined) return null;
    const fork = forks.filter((f) => f.time <= time).at(-1);
    if (!fork) return null;
    const rules = chainForkRules(fork.name, schedule);
    const id = forkId(
      idConfig,
      { hash: genesisHash, timestamp: genesis.timestamp },
      { number: EVERY_BLOCK, timestamp: fork.time },
    );
    const precompiles = [...precompilesFor(rules.precompiles).keys()].map(
      (address) => [PRECOMPILE_NAMES[address] ?? `0x${address.toString(16)}`, address] as const,
    );
    return {
      activationTime: fork.time <= genesis.timestamp ? 0 : Number(fork.time),
      blobSchedule: rules.blobs && {
        baseFeeUpdateFraction: Number(rules.blobs.baseFeeUpdateFraction),
        max: rules.blobs.max,
        target: rules.blobs.target,
      },
      chainId: quantityToHex(chain.chainId),
      forkId: toHex(id.hash),
      precompiles: sortedObject(precompiles.map(([name, address]) => [name, address20(BigInt(address))])),
      systemContracts: sortedObject(
        [...systemContracts(rules, deposit)].map(([name, address]) => [name, address20(address)]),
      ),
    };
  };

  const now = head.timestamp;
  const upcoming = forks.filter((f) => f.time > now);
  const next = at(upcoming[0]?.time);
  return { current: at(now), next, last: next && at(upcoming.at(-1)?.time) };
}

/** The chain's timestamp forks in activation order (forks at one time keep the order of TIME_FORKS). */
function timeForks(config: Readonly<Record<string, unknown>>): TimeFork[] {
  const out: TimeFork[] = [];
  for (const key of TIME_FORKS) {
    const time = config[key];
    const name = forkByName(key.slice(0, -'Time'.length));
    if ((typeof time === 'number' || typeof time === 'string') && name)
      out.push({ name, time: BigInt(time) });
  }
  return out.sort((a, b) => (a.time < b.time ? -1 : a.time > b.time ? 1 : 0));
}

function address20(address: bigint): string {
  return `0x${address.toString(16).padStart(40, '0')}`;
}

function sortedObject(entries: Array<readonly [string, string]>): Record<string, string> {
  return Object.fromEntries([...entries].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
