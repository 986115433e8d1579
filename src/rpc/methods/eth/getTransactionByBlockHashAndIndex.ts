import { formatTransaction, txPosition } from '../../../wire/transaction.ts';
import { hash, required, smallQuantity } from '../../params.ts';
import { method } from '../define.ts';

export const eth_getTransactionByBlockHashAndIndex = method(
  [required(hash), required(smallQuantity)],
  async ([blockHash, index], { services }) => {
    const found = await services.chain.transaction(blockHash, index);
    return found && formatTransaction(found.tx, txPosition(found.header, index));
  },
);
