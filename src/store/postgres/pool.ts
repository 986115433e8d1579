import type { Pool, PoolClient, QueryResultRow } from 'pg';
import { afterSettled, caught } from '../../core/caught.ts';
import { UserError } from '../../core/errors.ts';
import { redactUrl } from '../../core/url.ts';
import { migrate } from './migrations.ts';

/**
 * A PostgreSQL database shared by every host of one service (`--database`, `DATABASE_URL`): the keys
 * and their settings (src/transport/keyStore.ts) and what else the hosts must agree on. One pool a
 * process; the schema is brought up to date by the first process to open it (./migrations.ts).
 */

/** How a process uses the database; each has a default below. */
export interface PostgresSettings {
  url: string;
  /** Connections the pool keeps at most (the LISTEN connection is one more, outside it). */
  poolSize: number;
  /** How long opening a connection may take before it counts as unreachable. */
  connectTimeoutMs: number;
  /**
   * The server cuts a statement that runs longer (its `statement_timeout`): a locked table or an
   * overloaded server then fails one call instead of holding a connection of the pool.
   */
  statementTimeoutMs: number;
  /** Shown in `pg_stat_activity`, to tell ethtrace's connections from others'. */
  applicationName: string;
}

export const POSTGRES_DEFAULTS: Omit<PostgresSettings, 'url'> = {
  poolSize: 4,
  connectTimeoutMs: 5_000,
  statementTimeoutMs: 5_000,
  applicationName: 'ethtrace',
};

/** The URL of `--database`, else of DATABASE_URL, else null (no database: the datadir's files). */
export function databaseUrl(flag: string | undefined, env: NodeJS.ProcessEnv = process.env): string | null {
  const url = flag ?? (env.DATABASE_URL === '' ? undefined : env.DATABASE_URL);
  if (url === undefined) return null;
  if (!/^postgres(ql)?:\/\/\S+$/.test(url))
    throw new UserError(`--database ${redactUrl(url)} is not a postgres:// or postgresql:// URL`);
  return url;
}

/** SQLSTATE of a statement cancelled, here by `statement_timeout`. */
const QUERY_CANCELED = '57014';

/** Whether `e` is a statement the server cut at its `statement_timeout`. */
export function isStatementTimeout(e: unknown): boolean {
  return (e as { code?: unknown } | null)?.code === QUERY_CANCELED;
}

/** The pool and what it has seen: the statements cut by the timeout, for /metrics. */
export class Postgres {
  /** Statements the server cut at `statement_timeout`. */
  statementTimeouts = 0;

  constructor(
    readonly pool: Pool,
    readonly settings: PostgresSettings,
  ) {}

  /** The URL without its credentials, for messages and logs. */
  get description(): string {
    return redactUrl(this.settings.url);
  }

  /** One parameterised statement (prepared under `name` on each connection when given). */
  async query<R extends QueryResultRow>(
    text: string,
    values: unknown[] = [],
    name?: string,
  ): Promise<{ rows: R[]; rowCount: number }> {
    try {
      const result = await this.pool.query<R>(name === undefined ? { text, values } : { name, text, values });
      return { rows: result.rows, rowCount: result.rowCount ?? 0 };
    } catch (e) {
      if (isStatementTimeout(e)) this.statementTimeouts++;
      throw e;
    }
  }

  /**
   * `work` in one transaction on one connection: committed when it returns, rolled back when it
   * throws. Any failure drops the connection rather than return it to the pool mid-transaction.
   */
  async transaction<T>(work: (client: PoolClient) => Promise<T>): Promise<T> {
    const client = await this.pool.connect();
    // A connection lost while checked out (a server restarted mid-transaction) is an 'error' event on
    // the client, which the pool only listens for while the client is idle: unheard, it would end the
    // process. The statement under way fails with the same error, and that failure is what is thrown.
    let broken: Error | undefined;
    const onLost = (e: Error) => {
      broken = e;
    };
    client.on('error', onLost);
    try {
      await client.query('BEGIN');
      const out = await work(client);
      await client.query('COMMIT');
      return out;
    } catch (e) {
      if (isStatementTimeout(e)) this.statementTimeouts++;
      broken ??= e as Error;
      // The connection is dropped below whatever the rollback does; the first error is the one thrown.
      await afterSettled(client.query('ROLLBACK'));
      throw e;
    } finally {
      client.off('error', onLost);
      client.release(broken);
    }
  }

  async close(): Promise<void> {
    await this.pool.end();
  }
}

/** The options of a `pg` connection for `settings` (the pool's, and the LISTEN connection's). */
export function connectionOptions(settings: PostgresSettings) {
  return {
    connectionString: settings.url,
    connectionTimeoutMillis: settings.connectTimeoutMs,
    // Sent in the startup packet: the server applies it to every statement of the connection.
    options: `-c statement_timeout=${settings.statementTimeoutMs}`,
    application_name: settings.applicationName,
  };
}

/**
 * Opens the pool, checks the server answers and brings the schema up to date; an unreachable server
 * or a refused login is the user's to fix (one line, exit 2, as for `--redis`).
 */
export async function openPostgres(
  url: string,
  settings: Partial<Omit<PostgresSettings, 'url'>> = {},
): Promise<Postgres> {
  const full: PostgresSettings = { ...POSTGRES_DEFAULTS, ...settings, url };
  const pg = (await import('pg')).default;
  const pool = new pg.Pool({ ...connectionOptions(full), max: full.poolSize });
  // An idle connection the server drops (a restart, a network cut) is an error event on the pool;
  // the pool discards it and the next query opens another: only worth a line and a count.
  pool.on('error', (e) =>
    caught('postgres-connection', `${db.description}: an idle connection failed: ${describe(e)}`),
  );
  const db = new Postgres(pool, full);
  try {
    await pool.query('SELECT 1');
  } catch (e) {
    await endQuietly(db);
    throw new UserError(`--database ${redactUrl(url)}: cannot reach it (${describe(e)})`);
  }
  try {
    await migrate(db);
  } catch (e) {
    await endQuietly(db);
    throw new UserError(
      `--database ${redactUrl(url)}: its schema cannot be brought up to date (${describe(e)})`,
    );
  }
  return db;
}

/** Ends the pool of a start that failed; the failure said is the start's, not this one. */
async function endQuietly(db: Postgres): Promise<void> {
  await db.pool
    .end()
    .catch((e: unknown) => caught('postgres-connection', `${db.description}: closing: ${describe(e)}`));
}

export function describe(e: unknown): string {
  const err = e as Error & { code?: string; errors?: Error[] };
  // A host name with several addresses fails with an AggregateError whose own message is empty.
  const message = err.message || err.errors?.map((x) => x.message).join('; ') || String(e);
  return err.code && !message.includes(err.code) ? `${message}, ${err.code}` : message;
}
