import { formatTransaction, txPosition } from '../../../wire/transaction.ts';
import { blockSelector, required, smallQuantity } from '../../params.ts';
import { method } from '../define.ts';

export const eth_getTransactionByBlockNumberAndIndex = method(
  [required(blockSelector), required(smallQuantity)],
  async ([selector, index], { services }) => {
    const ref = await services.chain.resolve(selector);
    const found = ref && (await services.chain.transaction(ref.hash, index));
    return found && formatTransaction(found.tx, txPosition(found.header, index));
  },
);
