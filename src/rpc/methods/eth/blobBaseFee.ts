import { quantityToHex } from '../../../primitives/hex.ts';
import { method } from '../define.ts';

/**
 * Blob base fee of the block after the head, the price a blob transaction sent now pays (reth's
 * answer; geth gives the head's own, which differs only when blob usage moves the excess). Null
 * before Cancun.
 */
export const eth_blobBaseFee = method([], async (_args, { services }) => {
  const head = await services.chain.header((await services.chain.head()).hash);
  const fee = head && services.fees.nextBlobBaseFee(head);
  return fee === null ? null : quantityToHex(fee);
});
