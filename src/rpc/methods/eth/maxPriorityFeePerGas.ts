import { quantityToHex } from '../../../primitives/hex.ts';
import { method } from '../define.ts';

/** The oracle's tip (see FeeService.suggestTipCap): recent blocks' lowest tips, 60th percentile. */
export const eth_maxPriorityFeePerGas = method([], async (_args, { services }) =>
  quantityToHex(await services.fees.suggestTipCap()),
);
