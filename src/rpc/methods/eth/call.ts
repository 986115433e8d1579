import { toHex } from '../../../primitives/hex.ts';
import type { CallArguments } from '../../../services/execution.ts';
import { blockOverrides, callObject, stateOverrides } from '../../callObject.ts';
import { blockSelector, field, LATEST, optional, quantity, required } from '../../params.ts';
import { method } from '../define.ts';

/** The call object of eth_call and its kin; `chainId`, when given, must be the chain's (geth). */
export function callArguments(value: unknown): CallArguments {
  const call = callObject(value);
  const chainId = (value as Record<string, unknown>).chainId;
  if (chainId === undefined || chainId === null) return { call };
  return { call, chainId: field('chainId', () => quantity(chainId)) };
}

/** geth's eth_call: the output, or a revert as error code 3 with the revert data. */
export const eth_call = method(
  [required(callArguments), optional(blockSelector), optional(stateOverrides), optional(blockOverrides)],
  async ([args, block, state, env], { services }) =>
    toHex(
      await services.execution.call(block ?? LATEST, args, {
        ...(state ? { stateOverrides: state } : {}),
        ...(env ? { blockOverrides: env } : {}),
      }),
    ),
);
