import { quantityToHex } from '../../../primitives/hex.ts';
import { MAX_REWARD_PERCENTILES } from '../../../services/fees.ts';
import { blockSelector, optional, ParamProblem, quoted, required } from '../../params.ts';
import { method } from '../define.ts';

/** geth's HexOrDecimal64: a hex or decimal string, or a JSON integer. */
function blockCount(value: unknown): number {
  let n: bigint | undefined;
  if (typeof value === 'number' && Number.isSafeInteger(value) && value >= 0) n = BigInt(value);
  if (typeof value === 'string' && /^(0[xX][0-9a-fA-F]{1,16}|[0-9]{1,20})$/.test(value)) n = BigInt(value);
  if (n === undefined || n >= 2n ** 64n) {
    throw new ParamProblem(`invalid block count ${quoted(value)}: want a hex or decimal integer`);
  }
  return n > BigInt(Number.MAX_SAFE_INTEGER) ? Number.MAX_SAFE_INTEGER : Number(n);
}

/** Percentiles between 0 and 100, strictly increasing, at most geth's 100 of them. */
function rewardPercentiles(value: unknown): number[] {
  if (!Array.isArray(value)) throw new ParamProblem('reward percentiles must be an array of numbers');
  if (value.length > MAX_REWARD_PERCENTILES) {
    throw new ParamProblem(`invalid reward percentile: over the query limit ${MAX_REWARD_PERCENTILES}`);
  }
  value.forEach((p, i) => {
    if (typeof p !== 'number' || p < 0 || p > 100) {
      throw new ParamProblem(`invalid reward percentile: ${quoted(p)}`);
    }
    const previous = value[i - 1] as number | undefined;
    if (previous !== undefined && p <= previous) {
      throw new ParamProblem(`invalid reward percentile: #${i - 1}:${previous} >= #${i}:${p}`);
    }
  });
  return value as number[];
}

/**
 * geth's answer: base fees (and blob base fees) of each block plus the next one, gas-used ratios, and
 * per-block tips at the asked percentiles weighted by gas used. Keys in geth's order; `reward` only
 * when percentiles were given.
 */
export const eth_feeHistory = method(
  [required(blockCount), required(blockSelector), optional(rewardPercentiles)],
  async ([count, newest, percentiles], { services }) => {
    const h = await services.fees.feeHistory(count, newest, percentiles, services.limits.maxFeeHistoryBlocks);
    return {
      oldestBlock: quantityToHex(h.oldestBlock),
      ...(h.reward && { reward: h.reward.map((row) => row.map(quantityToHex)) }),
      baseFeePerGas: h.baseFeePerGas.map(quantityToHex),
      gasUsedRatio: h.gasUsedRatio,
      baseFeePerBlobGas: h.baseFeePerBlobGas.map(quantityToHex),
      blobGasUsedRatio: h.blobGasUsedRatio,
    };
  },
);
