import { toHex } from '../../../primitives/hex.ts';
import { callObject } from '../../callObject.ts';
import { ServerError } from '../../errors.ts';
import { required } from '../../params.ts';
import { method } from '../define.ts';
import { READ_ONLY } from './sendRawTransaction.ts';

/** Signed with the dev account named in `from`, then mined as eth_sendRawTransaction. */
export const eth_sendTransaction = method([required(callObject)], async ([call], { services }) => {
  if (!services.dev) throw new ServerError(READ_ONLY);
  return toHex(await services.dev.sendTransaction(call));
});
