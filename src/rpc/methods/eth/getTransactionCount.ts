import { quantityToHex } from '../../../primitives/hex.ts';
import { address, blockSelector, LATEST, optional, required } from '../../params.ts';
import { method } from '../define.ts';

/**
 * The account nonce. `pending` on a dev chain also counts the sender's transactions waiting in the
 * pool (so a wallet can send several before the next block); elsewhere it is the head's.
 */
export const eth_getTransactionCount = method(
  [required(address), optional(blockSelector)],
  async ([who, block], { services }) => {
    if (block?.kind === 'tag' && block.tag === 'pending' && services.dev) {
      return quantityToHex(await services.dev.pendingNonce(who));
    }
    const { number } = await services.chain.stateBlock(block ?? LATEST);
    const account = await services.state.account(who, number);
    return quantityToHex(account?.nonce ?? 0n);
  },
);
