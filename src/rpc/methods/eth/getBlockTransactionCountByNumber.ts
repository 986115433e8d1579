import { quantityToHex } from '../../../primitives/hex.ts';
import { blockSelector, required } from '../../params.ts';
import { method } from '../define.ts';

export const eth_getBlockTransactionCountByNumber = method(
  [required(blockSelector)],
  async ([selector], { services }) => {
    const ref = await services.chain.resolve(selector);
    const count = ref && (await services.chain.transactionCount(ref.hash));
    return count === null ? null : quantityToHex(count);
  },
);
