import { blockSelector, required } from '../../params.ts';
import { RawJson } from '../../rawJson.ts';
import { method } from '../define.ts';

/** Receipts were rendered at import: this is one lookup and the stored text as it is. */
export const eth_getBlockReceipts = method([required(blockSelector)], async ([block], { services }) => {
  const ref = await services.chain.resolve(block);
  if (!ref) return null;
  const json = await services.chain.store.getBlockReceiptsJson(ref.hash);
  return json === null ? null : new RawJson(json);
});
