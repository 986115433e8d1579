import { accessKeys } from './overlayState.ts';
import type { StateAccess } from './session.ts';

// Speculative parallel execution of a long trace_callMany or block replay (the idea of Block-STM, without its
// re-execution scheduler). The calls are split into parts by sender, since a sender's calls always
// depend on each other through its nonce; each part runs on its own worker, in request order, on the
// block's state, noting what each call read and changed. A call's result is what serial execution
// would give exactly when none of its reads was last changed, before it, by a call of another part:
// then it saw the same state. The first call for which that fails ends the speculation, and the
// request runs serially; that costs at most the parts' wall time, and only when the pool was idle.

/**
 * Splits the calls or transactions, given by their senders, into at most `ways` parts of whole
 * senders, balanced by count; null when fewer than two parts would result. Each part lists indices
 * in request order.
 */
export function partitionBySender(senders: readonly string[], ways: number): number[][] | null {
  if (ways < 2) return null;
  const bySender = new Map<string, number[]>();
  for (const [index, sender] of senders.entries()) {
    let group = bySender.get(sender);
    if (!group) {
      group = [];
      bySender.set(sender, group);
    }
    group.push(index);
  }
  if (bySender.size < 2) return null;
  const parts: number[][] = Array.from({ length: Math.min(ways, bySender.size) }, () => []);
  const groups = [...bySender.values()].sort((a, b) => b.length - a.length);
  for (const group of groups) {
    let smallest = parts[0] as number[];
    for (const part of parts) if (part.length < smallest.length) smallest = part;
    smallest.push(...group);
  }
  for (const part of parts) part.sort((a, b) => a - b);
  return parts;
}

/**
 * What a worker answers for one part: each item's result as encoded JSON and what it read and
 * changed, in part order, as far as the part got (an item that failed, and the rest, are left out).
 */
export interface PartResult {
  results: Uint8Array[];
  access: StateAccess[];
}

/** One part's speculative run: its calls' access, in part order, as far as the part got. */
export interface PartRun {
  indices: readonly number[];
  access: readonly StateAccess[];
}

/** How speculation went: requests run in parts, and how many of those fell back to serial. */
export interface SpeculationStats {
  speculated: number;
  fellBack: number;
}

/**
 * Runs the parts at once and answers the `count` results in request order, or null when some item
 * cannot be shown to have its serial result (the caller then runs the request serially).
 */
export async function speculate(
  parts: readonly number[][],
  count: number,
  runPart: (indices: number[]) => Promise<PartResult>,
  stats: SpeculationStats,
): Promise<Uint8Array[] | null> {
  stats.speculated++;
  const runs = await Promise.all(parts.map(async (indices) => ({ indices, ...(await runPart(indices)) })));
  if (validPrefix(runs, count) < count) {
    stats.fellBack++;
    return null;
  }
  const results = new Array<Uint8Array>(count);
  for (const run of runs)
    for (const [i, index] of run.indices.entries()) results[index] = run.results[i] as Uint8Array;
  return results;
}

/**
 * How many calls, counted from the request's start, are known to have the serial result: the index
 * of the first call that ran on a different state than serial execution would give it, or that its
 * part did not finish; `count` when every call is good.
 */
export function validPrefix(parts: readonly PartRun[], count: number): number {
  const partOf = new Int32Array(count).fill(-1);
  const position = new Int32Array(count);
  for (const [p, part] of parts.entries()) {
    for (const [i, index] of part.indices.entries()) {
      partOf[index] = p;
      position[index] = i;
    }
  }
  // Which part changed each key last, among the calls checked so far.
  const lastWriter = new Map<string, number>();
  for (let index = 0; index < count; index++) {
    const p = partOf[index] as number;
    const access = parts[p]?.access[position[index] as number];
    if (access === undefined) return index;
    for (const key of access.reads) {
      const writer = lastWriter.get(key);
      if (writer !== undefined && writer !== p) return index;
      // A slot's value also depends on whether its account's storage was wiped.
      if (key.length > 40) {
        const wiper = lastWriter.get(accessKeys.wipeOf(key));
        if (wiper !== undefined && wiper !== p) return index;
      }
    }
    for (const key of access.writes) lastWriter.set(key, p);
  }
  return count;
}
