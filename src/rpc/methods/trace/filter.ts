import type { TraceFilter } from '../../../services/replay.ts';
import {
  address,
  blockSelector,
  field,
  ParamProblem,
  quoted,
  required,
  smallQuantity,
} from '../../params.ts';
import { method } from '../define.ts';

/** A count or offset: a JSON integer (OpenEthereum, Erigon, Reth) or a hex quantity. */
function small(name: string, value: unknown): number {
  if (typeof value === 'number') {
    if (!Number.isSafeInteger(value) || value < 0) throw new ParamProblem(`${name}: invalid value ${value}`);
    return value;
  }
  return field(name, () => smallQuantity(value));
}

function addresses(name: string, value: unknown): Uint8Array[] {
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value)) throw new ParamProblem(`${name} must be an array of addresses`);
  return value.map((v, i) => field(`${name}[${i}]`, () => address(v)));
}

function block(name: string, value: unknown) {
  return field(name, () => blockSelector(value));
}

/** Erigon's and Reth's `mode`; union when absent, as there. */
function mode(value: unknown): 'union' | 'intersection' {
  if (value === undefined || value === null || value === 'union') return 'union';
  if (value === 'intersection') return 'intersection';
  throw new ParamProblem(`mode: expected "union" or "intersection", got ${quoted(value)}`);
}

function traceFilter(value: unknown): TraceFilter {
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw new ParamProblem('filter must be an object');
  const o = value as Record<string, unknown>;
  const present = (v: unknown) => v !== undefined && v !== null;
  return {
    ...(present(o.fromBlock) ? { fromBlock: block('fromBlock', o.fromBlock) } : {}),
    ...(present(o.toBlock) ? { toBlock: block('toBlock', o.toBlock) } : {}),
    fromAddress: addresses('fromAddress', o.fromAddress),
    toAddress: addresses('toAddress', o.toAddress),
    mode: mode(o.mode),
    ...(present(o.after) ? { after: small('after', o.after) } : {}),
    ...(present(o.count) ? { count: small('count', o.count) } : {}),
  };
}

/**
 * Flat trace entries (rewards included) of blocks `fromBlock` (default 0) to `toBlock` (default
 * latest) whose sender is in `fromAddress` or recipient in `toAddress` (`mode: "intersection"`:
 * and; no list: every entry), skipping `after` matches and returning at most `count`. The range
 * is bounded (-32005).
 */
export const trace_filter = method([required(traceFilter)], ([filter], { services }) =>
  services.replay.filter(filter),
);
