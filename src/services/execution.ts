import type { BlockHeader } from '@ethereumjs/block';
import type { Common } from '@ethereumjs/common';
import { getActivePrecompiles, type InterpreterStep } from '@ethereumjs/evm';
import { createTx } from '@ethereumjs/tx';
import {
  bigIntToBytes,
  eoaCode7702RecoverAuthority,
  generateAddress,
  setLengthLeft,
  toChecksumAddress,
} from '@ethereumjs/util';
import { keccak256 } from '../chain/crypto.ts';
import type { BlockOverrides, CallRequest, StateOverrides } from '../exec/callRequest.ts';
import { CallSession, CallValidationError, type SimulatedCall } from '../exec/executor.ts';
import { revertReason } from '../exec/revertReason.ts';
import { BLOB_GAS_PER_BLOB } from '../ingest/receipts.ts';
import { quantityToHex, toHex } from '../primitives/hex.ts';
import { RpcError, ServerError } from '../rpc/errors.ts';
import type { BlockSelector } from '../rpc/params.ts';
import type { ChainService } from './chain.ts';
import type { FeeService } from './fees.ts';
import { stateBlock } from './state.ts';

export interface CallLimits {
  /** Gas a call gets when it names none, and the most it may name (geth's --rpc.gascap default). */
  gasCap: bigint;
  /**
   * eth_estimateGas stops its search once (hi − lo) / hi falls below this (geth's 1.5%): wallets add
   * 20–25% on top anyway, and it saves most of the runs (the 7702 fixture's estimate: 6 instead of
   * 15). 0 searches to the exact gas.
   */
  estimateGasErrorRatio: number;
  /**
   * eth_createAccessList re-runs the call with each list found until the list stops changing: one
   * or two runs for almost every call. A call whose accesses keep moving (slots derived from gasleft())
   * would otherwise run until the deadline; geth has no bound of its own.
   */
  maxAccessListRuns: number;
}

export const DEFAULT_CALL_LIMITS: CallLimits = {
  gasCap: 50_000_000n,
  estimateGasErrorRatio: 0.015,
  maxAccessListRuns: 16,
};

/** A call object as eth_call & co. take it: the call plus the fields that only check it. */
export interface CallArguments {
  call: CallRequest;
  /** geth rejects a call whose chainId is not the node's. */
  chainId?: bigint;
}

export interface AccessListEntry {
  address: Uint8Array;
  storageKeys: Uint8Array[];
}

export interface AccessListResult {
  accessList: AccessListEntry[];
  /** Gas the call uses with the list, after refunds. */
  gasUsed: bigint;
  /** The EVM's error when the call fails with the list (geth's words); the list is still served. */
  error?: string;
}

/** geth's error for a reverted call: code 3, the Error(string)/Panic reason in the message, the data. */
export class ExecutionReverted extends RpcError {
  constructor(readonly output: Uint8Array) {
    const reason = revertReason(output);
    super(3, reason === null ? 'execution reverted' : `execution reverted: ${reason}`, toHex(output));
  }
}

// params.TxGas: a plain transfer; below it no call is valid, so geth reads a smaller gas as "none".
const TX_GAS = 21_000n;
// EIP-7825's cap on one transaction's gas, which geth's estimate honours from Osaka on.
const MAX_TX_GAS = 1n << 24n;
// The stipend a value-carrying CALL adds, which the optimistic first guess leaves room for (geth).
const CALL_STIPEND = 2_300n;
// EIP-7702: the intrinsic gas of one authorization; geth refuses lists longer than the gas pays for.
const PER_AUTH_GAS = 25_000n;
const MAX_UINT64 = (1n << 64n) - 1n;
const ZERO_ADDRESS = new Uint8Array(20);

type Overrides = { stateOverrides?: StateOverrides; blockOverrides?: BlockOverrides };

/**
 * The EVM part of one request, as plain data (it may cross to a worker thread: see ExecutionRunner).
 * The block is already resolved and the arguments checked; createAccessList's fees are filled in.
 */
export interface ExecutionJob {
  kind: 'call' | 'estimateGas' | 'createAccessList';
  blockHash: Uint8Array;
  call: CallRequest;
  overrides: Overrides;
}

export type ExecutionAnswer<J extends ExecutionJob> = J['kind'] extends 'call'
  ? Uint8Array
  : J['kind'] extends 'estimateGas'
    ? bigint
    : AccessListResult;

/**
 * Where the EVM work runs. In-process by default (runExecution); a worker pool fits by answering
 * `job` with runExecution in the worker: jobs and answers are structured-cloneable, and the errors
 * thrown are RpcErrors (code, message, data), which the pool carries across.
 */
export type ExecutionRunner = <J extends ExecutionJob>(job: J) => Promise<ExecutionAnswer<J>>;

/**
 * eth_call, eth_estimateGas and eth_createAccessList with geth's semantics, on the same executor as
 * trace_call. Where geth and trace_call (Reth) differ, these follow geth: the sender pays for gas at
 * the price it names (and must afford gas × fee cap + value), a reverted call is an error with code 3.
 * The block and the cheap checks are done here; the EVM work goes to the runner.
 */
export class ExecutionService {
  private readonly run: ExecutionRunner;

  constructor(
    private readonly chain: ChainService,
    private readonly fees: FeeService,
    readonly limits: CallLimits,
    runner?: ExecutionRunner,
  ) {
    this.run = runner ?? ((job) => runExecution(chain, limits, job));
  }

  /** The call's output; a revert throws ExecutionReverted, any other failure a -32000 error. */
  async call(block: BlockSelector, args: CallArguments, overrides: Overrides = {}): Promise<Uint8Array> {
    const blockHash = await this.blockHash(block);
    this.checkChainId(args);
    return this.run({ kind: 'call', blockHash, call: args.call, overrides });
  }

  /** The lowest gas limit at which the call succeeds (geth's search, see `estimate`). */
  async estimateGas(block: BlockSelector, args: CallArguments, overrides: Overrides = {}): Promise<bigint> {
    const blockHash = await this.blockHash(block);
    this.checkChainId(args);
    return this.run({ kind: 'estimateGas', blockHash, call: args.call, overrides });
  }

  /**
   * geth's eth_createAccessList, made for the transaction the wallet will send: the fees are geth's
   * transaction defaults (see transactionDefaults), so the sender must afford them.
   */
  async createAccessList(
    block: BlockSelector,
    args: CallArguments,
    overrides: { stateOverrides?: StateOverrides } = {},
  ): Promise<AccessListResult> {
    const blockHash = await this.blockHash(block);
    const header = await this.chain.header(blockHash);
    if (!header) throw new Error('block is indexed but its header is missing');
    const call = await this.transactionDefaults(args.call, header);
    this.checkChainId(args);
    return this.run({ kind: 'createAccessList', blockHash, call, overrides });
  }

  /**
   * geth's defaults for eth_sendTransaction (setDefaults) on the latest block: the fees of
   * transactionDefaults, then, when no gas is named, eth_estimateGas's answer with those fees. An
   * estimate that fails (a revert, too little balance) fails the send with its error, as in geth,
   * rather than mining a transaction bound to fail.
   */
  async sendDefaults(call: CallRequest): Promise<CallRequest & { gas: bigint }> {
    const blockHash = await this.blockHash({ kind: 'tag', tag: 'latest' });
    const header = await this.chain.header(blockHash);
    if (!header) throw new Error('block is indexed but its header is missing');
    const filled = await this.transactionDefaults(call, header);
    const gas =
      filled.gas ?? (await this.run({ kind: 'estimateGas', blockHash, call: filled, overrides: {} }));
    return { ...filled, gas };
  }

  private async blockHash(block: BlockSelector): Promise<Uint8Array> {
    return (await stateBlock(this.chain, block)).hash;
  }

  private checkChainId(args: CallArguments): void {
    const want = this.chain.chainId;
    if (args.chainId !== undefined && args.chainId !== want)
      throw new ServerError(`chainId does not match node's (have=${args.chainId}, want=${want})`);
  }

  /**
   * geth's defaults for a transaction to be sent (setFeeDefaults): the oracle's tip and twice the
   * block's base fee, or the oracle's price before London; twice the blob base fee for blob calls.
   */
  private async transactionDefaults(call: CallRequest, header: BlockHeader): Promise<CallRequest> {
    const out: CallRequest = { ...call };
    delete out.type;
    if (out.maxFeePerBlobGas === 0n)
      throw new ServerError('maxFeePerBlobGas, if specified, must be non-zero');
    if (out.blobVersionedHashes && out.maxFeePerBlobGas === undefined && header.excessBlobGas !== undefined)
      out.maxFeePerBlobGas = 2n * header.getBlobGasPrice();
    if (out.gasPrice !== undefined && out.authorizationList !== undefined)
      throw new ServerError('both gasPrice and authorizationList specified');
    if (
      out.gasPrice === undefined &&
      out.maxFeePerGas !== undefined &&
      out.maxPriorityFeePerGas !== undefined
    ) {
      if (out.maxFeePerGas === 0n) throw new ServerError('maxFeePerGas must be non-zero');
      checkFeeOrder(out.maxFeePerGas, out.maxPriorityFeePerGas);
      return out;
    }
    const london = header.baseFeePerGas !== undefined;
    if (out.gasPrice !== undefined) {
      if (out.gasPrice === 0n && london) throw new ServerError('gasPrice must be non-zero after london fork');
      return out;
    }
    if (!london) {
      if (out.maxFeePerGas !== undefined || out.maxPriorityFeePerGas !== undefined)
        throw new ServerError('maxFeePerGas and maxPriorityFeePerGas are not valid before London is active');
      out.gasPrice = await this.fees.suggestTipCap();
      return out;
    }
    out.maxPriorityFeePerGas ??= await this.fees.suggestTipCap();
    out.maxFeePerGas ??= out.maxPriorityFeePerGas + 2n * (header.baseFeePerGas ?? 0n);
    checkFeeOrder(out.maxFeePerGas, out.maxPriorityFeePerGas);
    return out;
  }
}

/** Runs one job on the chain's state (the EVM work of ExecutionService; see ExecutionRunner). */
export async function runExecution<J extends ExecutionJob>(
  chain: ChainService,
  limits: CallLimits,
  job: J,
): Promise<ExecutionAnswer<J>> {
  const header = await chain.header(job.blockHash);
  if (!header) throw new ServerError('block not found: the chain was rewound while it was read');
  const session = await CallSession.open(chain, header, { gasCap: limits.gasCap, ...job.overrides });
  try {
    const context = { chain, limits, header, session };
    const answer =
      job.kind === 'call'
        ? await call(context, job.call, job.overrides.blockOverrides)
        : job.kind === 'estimateGas'
          ? await estimate(context, job.call, job.overrides.blockOverrides)
          : await accessList(context, job.call);
    return answer as ExecutionAnswer<J>;
  } finally {
    session.close();
  }
}

interface Context {
  chain: ChainService;
  limits: CallLimits;
  header: BlockHeader;
  session: CallSession;
}

function gasLimit(call: CallRequest, limits: CallLimits): bigint {
  return call.gas === undefined || call.gas > limits.gasCap ? limits.gasCap : call.gas;
}

/** geth's eth_call: the output, or the failure as an error. */
async function call(
  { header, session, limits }: Context,
  args: CallRequest,
  env: BlockOverrides | undefined,
): Promise<Uint8Array> {
  const msg = callDefaults(args, header, env);
  const gas = gasLimit(msg, limits);
  let outcome: SimulatedCall;
  try {
    checkFees(msg, baseFeeOf(header, env));
    outcome = await session.simulate({ ...msg, gas }, 0, null, { chargeFees: true });
  } catch (e) {
    throw asCallError(e, (reason) => `err: ${reason} (supplied gas ${gas})`);
  }
  if (outcome.failed) throw failure(outcome);
  return outcome.output;
}

/**
 * geth's estimator (eth/gasestimator): the lowest gas limit at which the call succeeds, searched
 * between the gas the call uses and the most it may get (the block gas limit, or its own gas;
 * EIP-7825's cap from Osaka; what the sender's balance pays for; the gas cap). A call that fails
 * even with the most gas is an error: its revert, or "gas required exceeds allowance".
 */
async function estimate(
  { chain, header, session, limits }: Context,
  args: CallRequest,
  env: BlockOverrides | undefined,
): Promise<bigint> {
  const msg = callDefaults(args, header, env);
  const common = chain.commonAt(env?.number ?? header.number, env?.time ?? header.timestamp);
  const from = msg.from ?? ZERO_ADDRESS;
  const requested = msg.gas !== undefined && msg.gas > limits.gasCap ? limits.gasCap : msg.gas;
  let hi = requested !== undefined && requested >= TX_GAS ? requested : (env?.gasLimit ?? header.gasLimit);
  if (hi > MAX_TX_GAS && common.isActivatedEIP(7825)) hi = MAX_TX_GAS;
  const feeCap = msg.maxFeePerGas ?? msg.gasPrice ?? 0n;
  if (feeCap !== 0n) {
    let available = (await session.account(from)).balance;
    const value = msg.value ?? 0n;
    // geth's comparison: a call that would leave nothing for gas cannot be estimated.
    if (value >= available) throw new ServerError('insufficient funds for transfer');
    available -= value;
    const blobs = BigInt(msg.blobVersionedHashes?.length ?? 0);
    if (blobs > 0n && common.isActivatedEIP(4844)) {
      const blobCost = blobs * BLOB_GAS_PER_BLOB * (msg.maxFeePerBlobGas ?? 0n);
      if (blobCost >= available) throw new ServerError('insufficient funds for gas * price + value');
      available -= blobCost;
    }
    const allowance = available / feeCap;
    if (hi > allowance) hi = allowance;
  }
  if (hi > limits.gasCap) hi = limits.gasCap;
  const baseFee = baseFeeOf(header, env);

  /** One run at `gas`; validation errors other than too little gas end the estimate. */
  const execute = async (gas: bigint): Promise<SimulatedCall | 'intrinsic gas too low'> => {
    try {
      checkFees(msg, baseFee);
      return await session.simulate({ ...msg, gas }, 0, null, { chargeFees: true, isolated: true });
    } catch (e) {
      if (e instanceof CallValidationError && e.fault === 'intrinsic gas') return 'intrinsic gas too low';
      throw asCallError(e, (reason) => `failed with ${gas} gas: ${reason}`);
    }
  };
  const failed = (run: SimulatedCall | 'intrinsic gas too low') =>
    run === 'intrinsic gas too low' || run.failed;

  // A plain transfer most likely needs exactly 21000, but fields such as an access list can add to
  // it, so it is tried rather than assumed; any error here is left to the full run below.
  if ((msg.data?.length ?? 0) === 0 && msg.to && (await session.account(msg.to)).code.length === 0) {
    const transfer = await execute(TX_GAS).catch(() => null);
    if (transfer !== null && !failed(transfer)) return TX_GAS;
  }
  const first = await execute(hi);
  if (first === 'intrinsic gas too low' || first.failed) {
    if (first !== 'intrinsic gas too low' && exceptionOf(first) !== 'out of gas') throw failure(first);
    throw new ServerError(`gas required exceeds allowance (${hi})`);
  }
  // The gas used (after refunds) bounds the limit from below, except for calls that read gasleft().
  let lo = usedGas(first) - 1n;
  // Most calls succeed with what they used before refunds plus room for a stipend and for the 63/64
  // rule; trying that first usually ends the search at once.
  const optimistic = ((first.gasUsed + CALL_STIPEND) * 64n) / 63n;
  if (optimistic < hi) {
    if (failed(await execute(optimistic))) lo = optimistic;
    else hi = optimistic;
  }
  const ratio = limits.estimateGasErrorRatio;
  while (lo + 1n < hi) {
    if (ratio > 0 && Number(hi - lo) / Number(hi) < ratio) break;
    // Most calls need little more than they use: bisect towards the low end.
    let mid = lo + (hi - lo) / 2n;
    if (mid > lo * 2n) mid = lo * 2n;
    if (failed(await execute(mid))) lo = mid;
    else hi = mid;
  }
  return hi;
}

/**
 * geth's eth_createAccessList: the call runs recording the addresses and slots its opcodes touch
 * (less the sender, the recipient, precompiles and authorities), and re-runs with the list found
 * until the list no longer changes.
 */
async function accessList(
  { chain, header, session, limits }: Context,
  msg: CallRequest,
): Promise<AccessListResult> {
  const from = msg.from ?? ZERO_ADDRESS;
  const nonce = msg.nonce ?? (await session.account(from)).nonce;
  const gas = gasLimit(msg, limits);
  const common = chain.commonAt(header.number, header.timestamp);
  const to = msg.to ?? generateAddress(from, bigIntToBytes(nonce));
  const excluded = new Set([hexKey(from), hexKey(to), ...getActivePrecompiles(common).keys()]);
  const authorizations = msg.authorizationList ?? [];
  if (BigInt(authorizations.length) > gas / PER_AUTH_GAS)
    throw new ServerError('insufficient gas to process all authorizations');
  for (const auth of authorizations) {
    if ((auth.chainId !== 0n && auth.chainId !== chain.chainId) || auth.nonce >= MAX_UINT64) continue;
    const authority = recoverAuthority(auth);
    if (authority) excluded.add(hexKey(authority));
  }
  // Before Berlin a call has no access list to apply: the list is only recorded.
  const berlin = common.isActivatedEIP(2930);
  let previous = new AccessListRecorder(excluded, msg.accessList ?? []);
  for (let run = 0; run < limits.maxAccessListRuns; run++) {
    const list = previous.list();
    const recorder = new AccessListRecorder(excluded, list);
    const attempt: CallRequest = { ...msg, gas, nonce };
    if (berlin) attempt.accessList = list;
    else delete attempt.accessList;
    let outcome: SimulatedCall;
    try {
      outcome = await session.simulate(attempt, 0, null, {
        chargeFees: true,
        isolated: true,
        onStep: recorder.onStep,
      });
    } catch (e) {
      const hash = unsignedHash(attempt, chain.chainId, common);
      throw asCallError(e, (reason) => `failed to apply transaction: ${hash} err: ${reason}`);
    }
    if (recorder.equals(previous)) {
      const error = outcome.failed ? vmError(outcome) : undefined;
      return { accessList: list, gasUsed: usedGas(outcome), ...(error !== undefined ? { error } : {}) };
    }
    previous = recorder;
  }
  throw new ServerError(`access list did not settle after ${limits.maxAccessListRuns} runs of the call`);
}

/**
 * geth turns call arguments into a message, not a transaction: `type` plays no part, fees follow the
 * block (before London only `gasPrice` counts; after it, one EIP-1559 field given means the other is
 * 0) and no fee field at all means a price of 0.
 */
function callDefaults(call: CallRequest, header: BlockHeader, env: BlockOverrides | undefined): CallRequest {
  const out: CallRequest = { ...call };
  delete out.type;
  if (baseFeeOf(header, env) === undefined) {
    delete out.maxFeePerGas;
    delete out.maxPriorityFeePerGas;
  } else if (
    out.gasPrice === undefined &&
    (out.maxFeePerGas !== undefined || out.maxPriorityFeePerGas !== undefined)
  ) {
    out.maxFeePerGas ??= 0n;
    out.maxPriorityFeePerGas ??= 0n;
  }
  return out;
}

function baseFeeOf(header: BlockHeader, env: BlockOverrides | undefined): bigint | undefined {
  return header.baseFeePerGas === undefined ? undefined : (env?.baseFeePerGas ?? header.baseFeePerGas);
}

/**
 * geth's fee checks (preCheck), worded as geth words them; the executor has the same checks, this
 * runs first so eth_call says what geth says. A call with no price at all skips them.
 */
function checkFees(call: CallRequest, baseFee: bigint | undefined): void {
  if (baseFee === undefined) return;
  const feeCap = call.maxFeePerGas ?? call.gasPrice ?? 0n;
  const tip = call.maxPriorityFeePerGas ?? call.gasPrice ?? 0n;
  if (feeCap === 0n && tip === 0n) return;
  const from = toChecksumAddress(toHex(call.from ?? ZERO_ADDRESS));
  if (feeCap < tip) {
    throw new CallValidationError(
      0,
      `max priority fee per gas higher than max fee per gas: address ${from}, maxPriorityFeePerGas: ${tip}, maxFeePerGas: ${feeCap}`,
    );
  }
  // A price of 0 (fee cap 0) runs with a zero base fee, so only a non-zero cap can fall short.
  if (feeCap !== 0n && feeCap < baseFee) {
    throw new CallValidationError(
      0,
      `max fee per gas less than block base fee: address ${from}, maxFeePerGas: ${feeCap}, baseFee: ${baseFee}`,
    );
  }
}

function checkFeeOrder(maxFee: bigint, tip: bigint): void {
  if (maxFee < tip) {
    throw new ServerError(
      `maxFeePerGas (${quantityToHex(maxFee)}) < maxPriorityFeePerGas (${quantityToHex(tip)})`,
    );
  }
}

/** A call that failed validation, as the method words it (geth wraps these per method). */
function asCallError(e: unknown, word: (reason: string) => string): unknown {
  return e instanceof CallValidationError ? new ServerError(word(e.reason)) : e;
}

/** The error for a call that ran and failed: its revert, or the EVM's error in geth's words. */
function failure(outcome: SimulatedCall): RpcError {
  return exceptionOf(outcome) === 'revert'
    ? new ExecutionReverted(outcome.output)
    : new ServerError(vmError(outcome));
}

function exceptionOf(outcome: SimulatedCall): string | undefined {
  return outcome.result?.execResult.exceptionError?.error;
}

/** Gas used after refunds (and at least EIP-7623's floor): what a receipt would say. */
function usedGas(outcome: SimulatedCall): bigint {
  return outcome.result?.totalGasSpent ?? outcome.gasUsed;
}

// ethereumjs's EVM errors in geth's words (core/vm/errors.go). geth adds details ethereumjs does not
// keep (the opcode, the stack sizes); those messages are given without them.
const GETH_VM_ERRORS: ReadonlyMap<string, string> = new Map([
  ['out of gas', 'out of gas'],
  ['code store out of gas', 'contract creation code storage out of gas'],
  ['code size to deposit exceeds maximum code size', 'max code size exceeded'],
  ['initcode exceeds max initcode size', 'max initcode size exceeded'],
  ['stack underflow', 'stack underflow'],
  ['stack overflow', 'stack overflow'],
  ['invalid JUMP', 'invalid jump destination'],
  ['invalid opcode', 'invalid opcode'],
  ['revert', 'execution reverted'],
  ['static state change', 'write protection'],
  ['insufficient balance', 'insufficient balance for transfer'],
  ['create collision', 'contract address collision'],
  ['invalid bytecode deployed', 'invalid code: must not begin with 0xef'],
  ['return data out of bounds', 'return data out of bounds'],
  ['nonce overflow', 'nonce uint64 overflow'],
]);

function vmError(outcome: SimulatedCall): string {
  const error = exceptionOf(outcome);
  if (error === undefined) return 'execution failed';
  return GETH_VM_ERRORS.get(error) ?? error;
}

/** Unprefixed lowercase hex: the key ethereumjs uses for addresses (precompiles included). */
function hexKey(bytes: Uint8Array): string {
  return Buffer.from(bytes).toString('hex');
}

function word(value: bigint): Uint8Array {
  return setLengthLeft(bigIntToBytes(value), 32);
}

function recoverAuthority(auth: NonNullable<CallRequest['authorizationList']>[number]): Uint8Array | null {
  try {
    return eoaCode7702RecoverAuthority([
      bigIntToBytes(auth.chainId),
      auth.address,
      bigIntToBytes(auth.nonce),
      bigIntToBytes(auth.yParity),
      bigIntToBytes(auth.r),
      bigIntToBytes(auth.s),
    ]).bytes;
  } catch {
    return null;
  }
}

// The opcodes geth's access-list tracer watches.
const SLOAD = 0x54;
const SSTORE = 0x55;
const ADDRESS_OPERAND_OPS = new Set([0x31, 0x3b, 0x3c, 0x3f, 0xff]); // BALANCE, EXTCODE*, SELFDESTRUCT
const CALL_OPS = new Set([0xf1, 0xf2, 0xf4, 0xfa]); // CALL, CALLCODE, DELEGATECALL, STATICCALL

/**
 * geth's access-list tracer: the slots SLOAD/SSTORE name (for any contract, the recipient included)
 * and the addresses BALANCE, EXTCODE*, SELFDESTRUCT and the CALLs name (less the excluded ones), as
 * each opcode is about to run, whether or not it then succeeds.
 */
class AccessListRecorder {
  private readonly entries = new Map<string, Set<string>>();

  constructor(
    private readonly excluded: ReadonlySet<string>,
    initial: readonly AccessListEntry[],
  ) {
    for (const { address, storageKeys } of initial) {
      const key = hexKey(address);
      if (excluded.has(key)) continue;
      this.addAddress(key);
      for (const slot of storageKeys) this.entries.get(key)?.add(hexKey(slot));
    }
  }

  readonly onStep = (step: InterpreterStep): void => {
    const op = step.opcode.code;
    const stack = step.stack;
    const top = stack[stack.length - 1];
    if (top === undefined) return;
    if (op === SLOAD || op === SSTORE) {
      const key = hexKey(step.address.bytes);
      this.addAddress(key);
      this.entries.get(key)?.add(hexKey(word(top)));
    } else if (ADDRESS_OPERAND_OPS.has(op)) {
      this.addUnlessExcluded(top);
    } else if (CALL_OPS.has(op) && stack.length >= 5) {
      this.addUnlessExcluded(stack[stack.length - 2] ?? 0n);
    }
  };

  /** Addresses ascending, each with its slots ascending (geth's order). */
  list(): AccessListEntry[] {
    return [...this.entries.keys()].sort().map((address) => ({
      address: Buffer.from(address, 'hex'),
      storageKeys: [...(this.entries.get(address) ?? [])].sort().map((slot) => Buffer.from(slot, 'hex')),
    }));
  }

  equals(other: AccessListRecorder): boolean {
    if (this.entries.size !== other.entries.size) return false;
    for (const [address, slots] of this.entries) {
      const theirs = other.entries.get(address);
      if (!theirs || theirs.size !== slots.size) return false;
      for (const slot of slots) if (!theirs.has(slot)) return false;
    }
    return true;
  }

  private addUnlessExcluded(value: bigint): void {
    const key = hexKey(setLengthLeft(bigIntToBytes(value & ((1n << 160n) - 1n)), 20));
    if (!this.excluded.has(key)) this.addAddress(key);
  }

  private addAddress(key: string): void {
    if (!this.entries.has(key)) this.entries.set(key, new Set());
  }
}

/**
 * The hash geth names in createAccessList's failures: of the unsigned transaction its arguments make
 * (geth's ToTransaction: the newest type the fields need, legacy when a gas price is given).
 */
function unsignedHash(call: CallRequest, chainId: bigint, common: Common): string {
  const type = call.authorizationList
    ? 4
    : call.blobVersionedHashes
      ? 3
      : call.maxFeePerGas !== undefined
        ? 2
        : call.accessList
          ? 1
          : 0;
  const data: Record<string, unknown> = {
    type: call.gasPrice !== undefined ? 0 : type,
    nonce: call.nonce ?? 0n,
    gasLimit: call.gas ?? 0n,
    to: call.to ?? undefined,
    value: call.value ?? 0n,
    data: call.data ?? new Uint8Array(),
    chainId,
    gasPrice: call.gasPrice,
    maxFeePerGas: call.maxFeePerGas,
    maxPriorityFeePerGas: call.maxPriorityFeePerGas,
    accessList: (call.accessList ?? []).map((e) => [e.address, e.storageKeys]),
    maxFeePerBlobGas: call.maxFeePerBlobGas,
    blobVersionedHashes: call.blobVersionedHashes,
    authorizationList: (call.authorizationList ?? []).map((a) => [
      bigIntToBytes(a.chainId),
      a.address,
      bigIntToBytes(a.nonce),
      bigIntToBytes(a.yParity),
      bigIntToBytes(a.r),
      bigIntToBytes(a.s),
    ]),
  };
  try {
    return toHex(keccak256(createTx(data as Parameters<typeof createTx>[0], { common }).serialize()));
  } catch {
    return toHex(new Uint8Array(32));
  }
}
