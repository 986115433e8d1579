import { toHex } from '../../../primitives/hex.ts';
import { callObject } from '../../callObject.ts';
import { required } from '../../params.ts';
import { method } from '../define.ts';
import { devChain } from './params.ts';

/**
 * Signed with the dev account named in `from`, then mined as eth_sendTransaction. Fees and gas
 * not named are filled in as geth fills them (ExecutionService.sendDefaults): the gas is estimated,
 * and a failing estimate is the answer.
 */
export const eth_sendTransaction = method([required(callObject)], async ([call], { services }) => {
  const dev = devChain(services);
  dev.signer(call.from);
  return toHex(await dev.sendTransaction(await services.execution.sendDefaults(call)));
});
