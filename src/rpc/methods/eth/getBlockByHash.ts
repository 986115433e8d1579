import { formatBlock } from '../../../wire/block.ts';
import { bool, hash, required } from '../../params.ts';
import { method } from '../define.ts';

export const eth_getBlockByHash = method(
  [required(hash), required(bool)],
  async ([blockHash, fullTransactions], { services }) => {
    const [block, size] = await Promise.all([
      services.chain.block(blockHash),
      services.chain.blockSize(blockHash),
    ]);
    return block && size !== null ? formatBlock(block, size, fullTransactions) : null;
  },
);
