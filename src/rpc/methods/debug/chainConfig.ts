import { method } from '../define.ts';

/**
 * geth's debug_chainConfig: the chain's fork schedule as geth's genesis config holds it. Another
 * ethtrace reading this one as its upstream learns the rules of the chain from it.
 */
export const debug_chainConfig = method([], (_args, { services }) => services.chain.spec.json.config);
