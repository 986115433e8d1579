/**
 * The public networks whose fork schedule ethtrace knows without being told: geth's chain config of
 * each (the schedule the clients ship), found by chain id and confirmed by the genesis hash. Upstream mode reads a provider's node with them when it answers no chain config
 * (src/upstream/spec.ts), and eth_config reports their fork ids from them.
 */
export interface KnownNetwork {
  readonly name: string;
  readonly chainId: bigint;
  /** Hash of block 0: a chain with this id but another genesis is not this network. */
  readonly genesisHash: string;
  /** geth's chain config, as debug_chainConfig answers it. */
  readonly config: Readonly<Record<string, unknown>>;
  /**
   * The first proof-of-stake block, for a network whose config names the merge only by its terminal
   * total difficulty (mainnet): ethtrace's rules switch by block, so its spec names this block as
   * `mergeNetsplitBlock`. geth's config, and so the fork id, does not count it.
   */
  readonly mergeBlock?: number;
}

const BLOB_SCHEDULE = {
  cancun: { target: 3, max: 6, baseFeeUpdateFraction: 3338477 },
  prague: { target: 6, max: 9, baseFeeUpdateFraction: 5007716 },
  bpo1: { target: 10, max: 15, baseFeeUpdateFraction: 8346193 },
  bpo2: { target: 14, max: 21, baseFeeUpdateFraction: 11684671 },
};

// Every pre-merge block fork at genesis, as the post-2020 testnets have them.
const FROM_GENESIS = {
  homesteadBlock: 0,
  eip150Block: 0,
  eip155Block: 0,
  eip158Block: 0,
  byzantiumBlock: 0,
  constantinopleBlock: 0,
  petersburgBlock: 0,
  istanbulBlock: 0,
  berlinBlock: 0,
  londonBlock: 0,
};

export const KNOWN_NETWORKS: readonly KnownNetwork[] = [
  {
    name: 'mainnet',
    chainId: 1n,
    genesisHash: '0xd4e56740f876aef8c010b86a40d5f56745a118d0906a34e69aec8c0db1cb8fa3',
    config: {
      chainId: 1,
      homesteadBlock: 1_150_000,
      daoForkBlock: 1_920_000,
      daoForkSupport: true,
      eip150Block: 2_463_000,
      eip155Block: 2_675_000,
      eip158Block: 2_675_000,
      byzantiumBlock: 4_370_000,
      constantinopleBlock: 7_280_000,
      petersburgBlock: 7_280_000,
      istanbulBlock: 9_069_000,
      muirGlacierBlock: 9_200_000,
      berlinBlock: 12_244_000,
      londonBlock: 12_965_000,
      arrowGlacierBlock: 13_773_000,
      grayGlacierBlock: 15_050_000,
      // A string: the number is past what a double holds exactly.
      terminalTotalDifficulty: '58750000000000000000000',
      shanghaiTime: 1681338455,
      cancunTime: 1710338135,
      pragueTime: 1746612311,
      osakaTime: 1764798551,
      bpo1Time: 1765290071,
      bpo2Time: 1767747671,
      depositContractAddress: '0x00000000219ab540356cbb839cbe05303d7705fa',
      ethash: {},
      blobSchedule: BLOB_SCHEDULE,
    },
    mergeBlock: 15_537_394,
  },
  {
    name: 'sepolia',
    chainId: 11155111n,
    genesisHash: '0x25a5cc106eea7138acab33231d7160d69cb777ee0c2c553fcddf5138993e6dd9',
    config: {
      chainId: 11155111,
      ...FROM_GENESIS,
      muirGlacierBlock: 0,
      terminalTotalDifficulty: 17_000_000_000_000_000,
      mergeNetsplitBlock: 1735371,
      shanghaiTime: 1677557088,
      cancunTime: 1706655072,
      pragueTime: 1741159776,
      osakaTime: 1760427360,
      bpo1Time: 1761017184,
      bpo2Time: 1761607008,
      depositContractAddress: '0x7f02c3e3c98b133055b8b348b2ac625669ed295d',
      ethash: {},
      blobSchedule: BLOB_SCHEDULE,
    },
  },
  {
    name: 'holesky',
    chainId: 17000n,
    genesisHash: '0xb5f7f912443c940f21fd611f12828d75b534364ed9e95ca4e307729a4661bde4',
    config: {
      chainId: 17000,
      ...FROM_GENESIS,
      terminalTotalDifficulty: 0,
      shanghaiTime: 1696000704,
      cancunTime: 1707305664,
      pragueTime: 1740434112,
      osakaTime: 1759308480,
      bpo1Time: 1759800000,
      bpo2Time: 1760389824,
      depositContractAddress: '0x4242424242424242424242424242424242424242',
      ethash: {},
      blobSchedule: BLOB_SCHEDULE,
    },
  },
  {
    name: 'hoodi',
    chainId: 560048n,
    genesisHash: '0xbbe312868b376a3001692a646dd2d7d1e4406380dfd86b98aa8a34d1557c971b',
    config: {
      chainId: 560048,
      ...FROM_GENESIS,
      muirGlacierBlock: 0,
      terminalTotalDifficulty: 0,
      mergeNetsplitBlock: 0,
      shanghaiTime: 0,
      cancunTime: 0,
      pragueTime: 1742999832,
      osakaTime: 1761677592,
      bpo1Time: 1762365720,
      bpo2Time: 1762955544,
      depositContractAddress: '0x00000000219ab540356cbb839cbe05303d7705fa',
      ethash: {},
      blobSchedule: BLOB_SCHEDULE,
    },
  },
];

/** The known network with this chain id and genesis hash, or null. */
export function knownNetwork(chainId: bigint, genesisHash: string): KnownNetwork | null {
  const hash = genesisHash.toLowerCase();
  return KNOWN_NETWORKS.find((n) => n.chainId === chainId && n.genesisHash === hash) ?? null;
}

/** The config ethtrace runs a known network by: geth's, with the merge named by block where geth needs TTD. */
export function runnableConfig(network: KnownNetwork): Record<string, unknown> {
  return network.mergeBlock === undefined
    ? { ...network.config }
    : { ...network.config, mergeNetsplitBlock: network.mergeBlock };
}
