import { RequestFailed } from '../../../core/errors.ts';
import { toHex } from '../../../primitives/hex.ts';
import { data, required } from '../../params.ts';
import { method } from '../define.ts';

export const READ_ONLY =
  'this chain was imported and is read-only: sending transactions needs a dev chain (ethtrace start on an empty datadir)';

/** Checked like a node checks it, then mined into its own block; answers the transaction hash. */
export const eth_sendRawTransaction = method([required(data)], async ([raw], { services }) => {
  if (!services.dev) throw new RequestFailed(READ_ONLY);
  return toHex(await services.dev.sendRawTransaction(raw));
});
