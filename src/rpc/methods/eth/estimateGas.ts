import { quantityToHex } from '../../../primitives/hex.ts';
import { blockOverrides, stateOverrides } from '../../callObject.ts';
import { blockSelector, LATEST, optional, required } from '../../params.ts';
import { method } from '../define.ts';
import { callArguments } from './call.ts';

/** geth's eth_estimateGas: the lowest gas limit that lets the call succeed (geth's search). */
export const eth_estimateGas = method(
  [required(callArguments), optional(blockSelector), optional(stateOverrides), optional(blockOverrides)],
  async ([args, block, state, env], { services }) =>
    quantityToHex(
      await services.execution.estimateGas(block ?? LATEST, args, {
        ...(state ? { stateOverrides: state } : {}),
        ...(env ? { blockOverrides: env } : {}),
      }),
    ),
);
