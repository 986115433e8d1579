import { eth_getRawTransactionByHash } from '../eth/getRawTransactionByHash.ts';

/** geth serves both names from the same code: the canonical encoding, or null for an unknown hash. */
export const debug_getRawTransaction = eth_getRawTransactionByHash;
