import { checkCallCount } from '../../bundles.ts';
import {
  address,
  blockSelector,
  data,
  field,
  ParamProblem,
  quantity,
  required,
  uint64,
} from '../../params.ts';
import { method } from '../define.ts';

/** A number given either as a JSON integer (Flashbots' docs) or as a hex quantity (Reth). */
function number(value: unknown): bigint {
  if (typeof value === 'number') {
    if (!Number.isSafeInteger(value) || value < 0) throw new ParamProblem(`invalid number ${value}`);
    return BigInt(value);
  }
  return uint64(value);
}

function given(o: Record<string, unknown>, name: string): boolean {
  return o[name] !== undefined && o[name] !== null;
}

/** Flashbots' (and Reth's) eth_callBundle object. */
function callBundleArgs(value: unknown) {
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw new ParamProblem('expected a bundle object {txs, blockNumber, stateBlockNumber, …}');
  const o = value as Record<string, unknown>;
  if (!Array.isArray(o.txs)) throw new ParamProblem('txs: expected an array of signed transactions');
  if (o.txs.length === 0) throw new ParamProblem('bundle missing txs');
  const txs = o.txs.map((tx, i) => field(`txs[${i}]`, () => data(tx)));
  if (!given(o, 'blockNumber')) throw new ParamProblem('bundle missing blockNumber');
  const blockNumber = field('blockNumber', () => number(o.blockNumber));
  if (blockNumber === 0n) throw new ParamProblem('bundle missing blockNumber');
  if (!given(o, 'stateBlockNumber')) throw new ParamProblem('stateBlockNumber: required');
  return {
    txs,
    blockNumber,
    stateBlock: field('stateBlockNumber', () => blockSelector(o.stateBlockNumber)),
    ...(given(o, 'timestamp') ? { timestamp: field('timestamp', () => number(o.timestamp)) } : {}),
    ...(given(o, 'coinbase') ? { coinbase: field('coinbase', () => address(o.coinbase)) } : {}),
    ...(given(o, 'gasLimit') ? { gasLimit: field('gasLimit', () => number(o.gasLimit)) } : {}),
    ...(given(o, 'difficulty') ? { difficulty: field('difficulty', () => quantity(o.difficulty)) } : {}),
    ...(given(o, 'baseFee') ? { baseFee: field('baseFee', () => quantity(o.baseFee)) } : {}),
    ...(given(o, 'timeout') ? { timeoutMs: Number(field('timeout', () => number(o.timeout))) } : {}),
  };
}

/**
 * Flashbots' eth_callBundle (Reth's EthBundle): signed transactions simulated at the top of a later
 * block on the state after `stateBlockNumber`, with what each paid the coinbase.
 */
export const eth_callBundle = method([required(callBundleArgs)], async ([args], { services }) => {
  checkCallCount(args.txs.length, services.trace.limits.maxCalls);
  const { stateBlock, timeoutMs, ...bundle } = args;
  return services.execution.callBundle(stateBlock, bundle, timeoutMs);
});
