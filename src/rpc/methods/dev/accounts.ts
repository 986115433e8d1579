import { toHex } from '../../../primitives/hex.ts';
import { method } from '../define.ts';

/** The dev accounts (none on an imported chain, like a node without unlocked accounts). */
export const eth_accounts = method([], (_args, { services }) =>
  (services.dev?.accounts ?? []).map((a) => toHex(a.address)),
);
