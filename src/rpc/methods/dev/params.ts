import { ServerError } from '../../errors.ts';
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

/** The dev chain's service, or the read-only error on an imported chain. */
export function devChain(services: Services) {
  if (!services.dev) throw new ServerError(READ_ONLY);
  return services.dev;
}
