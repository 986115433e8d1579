import { formatTransaction, txPosition } from '../../../wire/transaction.ts';
import { hash, required } from '../../params.ts';
import { method } from '../define.ts';

/** A mined transaction, or on a dev chain one still in the pool (its block fields null, as geth's). */
export const eth_getTransactionByHash = method([required(hash)], async ([txHash], { services }) => {
  const location = await services.chain.store.getTxLocation(txHash);
  const found = location && (await services.chain.transaction(location.blockHash, location.index));
  if (found) return formatTransaction(found.tx, txPosition(found.header, location.index));
  const pooled = services.dev?.pooledTransaction(txHash);
  return pooled ? formatTransaction(pooled, null) : null;
});
