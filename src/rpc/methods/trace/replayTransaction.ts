import { traceTypes } from '../../callObject.ts';
import { hash, required } from '../../params.ts';
import { method } from '../define.ts';

/** One mined transaction re-executed in its block; an unknown hash is -32000 `transaction not found`. */
export const trace_replayTransaction = method(
  [required(hash), required(traceTypes)],
  ([tx, types], { services }) => services.replay.replayTransaction(tx, types),
);
