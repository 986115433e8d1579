import { toHex } from '../../../primitives/hex.ts';
import { required } from '../../params.ts';
import { method } from '../define.ts';
import { debugBlockSelector } from './blockParam.ts';

/** The consensus encodings stored at import (typed receipts with their type byte), one per transaction. */
export const debug_getRawReceipts = method(
  [required(debugBlockSelector)],
  async ([selector], { services }) => {
    const ref = await services.chain.resolve(selector);
    const receipts = ref && (await services.chain.store.getReceipts(ref.hash));
    return receipts ? receipts.map(toHex) : null;
  },
);
