import type { BlockOverrides, CallRequest } from '../../core/call.ts';
import { RequestFailed } from '../../core/errors.ts';
import { BLOB_GAS_PER_BLOB } from '../../primitives/fees.ts';
import { CallValidationError } from '../callValidation.ts';
import { callMessage } from '../message.ts';
import type { SimulatedCall } from '../sessionTypes.ts';
import type { CallContext } from './context.ts';
import { asCallError, failure, failureOf, usedGas } from './outcome.ts';

// params.TxGas: a plain transfer; below it no call is valid, so geth reads a smaller gas as "none".
const TX_GAS = 21_000n;
// EIP-7825's cap on one transaction's gas, which geth's estimate honours from Osaka on.
const MAX_TX_GAS = 1n << 24n;
// The stipend a value-carrying CALL adds, which the optimistic first guess leaves room for (geth).
const CALL_STIPEND = 2_300n;
const ZERO_ADDRESS = new Uint8Array(20);

/**
 * geth's estimator (eth/gasestimator): the lowest gas limit at which the call succeeds, searched
 * between the gas the call uses and the most it may get (the block gas limit, or its own gas;
 * EIP-7825's cap from Osaka; what the sender's balance pays for; the gas cap). A call that fails
 * even with the most gas is an error: its revert, or "gas required exceeds allowance".
 */
export async function estimateGas(
  { chain, header, session, limits }: CallContext,
  args: CallRequest,
  env: BlockOverrides | undefined,
): Promise<bigint> {
  const msg = callMessage(args, session.baseFee, limits.gasCap, 'geth');
  const common = chain.commonAt(env?.number ?? header.number, env?.time ?? header.timestamp);
  const from = msg.from ?? ZERO_ADDRESS;
  const requested = args.gas === undefined ? undefined : msg.gas;
  let hi = requested !== undefined && requested >= TX_GAS ? requested : (env?.gasLimit ?? header.gasLimit);
  if (hi > MAX_TX_GAS && common.isActivatedEIP(7825)) hi = MAX_TX_GAS;
  const feeCap = msg.maxFeePerGas ?? msg.gasPrice ?? 0n;
  if (feeCap !== 0n) {
    let available = (await session.account(from)).balance;
    const value = msg.value ?? 0n;
    // geth's comparison: a call that would leave nothing for gas cannot be estimated.
    if (value >= available) throw new RequestFailed('insufficient funds for transfer');
    available -= value;
    const blobs = BigInt(msg.blobVersionedHashes?.length ?? 0);
    if (blobs > 0n && common.isActivatedEIP(4844)) {
      const blobCost = blobs * BLOB_GAS_PER_BLOB * (msg.maxFeePerBlobGas ?? 0n);
      if (blobCost >= available) throw new RequestFailed('insufficient funds for gas * price + value');
      available -= blobCost;
    }
    const allowance = available / feeCap;
    if (hi > allowance) hi = allowance;
  }
  if (hi > limits.gasCap) hi = limits.gasCap;

  /** One run at `gas`; validation errors other than too little gas end the estimate. */
  const execute = async (gas: bigint): Promise<SimulatedCall | 'intrinsic gas too low'> => {
    try {
      return await session.simulate({ ...msg, gas }, 0, null, { dialect: 'geth', isolated: true });
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
    if (first !== 'intrinsic gas too low' && failureOf(first) !== 'out of gas') throw failure(first);
    throw new RequestFailed(`gas required exceeds allowance (${hi})`);
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
