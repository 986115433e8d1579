import { traceTypes } from '../../callObject.ts';
import { blockSelector, required } from '../../params.ts';
import { method } from '../define.ts';

/** Every transaction of a block re-executed and traced; null for an unknown block. */
export const trace_replayBlockTransactions = method(
  [required(blockSelector), required(traceTypes)],
  ([block, types], { services }) => services.replay.replayBlockTransactions(block, types),
);
