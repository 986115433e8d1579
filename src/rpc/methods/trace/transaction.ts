import { hash, required } from '../../params.ts';
import { method } from '../define.ts';

/** The flat trace entries of one mined transaction; null for an unknown hash. */
export const trace_transaction = method([required(hash)], ([tx], { services }) =>
  services.replay.transaction(tx),
);
