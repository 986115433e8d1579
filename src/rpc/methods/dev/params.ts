import { RequestFailed } from '../../../core/errors.ts';
import { ParamProblem, quantity } from '../../params.ts';
import type { Services } from '../../services.ts';
import { READ_ONLY } from './sendRawTransaction.ts';

/** A count or a time: dev tools send JSON integers as often as hex quantities. */
export function number(value: unknown): bigint {
  if (typeof value === 'number') {
    if (!Number.isSafeInteger(value) || value < 0) throw new ParamProblem(`invalid number ${value}`);
    return BigInt(value);
  }
  return quantity(value);
}

// EIP-2681: an account's nonce is a uint64.
const MAX_NONCE = (1n << 64n) - 1n;
// A balance is one EVM word.
const MAX_BALANCE = (1n << 256n) - 1n;

/** anvil_setNonce's nonce: a quantity that fits a uint64 (EIP-2681). */
export function nonce(value: unknown): bigint {
  const n = number(value);
  if (n > MAX_NONCE) throw new ParamProblem('nonce must be at most 2^64-1 (EIP-2681)');
  return n;
}

/** anvil_setBalance's balance: a quantity that fits a uint256. */
export function balance(value: unknown): bigint {
  const n = number(value);
  if (n > MAX_BALANCE) throw new ParamProblem('balance must be at most 2^256-1');
  return n;
}

/** The dev chain's service, or the read-only error on an imported chain. */
export function devChain(services: Services) {
  if (!services.dev) throw new RequestFailed(READ_ONLY);
  return services.dev;
}
