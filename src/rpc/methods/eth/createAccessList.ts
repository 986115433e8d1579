import { quantityToHex, toHex } from '../../../primitives/hex.ts';
import { stateOverrides } from '../../callObject.ts';
import { blockSelector, LATEST, optional, required } from '../../params.ts';
import { method } from '../define.ts';
import { callArguments } from './call.ts';

/** geth's eth_createAccessList: `{accessList, gasUsed}`, plus `error` when the call fails with it. */
export const eth_createAccessList = method(
  [required(callArguments), optional(blockSelector), optional(stateOverrides)],
  async ([args, block, state], { services }) => {
    const result = await services.execution.createAccessList(
      block ?? LATEST,
      args,
      state ? { stateOverrides: state } : {},
    );
    return {
      accessList: result.accessList.map(({ address, storageKeys }) => ({
        address: toHex(address),
        storageKeys: storageKeys.map(toHex),
      })),
      ...(result.error !== undefined ? { error: result.error } : {}),
      gasUsed: quantityToHex(result.gasUsed),
    };
  },
);
