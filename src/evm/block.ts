import { createHash } from 'node:crypto';
import { keccak256 } from '../primitives/keccak.ts';
import { applyDaoFork } from './dao.ts';
import type { BlockEnv } from './env.ts';
import type { ForkRules } from './forks.ts';
import type { EvmTracer } from './hooks.ts';
import { Machine } from './interpreter.ts';
import type { Precompile } from './precompiles/index.ts';
import { encodeBigint, encodeBytes, encodeList } from './rlp.ts';
import type { Log, WorldState } from './state.ts';
import {
  applyTransaction,
  blobBaseFee,
  InvalidTransaction,
  type Transaction,
  type TransactionResult,
} from './transaction.ts';
import { addressBytes, wordBytes } from './words.ts';

/**
 * A block on the state: its system calls (EIP-4788, 2935, 7002, 7251), its transactions, the
 * requests it makes (EIP-7685), its withdrawals (EIP-4895) and, before the merge, the rewards of its
 * miner and ommers. What import verification and the dev chain's miner run; header checks (roots,
 * bloom, gas used) are theirs, from what this returns.
 */

export const SYSTEM_ADDRESS = 0xfffffffffffffffffffffffffffffffffffffffen;
export const BEACON_ROOTS_ADDRESS = 0x000f3df6d732807ef1319fb7b8bb8522d0beac02n;
export const HISTORY_STORAGE_ADDRESS = 0x0000f90827f1c53a10cb7a02335b175320002935n;
export const WITHDRAWAL_REQUEST_ADDRESS = 0x00000961ef480eb55e80d19ad83579a64c007002n;
export const CONSOLIDATION_REQUEST_ADDRESS = 0x0000bbddc7ce488642fb579f8b00f3a590007251n;
/** Mainnet's deposit contract (EIP-6110); a chain spec names its own. */
const MAINNET_DEPOSIT_CONTRACT = 0x00000000219ab540356cbb839cbe05303d7705fan;
const DEPOSIT_EVENT_TOPIC = 0x649bbc62d0e31342afea4e5cd82d4049e7e1ee912fc0889aa790803be39038c5n;
const SYSTEM_CALL_GAS = 30_000_000n;
const GWEI = 1_000_000_000n;
const GAS_PER_BLOB = 131072n;

/** EIP-6110's deposit contract of a chain spec's config, mainnet's when it names none (as ethereumjs). */
export function depositContractOf(config: Readonly<Record<string, unknown>>): bigint {
  const named = config.depositContractAddress;
  return typeof named === 'string' ? BigInt(named) : MAINNET_DEPOSIT_CONTRACT;
}

/**
 * The system contracts a fork's blocks use, by the name of the constant in the EIP that made each
 * (EIP-7910 reports them so): the addresses applyBlock calls and reads requests from.
 */
export function systemContracts(rules: ForkRules, depositContract: bigint): ReadonlyMap<string, bigint> {
  const out = new Map<string, bigint>();
  if (rules.beaconRoots) out.set('BEACON_ROOTS_ADDRESS', BEACON_ROOTS_ADDRESS);
  if (rules.historyStorage) out.set('HISTORY_STORAGE_ADDRESS', HISTORY_STORAGE_ADDRESS);
  if (rules.requests) {
    out.set('DEPOSIT_CONTRACT_ADDRESS', depositContract);
    out.set('WITHDRAWAL_REQUEST_PREDEPLOY_ADDRESS', WITHDRAWAL_REQUEST_ADDRESS);
    out.set('CONSOLIDATION_REQUEST_PREDEPLOY_ADDRESS', CONSOLIDATION_REQUEST_ADDRESS);
  }
  return out;
}

export interface Withdrawal {
  index: bigint;
  validatorIndex: bigint;
  address: bigint;
  /** In gwei. */
  amount: bigint;
}

export interface Ommer {
  coinbase: bigint;
  number: bigint;
}

export interface BlockInput {
  env: BlockEnv;
  parentHash: bigint;
  /** EIP-4788 (Cancun on); null before. */
  parentBeaconBlockRoot: bigint | null;
  transactions: readonly Transaction[];
  ommers: readonly Ommer[];
  /** EIP-4895 (Shanghai on); null before. */
  withdrawals: readonly Withdrawal[] | null;
}

export interface BlockOptions {
  /** EIP-6110's deposit contract of the chain; null: none (deposits are not collected). */
  depositContract?: bigint | null;
  /** A tracer for each transaction (index), or none. */
  tracerFor?: (index: number) => EvmTracer | null;
  /**
   * The state root after a transaction, for receipts before Byzantium (which carry it instead of a
   * status); called after each transaction when given.
   */
  stateRoot?: () => Uint8Array;
  /**
   * A chain made without EIP-7002/7251's system contracts (dev nodes' chains, and blocks a dev
   * node's miner makes): a contract without code is not called and makes no request, instead of
   * making the block invalid (geth's rule, the default).
   */
  requestContractsOptional?: boolean;
  /** The chain's DAO fork block (src/evm/dao.ts): its irregular state change comes first. */
  daoFork?: boolean;
}

export interface Receipt {
  type: number;
  /** Byzantium on: success; before, `postState` holds the state root. */
  success: boolean;
  postState: Uint8Array | null;
  cumulativeGasUsed: bigint;
  logs: Log[];
  /** The transaction's own outcome (gas used, output, created address…). */
  result: TransactionResult;
}

export interface BlockResult {
  receipts: Receipt[];
  gasUsed: bigint;
  blobGasUsed: bigint;
  /** EIP-7685 requests (type byte ‖ data, empty ones left out); null before Prague. */
  requests: Uint8Array[] | null;
}

/** A block that cannot be valid: a transaction it cannot include, or a failing system call. */
export class InvalidBlock extends Error {
  constructor(
    message: string,
    readonly transaction: number | null = null,
    readonly invalid: InvalidTransaction | null = null,
  ) {
    super(message);
    this.name = 'InvalidBlock';
  }
}

/** Runs a block on `world`; throws InvalidBlock. */
export function applyBlock(
  world: WorldState,
  rules: ForkRules,
  precompiles: ReadonlyMap<number, Precompile>,
  block: BlockInput,
  options: BlockOptions = {},
): BlockResult {
  const env = block.env;
  if (options.daoFork) applyDaoFork(world, rules);
  beginBlock(world, rules, precompiles, block);
  const receipts: Receipt[] = [];
  let gasUsed = 0n;
  let blobGasUsed = 0n;
  const maxBlobGas = rules.blobs ? BigInt(rules.blobs.max) * GAS_PER_BLOB : 0n;
  for (const [index, tx] of block.transactions.entries()) {
    if (tx.gasLimit > env.gasLimit - gasUsed)
      throw new InvalidBlock(`transaction ${index}: gas limit above the block's gas left`, index);
    const blobGas = BigInt(tx.blobVersionedHashes.length) * GAS_PER_BLOB;
    if (blobGasUsed + blobGas > maxBlobGas && blobGas > 0n)
      throw new InvalidBlock(`transaction ${index}: blob gas above the block's maximum`, index);
    let result: TransactionResult;
    try {
      result = applyTransaction(world, env, rules, precompiles, tx, options.tracerFor?.(index) ?? null);
    } catch (e) {
      if (e instanceof InvalidTransaction)
        throw new InvalidBlock(`transaction ${index}: ${e.message}`, index, e);
      throw e;
    }
    gasUsed += result.gasUsed;
    blobGasUsed += result.blobGasUsed;
    receipts.push({
      type: tx.type,
      success: result.success,
      postState: rules.receiptStatus || !options.stateRoot ? null : options.stateRoot(),
      cumulativeGasUsed: gasUsed,
      logs: result.logs,
      result,
    });
  }
  const requests = finishBlock(world, rules, precompiles, block, receipts, options);
  world.endTransaction(rules.emptyIsAbsent);
  return { receipts, gasUsed, blobGasUsed, requests };
}

/** The system calls before a block's transactions (EIP-4788's beacon root, EIP-2935's parent hash). */
export function beginBlock(
  world: WorldState,
  rules: ForkRules,
  precompiles: ReadonlyMap<number, Precompile>,
  block: Pick<BlockInput, 'env' | 'parentHash' | 'parentBeaconBlockRoot'>,
): void {
  const env = block.env;
  if (rules.beaconRoots && block.parentBeaconBlockRoot !== null) {
    systemCall(world, rules, env, precompiles, BEACON_ROOTS_ADDRESS, wordBytes(block.parentBeaconBlockRoot));
  }
  if (rules.historyStorage) {
    systemCall(world, rules, env, precompiles, HISTORY_STORAGE_ADDRESS, wordBytes(block.parentHash));
  }
}

/**
 * What follows a block's transactions: its EIP-7685 requests (null before Prague), withdrawals and,
 * before the merge, rewards. The caller ends the block (`endTransaction`).
 */
export function finishBlock(
  world: WorldState,
  rules: ForkRules,
  precompiles: ReadonlyMap<number, Precompile>,
  block: Pick<BlockInput, 'env' | 'ommers' | 'withdrawals'>,
  receipts: readonly Pick<Receipt, 'logs'>[],
  options: Pick<BlockOptions, 'depositContract' | 'requestContractsOptional'>,
): Uint8Array[] | null {
  const env = block.env;
  let requests: Uint8Array[] | null = null;
  if (rules.requests) {
    requests = [];
    if (options.depositContract !== null && options.depositContract !== undefined) {
      const deposits = depositRequests(receipts, options.depositContract);
      if (deposits !== null) requests.push(deposits);
    }
    for (const [type, address] of [
      [1, WITHDRAWAL_REQUEST_ADDRESS],
      [2, CONSOLIDATION_REQUEST_ADDRESS],
    ] as const) {
      if (!world.account(address).hasCode) {
        if (options.requestContractsOptional) continue;
        throw new InvalidBlock(`system contract ${address.toString(16).padStart(40, '0')} has no code`);
      }
      const output = systemCall(world, rules, env, precompiles, address, new Uint8Array(0), true);
      if (output.length > 0) {
        const request = new Uint8Array(output.length + 1);
        request[0] = type;
        request.set(output, 1);
        requests.push(request);
      }
    }
  }
  if (block.withdrawals && rules.withdrawals) {
    for (const w of block.withdrawals) world.addBalance(world.account(w.address), w.amount * GWEI);
  }
  if (!rules.proofOfStake && rules.blockReward > 0n) {
    const reward = rules.blockReward;
    let minerReward = reward;
    for (const ommer of block.ommers) {
      const share = ((ommer.number + 8n - env.number) * reward) / 8n;
      world.addBalance(world.account(ommer.coinbase), share);
      minerReward += reward / 32n;
    }
    world.addBalance(world.account(env.coinbase), minerReward);
  }
  return requests;
}

/** A call from the system address (no fee, no nonce), its state kept; its output. */
function systemCall(
  world: WorldState,
  rules: ForkRules,
  env: BlockEnv,
  precompiles: ReadonlyMap<number, Precompile>,
  to: bigint,
  input: Uint8Array,
  mustSucceed = false,
): Uint8Array {
  const machine = new Machine(rules, world, env, precompiles);
  machine.tx = { origin: SYSTEM_ADDRESS, gasPrice: 0n, blobHashes: [], blobBaseFee: 0n };
  world.warmAccount(world.account(to));
  const result = machine.call(SYSTEM_ADDRESS, to, 0n, input, SYSTEM_CALL_GAS);
  world.endTransaction(true);
  if (mustSucceed && !result.success)
    throw new InvalidBlock(`system call to ${to.toString(16).padStart(40, '0')} failed: ${result.error}`);
  return result.output;
}

/** EIP-6110: the deposits the block's deposit-contract logs make (type 0), or null if none. */
function depositRequests(receipts: readonly Pick<Receipt, 'logs'>[], contract: bigint): Uint8Array | null {
  const parts: Uint8Array[] = [Uint8Array.of(0)];
  for (const receipt of receipts) {
    for (const log of receipt.logs) {
      if (log.address !== contract || log.topics[0] !== DEPOSIT_EVENT_TOPIC) continue;
      parts.push(depositRequest(log.data));
    }
  }
  if (parts.length === 1) return null;
  return Buffer.concat(parts);
}

/** The 192-byte request of one DepositEvent's ABI data (pubkey, credentials, amount, signature, index). */
function depositRequest(data: Uint8Array): Uint8Array {
  if (data.length !== 576) throw new InvalidBlock(`a deposit log of ${data.length} bytes, not 576`);
  const out = new Uint8Array(192);
  let at = 32 * 5 + 32;
  out.set(data.subarray(at, at + 48), 0);
  at += 48 + 16 + 32;
  out.set(data.subarray(at, at + 32), 48);
  at += 32 + 32;
  out.set(data.subarray(at, at + 8), 80);
  at += 8 + 24 + 32;
  out.set(data.subarray(at, at + 96), 88);
  at += 96 + 32;
  out.set(data.subarray(at, at + 8), 184);
  return out;
}

/** EIP-7685's requests hash: sha256 of the sha256 of each non-empty request. */
export function requestsHash(requests: readonly Uint8Array[]): Uint8Array {
  const outer = createHash('sha256');
  for (const r of requests) if (r.length > 1) outer.update(createHash('sha256').update(r).digest());
  return outer.digest();
}

/** The 2048-bit bloom of logs (yellow paper, 4.3.1). */
export function logsBloom(logs: readonly Log[]): Uint8Array {
  const bloom = new Uint8Array(256);
  const add = (item: Uint8Array) => {
    const h = keccak256(item);
    for (let i = 0; i < 6; i += 2) {
      const bit = (((h[i] as number) << 8) | (h[i + 1] as number)) & 2047;
      bloom[255 - (bit >> 3)] = (bloom[255 - (bit >> 3)] as number) | (1 << (bit & 7));
    }
  };
  for (const log of logs) {
    add(addressBytes(log.address));
    for (const topic of log.topics) add(wordBytes(topic));
  }
  return bloom;
}

/** A receipt as the receipts trie holds it (typed receipts prefixed with their type). */
export function encodeReceipt(receipt: Receipt): Uint8Array {
  const logs = encodeList(
    receipt.logs.map((log) =>
      encodeList([
        encodeBytes(addressBytes(log.address)),
        encodeList(log.topics.map((t) => encodeBytes(wordBytes(t)))),
        encodeBytes(log.data),
      ]),
    ),
  );
  const status = receipt.postState ?? (receipt.success ? Uint8Array.of(1) : new Uint8Array(0));
  const body = encodeList([
    encodeBytes(status),
    encodeBigint(receipt.cumulativeGasUsed),
    encodeBytes(logsBloom(receipt.logs)),
    logs,
  ]);
  if (receipt.type === 0) return body;
  const typed = new Uint8Array(body.length + 1);
  typed[0] = receipt.type;
  typed.set(body, 1);
  return typed;
}

/** A withdrawal as the withdrawals trie holds it. */
export function encodeWithdrawal(w: Withdrawal): Uint8Array {
  return encodeList([
    encodeBigint(w.index),
    encodeBigint(w.validatorIndex),
    encodeBytes(addressBytes(w.address)),
    encodeBigint(w.amount),
  ]);
}

/** EIP-1559: the base fee of the block after one with this gas limit, gas used and base fee. */
export function nextBaseFee(gasLimit: bigint, gasUsed: bigint, baseFee: bigint): bigint {
  const target = gasLimit / 2n;
  if (gasUsed === target) return baseFee;
  if (gasUsed > target) {
    const delta = (baseFee * (gasUsed - target)) / target / 8n;
    return baseFee + (delta > 1n ? delta : 1n);
  }
  return baseFee - (baseFee * (target - gasUsed)) / target / 8n;
}

/**
 * EIP-4844's excess blob gas of the block after one with these values, under the rules of the new
 * block (its blob target, max and update fraction; EIP-7918 from Osaka: while blobs cost less than
 * the execution of BLOB_BASE_COST gas, the excess grows by a share of what was used and the target
 * is not subtracted).
 */
export function nextExcessBlobGas(
  rules: ForkRules,
  parentExcess: bigint,
  parentBlobGasUsed: bigint,
  parentBaseFee: bigint,
): bigint {
  const blobs = rules.blobs;
  if (!blobs) return 0n;
  const target = BigInt(blobs.target) * GAS_PER_BLOB;
  if (parentExcess + parentBlobGasUsed < target) return 0n;
  if (
    rules.blobReservePrice &&
    BLOB_BASE_COST * parentBaseFee > GAS_PER_BLOB * blobBaseFee(rules, parentExcess)
  ) {
    const max = BigInt(blobs.max);
    return parentExcess + (parentBlobGasUsed * (max - BigInt(blobs.target))) / max;
  }
  return parentExcess + parentBlobGasUsed - target;
}

/** EIP-7918's BLOB_BASE_COST. */
const BLOB_BASE_COST = 8192n;
