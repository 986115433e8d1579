import { blockSelector, required } from '../../params.ts';
import { method } from '../define.ts';

/** The flat trace entries of a block's transactions, then its rewards; null for an unknown block. */
export const trace_block = method([required(blockSelector)], ([block], { services }) =>
  services.replay.block(block),
);
