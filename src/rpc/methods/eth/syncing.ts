import { method } from '../define.ts';

/** The service serves what it has stored; it is never "catching up" from a client's point of view. */
export const eth_syncing = method([], () => false);
