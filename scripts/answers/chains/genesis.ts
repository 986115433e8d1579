/*
 * Copied from test/support/genesis.ts for scripts/answers: it imports src/chain/genesis.ts for BLOCK_FORKS (written out here). The answers tool must not load
 * src/ (the code it compares), so it carries its own copy; keep it in step with the original.
 */
import type { Address, Hex } from 'viem';
import { numberToHex } from 'viem';
import { DEV_BALANCE_WEI, devAccounts } from '../../../test/support/devAccounts.ts';

/** src/chain/genesis.ts's BLOCK_FORKS, written out: block-numbered forks of a geth genesis, in order. */
const BLOCK_FORKS = [
  'homesteadBlock',
  'eip150Block',
  'eip155Block',
  'eip158Block',
  'byzantiumBlock',
  'constantinopleBlock',
  'petersburgBlock',
  'istanbulBlock',
  'muirGlacierBlock',
  'berlinBlock',
  'londonBlock',
  'arrowGlacierBlock',
  'grayGlacierBlock',
  'mergeNetsplitBlock',
] as const;

/**
 * Geth-format genesis files that describe exactly the chain anvil runs, so that a chain exported
 * from anvil can be imported by a geth-compatible importer with the same rules and the same state.
 *
 * anvil (1.7.1) runs one hardfork from genesis, chosen by `--hardfork`, and reads only the chain id,
 * alloc, timestamp, number, coinbase and base fee from the file; everything else here is written
 * to agree with what it actually does (checked against its answers by `startAnvil`).
 */

/**
 * Hardforks a genesis can be built for. `bpo1`/`bpo2` are left out on purpose: anvil accepts them
 * but runs the Osaka EVM and reports Osaka's blob schedule (`eth_config`), so a genesis declaring
 * them would promise blob limits anvil does not apply.
 */
export const ANVIL_HARDFORKS = ['cancun', 'prague', 'osaka'] as const;
export type AnvilHardfork = (typeof ANVIL_HARDFORKS)[number];
export const DEFAULT_HARDFORK: AnvilHardfork = 'osaka';

export const ANVIL_CHAIN_ID = 31337;
/** anvil's default, and the value it uses regardless of the file unless given `--gas-limit`. */
export const DEFAULT_GAS_LIMIT = 30_000_000n;
/** anvil's INITIAL_BASE_FEE, written out so the file states it rather than relying on defaults. */
export const GENESIS_BASE_FEE = 1_000_000_000n;

/** In activation order; only the ones up to the chosen hardfork are written. */
const TIME_FORKS = ['shanghai', 'cancun', 'prague', 'osaka'] as const;
type TimeFork = (typeof TIME_FORKS)[number];

/** Time-based forks anvil cannot run at all; rejected when found in a caller's genesis. */
const UNSUPPORTED_TIME_FORKS = ['bpo1Time', 'bpo2Time', 'bpo3Time', 'bpo4Time', 'bpo5Time', 'amsterdamTime'];

interface BlobParams {
  target: number;
  max: number;
  baseFeeUpdateFraction: number;
}

/** The values geth ships for these forks (params/config.go), which anvil's `eth_config` reports. */
const BLOB_SCHEDULE: Record<AnvilHardfork, BlobParams> = {
  cancun: { target: 3, max: 6, baseFeeUpdateFraction: 3338477 },
  prague: { target: 6, max: 9, baseFeeUpdateFraction: 5007716 },
  osaka: { target: 6, max: 9, baseFeeUpdateFraction: 5007716 },
};

/**
 * EIP-2935 history contract. anvil puts this code (nonce 0) at genesis from Prague on and runs its
 * system call every block; it must be in the alloc or an importer's state diverges at block 1.
 * The other Prague system contracts (EIP-4788, 7002, 7251) are absent in anvil and never called,
 * so they are deliberately absent here too.
 */
export const HISTORY_STORAGE_ADDRESS: Address = '0x0000F90827F1C53a10cb7A02335B175320002935';
export const HISTORY_STORAGE_CODE: Hex =
  '0x3373fffffffffffffffffffffffffffffffffffffffe14604657602036036042575f35600143038111604257611fff81430311604257611fff9006545f5260205ff35b5f5ffd5b5f35611fff60014303065500';

/** Mainnet's deposit contract, which is what anvil's `eth_config` reports (it never emits deposits). */
const DEPOSIT_CONTRACT_ADDRESS: Address = '0x00000000219ab540356cbb839cbe05303d7705fa';

export interface GenesisAccount {
  balance: Hex;
  nonce?: Hex;
  code?: Hex;
  storage?: Record<Hex, Hex>;
}

export interface GethChainConfig extends Partial<Record<(typeof BLOCK_FORKS)[number], number>> {
  chainId: number;
  terminalTotalDifficulty: number;
  shanghaiTime?: number;
  cancunTime?: number;
  pragueTime?: number;
  osakaTime?: number;
  depositContractAddress?: Address;
  blobSchedule?: Partial<Record<AnvilHardfork, BlobParams>>;
}

export interface GethGenesis {
  config: GethChainConfig;
  nonce: Hex;
  timestamp: Hex;
  extraData: Hex;
  gasLimit: Hex;
  difficulty: Hex;
  mixHash: Hex;
  coinbase: Address;
  number: Hex;
  baseFeePerGas: Hex;
  alloc: Record<Address, GenesisAccount>;
}

export interface GenesisOptions {
  hardfork?: AnvilHardfork;
  gasLimit?: bigint;
  /** Extra accounts, merged over the funded dev accounts. */
  alloc?: Record<Address, GenesisAccount>;
}

const ZERO_HASH: Hex = `0x${'0'.repeat(64)}`;
const ZERO_ADDRESS: Address = `0x${'0'.repeat(40)}`;

/** A post-merge genesis with every fork up to `hardfork` active at block 0 / timestamp 0. */
export function buildGenesis(opts: GenesisOptions = {}): GethGenesis {
  const hardfork = opts.hardfork ?? DEFAULT_HARDFORK;
  return {
    config: chainConfig(hardfork),
    nonce: '0x0',
    timestamp: '0x0',
    extraData: '0x',
    gasLimit: numberToHex(opts.gasLimit ?? DEFAULT_GAS_LIMIT),
    difficulty: '0x0',
    mixHash: ZERO_HASH,
    coinbase: ZERO_ADDRESS,
    number: '0x0',
    baseFeePerGas: numberToHex(GENESIS_BASE_FEE),
    alloc: { ...devAlloc(), ...systemContractAlloc(hardfork), ...opts.alloc },
  };
}

function chainConfig(hardfork: AnvilHardfork): GethChainConfig {
  const config: GethChainConfig = { chainId: ANVIL_CHAIN_ID, terminalTotalDifficulty: 0 };
  for (const fork of BLOCK_FORKS) config[fork] = 0;
  for (const fork of TIME_FORKS.filter((f) => isActive(hardfork, f))) config[`${fork}Time`] = 0;
  if (isActive(hardfork, 'prague')) config.depositContractAddress = DEPOSIT_CONTRACT_ADDRESS;
  config.blobSchedule = Object.fromEntries(
    ANVIL_HARDFORKS.filter((f) => isActive(hardfork, f)).map((f) => [f, BLOB_SCHEDULE[f]]),
  );
  return config;
}

/** Whether `fork` is active on a chain running `hardfork`. */
export function isActive(hardfork: AnvilHardfork, fork: TimeFork): boolean {
  return TIME_FORKS.indexOf(fork) <= TIME_FORKS.indexOf(hardfork);
}

function devAlloc(): Record<Address, GenesisAccount> {
  const balance = numberToHex(DEV_BALANCE_WEI);
  return Object.fromEntries(devAccounts().map((a) => [a.address, { balance }]));
}

function systemContractAlloc(hardfork: AnvilHardfork): Record<Address, GenesisAccount> {
  if (!isActive(hardfork, 'prague')) return {};
  return { [HISTORY_STORAGE_ADDRESS]: { balance: '0x0', code: HISTORY_STORAGE_CODE } };
}

/**
 * The hardfork a genesis asks for, refusing what anvil cannot run: forks scheduled after genesis
 * (anvil has no fork schedule) and forks newer than it implements.
 */
export function hardforkOfGenesis(genesis: GethGenesis): AnvilHardfork {
  const config = genesis.config as GethChainConfig & Record<string, unknown>;
  for (const key of UNSUPPORTED_TIME_FORKS) {
    if (key in config) throw new Error(`genesis: anvil cannot run ${key}`);
  }
  for (const key of BLOCK_FORKS) {
    if ((config[key] ?? 0) !== 0) throw new Error(`genesis: ${key} must be 0, anvil has no fork schedule`);
  }
  let latest: TimeFork | undefined;
  for (const fork of TIME_FORKS) {
    const at = config[`${fork}Time`];
    if (at === undefined) break;
    if (at !== 0) throw new Error(`genesis: ${fork}Time must be 0, anvil has no fork schedule`);
    latest = fork;
  }
  if (latest === undefined || latest === 'shanghai') {
    throw new Error(`genesis: needs at least ${ANVIL_HARDFORKS[0]}, found ${latest ?? 'none'}`);
  }
  return latest;
}
