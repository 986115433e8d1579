import { quantityToHex } from '../../../primitives/hex.ts';
import { method } from '../define.ts';

/**
 * false, as geth answers once in sync, for a chain served as it is stored (imported, dev, an
 * upstream's); while `--follow` catches up with its upstream, geth's progress object, its blocks as
 * hex quantities.
 */
export const eth_syncing = method([], (_args, { services }) => {
  const progress = services.syncing();
  if (progress === null) return false;
  return {
    startingBlock: quantityToHex(progress.startingBlock),
    currentBlock: quantityToHex(progress.currentBlock),
    highestBlock: quantityToHex(progress.highestBlock),
  };
});
