import { quantityToHex } from '../../../primitives/hex.ts';
import { method } from '../define.ts';

/** A legacy gas price: the oracle's tip on top of the head's base fee, as geth answers. */
export const eth_gasPrice = method([], async (_args, { services }) => {
  const tip = await services.fees.suggestTipCap();
  const head = await services.chain.header((await services.chain.head()).hash);
  return quantityToHex(tip + (head?.baseFeePerGas ?? 0n));
});
