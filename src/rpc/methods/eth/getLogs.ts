import type { LogCriteria, LogScope } from '../../../services/logs.ts';
import { address, blockSelector, field, hash, LATEST, ParamProblem, required } from '../../params.ts';
import { method } from '../define.ts';

// geth's bounds: a log has at most four topics, and an OR-list longer than this is not a filter.
const MAX_TOPICS = 4;
const MAX_SUB_TOPICS = 1000;

export interface LogFilter {
  scope: LogScope;
  criteria: LogCriteria;
}

/**
 * The filter object as geth reads it: `blockHash` excludes `fromBlock`/`toBlock` (both default to
 * latest), `address` is one address or a list, and each `topics` position is null (any), one hash, or
 * an OR-list of hashes (a null inside the list, or an empty list, also means any).
 */
export function logFilter(value: unknown): LogFilter {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new ParamProblem('filter must be an object');
  }
  const f = value as Record<string, unknown>;
  const present = (v: unknown) => v !== undefined && v !== null;
  let scope: LogScope;
  if (present(f.blockHash)) {
    if (present(f.fromBlock) || present(f.toBlock)) {
      throw new ParamProblem('cannot specify both BlockHash and FromBlock/ToBlock, choose one or the other');
    }
    scope = { blockHash: hash(f.blockHash) };
  } else {
    scope = {
      fromBlock: present(f.fromBlock) ? blockSelector(f.fromBlock) : LATEST,
      toBlock: present(f.toBlock) ? blockSelector(f.toBlock) : LATEST,
    };
  }
  return { scope, criteria: { addresses: addresses(f.address), topics: topics(f.topics) } };
}

function addresses(value: unknown): Uint8Array[] {
  if (value === undefined || value === null) return [];
  if (typeof value === 'string') return [field('invalid address', () => address(value))];
  if (!Array.isArray(value)) throw new ParamProblem('invalid addresses in query');
  return value.map((a, i) => {
    if (typeof a !== 'string') throw new ParamProblem(`non-string address at index ${i}`);
    return field(`invalid address at index ${i}`, () => address(a));
  });
}

function topics(value: unknown): Array<Uint8Array[] | null> {
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value)) throw new ParamProblem('invalid topic(s)');
  if (value.length > MAX_TOPICS) throw new ParamProblem('exceed max topics');
  return value.map((position, i) => {
    if (position === null) return null;
    if (typeof position === 'string') return [topic(position, i)];
    if (!Array.isArray(position)) throw new ParamProblem('invalid topic(s)');
    if (position.length > MAX_SUB_TOPICS) throw new ParamProblem('exceed max topics');
    if (position.length === 0 || position.includes(null)) return null;
    return position.map((t) => {
      if (typeof t !== 'string') throw new ParamProblem('invalid topic(s)');
      return topic(t, i);
    });
  });
}

function topic(value: string, position: number): Uint8Array {
  return field(`invalid topic at position ${position}`, () => hash(value));
}

/** Logs matching a filter, in chain order; see LogService for the search and its limits. */
export const eth_getLogs = method([required(logFilter)], async ([filter], { services }) =>
  services.logs.getLogs(filter.scope, filter.criteria),
);
