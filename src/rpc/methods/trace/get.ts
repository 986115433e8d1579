import { field, hash, ParamProblem, required, smallQuantity } from '../../params.ts';
import { method } from '../define.ts';

/** A trace address as hex quantities (`["0x0", "0x1"]`); JSON integers are taken too. */
function indices(value: unknown): number[] {
  if (!Array.isArray(value)) throw new ParamProblem('expected an array of trace indices');
  return value.map((v, i) => {
    if (typeof v === 'number') {
      if (!Number.isSafeInteger(v) || v < 0) throw new ParamProblem(`index ${i}: invalid index ${v}`);
      return v;
    }
    return field(`index ${i}`, () => smallQuantity(v));
  });
}

/**
 * The entry of a transaction whose traceAddress equals `indices` (OpenEthereum's rule: `[]` is the
 * top-level call, `["0x0"]` its first sub-call), or null. Reth reads a single index as a position
 * in the flat list instead; we keep the meaning the method was defined with.
 */
export const trace_get = method([required(hash), required(indices)], ([tx, path], { services }) =>
  services.replay.get(tx, path),
);
