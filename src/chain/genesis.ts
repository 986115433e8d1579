import { readFileSync } from 'node:fs';
import { type Block, createBlock } from '@ethereumjs/block';
import { type Common, createCommonFromGethGenesis, type GethGenesis } from '@ethereumjs/common';
import { hexToBytes, isHexString, KECCAK256_RLP } from '@ethereumjs/util';
import { UserError } from '../core/errors.ts';
import { padWord } from '../primitives/hex.ts';
import { chainCrypto } from './crypto.ts';

/** One account of a genesis alloc, in the service's terms. */
export interface GenesisAccount {
  address: Uint8Array;
  balance: bigint;
  nonce: bigint;
  code: Uint8Array;
  storage: Array<[Uint8Array, Uint8Array]>;
}

/** A parsed geth-format genesis file: the chain's rules, its alloc, and the raw JSON it came from. */
export interface ChainSpec {
  /** The genesis JSON as given; stored in the datadir so later commands rebuild the same chain. */
  json: GethGenesis;
  chainId: bigint;
  alloc: GenesisAccount[];
}

// Block-numbered forks geth knows, in activation order; each must not precede the one before it.
export const BLOCK_FORKS = [
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
// Timestamp forks geth knows (and ethtrace runs), in activation order.
export const TIME_FORKS = [
  'shanghaiTime',
  'cancunTime',
  'pragueTime',
  'osakaTime',
  'bpo1Time',
  'bpo2Time',
  'bpo3Time',
  'bpo4Time',
  'bpo5Time',
] as const;
const BPO_FORKS = ['bpo1', 'bpo2', 'bpo3', 'bpo4', 'bpo5'] as const;

export function readChainSpec(path: string): ChainSpec {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (e) {
    throw new UserError(`cannot read genesis file ${path}: ${(e as Error).message}`);
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (e) {
    throw new UserError(`genesis file ${path} is not valid JSON: ${(e as Error).message}`);
  }
  return parseChainSpec(json, path);
}

export function parseChainSpec(json: unknown, origin = 'genesis'): ChainSpec {
  const fail = (what: string): never => {
    throw new UserError(`${origin}: ${what}`);
  };
  if (!isObject(json)) return fail('expected a JSON object in geth genesis format');
  const config = json.config;
  if (!isObject(config)) return fail('missing "config" object');
  const chainId = config.chainId;
  if (typeof chainId !== 'number' && typeof chainId !== 'string') return fail('config.chainId is missing');
  for (const field of ['gasLimit', 'difficulty'] as const) {
    if (json[field] === undefined) fail(`missing "${field}"`);
    quantity(json[field], field, fail);
  }
  let previous = 0;
  for (const fork of BLOCK_FORKS) {
    const at = config[fork];
    if (at === undefined || at === null) continue;
    if (typeof at !== 'number' || !Number.isInteger(at) || at < 0)
      fail(`config.${fork} must be a block number`);
    if ((at as number) < previous) fail(`config.${fork} (${at}) comes before an earlier fork's block`);
    previous = at as number;
  }
  for (const fork of TIME_FORKS) {
    const at = config[fork];
    if (at !== undefined && at !== null && (typeof at !== 'number' || at < 0)) {
      fail(`config.${fork} must be a timestamp`);
    }
  }
  const hasTimeForks = TIME_FORKS.some((f) => typeof config[f] === 'number');
  const ttd = config.terminalTotalDifficulty;
  if (hasTimeForks && config.mergeNetsplitBlock === undefined && ttd !== 0 && ttd !== undefined) {
    // Without the block of the merge we would have to track total difficulty to find it.
    fail('config sets timestamp forks and a non-zero terminalTotalDifficulty but no mergeNetsplitBlock');
  }
  const alloc = json.alloc ?? {};
  if (!isObject(alloc)) return fail('"alloc" must be an object of address → account');
  return {
    json: json as unknown as GethGenesis,
    chainId: BigInt(chainId),
    alloc: Object.entries(alloc).map(([address, account]) => allocAccount(address, account, fail)),
  };
}

function allocAccount(address: string, account: unknown, fail: (what: string) => never): GenesisAccount {
  const hex = address.startsWith('0x') ? address : `0x${address}`;
  if (!/^0x[0-9a-fA-F]{40}$/.test(hex)) fail(`alloc key ${address} is not an address`);
  if (!isObject(account)) return fail(`alloc.${address} must be an object`);
  const storage = account.storage ?? {};
  if (!isObject(storage)) fail(`alloc.${address}.storage must be an object`);
  return {
    address: hexToBytes(hex as `0x${string}`),
    balance: account.balance === undefined ? 0n : quantity(account.balance, `alloc.${address}.balance`, fail),
    nonce: account.nonce === undefined ? 0n : quantity(account.nonce, `alloc.${address}.nonce`, fail),
    code: account.code === undefined ? new Uint8Array() : data(account.code, `alloc.${address}.code`, fail),
    storage: Object.entries(storage as Record<string, unknown>).map(([slot, value]) => [
      padWord(data(slot, `alloc.${address}.storage key`, fail)),
      padWord(data(value, `alloc.${address}.storage[${slot}]`, fail)),
    ]),
  };
}

/**
 * The Common for a chain spec, set to the genesis block's fork. Two things ethereumjs would get wrong
 * on its own: BPO forks lose their blob target/max unless given back as params, and geth only applies
 * the DAO fork's state change when `daoForkSupport` is set.
 */
export function makeCommon(spec: ChainSpec): Common {
  const json = structuredClone(spec.json) as GethGenesis & { config: Record<string, unknown> };
  if (json.config.daoForkSupport !== true) delete json.config.daoForkBlock;
  const schedule = (json.config.blobSchedule ?? {}) as Record<
    string,
    { target: number; max: number; baseFeeUpdateFraction: number }
  >;
  const params: Record<string, Record<string, number>> = {};
  for (const bpo of BPO_FORKS) {
    const s = schedule[bpo];
    if (s)
      params[bpo] = { target: s.target, max: s.max, blobGasPriceUpdateFraction: s.baseFeeUpdateFraction };
  }
  try {
    const common = createCommonFromGethGenesis(json, {
      chain: `chain-${spec.chainId}`,
      customCrypto: chainCrypto(),
      params,
    });
    common.setHardforkBy({ blockNumber: 0n, timestamp: BigInt(json.timestamp ?? 0) });
    return common;
  } catch (e) {
    throw new UserError(`genesis config is not usable: ${(e as Error).message}`);
  }
}

/** The genesis block geth would make from this spec, given the alloc's state root. */
export function genesisBlock(spec: ChainSpec, common: Common, stateRoot: Uint8Array): Block {
  const g = spec.json as GethGenesis & Record<string, unknown>;
  const has = (eip: number) => common.isActivatedEIP(eip);
  const header: Record<string, unknown> = {
    number: 0n,
    parentHash: g.parentHash ?? new Uint8Array(32),
    timestamp: BigInt(g.timestamp ?? 0),
    gasLimit: BigInt(g.gasLimit),
    difficulty: BigInt(g.difficulty ?? 0),
    extraData: g.extraData ?? '0x',
    mixHash: g.mixHash ?? new Uint8Array(32),
    nonce: padNonce(g.nonce ?? '0x0'),
    coinbase: g.coinbase ?? new Uint8Array(20),
    gasUsed: BigInt((g.gasUsed as string | undefined) ?? 0),
    stateRoot,
  };
  // Post-fork genesis headers carry the fork's extra fields with geth's defaults.
  if (has(1559))
    header.baseFeePerGas = g.baseFeePerGas ? BigInt(g.baseFeePerGas) : common.param('initialBaseFee');
  if (has(4895)) header.withdrawalsRoot = KECCAK256_RLP;
  if (has(4844)) {
    header.blobGasUsed = BigInt((g.blobGasUsed as string | undefined) ?? 0);
    header.excessBlobGas = BigInt(g.excessBlobGas ?? 0);
  }
  if (has(4788)) header.parentBeaconBlockRoot = new Uint8Array(32);
  if (has(7685)) header.requestsHash = hexToBytes(EMPTY_REQUESTS_HASH);
  return createBlock(has(4895) ? { header, withdrawals: [] } : { header }, {
    common,
    skipConsensusFormatValidation: true,
  });
}

// sha256 of the empty concatenation of request hashes (EIP-7685), the value geth gives a genesis.
const EMPTY_REQUESTS_HASH = '0xe3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855';

function padNonce(nonce: string): Uint8Array {
  const hex = nonce.startsWith('0x') ? nonce.slice(2) : nonce;
  return hexToBytes(`0x${hex.padStart(16, '0')}`);
}

function quantity(v: unknown, what: string, fail: (what: string) => never): bigint {
  if (typeof v === 'number' && Number.isSafeInteger(v) && v >= 0) return BigInt(v);
  if (typeof v === 'string') {
    if (isHexString(v)) return v === '0x' ? 0n : BigInt(v);
    if (/^[0-9]+$/.test(v)) return BigInt(v);
  }
  return fail(`${what} must be a number or hex quantity, got ${JSON.stringify(v)}`);
}

function data(v: unknown, what: string, fail: (what: string) => never): Uint8Array {
  if (typeof v !== 'string') return fail(`${what} must be a hex string`);
  const hex = v.startsWith('0x') ? v.slice(2) : v;
  if (!/^[0-9a-fA-F]*$/.test(hex)) return fail(`${what} is not hex: ${v}`);
  return hexToBytes(`0x${hex.length % 2 ? `0${hex}` : hex}`);
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
