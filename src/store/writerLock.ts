import { randomUUID } from 'node:crypto';
import {
  linkSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  unlinkSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { caught } from '../core/caught.ts';
import { storeError } from './errors.ts';

/**
 * The write side of a datadir: at most one process at a time writes its chain (a dev chain's
 * server, a follower, an upstream cache's server, an import), and it says who it is, so that a
 * second one is refused with its pid and port. LMDB would let both write (one transaction at a time),
 * and they would lose each other's blocks; its own lock file says nothing of who holds it.
 *
 * The lock is a file per holder in DIR/writers/, numbered: a process takes number N+1 when the
 * highest, N, belongs to a process that is gone (or there is none), by a hard link that fails if
 * another took N+1 first. Whoever sees a number above its own after taking it gives it up (it read
 * the directory before the other took a higher one over a stale lock), so at most one holder is left
 * at any time. A holder that dies (kill -9, a crash, a reboot) leaves its file behind, and the next
 * one finds its process gone: nothing stays locked. A file names its process by pid and, where the
 * system says (Linux's /proc), its boot and start time, so that a pid used again by another program
 * after a crash is not taken for the holder.
 */

export interface WriterRecord {
  pid: number;
  command: 'start' | 'import';
  /** What it writes: 'dev chain', 'followed chain', 'upstream cache', 'imported chain'. */
  writes: string;
  /** The port it serves on, once it listens (null: still starting, or an import). */
  port: number | null;
  since: string;
  boot: string | null;
  started: string | null;
}

/** Settling who writes gives up after this many rounds (each lost only to another process's move). */
const MAX_ROUNDS = 1_000;
const WRITERS_DIR = 'writers';

export type Claim = { lock: WriterLock; holder?: never } | { holder: WriterRecord; lock?: never };

export class WriterLock {
  private released = false;
  private readonly onExit = () => this.release();

  private constructor(
    private readonly dir: string,
    private readonly number: number,
    private record: WriterRecord,
  ) {
    // A process that exits without a stop (a second signal, process.exit) gives the lock back too.
    process.on('exit', this.onExit);
  }

  /** Takes the write side of `datadir` (a directory that exists), or says who holds it. */
  static claim(datadir: string, what: { command: WriterRecord['command']; writes: string }): Claim {
    const dir = join(datadir, WRITERS_DIR);
    const record: WriterRecord = {
      pid: process.pid,
      command: what.command,
      writes: what.writes,
      port: null,
      since: new Date().toISOString(),
      boot: bootId(),
      started: startTimeOf(process.pid),
    };
    let tmp: string | null = null;
    try {
      mkdirSync(dir, { recursive: true });
      tmp = join(dir, `.${process.pid}.${randomUUID()}.tmp`);
      writeFileSync(tmp, JSON.stringify(record));
      for (let round = 0; round < MAX_ROUNDS; round++) {
        const numbers = numbersIn(dir);
        const top = numbers.at(-1) ?? 0;
        if (top > 0) {
          const holder = readRecord(dir, top);
          // Gone since the listing (released): look again.
          if (holder === 'gone') continue;
          if (holder !== null && isAlive(holder)) return { holder };
        }
        const mine = top + 1;
        try {
          linkSync(tmp, fileOf(dir, mine));
        } catch (e) {
          if ((e as NodeJS.ErrnoException).code === 'EEXIST') continue;
          throw e;
        }
        if ((numbersIn(dir).at(-1) ?? 0) > mine) {
          unlinkQuietly(fileOf(dir, mine));
          continue;
        }
        // The files of processes that are gone; one still alive below is about to give its number up.
        for (const n of numbers) {
          const old = readRecord(dir, n);
          if (old !== 'gone' && (old === null || !isAlive(old))) unlinkQuietly(fileOf(dir, n));
        }
        return { lock: new WriterLock(dir, mine, record) };
      }
      throw new Error(`could not settle which process writes ${datadir} in ${MAX_ROUNDS} rounds`);
    } catch (e) {
      throw storeError(e, datadir);
    } finally {
      if (tmp !== null) unlinkQuietly(tmp);
    }
  }

  /** Says where it serves, for the refusal of a second one. */
  listening(port: number): void {
    if (this.released) return;
    this.record = { ...this.record, port };
    const tmp = join(this.dir, `.${process.pid}.${randomUUID()}.tmp`);
    try {
      writeFileSync(tmp, JSON.stringify(this.record));
      renameSync(tmp, fileOf(this.dir, this.number));
    } catch {
      // Only the port in a refusal is lost: the lock holds as it is.
      unlinkQuietly(tmp);
    }
  }

  release(): void {
    if (this.released) return;
    this.released = true;
    process.off('exit', this.onExit);
    unlinkQuietly(fileOf(this.dir, this.number));
  }
}

function fileOf(dir: string, n: number): string {
  return join(dir, `${n}.json`);
}

/** The holders' numbers, lowest first. */
function numbersIn(dir: string): number[] {
  return readdirSync(dir)
    .map((name) => /^([1-9][0-9]*)\.json$/.exec(name)?.[1])
    .filter((n): n is string => n !== undefined)
    .map(Number)
    .sort((a, b) => a - b);
}

/** The record of number `n`; 'gone' when its file has been removed; null when it is not a record. */
function readRecord(dir: string, n: number): WriterRecord | 'gone' | null {
  let text: string;
  try {
    text = readFileSync(fileOf(dir, n), 'utf8');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return 'gone';
    throw e;
  }
  try {
    const r = JSON.parse(text) as Partial<WriterRecord>;
    return typeof r.pid === 'number' && (r.command === 'start' || r.command === 'import')
      ? {
          pid: r.pid,
          command: r.command,
          writes: String(r.writes ?? 'chain'),
          port: typeof r.port === 'number' ? r.port : null,
          since: String(r.since ?? ''),
          boot: typeof r.boot === 'string' ? r.boot : null,
          started: typeof r.started === 'string' ? r.started : null,
        }
      : null;
  } catch {
    // Written whole before it is linked: unreadable means damaged, and it holds nothing.
    return null;
  }
}

/** Whether the process a record names is still running. */
export function isAlive(record: WriterRecord): boolean {
  try {
    process.kill(record.pid, 0);
  } catch (e) {
    // EPERM: it runs, as another user.
    if ((e as NodeJS.ErrnoException).code === 'ESRCH') return false;
  }
  const boot = bootId();
  if (record.boot !== null && boot !== null && record.boot !== boot) return false;
  if (record.started !== null) {
    const started = startTimeOf(record.pid);
    if (started !== null && started !== record.started) return false;
  }
  return true;
}

function bootId(): string | null {
  try {
    return readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim();
  } catch {
    return null;
  }
}

/** When the process started, in clock ticks since boot (field 22 of /proc/PID/stat); null elsewhere. */
function startTimeOf(pid: number): string | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name (field 2) is in parentheses and may hold spaces: count from after it.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return fields[19] ?? null;
  } catch {
    return null;
  }
}

/** Removes a lock file: one already gone is fine; one that stays is logged and counted. */
function unlinkQuietly(path: string): void {
  try {
    unlinkSync(path);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'ENOENT')
      caught('lock-file-removal', `the lock file ${path} cannot be removed: ${(e as Error).message}`);
  }
}
