import type { CallRequest } from '../../core/call.ts';
import { clampGas } from '../message.ts';
import type { SimulatedCall } from '../sessionTypes.ts';
import type { CallContext } from './context.ts';
import { asCallError, failure } from './outcome.ts';

/** geth's eth_call: the output, or the failure as an error. */
export async function ethCall({ session, limits }: CallContext, args: CallRequest): Promise<Uint8Array> {
  const gas = clampGas(args.gas, limits.gasCap);
  let outcome: SimulatedCall;
  try {
    outcome = await session.simulate({ ...args, gas }, 0, null, { dialect: 'geth' });
  } catch (e) {
    throw asCallError(e, (reason) => `err: ${reason} (supplied gas ${gas})`);
  }
  if (outcome.failed) throw failure(outcome);
  return outcome.output;
}
