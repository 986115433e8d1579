import { quantityToHex } from '../../../primitives/hex.ts';
import { address, blockSelector, LATEST, optional, required } from '../../params.ts';
import { method } from '../define.ts';

export const eth_getBalance = method(
  [required(address), optional(blockSelector)],
  async ([who, block], { services }) => {
    const { number } = await services.chain.stateBlock(block ?? LATEST);
    const account = await services.state.account(who, number);
    return quantityToHex(account?.balance ?? 0n);
  },
);
