import type { Client } from 'pg';
import { caught } from '../../core/caught.ts';
import { connectionOptions, describe, type PostgresSettings } from './pool.ts';

/**
 * One connection of its own that LISTENs on a channel: a pooled connection would be handed to other
 * statements and its LISTEN lost. When the connection is lost it is opened again, waiting longer
 * after each failure; the caller is told when it is down and when it is back, and must re-read what
 * it follows on `up`, since what was announced meanwhile was never heard.
 */
export interface ListenEvents {
  notify(payload: string): void;
  /** Listening (again). */
  up(): void;
  /** Not listening, and why. */
  down(reason: string): void;
}

/** The first wait before reconnecting, doubled after each failure up to the last. */
const RECONNECT_FIRST_MS = 100;
const RECONNECT_MAX_MS = 2_000;

export class Listener {
  private client: Client | null = null;
  private closed = false;
  private wait = RECONNECT_FIRST_MS;
  private timer: NodeJS.Timeout | null = null;

  constructor(
    private readonly settings: PostgresSettings,
    private readonly channel: string,
    private readonly events: ListenEvents,
  ) {}

  /** Connects and listens; resolves once listening or once the first attempt failed (then retried). */
  async start(): Promise<void> {
    await this.connect();
  }

  private async connect(): Promise<void> {
    this.timer = null;
    if (this.closed) return;
    const pg = (await import('pg')).default;
    const client = new pg.Client({
      ...connectionOptions(this.settings),
      // A half-open connection (a host gone from the network) is noticed by the kernel's probes.
      keepAlive: true,
      keepAliveInitialDelayMillis: 1_000,
    });
    this.client = client;
    let lost = false;
    const onLost = (reason: string) => {
      if (lost) return;
      lost = true;
      if (this.client === client) this.client = null;
      // Closing: `close` ends the connection itself, and that is no loss.
      if (this.closed) return;
      client
        .end()
        .catch((e: unknown) =>
          caught('postgres-connection', `closing a lost LISTEN connection: ${describe(e)}`, { quiet: true }),
        );
      this.events.down(reason);
      this.retry();
    };
    client.on('error', (e) => onLost(describe(e)));
    client.on('end', () => onLost('the server closed the connection'));
    client.on('notification', (n) => {
      if (n.channel === this.channel) this.events.notify(n.payload ?? '');
    });
    try {
      await client.connect();
      await client.query(`LISTEN ${this.channel}`);
    } catch (e) {
      onLost(describe(e));
      return;
    }
    if (this.closed) {
      await client.end();
      return;
    }
    this.wait = RECONNECT_FIRST_MS;
    this.events.up();
  }

  private retry(): void {
    if (this.closed || this.timer !== null) return;
    const wait = this.wait;
    this.wait = Math.min(this.wait * 2, RECONNECT_MAX_MS);
    this.timer = setTimeout(() => {
      void this.connect();
    }, wait);
    this.timer.unref();
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.timer !== null) clearTimeout(this.timer);
    const client = this.client;
    this.client = null;
    await client?.end();
  }
}
