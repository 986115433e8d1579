import type { Command } from 'commander';
import type { DatabasePlan } from '../service.ts';
import { databaseUrl, POSTGRES_DEFAULTS } from '../store/postgres/pool.ts';
import { USAGE_BUFFER_ROWS, USAGE_DB_FLUSH_MS } from '../transport/access/usage.ts';
import { positive } from './flags.ts';

/**
 * `--database` and its settings, for `start` and every `keys` subcommand: the keys in a PostgreSQL
 * database shared by the hosts of one service instead of the datadir's keys file.
 */
export interface DatabaseFlags {
  database?: string;
  databasePoolSize?: string;
  databaseConnectTimeout?: string;
  databaseStatementTimeout?: string;
  keysRefresh?: string;
  hostName?: string;
  usageFlushInterval?: string;
  usageBufferRows?: string;
}

export const DATABASE_HELP =
  'keep the keys in this PostgreSQL database (postgres://user@host:port/db), shared by every host using it, instead of the datadir (also $DATABASE_URL)';

/** Every host re-reads all the keys this often, besides hearing each change as it is made. */
const DEFAULT_KEYS_REFRESH_MS = 5_000;

export function addDatabaseOptions(command: Command, server: boolean): Command {
  command
    .option('--database <url>', DATABASE_HELP)
    .option(
      '--database-connect-timeout <ms>',
      `how long connecting to the database may take (default ${POSTGRES_DEFAULTS.connectTimeoutMs})`,
    )
    .option(
      '--database-statement-timeout <ms>',
      `the database cuts a statement that runs longer (default ${POSTGRES_DEFAULTS.statementTimeoutMs})`,
    );
  if (server)
    command
      .option(
        '--database-pool-size <n>',
        `connections to the database a process keeps at most (default ${POSTGRES_DEFAULTS.poolSize})`,
      )
      .option(
        '--keys-refresh <ms>',
        `re-read all the keys this often, besides each change heard as it is made (default ${DEFAULT_KEYS_REFRESH_MS})`,
      )
      .option(
        '--host-name <name>',
        "this host's name on the usage it records in the database (default: the machine's host name and the port)",
      )
      .option(
        '--usage-flush-interval <ms>',
        `write usage to the database this often: what a crashed host loses at most (default ${USAGE_DB_FLUSH_MS})`,
      )
      .option(
        '--usage-buffer-rows <n>',
        `rows of usage kept in memory while the database cannot be written; past it, usage is dropped and counted (default ${USAGE_BUFFER_ROWS})`,
      );
  return command;
}

/** The database the flags (or $DATABASE_URL) name, or null: the datadir's keys file. */
export function databasePlan(o: DatabaseFlags, env: NodeJS.ProcessEnv): DatabasePlan | null {
  const url = databaseUrl(o.database, env);
  if (url === null) return null;
  return {
    url,
    settings: {
      poolSize: positive('database-pool-size', o.databasePoolSize, POSTGRES_DEFAULTS.poolSize),
      connectTimeoutMs: positive(
        'database-connect-timeout',
        o.databaseConnectTimeout,
        POSTGRES_DEFAULTS.connectTimeoutMs,
      ),
      statementTimeoutMs: positive(
        'database-statement-timeout',
        o.databaseStatementTimeout,
        POSTGRES_DEFAULTS.statementTimeoutMs,
      ),
    },
    keysRefreshMs: positive('keys-refresh', o.keysRefresh, DEFAULT_KEYS_REFRESH_MS),
    usage: {
      hostName: o.hostName === undefined || o.hostName === '' ? null : o.hostName,
      flushMs: positive('usage-flush-interval', o.usageFlushInterval, USAGE_DB_FLUSH_MS),
      bufferRows: positive('usage-buffer-rows', o.usageBufferRows, USAGE_BUFFER_ROWS),
    },
  };
}
