import { quantityToHex } from '../../../primitives/hex.ts';
import { method } from '../define.ts';

/** Base fee of the block after the head; null while the next block is before London (geth's answer). */
export const eth_baseFee = method([], async (_args, { services }) => {
  const head = await services.chain.header((await services.chain.head()).hash);
  const fee = head && services.fees.nextBaseFee(head);
  return fee === null ? null : quantityToHex(fee);
});
