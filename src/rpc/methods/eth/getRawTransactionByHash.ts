import { toHex } from '../../../primitives/hex.ts';
import { hash, required } from '../../params.ts';
import { method } from '../define.ts';

/** The transaction's canonical encoding, sliced from the stored body: nothing is decoded. */
export const eth_getRawTransactionByHash = method([required(hash)], async ([txHash], { services }) => {
  const location = await services.chain.store.getTxLocation(txHash);
  const raw = location && (await services.chain.rawTransaction(location.blockHash, location.index));
  return raw && toHex(raw);
});
