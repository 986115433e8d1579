import { quantityToHex } from '../../../primitives/hex.ts';
import { method } from '../define.ts';

export const eth_chainId = method([], (_args, { services }) => quantityToHex(services.chain.chainId));
