import type { StateAccess } from './sessionTypes.ts';
import { accessKeys } from './stateAccess.ts';

// Speculative parallel execution of a long trace_callMany or block replay (the idea of Block-STM, without its
// re-execution scheduler). The calls are split into parts by sender, since a sender's calls always
// depend on each other through its nonce; each part runs on its own worker, in request order, on the
// block's state, noting what each call read and changed. A call's result is what serial execution
// would give exactly when none of its reads was last changed, before it, by a call of another part:
// then it saw the same state. The first call for which that fails ends the speculation, and the
// request runs serially. The parts post each call's access to a shared ConflictBoard as it
// finishes, so a conflict stops every part within one call of the later of the two: a block with a
// hot contract (a pair every swap updates) costs its first few calls twice, not its whole length.

/**
 * Splits the calls or transactions, given by their senders, into at most `ways` parts of whole
 * senders, balanced by count; null when fewer than two parts would result. Each part lists indices
 * in request order.
 */
export function partitionBySender(senders: readonly string[], spare: number): number[][] | null {
  const ways = Math.min(spare, ConflictBoard.MAX_PARTS);
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

/** What a part's job carries to share a ConflictBoard: the board's memory and the part's number. */
export interface PartBoard {
  board: SharedArrayBuffer;
  part: number;
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
 * cannot be shown to have its serial result (the caller then runs the request serially). The parts
 * share a ConflictBoard: the first conflict any part sees stops them all, so a speculation that
 * cannot succeed costs the transactions run until then, not the parts' whole run.
 */
export async function speculate(
  parts: readonly number[][],
  count: number,
  runPart: (indices: number[], board: PartBoard) => Promise<PartResult>,
  stats: SpeculationStats,
): Promise<Uint8Array[] | null> {
  stats.speculated++;
  const board = ConflictBoard.create(parts.length, count);
  const runs = await Promise.all(
    parts.map(async (indices, part) => ({ indices, ...(await runPart(indices, { board, part })) })),
  );
  // The board may miss nothing that validPrefix would catch, but validPrefix stays the judge: the
  // board only stops parts early, and a hash collision on it only costs a serial run.
  if (new ConflictBoard(board, 0).lost || validPrefix(runs, count) < count) {
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

/**
 * What the parts of one speculation have read and changed so far, in memory they share
 * (a SharedArrayBuffer passed with each part's job), so that a part finds a conflict with another
 * as soon as the later of the two transactions finishes, and every part then stops.
 *
 * Per key (an `accessKeys` name, hashed to 32 bits) and part: the highest index that read it and
 * the lowest that changed it. A transaction conflicts when it read a key another part changed at
 * a lower index, or changed a key another part read at a higher one. That is stricter than
 * validPrefix (a key changed again by the reader's own part in between would be fine there) and
 * hashes may collide: both only make a speculation give up that could have succeeded. A full
 * table gives up too.
 */
export class ConflictBoard {
  /** Probes before giving up on a key (a full table). */
  private static readonly MAX_PROBES = 64;
  /** Parts a board tells apart (the low bits of a tag). */
  static readonly MAX_PARTS = 15;
  /** Cells before the entries: the lost flag, the number of parts, the number of entries. */
  private static readonly HEADER = 3;
  private readonly cells: Int32Array;
  private readonly parts: number;
  private readonly capacity: number;

  /**
   * A board for `parts` parts of `items` calls or transactions: room for ~64 keys per item (a swap
   * touches ~40), in a power of two of entries. Memory starts zeroed, and zero means "none" in
   * every cell (indices are stored plus one), so there is nothing to fill in.
   */
  static create(parts: number, items: number): SharedArrayBuffer {
    let capacity = 1 << 10;
    while (capacity < items * 64 && capacity < 1 << 18) capacity <<= 1;
    const buffer = new SharedArrayBuffer((ConflictBoard.HEADER + capacity * 3) * 4);
    const cells = new Int32Array(buffer);
    cells[1] = Math.min(parts, ConflictBoard.MAX_PARTS);
    cells[2] = capacity;
    return buffer;
  }

  /** `part`: this part's number, 0 … parts − 1. */
  constructor(
    buffer: SharedArrayBuffer,
    private readonly part: number,
  ) {
    this.cells = new Int32Array(buffer);
    this.parts = this.cells[1] as number;
    this.capacity = this.cells[2] as number;
  }

  /** Some part found a conflict: the speculation will fall back to serial, so stop. */
  get lost(): boolean {
    return Atomics.load(this.cells, 0) !== 0;
  }

  giveUp(): void {
    Atomics.store(this.cells, 0, 1);
  }

  /**
   * Posts what item `index` of this part read and changed, then checks it against the other
   * parts; false (and the board lost) on a conflict. Posting before checking means that of two
   * conflicting items posted at once, at least one sees the other.
   */
  post(index: number, access: StateAccess): boolean {
    const written = access.writes.map(hash);
    const read = access.reads.map(hash);
    for (const h of written) {
      const e = this.entry(h, this.part, true);
      if (e < 0) return this.lose();
      atomicMinPlusOne(this.cells, e + 2, index);
    }
    for (const h of read) {
      const e = this.entry(h, this.part, true);
      if (e < 0) return this.lose();
      atomicMaxPlusOne(this.cells, e + 1, index);
    }
    for (const [i, h] of read.entries()) {
      if (this.changedBefore(h, index)) return this.lose();
      // A slot's value also depends on whether its account's storage was wiped.
      const key = access.reads[i] as string;
      if (key.length > 40 && this.changedBefore(hash(accessKeys.wipeOf(key)), index)) return this.lose();
    }
    for (const h of written) {
      for (let q = 0; q < this.parts; q++) {
        if (q === this.part) continue;
        const e = this.entry(h, q, false);
        // Read at a higher index (stored plus one; zero: never read).
        if (e >= 0 && Atomics.load(this.cells, e + 1) > index + 1) return this.lose();
      }
    }
    return !this.lost;
  }

  private changedBefore(h: number, index: number): boolean {
    for (let q = 0; q < this.parts; q++) {
      if (q === this.part) continue;
      const e = this.entry(h, q, false);
      // Changed at a lower index (stored plus one; zero: never changed).
      const changed = e < 0 ? 0 : Atomics.load(this.cells, e + 2);
      if (changed !== 0 && changed - 1 < index) return true;
    }
    return false;
  }

  private lose(): false {
    this.giveUp();
    return false;
  }

  /** The cell offset of (hash, part)'s entry, claimed if `claim`; −1 if absent (or no room). */
  private entry(h: number, part: number, claim: boolean): number {
    // Tags are never 0, which marks a free entry.
    const tag = (h & ~0xf) | (part + 1) | 0;
    const mask = this.capacity - 1;
    let slot = (h >>> 4) & mask;
    for (let probe = 0; probe < ConflictBoard.MAX_PROBES; probe++) {
      const e = ConflictBoard.HEADER + slot * 3;
      const found = Atomics.load(this.cells, e);
      if (found === tag) return e;
      if (found === 0) {
        if (!claim) return -1;
        const prior = Atomics.compareExchange(this.cells, e, 0, tag);
        if (prior === 0 || prior === tag) return e;
      }
      slot = (slot + 1) & mask;
    }
    return -1;
  }
}

/** FNV-1a over the key's characters (hex and separators): cheap, and spread enough for a table. */
function hash(key: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < key.length; i++) h = Math.imul(h ^ key.charCodeAt(i), 0x01000193);
  return h;
}

/** Lowers the cell to `index + 1`, a zero cell counting as none yet. */
function atomicMinPlusOne(cells: Int32Array, at: number, index: number): void {
  const value = index + 1;
  for (let now = Atomics.load(cells, at); now === 0 || value < now; ) {
    const prior = Atomics.compareExchange(cells, at, now, value);
    if (prior === now) return;
    now = prior;
  }
}

/** Raises the cell to `index + 1`. */
function atomicMaxPlusOne(cells: Int32Array, at: number, index: number): void {
  const value = index + 1;
  for (let now = Atomics.load(cells, at); value > now; ) {
    const prior = Atomics.compareExchange(cells, at, now, value);
    if (prior === now) return;
    now = prior;
  }
}

/** A transaction of a speculative part that cannot run on the part's state alone. */
export class PartConflict extends Error {
  override name = 'PartConflict';
  constructor(
    readonly index: number,
    cause: unknown,
  ) {
    super(`transaction ${index} does not run on its part's state alone`, { cause });
  }
}
