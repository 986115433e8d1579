import { toHex } from '../../../primitives/hex.ts';
import { address, blockSelector, LATEST, optional, required } from '../../params.ts';
import { method } from '../define.ts';

/** Code as stored, so an EIP-7702 account answers its delegation designator, as geth does. */
export const eth_getCode = method(
  [required(address), optional(blockSelector)],
  async ([who, block], { services }) => {
    const { number } = await services.chain.stateBlock(block ?? LATEST);
    return toHex(await services.state.code(who, number));
  },
);
