import { quantityToHex } from '../../../primitives/hex.ts';
import { required } from '../../params.ts';
import { method } from '../define.ts';
import { devChain, number } from './params.ts';

/** An id for the chain as it is now, for evm_revert ("0x1", "0x2", … as anvil answers). */
export const evm_snapshot = method([], async (_args, { services }) =>
  quantityToHex(await devChain(services).snapshot()),
);

/** Back to a snapshot, removing the blocks mined since; false for an unknown or used-up id. */
export const evm_revert = method([required(number)], ([id], { services }) => devChain(services).revert(id));
