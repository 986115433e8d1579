import { toHex } from '../../../primitives/hex.ts';
import { required } from '../../params.ts';
import { method } from '../define.ts';
import { debugBlockSelector } from './blockParam.ts';

export const debug_getRawBlock = method([required(debugBlockSelector)], async ([selector], { services }) => {
  const ref = await services.chain.resolve(selector);
  const rlp = ref && (await services.chain.rawBlock(ref.hash));
  return rlp && toHex(rlp);
});
