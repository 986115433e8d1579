import { privateToAddress } from '@ethereumjs/util';
import { HDKey } from '@scure/bip32';
import { mnemonicToSeedSync } from '@scure/bip39';
import { toHex } from '../primitives/hex.ts';

/** The mnemonic Hardhat, anvil and Foundry use, so existing tooling knows the dev accounts. */
export const DEV_MNEMONIC = 'test test test test test test test test test test test junk';
export const DEV_CHAIN_ID = 31337n;
export const DEV_ACCOUNT_COUNT = 10;
export const DEV_BALANCE = 10_000n * 10n ** 18n;
/** Forks a dev chain can start at, oldest first; the newest is the default. */
export const DEV_HARDFORKS = ['shanghai', 'cancun', 'prague', 'osaka'] as const;
export type DevHardfork = (typeof DEV_HARDFORKS)[number];
// Block gas limit of a dev chain: room for large deployments, as anvil's and Hardhat's defaults.
const DEV_GAS_LIMIT = 30_000_000n;
const GENESIS_BASE_FEE = 1_000_000_000n;

export interface DevAccount {
  address: Uint8Array;
  privateKey: Uint8Array;
}

export interface DevChainOptions {
  chainId: bigint;
  hardfork: DevHardfork;
  mnemonic: string;
}

/** The first `count` accounts of the mnemonic on the Ethereum derivation path m/44'/60'/0'/0/i. */
export function devAccounts(mnemonic: string, count = DEV_ACCOUNT_COUNT): DevAccount[] {
  const root = HDKey.fromMasterSeed(mnemonicToSeedSync(mnemonic));
  return Array.from({ length: count }, (_, i) => {
    const key = root.derive(`m/44'/60'/0'/0/${i}`).privateKey;
    if (!key) throw new Error(`no private key for account ${i}`);
    return { address: privateToAddress(key), privateKey: key };
  });
}

// EIP-2935's history contract, which Prague-and-later chains have from genesis (EIP text).
const HISTORY_STORAGE_ADDRESS = '0x0000f90827f1c53a10cb7a02335b175320002935';
const HISTORY_STORAGE_CODE =
  '0x3373fffffffffffffffffffffffffffffffffffffffe14604657602036036042575f35600143038111604257611fff81430311604257611fff9006545f5260205ff35b5f5ffd5b5f35611fff60014303065500';
const BLOB_SCHEDULE = {
  cancun: { target: 3, max: 6, baseFeeUpdateFraction: 3338477 },
  prague: { target: 6, max: 9, baseFeeUpdateFraction: 5007716 },
  osaka: { target: 6, max: 9, baseFeeUpdateFraction: 5007716 },
};

/** A geth-format genesis for a dev chain: every fork at genesis up to `hardfork`, the accounts funded. */
export function devGenesis(opts: DevChainOptions): Record<string, unknown> {
  const forks = DEV_HARDFORKS.slice(0, DEV_HARDFORKS.indexOf(opts.hardfork) + 1);
  const config: Record<string, unknown> = {
    chainId: Number(opts.chainId),
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
    mergeNetsplitBlock: 0,
    terminalTotalDifficulty: 0,
  };
  for (const fork of forks) config[`${fork}Time`] = 0;
  config.blobSchedule = Object.fromEntries(
    Object.entries(BLOB_SCHEDULE).filter(([fork]) => forks.includes(fork as DevHardfork)),
  );
  const alloc: Record<string, unknown> = Object.fromEntries(
    devAccounts(opts.mnemonic).map((a) => [toHex(a.address), { balance: `0x${DEV_BALANCE.toString(16)}` }]),
  );
  if (forks.includes('prague'))
    alloc[HISTORY_STORAGE_ADDRESS] = { balance: '0x0', code: HISTORY_STORAGE_CODE };
  return {
    config,
    nonce: '0x0',
    timestamp: `0x${Math.floor(Date.now() / 1000).toString(16)}`,
    extraData: '0x',
    gasLimit: `0x${DEV_GAS_LIMIT.toString(16)}`,
    difficulty: '0x0',
    baseFeePerGas: `0x${GENESIS_BASE_FEE.toString(16)}`,
    mixHash: `0x${'00'.repeat(32)}`,
    coinbase: `0x${'00'.repeat(20)}`,
    alloc,
  };
}
