import { formatBlock } from '../../../wire/block.ts';
import { blockSelector, bool, required } from '../../params.ts';
import { method } from '../define.ts';

export const eth_getBlockByNumber = method(
  [required(blockSelector), required(bool)],
  async ([selector, fullTransactions], { services }) => {
    const ref = await services.chain.resolve(selector);
    if (!ref) return null;
    const [block, size] = await Promise.all([
      services.chain.block(ref.hash),
      services.chain.blockSize(ref.hash),
    ]);
    return block && size !== null ? formatBlock(block, size, fullTransactions) : null;
  },
);
