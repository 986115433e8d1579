import { toHex } from '../../../primitives/hex.ts';
import { required } from '../../params.ts';
import { method } from '../define.ts';
import { debugBlockSelector } from './blockParam.ts';

/** The header's consensus RLP exactly as stored. */
export const debug_getRawHeader = method([required(debugBlockSelector)], async ([selector], { services }) => {
  const ref = await services.chain.resolve(selector);
  const rlp = ref && (await services.chain.store.getHeader(ref.hash));
  return rlp && toHex(rlp);
});
