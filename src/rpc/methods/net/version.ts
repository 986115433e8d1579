import { method } from '../define.ts';

/** The network id; like geth on chains it made from a genesis file, the chain id in decimal. */
export const net_version = method([], (_args, { services }) => services.chain.chainId.toString());
