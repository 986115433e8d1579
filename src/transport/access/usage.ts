import {
  appendFileSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  statSync,
  unlinkSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { caught } from '../../core/caught.ts';
import type { LogLine } from '../../core/log.ts';
import { codeLabel, OTHER } from '../../observe/metrics.ts';
import { methodTable } from '../../rpc/methods/index.ts';

/**
 * Usage per key, per method, per status, per minute, with credits: kept in memory for the last day
 * (UsageBook, the dashboard's source) and persisted in the datadir (UsageLog) so that
 * `ethtrace keys usage` can print it from another process while the server runs.
 *
 * The format on disk is JSON lines, one file per process: a process appends only to its own files,
 * so several processes (`--processes N`, or two servers over one datadir) need no lock and no shared
 * writer, a crash leaves at most a torn last line (skipped on reading), and the files can be read
 * with grep and jq. LMDB would allow counters updated in place, but every process would then take
 * its single write lock for every flush, and the chain store's environment is no place for it.
 * Each minute is appended once, when it is over; the minute still running is rewritten (atomically)
 * into a small snapshot file at every flush, so a reader sees traffic within USAGE_FLUSH_MS.
 *
 * Method names are the clients' choice: a name the method table does not have is counted as `other`
 * (as /metrics labels it, src/observe/metrics.ts), and so is every call of a key past
 * MAX_ROWS_PER_KEY_MINUTE rows in a minute, so that what the book, the files and the dashboard hold
 * grows with the keys and the minutes, never with what a client sends. Kept as sent, a thousand
 * distinct 4 KB names per body grew the heap from 35 to 327 MB and the files to 79 MB in 20 bodies.
 */

/**
 * `ok`, a JSON-RPC error code (`-32000`), or why the access policy refused the call; `other` for a
 * code outside JSON-RPC's server range (-32768…-32000) and 3 (revert), as /metrics labels it.
 */
export type UsageStatus = 'ok' | 'refused-rate' | 'refused-day' | 'refused-allowlist' | 'other' | `${number}`;

export interface UsageRow {
  /** The minute's start, ms since the epoch. */
  minute: number;
  keyId: string;
  /** The key's name when the calls were made. */
  key: string;
  method: string;
  status: UsageStatus;
  requests: number;
  credits: number;
}

const MINUTE_MS = 60_000;
/** How long the in-memory book keeps minutes: the dashboard's longest window. */
export const BOOK_MS = 24 * 60 * MINUTE_MS;
/** How often the running minute reaches the datadir: `keys usage` lags the traffic by at most this. */
export const USAGE_FLUSH_MS = 2_000;
/**
 * With `--database` (usageShipper.ts): how often a host ships its usage, the most a crashed host
 * loses, and how far `keys usage --database` lags.
 */
export const USAGE_DB_FLUSH_MS = 2_000;
/**
 * With `--database`: rows a host keeps waiting while the database cannot be written (a row is a
 * key, method, status and minute: about 200 bytes, so 40 MB at most). 200,000 rows hold e.g. 1,000
 * busy keys calling 10 methods each for 20 minutes of outage; past it, new rows are dropped
 * (usageShipper.ts).
 */
export const USAGE_BUFFER_ROWS = 200_000;
/** Days of usage files kept in the datadir; older ones are removed when a server starts. */
export const USAGE_KEEP_DAYS = 35;
const USAGE_DIR = 'usage';

/**
 * Rows one key may add in one minute (a row per method and status); past it, calls of a method and
 * status not seen yet that minute are counted under `other` with their status. The method table has
 * 88 methods and a client meets a handful of statuses, so honest traffic stays far below it; without
 * it, one key calling every method with every error a minute would keep ~900 rows a minute, a day
 * long (a day of such minutes: ~300 MB).
 */
export const MAX_ROWS_PER_KEY_MINUTE = 64;

/** The names a book keeps as they are by default: every method the service answers in any mode. */
const SERVED_METHODS: readonly string[] = Object.keys(methodTable(true));

const REFUSALS: ReadonlySet<string> = new Set(['refused-rate', 'refused-day', 'refused-allowlist']);

/** A status as the book keeps it: error codes outside the bounded set become `other`. */
export function usageStatusOf(status: UsageStatus): UsageStatus {
  if (status === 'ok' || status === OTHER || REFUSALS.has(status)) return status;
  return codeLabel(Number(status)) as UsageStatus;
}

export function minuteOf(now: number): number {
  return Math.floor(now / MINUTE_MS) * MINUTE_MS;
}

export interface Totals {
  name: string;
  requests: number;
  credits: number;
}

export interface UsageFilter {
  keyId?: string;
  method?: string;
}

/** The last day of this process's usage, minute by minute: what a dashboard reads. */
export class UsageBook {
  /** Minute → row key → row; minutes in increasing order (a Map keeps insertion order). */
  private readonly minutes = new Map<number, Map<string, UsageRow>>();
  private last = 0;
  /**
   * The running minute's rows by key id, then by method (and status, when not ok): found without
   * building the row key's string, which every call of every body would otherwise pay for.
   */
  private running = new Map<string, Map<string, UsageRow>>();
  private runningMinute = -1;
  private readonly methods: ReadonlySet<string>;
  /** Counts every record, so a writer can tell whether anything changed since it last wrote. */
  changes = 0;
  /** Hears every record as kept (its minute, labels and counts): a shared store's shipper (usageShipper.ts). */
  private readonly taps: Array<(row: Readonly<UsageRow>, requests: number, credits: number) => void> = [];

  /**
   * `methods`: the names kept as they are (the served method table, src/app.ts); others are
   * `other`. By default every method the service answers in any mode.
   */
  constructor(
    private readonly now: () => number = Date.now,
    methods: Iterable<string> = SERVED_METHODS,
  ) {
    this.methods = new Set([
      ...methods,
      'eth_subscription:newHeads',
      'eth_subscription:logs',
      'eth_subscription:newPendingTransactions',
    ]);
  }

  /** The name a method is kept under: itself when the method table has it, else `other`. */
  methodLabel(method: string): string {
    return this.methods.has(method) ? method : OTHER;
  }

  record(
    keyId: string,
    key: string,
    sent: string,
    sentStatus: UsageStatus,
    credits: number,
    requests = 1,
  ): void {
    this.changes++;
    // Never back in time: a minute, once over, is final (and written to the datadir).
    const minute = Math.max(this.last, minuteOf(this.now()));
    if (minute !== this.last) {
      this.last = minute;
      this.prune(minute);
    }
    if (minute !== this.runningMinute) {
      this.runningMinute = minute;
      this.running = new Map();
    }
    let ofKey = this.running.get(keyId);
    if (!ofKey) {
      ofKey = new Map();
      this.running.set(keyId, ofKey);
    }
    let method = this.methodLabel(sent);
    const status = usageStatusOf(sentStatus);
    let call = status === 'ok' ? method : `${method}\u0000${status}`;
    let row = ofKey.get(call);
    if (!row && ofKey.size >= MAX_ROWS_PER_KEY_MINUTE && method !== OTHER) {
      method = OTHER;
      call = status === 'ok' ? method : `${method}\u0000${status}`;
      row = ofKey.get(call);
    }
    if (!row) {
      let rows = this.minutes.get(minute);
      if (!rows) {
        rows = new Map();
        this.minutes.set(minute, rows);
      }
      const id = `${keyId}\u0000${method}\u0000${status}`;
      row = rows.get(id);
      if (!row) {
        row = { minute, keyId, key, method, status, requests: 0, credits: 0 };
        rows.set(id, row);
      }
      ofKey.set(call, row);
    }
    row.requests += requests;
    row.credits += credits;
    row.key = key;
    for (const tap of this.taps) tap(row, requests, credits);
  }

  /**
   * Hands every record from now on to `listener`: the book's own row it was added to (its labels,
   * and its running totals, which the listener must leave alone) and what this record added. The
   * row is the same object for every record of its minute and labels, so a listener can key by it
   * with no string built and nothing allocated per call.
   */
  tap(listener: (row: Readonly<UsageRow>, requests: number, credits: number) => void): void {
    this.taps.push(listener);
  }

  /** Every row since `since` (ms), oldest minute first. */
  rows(since: number, filter: UsageFilter = {}): UsageRow[] {
    const out: UsageRow[] = [];
    for (const [minute, rows] of this.minutes) {
      if (minute + MINUTE_MS <= since) continue;
      for (const row of rows.values()) if (matches(row, filter)) out.push({ ...row });
    }
    return out;
  }

  /** Requests and credits per minute since `since`, minutes without traffic left out. */
  perMinute(
    since: number,
    filter: UsageFilter = {},
  ): Array<{ minute: number; requests: number; credits: number }> {
    const out: Array<{ minute: number; requests: number; credits: number }> = [];
    for (const [minute, rows] of this.minutes) {
      if (minute + MINUTE_MS <= since) continue;
      let requests = 0;
      let credits = 0;
      for (const row of rows.values()) {
        if (!matches(row, filter)) continue;
        requests += row.requests;
        credits += row.credits;
      }
      if (requests > 0) out.push({ minute, requests, credits });
    }
    return out;
  }

  /** Totals since `since` by key (name), method or status, largest credits first. */
  totals(since: number, by: 'key' | 'method' | 'status', filter: UsageFilter = {}): Totals[] {
    return totalsOf(this.rows(since, filter), by);
  }

  /** Calls that did not succeed since `since`, by status (error code or refusal). */
  failures(since: number, filter: UsageFilter = {}): Totals[] {
    return totalsOf(
      this.rows(since, filter).filter((r) => r.status !== 'ok'),
      'status',
    ).sort((a, b) => b.requests - a.requests || a.name.localeCompare(b.name));
  }

  /**
   * Rows of the minutes from `from` up to `minute` (over) and of `minute` itself (running), for the
   * log. Minutes before `from` (written already) are skipped without copying their rows: the log
   * asks every USAGE_FLUSH_MS, and a day of rows copied each time would stall the event loop.
   */
  split(minute: number, from = 0): { over: Map<number, UsageRow[]>; running: UsageRow[] } {
    const over = new Map<number, UsageRow[]>();
    let running: UsageRow[] = [];
    for (const [m, rows] of this.minutes) {
      if (m < from) continue;
      if (m < minute) over.set(m, [...rows.values()]);
      else if (m === minute) running = [...rows.values()];
    }
    return { over, running };
  }

  private prune(minute: number): void {
    for (const m of this.minutes.keys()) {
      if (m > minute - BOOK_MS) break;
      this.minutes.delete(m);
    }
  }
}

function matches(row: UsageRow, filter: UsageFilter): boolean {
  return (
    (filter.keyId === undefined || row.keyId === filter.keyId) &&
    (filter.method === undefined || row.method === filter.method)
  );
}

export function totalsOf(rows: readonly UsageRow[], by: 'key' | 'method' | 'status'): Totals[] {
  const map = new Map<string, Totals>();
  for (const row of rows) {
    const name = by === 'key' ? row.key : by === 'method' ? row.method : row.status;
    const t = map.get(name) ?? { name, requests: 0, credits: 0 };
    t.requests += row.requests;
    t.credits += row.credits;
    map.set(name, t);
  }
  return [...map.values()].sort((a, b) => b.credits - a.credits || b.requests - a.requests);
}

// --- the datadir's usage files ----------------------------------------------------------------------

/** One row as a line: the minute in ISO form, so the files read (and grep) as they are. */
interface Line {
  minute: string;
  keyId: string;
  key: string;
  method: string;
  status: UsageStatus;
  requests: number;
  credits: number;
}

function toLine(row: UsageRow): string {
  const line: Line = { ...row, minute: new Date(row.minute).toISOString() };
  return JSON.stringify(line);
}

function fromLine(text: string): UsageRow | null {
  try {
    const l = JSON.parse(text) as Line;
    const minute = Date.parse(l.minute);
    if (!Number.isFinite(minute) || typeof l.keyId !== 'string' || typeof l.requests !== 'number')
      return null;
    return { ...l, minute };
  } catch {
    return null;
  }
}

const day = (ms: number) => new Date(ms).toISOString().slice(0, 10);

/**
 * Writes this process's usage to `DATADIR/usage/`: `DAY.TAG.jsonl` (minutes that are over, appended
 * once each; a file per UTC day, so old days are removed whole) and `current.TAG.json` (the running
 * minute, replaced at each flush). TAG names the process (pid and start time, since pids are reused).
 */
export class UsageLog {
  private readonly dir: string;
  private readonly tag: string;
  private readonly timer: NodeJS.Timeout;
  private written = 0;
  /** The book's `changes` when the running minute's snapshot was last written (-1: none written). */
  private snapshotChanges = -1;

  constructor(
    datadir: string,
    private readonly book: UsageBook,
    private readonly now: () => number = Date.now,
    private readonly log: LogLine = () => {},
  ) {
    this.dir = join(datadir, USAGE_DIR);
    this.tag = `${process.pid}-${this.now()}`;
    mkdirSync(this.dir, { recursive: true });
    this.prune();
    this.timer = setInterval(() => this.flush(), USAGE_FLUSH_MS);
    this.timer.unref();
  }

  /** Appends the minutes that are over and rewrites the running one; `final` appends that too. */
  flush(final = false): void {
    try {
      const running = minuteOf(this.now());
      const { over, running: current } = this.book.split(
        final ? Number.POSITIVE_INFINITY : running,
        this.written,
      );
      for (const [minute, rows] of over) {
        if (minute < this.written || rows.length === 0) continue;
        appendFileSync(
          join(this.dir, `${day(minute)}.${this.tag}.jsonl`),
          `${rows.map(toLine).join('\n')}\n`,
        );
        this.written = minute + MINUTE_MS;
      }
      const snapshot = join(this.dir, `current.${this.tag}.json`);
      if (final || current.length === 0) {
        if (existsSync(snapshot)) unlinkSync(snapshot);
        this.snapshotChanges = -1;
        return;
      }
      // Nothing recorded since the last write: the file already says it.
      if (this.book.changes === this.snapshotChanges) return;
      const tmp = `${snapshot}.tmp`;
      writeFileSync(tmp, `${current.map(toLine).join('\n')}\n`);
      renameSync(tmp, snapshot);
      this.snapshotChanges = this.book.changes;
    } catch (e) {
      // Usage is an account of the traffic, not a condition of serving it: a full disk is logged.
      this.log(`usage not written to ${this.dir}: ${(e as Error).message}`, 'warn');
    }
  }

  close(): void {
    clearInterval(this.timer);
    this.flush(true);
  }

  private prune(): void {
    const oldest = day(this.now() - USAGE_KEEP_DAYS * 86_400_000);
    for (const name of readdirSync(this.dir)) {
      const path = join(this.dir, name);
      const fileDay = /^(\d{4}-\d{2}-\d{2})\./.exec(name)?.[1];
      const stale =
        fileDay !== undefined
          ? fileDay < oldest
          : name.startsWith('current.') && statSync(path).mtimeMs < this.now() - USAGE_KEEP_DAYS * 86_400_000;
      if (stale) unlinkSync(path);
    }
  }
}

/**
 * Every process's usage in `datadir` since `since` (ms), as written by UsageLog. A process's running
 * minute is read from its snapshot unless its log holds that minute. Snapshots are read before the
 * logs: a flush in between moves a minute from the first to the second, where it is then found (and
 * the snapshot's copy dropped), so a minute is neither missed nor counted twice.
 */
export function readUsage(datadir: string, since: number): UsageRow[] {
  const dir = join(datadir, USAGE_DIR);
  if (!existsSync(dir)) return [];
  const snapshots: Array<[tag: string, rows: UsageRow[]]> = [];
  for (const name of readdirSync(dir)) {
    const s = /^current\.(.+)\.json$/.exec(name);
    if (s) snapshots.push([s[1] ?? '', readLines(join(dir, name))]);
  }
  const logged = new Map<string, Set<number>>();
  const rows: UsageRow[] = [];
  const firstDay = day(since);
  for (const name of readdirSync(dir).sort()) {
    const m = /^(\d{4}-\d{2}-\d{2})\.(.+)\.jsonl$/.exec(name);
    if (!m || (m[1] ?? '') < firstDay) continue;
    const tag = m[2] ?? '';
    const minutes = logged.get(tag) ?? new Set<number>();
    logged.set(tag, minutes);
    for (const row of readLines(join(dir, name))) {
      minutes.add(row.minute);
      if (row.minute + MINUTE_MS > since) rows.push(row);
    }
  }
  for (const [tag, snapshot] of snapshots) {
    const minutes = logged.get(tag);
    for (const row of snapshot) {
      if (minutes?.has(row.minute) || row.minute + MINUTE_MS <= since) continue;
      rows.push(row);
    }
  }
  return rows.sort((a, b) => a.minute - b.minute);
}

function readLines(path: string): UsageRow[] {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (e) {
    // A snapshot replaced or removed between listing and reading: its rows are in a log now.
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return [];
    caught('usage-line', `usage: ${path} cannot be read, its rows are left out: ${(e as Error).message}`);
    return [];
  }
  const out: UsageRow[] = [];
  let corrupt = 0;
  for (const line of text.split('\n')) {
    if (line === '') continue;
    const row = fromLine(line);
    if (row) out.push(row);
    else corrupt++;
  }
  // A torn or damaged line loses that minute's billing: said once for each file (again if more appear).
  const fresh = corrupt - (corruptReported.get(path) ?? 0);
  if (fresh > 0) {
    corruptReported.set(path, corrupt);
    caught('usage-line', `usage: ${corrupt} line(s) of ${path} are not usage rows and are left out`, {
      count: fresh,
    });
  }
  return out;
}

/** How many corrupt lines of each usage file were reported (see readLines). */
const corruptReported = new Map<string, number>();

/** Rows of one minute, several processes' included, merged into one row per key, method and status. */
export function mergeRows(rows: readonly UsageRow[]): UsageRow[] {
  const map = new Map<string, UsageRow>();
  for (const row of rows) {
    const id = `${row.minute}\u0000${row.keyId}\u0000${row.method}\u0000${row.status}`;
    const m = map.get(id);
    if (m) {
      m.requests += row.requests;
      m.credits += row.credits;
    } else map.set(id, { ...row });
  }
  return [...map.values()];
}
