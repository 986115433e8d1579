import { quantityToHex } from '../../../primitives/hex.ts';
import { method } from '../define.ts';

export const eth_blockNumber = method([], async (_args, { services }) =>
  quantityToHex((await services.chain.head()).number),
);
