import { RawJson } from '../../../core/rawJson.ts';
import { blockSelector, required } from '../../params.ts';
import { method } from '../define.ts';

/** Receipts were rendered at import: this is a lookup (often in memory) and the stored bytes as they are. */
export const eth_getBlockReceipts = method([required(blockSelector)], async ([block], { services }) => {
  const ref = await services.chain.resolve(block);
  if (!ref) return null;
  const json = await services.chain.blockReceiptsJson(ref.hash);
  return json === null ? null : new RawJson(json);
});
