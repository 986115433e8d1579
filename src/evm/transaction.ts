import secp256k1 from 'secp256k1';
import { keccak256 } from '../primitives/keccak.ts';
import type { BlockEnv } from './env.ts';
import type { ForkRules } from './forks.ts';
import type { EvmTracer, FrameError } from './hooks.ts';
import { delegationTarget, Machine } from './interpreter.ts';
import type { Precompile } from './precompiles/index.ts';
import { encodeBigint, encodeBytes, encodeList } from './rlp.ts';
import type { Log, WorldState } from './state.ts';
import { addressBytes, bytesToBigint, wordBytes } from './words.ts';

export interface AccessListEntry {
  address: bigint;
  storageKeys: readonly bigint[];
}

/** An EIP-7702 authorization tuple as signed. */
export interface Authorization {
  chainId: bigint;
  address: bigint;
  nonce: bigint;
  yParity: bigint;
  r: bigint;
  s: bigint;
}

/** A transaction of any of the five types, its sender already recovered. */
export interface Transaction {
  /** 0 legacy, 1 EIP-2930, 2 EIP-1559, 3 EIP-4844, 4 EIP-7702. */
  type: number;
  sender: bigint;
  nonce: bigint;
  gasLimit: bigint;
  /** Types 0 and 1. */
  gasPrice: bigint;
  /** Types 2–4. */
  maxFeePerGas: bigint;
  maxPriorityFeePerGas: bigint;
  /** null: a contract creation. */
  to: bigint | null;
  value: bigint;
  data: Uint8Array;
  accessList: readonly AccessListEntry[];
  /** Type 3. */
  blobVersionedHashes: readonly bigint[];
  maxFeePerBlobGas: bigint;
  /** Type 4. */
  authorizationList: readonly Authorization[];
}

/** Why a transaction cannot be included, named as the execution spec tests name it. */
export class InvalidTransaction extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
    this.name = 'InvalidTransaction';
  }
}

export interface TransactionResult {
  /** Gas the block counts (after refunds and the EIP-7623 floor). */
  gasUsed: bigint;
  /** EIP-4844 blob gas. */
  blobGasUsed: bigint;
  success: boolean;
  /** Returned or reverted data. */
  output: Uint8Array;
  error: FrameError | 'revert' | null;
  logs: Log[];
  createdAddress: bigint | null;
  /** Refund granted (before the floor), for tracers. */
  refund: bigint;
  /** Gas used before the refund and the floor (intrinsic gas included): what a gas estimate builds on. */
  gasUsedBeforeRefund: bigint;
}

/**
 * How a simulated call (eth_call, trace_call) differs from a transaction in a block. `call`: the
 * block's gas limit, EIP-7825's per-transaction cap and EIP-3607's rule against senders with code
 * do not apply (geth and Reth simulate calls from contracts, with gas up to their own cap).
 * `fees: false`: pure simulation (Reth's trace_call): no gas is bought or refunded and nothing is
 * paid to the coinbase, which is only touched, as a zero payment touches it, when the tip would have
 * been zero; the sender must afford only the value.
 */
export interface TransactionOptions {
  call?: boolean;
  fees?: boolean;
  /** false: the nonce is not checked, only used (eth_simulateV1 without validation, as geth). */
  nonceCheck?: boolean;
  /**
   * geth's NoBaseFee (eth_simulateV1 without validation): a transaction whose fee fields are all zero
   * skips the fee cap checks and pays the coinbase nothing.
   */
  noBaseFee?: boolean;
  /** The precompiles by full address, when some were moved (eth_simulateV1's state overrides). */
  precompilesAt?: ReadonlyMap<bigint, Precompile>;
}

const TX_GAS = 21000n;
const ACCESS_LIST_ADDRESS_GAS = 2400n;
const ACCESS_LIST_SLOT_GAS = 1900n;
const PER_AUTH_BASE_COST = 12500n;
const PER_EMPTY_ACCOUNT_COST = 25000n;
const GAS_PER_BLOB = 131072n;
const MIN_BLOB_BASE_FEE = 1n;
const BLOB_HASH_VERSION = 0x01n;
const MAX_UINT64 = 0xffffffffffffffffn;
const MAX_UINT256 = (1n << 256n) - 1n;
/** secp256k1's group order and half of it (EIP-2: s must be in the lower half). */
const SECP256K1_N = 0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141n;
const SECP256K1_HALF_N = SECP256K1_N / 2n;
const AUTHORIZATION_MAGIC = Uint8Array.of(0x05);

/** EIP-4844's fake_exponential: factor · e^(numerator/denominator), in integers. */
export function fakeExponential(factor: bigint, numerator: bigint, denominator: bigint): bigint {
  let i = 1n;
  let output = 0n;
  let accumulator = factor * denominator;
  while (accumulator > 0n) {
    output += accumulator;
    accumulator = (accumulator * numerator) / (denominator * i);
    i++;
  }
  return output / denominator;
}

/** The blob base fee of a block with this excess blob gas under these rules (0 before Cancun). */
export function blobBaseFee(rules: ForkRules, excessBlobGas: bigint): bigint {
  if (!rules.blobs) return 0n;
  return fakeExponential(MIN_BLOB_BASE_FEE, excessBlobGas, rules.blobs.baseFeeUpdateFraction);
}

/** The blob base fee transactions in this block pay and BLOBBASEFEE reads. */
function blockBlobBaseFee(rules: ForkRules, block: BlockEnv): bigint {
  return block.blobBaseFee ?? blobBaseFee(rules, block.excessBlobGas);
}

function zeroBytes(data: Uint8Array): number {
  let zeros = 0;
  for (let i = 0; i < data.length; i++) if (data[i] === 0) zeros++;
  return zeros;
}

/** Intrinsic gas: what a transaction pays before its first opcode. */
export function intrinsicGas(rules: ForkRules, tx: Transaction, zeros = zeroBytes(tx.data)): bigint {
  const creation = tx.to === null;
  let gas = creation ? BigInt(rules.txCreateGas) : TX_GAS;
  const nonZeros = tx.data.length - zeros;
  gas += BigInt(zeros * rules.txDataZeroGas + nonZeros * rules.txDataNonZeroGas);
  if (creation) gas += BigInt(Math.ceil(tx.data.length / 32) * rules.initCodeWordGas);
  for (const entry of tx.accessList) {
    gas += ACCESS_LIST_ADDRESS_GAS + ACCESS_LIST_SLOT_GAS * BigInt(entry.storageKeys.length);
  }
  gas += PER_EMPTY_ACCOUNT_COST * BigInt(tx.authorizationList.length);
  return gas;
}

/** EIP-7623: the least gas a transaction is charged, by its calldata tokens (0 before Prague). */
export function floorDataGas(rules: ForkRules, tx: Transaction, zeros = zeroBytes(tx.data)): bigint {
  if (rules.calldataFloorPerToken === 0) return 0n;
  const tokens = BigInt(zeros + (tx.data.length - zeros) * 4);
  return TX_GAS + tokens * BigInt(rules.calldataFloorPerToken);
}

/** The price per gas the sender pays. */
export function effectiveGasPrice(tx: Transaction, baseFee: bigint): bigint {
  if (tx.type < 2) return tx.gasPrice;
  const headroom = tx.maxFeePerGas - baseFee;
  if (tx.maxPriorityFeePerGas < headroom) return baseFee + tx.maxPriorityFeePerGas;
  return tx.maxFeePerGas;
}

function invalid(code: string, message: string): never {
  throw new InvalidTransaction(code, message);
}

/** Gas a transaction pays whatever it runs: intrinsic, and the EIP-7623 floor of its total. */
interface UpfrontGas {
  intrinsic: bigint;
  floor: bigint;
}

/** The checks a transaction must pass to be included; throws InvalidTransaction. */
function validate(
  world: WorldState,
  block: BlockEnv,
  rules: ForkRules,
  tx: Transaction,
  options: TransactionOptions,
): UpfrontGas {
  const call = options.call === true;
  if (!rules.txTypes.has(tx.type))
    invalid(`TYPE_${tx.type}_TX_PRE_FORK`, `type ${tx.type} transactions are not valid before their fork`);
  if (tx.value > MAX_UINT256) invalid('RLP_INVALID_VALUE', 'value exceeds 256 bits');
  if (tx.gasPrice > MAX_UINT256 || tx.maxFeePerGas > MAX_UINT256 || tx.maxPriorityFeePerGas > MAX_UINT256)
    invalid('RLP_INVALID_VALUE', 'a gas price exceeds 256 bits');
  if (tx.maxFeePerBlobGas > MAX_UINT256)
    invalid('RLP_INVALID_VALUE', 'max fee per blob gas exceeds 256 bits');
  if (tx.gasLimit > MAX_UINT64) invalid('GASLIMIT_OVERFLOW', 'gas limit exceeds 64 bits');
  if (tx.nonce > MAX_UINT64) invalid('NONCE_OVERFLOW', 'nonce exceeds 64 bits');
  const sender = world.account(tx.sender);
  if (options.nonceCheck !== false) {
    if (sender.nonce < tx.nonce)
      invalid('NONCE_MISMATCH_TOO_HIGH', `nonce ${tx.nonce}, the sender's is ${sender.nonce}`);
    if (sender.nonce > tx.nonce)
      invalid('NONCE_MISMATCH_TOO_LOW', `nonce ${tx.nonce}, the sender's is ${sender.nonce}`);
    if (sender.nonce >= MAX_UINT64) invalid('NONCE_IS_MAX', 'the sender nonce is 2^64-1');
  }
  if (!call && Number.isFinite(rules.txGasCap) && tx.gasLimit > BigInt(rules.txGasCap))
    invalid('GAS_LIMIT_EXCEEDS_MAXIMUM', `gas limit ${tx.gasLimit} above the cap ${rules.txGasCap}`);
  if (
    !call &&
    rules.rejectSenderWithCode &&
    sender.hasCode &&
    !(rules.delegation && delegationTarget(world, sender) !== null)
  )
    invalid('SENDER_NOT_EOA', 'the sender has code (EIP-3607)');
  if (rules.baseFee && !unpriced(tx, options)) {
    const feeCap = tx.type >= 2 ? tx.maxFeePerGas : tx.gasPrice;
    if (tx.type >= 2 && tx.maxPriorityFeePerGas > tx.maxFeePerGas)
      invalid('PRIORITY_GREATER_THAN_MAX_FEE_PER_GAS', 'max priority fee above max fee');
    if (feeCap < block.baseFee)
      invalid('INSUFFICIENT_MAX_FEE_PER_GAS', `fee cap ${feeCap} below base fee ${block.baseFee}`);
  }
  if (tx.type === 3) {
    if (tx.to === null) invalid('TYPE_3_TX_CONTRACT_CREATION', 'blob transactions cannot create');
    const count = tx.blobVersionedHashes.length;
    if (count === 0) invalid('TYPE_3_TX_ZERO_BLOBS', 'a blob transaction without blobs');
    if (count > rules.maxBlobsPerTx)
      invalid('TYPE_3_TX_BLOB_COUNT_EXCEEDED', `${count} blobs in one transaction`);
    for (const hash of tx.blobVersionedHashes) {
      if (hash >> 248n !== BLOB_HASH_VERSION)
        invalid('TYPE_3_TX_INVALID_BLOB_VERSIONED_HASH', 'a blob hash of an unknown version');
    }
    if (rules.blobs && count > rules.blobs.max)
      invalid(
        'TYPE_3_TX_MAX_BLOB_GAS_ALLOWANCE_EXCEEDED',
        `${count} blobs, above the block's ${rules.blobs.max}`,
      );
    if (
      !(options.noBaseFee && tx.maxFeePerBlobGas === 0n) &&
      tx.maxFeePerBlobGas < blockBlobBaseFee(rules, block)
    )
      invalid('INSUFFICIENT_MAX_FEE_PER_BLOB_GAS', 'max fee per blob gas below the blob base fee');
  }
  if (tx.type === 4) {
    if (tx.to === null) invalid('TYPE_4_TX_CONTRACT_CREATION', 'set-code transactions cannot create');
    if (tx.authorizationList.length === 0) invalid('TYPE_4_EMPTY_AUTHORIZATION_LIST', 'no authorizations');
  }
  if (tx.to === null && tx.data.length > rules.maxInitCodeSize)
    invalid('INITCODE_SIZE_EXCEEDED', `initcode of ${tx.data.length} bytes`);
  if (!call && tx.gasLimit > block.gasLimit)
    invalid('GAS_ALLOWANCE_EXCEEDED', `gas limit above the block's ${block.gasLimit}`);
  const feeCap = tx.type >= 2 ? tx.maxFeePerGas : tx.gasPrice;
  const gasCost = tx.gasLimit * feeCap;
  if (gasCost > MAX_UINT256) invalid('GASLIMIT_PRICE_PRODUCT_OVERFLOW', 'gas limit × price exceeds 256 bits');
  const need =
    options.fees === false
      ? tx.value
      : gasCost + tx.value + BigInt(tx.blobVersionedHashes.length) * GAS_PER_BLOB * tx.maxFeePerBlobGas;
  if (sender.balance < need)
    invalid(
      'INSUFFICIENT_ACCOUNT_FUNDS',
      `the sender has ${sender.balance}, the transaction needs up to ${need}`,
    );
  const zeros = zeroBytes(tx.data);
  const intrinsic = intrinsicGas(rules, tx, zeros);
  if (tx.gasLimit < intrinsic) invalid('INTRINSIC_GAS_TOO_LOW', `gas limit below the intrinsic ${intrinsic}`);
  const floor = floorDataGas(rules, tx, zeros);
  if (tx.gasLimit < floor)
    invalid('INTRINSIC_GAS_BELOW_FLOOR_GAS_COST', 'gas limit below the EIP-7623 floor');
  return { intrinsic, floor };
}

/** geth's NoBaseFee case: fee fields all zero, so no fee cap is checked and no fee paid. */
function unpriced(tx: Transaction, options: TransactionOptions): boolean {
  if (options.noBaseFee !== true) return false;
  return tx.type >= 2 ? tx.maxFeePerGas === 0n && tx.maxPriorityFeePerGas === 0n : tx.gasPrice === 0n;
}

/**
 * Runs one transaction on `world`: validation (throws InvalidTransaction, the state untouched),
 * gas purchase, EIP-7702 authorizations, the call or creation, refunds, the fee to the coinbase,
 * and the end-of-transaction rules (self-destructs, EIP-161 empty accounts).
 */
export function applyTransaction(
  world: WorldState,
  block: BlockEnv,
  rules: ForkRules,
  precompiles: ReadonlyMap<number, Precompile>,
  tx: Transaction,
  tracer: EvmTracer | null = null,
  options: TransactionOptions = {},
): TransactionResult {
  const upfront = validate(world, block, rules, tx, options);
  world.observer = tracer?.accountRead || tracer?.storageRead ? tracer : null;
  try {
    return execute(world, block, rules, precompiles, tx, upfront, tracer, options);
  } catch (e) {
    // A run abandoned midway (a MissingState from the reader): nothing of it stays.
    world.abortTransaction();
    throw e;
  } finally {
    world.observer = null;
  }
}

function execute(
  world: WorldState,
  block: BlockEnv,
  rules: ForkRules,
  precompiles: ReadonlyMap<number, Precompile>,
  tx: Transaction,
  upfront: UpfrontGas,
  tracer: EvmTracer | null,
  options: TransactionOptions,
): TransactionResult {
  const fees = options.fees !== false;
  const sender = world.account(tx.sender);
  const gasPrice = effectiveGasPrice(tx, block.baseFee);
  const blobGas = BigInt(tx.blobVersionedHashes.length) * GAS_PER_BLOB;
  const blobFee = blockBlobBaseFee(rules, block);
  if (fees) world.subBalance(sender, tx.gasLimit * gasPrice + blobGas * blobFee);
  if (rules.accessLists) {
    world.warmAccount(sender);
    if (tx.to !== null) world.warmAccount(world.account(tx.to));
    world.warmAlways(precompileAddresses(precompiles));
    for (const entry of tx.accessList) {
      const account = world.account(entry.address);
      world.warmAccount(account);
      for (const slot of entry.storageKeys) world.warmSlot(account, slot);
    }
    if (rules.warmCoinbase) world.warmAccount(world.account(block.coinbase));
  }
  const machine = new Machine(rules, world, block, precompiles, tracer);
  if (options.precompilesAt) machine.relocated = options.precompilesAt;
  machine.tx = { origin: tx.sender, gasPrice, blobHashes: tx.blobVersionedHashes, blobBaseFee: blobFee };
  const gas = tx.gasLimit - upfront.intrinsic;
  let result: ReturnType<Machine['call']>;
  if (tx.to === null) {
    result = machine.create(tx.sender, tx.value, tx.data, gas);
  } else {
    // Past 2^64 − 1 only when the nonce is not checked (a simulation): it wraps, as geth's uint64.
    world.setNonce(sender, sender.nonce === MAX_UINT64 ? 0n : sender.nonce + 1n);
    if (tx.authorizationList.length > 0) applyAuthorizations(world, block, tx.authorizationList);
    const target = world.account(tx.to);
    if (rules.delegation) {
      const delegate = delegationTarget(world, target);
      if (delegate !== null) world.warmAccount(world.account(delegate));
    }
    result = machine.call(tx.sender, tx.to, tx.value, tx.data, gas);
  }
  const usedBeforeRefund = tx.gasLimit - result.gasLeft;
  const cap = usedBeforeRefund / BigInt(rules.refundQuotient);
  const counter = BigInt(world.refund);
  const refund = counter < cap ? counter : cap;
  let gasUsed = usedBeforeRefund - refund;
  if (gasUsed < upfront.floor) gasUsed = upfront.floor;
  const tip = rules.baseFee ? gasPrice - block.baseFee : gasPrice;
  if (fees) {
    world.addBalance(sender, (tx.gasLimit - gasUsed) * gasPrice);
    if (!unpriced(tx, options)) world.addBalance(world.account(block.coinbase), gasUsed * tip);
  } else if (gasUsed * tip === 0n) {
    // Touched only: a zero payment would also make an absent coinbase before EIP-161 (addBalance),
    // which today's trace_call answers (the ethereumjs path) never showed for a simulation that pays
    // no fee at all.
    const coinbase = world.account(block.coinbase);
    if (coinbase.isEmpty()) world.touch(coinbase);
  }
  const logs = world.logs.slice();
  world.endTransaction(rules.emptyIsAbsent);
  return {
    gasUsed,
    blobGasUsed: blobGas,
    success: result.success,
    output: result.output,
    error: result.error,
    logs,
    createdAddress: result.createdAddress,
    refund,
    gasUsedBeforeRefund: usedBeforeRefund,
  };
}

const addressLists = new WeakMap<ReadonlyMap<number, Precompile>, readonly bigint[]>();

/** The addresses of a set of precompiles, as the one list WorldState.warmAlways remembers. */
function precompileAddresses(precompiles: ReadonlyMap<number, Precompile>): readonly bigint[] {
  let list = addressLists.get(precompiles);
  if (list === undefined) {
    list = [...precompiles.keys()].map(BigInt);
    addressLists.set(precompiles, list);
  }
  return list;
}

/** EIP-7702: each valid authorization sets its authority's code to a delegation (or clears it). */
function applyAuthorizations(world: WorldState, block: BlockEnv, list: readonly Authorization[]): void {
  for (const auth of list) {
    if (auth.chainId !== 0n && auth.chainId !== block.chainId) continue;
    if (auth.nonce >= MAX_UINT64) continue;
    const authority = recoverAuthority(auth);
    if (authority === null) continue;
    const account = world.account(authority);
    world.warmAccount(account);
    const current = delegationTarget(world, account);
    if (account.hasCode && current === null) continue;
    if (account.nonce !== auth.nonce) continue;
    if (account.exists) world.addRefund(Number(PER_EMPTY_ACCOUNT_COST - PER_AUTH_BASE_COST));
    world.setNonce(account, auth.nonce + 1n);
    if (auth.address === 0n) {
      if (current !== null) world.setCode(account, new Uint8Array(0));
    } else if (current !== auth.address) {
      world.setCode(account, delegationCode(auth.address));
    }
  }
}

/** The code that delegates to `address` (EIP-7702's designator 0xef0100 ‖ address). */
export function delegationCode(address: bigint): Uint8Array {
  const code = new Uint8Array(23);
  code.set([0xef, 0x01, 0x00]);
  code.set(addressBytes(address), 3);
  return code;
}

/** The signer of an authorization, or null if its signature is not a valid one. */
export function recoverAuthority(auth: Authorization): bigint | null {
  if (auth.yParity > 1n) return null;
  if (auth.r === 0n || auth.r >= SECP256K1_N || auth.s === 0n || auth.s > SECP256K1_HALF_N) return null;
  if (auth.chainId > MAX_UINT256) return null;
  const message = encodeList([
    encodeBigint(auth.chainId),
    encodeBytes(addressBytes(auth.address)),
    encodeBigint(auth.nonce),
  ]);
  const prefixed = new Uint8Array(message.length + 1);
  prefixed.set(AUTHORIZATION_MAGIC);
  prefixed.set(message, 1);
  const hash = keccak256(prefixed);
  const signature = new Uint8Array(64);
  signature.set(wordBytes(auth.r), 0);
  signature.set(wordBytes(auth.s), 32);
  try {
    const publicKey = secp256k1.ecdsaRecover(signature, Number(auth.yParity), hash, false);
    return bytesToBigint(keccak256(publicKey.subarray(1)), 12, 20);
  } catch {
    return null;
  }
}
