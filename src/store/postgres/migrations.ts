import type { PoolClient } from 'pg';

/**
 * The schema of the shared database, as numbered steps applied in order, each once. Every process
 * runs `migrate` as it opens the database, so hosts upgraded one by one bring it up to date with
 * the first of them; a step is never edited once released, only followed by another.
 */
export interface Migration {
  version: number;
  name: string;
  sql: string;
}

/** The channel each change of a key is announced on (src/transport/keyStore.ts listens). */
export const KEYS_CHANNEL = 'ethtrace_keys';

export const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: 'api keys',
    // Mirrors the keys file's entries (src/transport/apiKeys.ts StoredKey). A name is unique among
    // the active keys only: a revoked key keeps its name, and a new key may take it. The trigger
    // announces every change in the transaction that makes it, so a listener never hears of a
    // change it then cannot read, and a change made by hand in SQL is heard as well.
    sql: `
      CREATE TABLE api_keys (
        sha256 text PRIMARY KEY CHECK (sha256 ~ '^[0-9a-f]{64}$'),
        name text NOT NULL CHECK (name <> ''),
        prefix text NOT NULL,
        created_at timestamptz NOT NULL,
        updated_at timestamptz,
        revoked_at timestamptz,
        settings jsonb,
        secret_sha256 text CHECK (secret_sha256 ~ '^[0-9a-f]{64}$')
      );
      CREATE UNIQUE INDEX api_keys_active_name ON api_keys (name) WHERE revoked_at IS NULL;
      CREATE FUNCTION ethtrace_keys_notify() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        PERFORM pg_notify('${KEYS_CHANNEL}', COALESCE(NEW.sha256, OLD.sha256));
        RETURN NULL;
      END $$;
      CREATE TRIGGER api_keys_notify AFTER INSERT OR UPDATE OR DELETE ON api_keys
        FOR EACH ROW EXECUTE FUNCTION ethtrace_keys_notify();
    `,
  },
  {
    version: 2,
    name: 'usage',
    // Usage of every host, per minute (./usage.ts), and the batches taken (writer, sequence), so that
    // a batch sent again is added once. The key comes first in the primary key: a key's day (the
    // Redis ledger rebuilt) is one range of it; the service's day reads the minute index.
    sql: `
      CREATE TABLE usage_minutes (
        minute timestamptz NOT NULL,
        key_id text NOT NULL,
        host text NOT NULL,
        method text NOT NULL,
        status text NOT NULL,
        key_name text NOT NULL,
        requests bigint NOT NULL,
        credits bigint NOT NULL,
        PRIMARY KEY (key_id, minute, host, method, status)
      );
      CREATE INDEX usage_minutes_by_minute ON usage_minutes (minute);
      CREATE TABLE usage_flushes (
        writer text NOT NULL,
        seq bigint NOT NULL,
        host text NOT NULL,
        rows integer NOT NULL,
        at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (writer, seq)
      );
    `,
  },
];

/**
 * Any 64-bit number of ethtrace's own: the advisory lock that lets one process at a time migrate,
 * so hosts started together do not apply a step twice (the second waits, then finds it applied).
 */
const MIGRATION_LOCK = 0x6574_6874_7261_6365n; // "ethtrace"

/** What migrating needs of the pool (./pool.ts Postgres). */
interface Transactions {
  transaction<T>(work: (client: PoolClient) => Promise<T>): Promise<T>;
}

/** Applies the steps of `migrations` not yet recorded in `schema_migrations`, each in a transaction. */
export async function migrate(
  db: Transactions,
  migrations: readonly Migration[] = MIGRATIONS,
): Promise<number[]> {
  const applied: number[] = [];
  for (const m of migrations) {
    const done = await db.transaction(async (client) => {
      await client.query('SELECT pg_advisory_xact_lock($1)', [MIGRATION_LOCK.toString()]);
      await client.query(
        `CREATE TABLE IF NOT EXISTS schema_migrations (
           version integer PRIMARY KEY,
           name text NOT NULL,
           applied_at timestamptz NOT NULL DEFAULT now()
         )`,
      );
      const seen = await client.query('SELECT 1 FROM schema_migrations WHERE version = $1', [m.version]);
      if ((seen.rowCount ?? 0) > 0) return false;
      await client.query(m.sql);
      await client.query('INSERT INTO schema_migrations (version, name) VALUES ($1, $2)', [
        m.version,
        m.name,
      ]);
      return true;
    });
    if (done) applied.push(m.version);
  }
  return applied;
}
