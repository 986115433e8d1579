import { caught } from '../../core/caught.ts';
import type { LogLine } from '../../core/log.ts';
import { USAGE_BUFFER_ROWS, USAGE_DB_FLUSH_MS, type UsageBook, type UsageRow } from './usage.ts';

/**
 * Usage of every host in one store (PostgreSQL with `--database`, src/store/postgres/usage.ts): each
 * host adds what its book records (usage.ts UsageBook) to a batch, and ships the batch every
 * `flushMs`, never a write per request.
 *
 * ## Why a flush can be retried without counting twice
 *
 * Each batch is numbered (this writer's flush sequence) and frozen when it is first sent: until the
 * store has acknowledged it, the same rows are sent again with the same number, and the next batch
 * waits. The store records (writer, sequence) in the same transaction as it adds the counts, and
 * adds nothing for a pair it already holds (UsageSink.write), so a flush whose acknowledgement was
 * lost (a connection cut during COMMIT, a store that answered after the timeout) is sent again and
 * counted once. The writer is this process's (host name, pid, start time): a host restarted starts a
 * new sequence of its own, so nothing it sent before can be mistaken for something it sends now.
 *
 * ## What can be lost
 *
 * A clean stop ships everything (close). A process that dies loses what it had not shipped: the
 * running interval (at most `flushMs` of traffic), plus whatever a store outage kept buffered. While
 * the store cannot be written, rows wait in memory up to `maxRows`; past it, calls that would add a
 * row are dropped, counted (`usage-dropped` in ethtrace_caught_errors_total) and told once per
 * outage at warn; calls that add to a row already waiting are still counted.
 */

/** One flush: the rows of a writer's batch, numbered. */
export interface UsageBatch {
  /** The host that served the calls, on every row (`--host-name`). */
  host: string;
  /** This process among the host's (the host name, pid and start time): the sequence's owner. */
  writer: string;
  /** This writer's flush number, from 1: a batch sent again keeps its number. */
  seq: number;
  rows: readonly UsageRow[];
}

/** Where batches go: adds a batch's counts once, whatever the number of times it is sent. */
export interface UsageSink {
  /** Resolves once the batch is stored (or was already); throws when it may not have been. */
  write(batch: UsageBatch): Promise<void>;
  /** For log lines and `/ready`: what the store is (no secret in it). */
  readonly description: string;
}

/** Rows in one batch: a long outage's backlog goes out in several transactions, not one huge one. */
export const USAGE_BATCH_ROWS = 5_000;

export interface ShipperHealth {
  up: boolean;
  /** Rows waiting to be shipped (the batch under way included). */
  buffered: number;
  /** Requests dropped because the buffer was full. */
  dropped: number;
  /** Batches shipped. */
  flushes: number;
  /** Outages so far, each counted once. */
  outages: number;
}

export class UsageShipper {
  /** What waits to be shipped, by the book's row it adds to (one per minute and labels). */
  private pending = new Map<Readonly<UsageRow>, UsageRow>();
  /** The batch sent and not yet acknowledged: sent again as it is until it is. */
  private unacked: UsageBatch | null = null;
  private seq = 0;
  private readonly timer: NodeJS.Timeout;
  private running: Promise<void> | null = null;
  private down: { since: number; error: string; dropped: number } | null = null;
  private dropped = 0;
  private flushes = 0;
  private outages = 0;
  private closed = false;
  /** An interval ended while a run was under way. */
  private missed = false;
  /** Whether dropping was told since the store last took a batch. */
  private dropTold = false;

  constructor(
    book: UsageBook,
    private readonly sink: UsageSink,
    private readonly options: {
      host: string;
      writer: string;
      flushMs?: number;
      maxRows?: number;
      log?: LogLine;
      now?: () => number;
    },
  ) {
    book.tap((row, requests, credits) => this.add(row, requests, credits));
    this.timer = setInterval(() => void this.flush(), options.flushMs ?? USAGE_DB_FLUSH_MS);
    this.timer.unref();
  }

  health(): ShipperHealth {
    return {
      up: this.down === null,
      buffered: this.buffered(),
      dropped: this.dropped,
      flushes: this.flushes,
      outages: this.outages,
    };
  }

  /** Why `/ready` should call the service degraded, or null while usage is shipped. */
  problem(): string | null {
    const down = this.down;
    if (down === null) return null;
    return (
      `usage cannot be written to ${this.sink.description} since ${new Date(down.since).toISOString()} (${down.error}): ` +
      `${this.buffered()} rows wait in memory (at most ${this.maxRows()})`
    );
  }

  /**
   * Ships the rows waiting as it starts, batch after batch, until they are shipped or the store
   * fails (one run at a time). Rows that come in meanwhile wait for the next interval: a run that
   * chased them would follow each commit with another for as long as traffic lasts (measured: about
   * 30 transactions a second under a cheap method's load, where one every flushMs was meant). An
   * interval that ends while a run is under way (a slow store) starts the next run as that one ends,
   * so what a crash can lose stays within about two intervals.
   */
  flush(): Promise<void> {
    if (this.running) {
      this.missed = true;
      return this.running;
    }
    this.running = this.drain(this.pending.size).finally(() => {
      this.running = null;
      if (this.missed && !this.closed && this.down === null) {
        this.missed = false;
        void this.flush();
      }
    });
    return this.running;
  }

  /** Stops the timer and ships everything; what the store does not take now is lost, and said so. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    clearInterval(this.timer);
    await this.running;
    // What came in while the last run was under way too, for as long as the store takes it.
    do await this.flush();
    while (this.pending.size > 0 && this.down === null);
    const left = this.buffered();
    if (left > 0) {
      let requests = 0;
      for (const row of [...(this.unacked?.rows ?? []), ...this.pending.values()]) requests += row.requests;
      this.options.log?.(
        `stopping: ${requests} requests of usage (${left} rows) could not be written to ${this.sink.description} and are lost`,
        'warn',
      );
    }
  }

  private maxRows(): number {
    return this.options.maxRows ?? USAGE_BUFFER_ROWS;
  }

  private buffered(): number {
    return this.pending.size + (this.unacked?.rows.length ?? 0);
  }

  private add(row: Readonly<UsageRow>, requests: number, credits: number): void {
    const waiting = this.pending.get(row);
    if (waiting) {
      waiting.requests += requests;
      waiting.credits += credits;
      waiting.key = row.key;
      return;
    }
    if (this.buffered() >= this.maxRows()) {
      this.dropped += requests;
      if (this.down) this.down.dropped += requests;
      // Told once until the store takes a batch again; counted every time.
      caught(
        'usage-dropped',
        `usage: ${this.maxRows()} rows wait for ${this.sink.description} already; calls that would add a row are dropped until it is written again`,
        { count: requests, quiet: this.dropTold },
      );
      this.dropTold = true;
      return;
    }
    this.pending.set(row, { ...row, requests, credits });
  }

  /** Ships the batch left unacknowledged, then up to `budget` of the rows waiting, oldest first. */
  private async drain(budget: number): Promise<void> {
    let left = budget;
    for (;;) {
      if (this.unacked === null) {
        if (this.pending.size === 0 || left <= 0) return;
        const rows: UsageRow[] = [];
        for (const [bookRow, row] of this.pending) {
          rows.push(row);
          this.pending.delete(bookRow);
          if (rows.length >= Math.min(USAGE_BATCH_ROWS, left)) break;
        }
        left -= rows.length;
        this.seq++;
        this.unacked = { host: this.options.host, writer: this.options.writer, seq: this.seq, rows };
      }
      try {
        await this.sink.write(this.unacked);
      } catch (e) {
        this.failed(e);
        return;
      }
      this.unacked = null;
      this.flushes++;
      this.dropTold = false;
      this.answered();
    }
  }

  private now(): number {
    return (this.options.now ?? Date.now)();
  }

  private failed(e: unknown): void {
    if (this.down !== null) return;
    const error = (e as Error).message;
    this.down = { since: this.now(), error, dropped: 0 };
    this.outages++;
    this.options.log?.(
      `usage cannot be written to ${this.sink.description} (${error}): keeping it in memory (at most ${this.maxRows()} rows) and trying again every flush; one line will say when it is written again`,
      'warn',
    );
  }

  private answered(): void {
    const down = this.down;
    if (down === null) return;
    this.down = null;
    const seconds = ((this.now() - down.since) / 1000).toFixed(1);
    this.options.log?.(
      `usage is written to ${this.sink.description} again after ${seconds} s${down.dropped > 0 ? `; ${down.dropped} requests were dropped meanwhile (buffer full)` : ''}`,
      'warn',
    );
  }
}
