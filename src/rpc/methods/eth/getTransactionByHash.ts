import { formatTransaction, txPosition } from '../../format/transaction.ts';
import { hash, required } from '../../params.ts';
import { method } from '../define.ts';

export const eth_getTransactionByHash = method([required(hash)], async ([txHash], { services }) => {
  const location = await services.chain.store.getTxLocation(txHash);
  const found = location && (await services.chain.transaction(location.blockHash, location.index));
  return found && formatTransaction(found.tx, txPosition(found.header, location.index));
});
