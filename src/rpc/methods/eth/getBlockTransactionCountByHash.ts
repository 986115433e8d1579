import { quantityToHex } from '../../../primitives/hex.ts';
import { hash, required } from '../../params.ts';
import { method } from '../define.ts';

export const eth_getBlockTransactionCountByHash = method(
  [required(hash)],
  async ([blockHash], { services }) => {
    const count = await services.chain.transactionCount(blockHash);
    return count === null ? null : quantityToHex(count);
  },
);
