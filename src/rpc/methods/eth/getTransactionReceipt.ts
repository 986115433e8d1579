import { RawJson } from '../../../core/rawJson.ts';
import { hash, required } from '../../params.ts';
import { method } from '../define.ts';

/** The receipt JSON rendered at import, served as stored: one index lookup and one read. */
export const eth_getTransactionReceipt = method([required(hash)], async ([txHash], { services }) => {
  const { store } = services.chain;
  const location = await store.getTxLocation(txHash);
  const json = location && (await store.getReceiptJson(location.blockHash, location.index));
  return json ? new RawJson(json) : null;
});
