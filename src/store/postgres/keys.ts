import type { PoolClient } from 'pg';
import { UserError } from '../../core/errors.ts';
import type { Postgres } from './pool.ts';

/**
 * The `api_keys` table (migration 1): the rows of the keys the service accepts, in the shape of the
 * keys file's entries. What a key is and how one is made stays with the keys' logic
 * (src/transport/keyStore.ts); this only keeps the rows. The settings are JSON to the table: `S`
 * is the caller's type for them.
 */
export interface KeyRecord<S> {
  name: string;
  prefix: string;
  sha256: string;
  createdAt: string;
  revokedAt?: string;
  updatedAt?: string;
  settings?: S;
  secretSha256?: string;
}

interface Row {
  sha256: string;
  name: string;
  prefix: string;
  created_at: Date;
  updated_at: Date | null;
  revoked_at: Date | null;
  settings: unknown;
  secret_sha256: string | null;
}

const COLUMNS = 'sha256, name, prefix, created_at, updated_at, revoked_at, settings, secret_sha256';
/** SQLSTATE of a unique index refusing a row: here, a name taken by another active key. */
const UNIQUE_VIOLATION = '23505';

export class PostgresKeyTable<S> {
  constructor(private readonly db: Postgres) {}

  get description(): string {
    return this.db.description;
  }

  /** Every key, revoked ones too, oldest first (the keys file's order). */
  async all(): Promise<KeyRecord<S>[]> {
    const { rows } = await this.db.query<Row>(
      `SELECT ${COLUMNS} FROM api_keys ORDER BY created_at, sha256`,
      [],
      'api_keys_all',
    );
    return rows.map((r) => this.record(r));
  }

  /** The active key whose hash is `sha256` or whose name is `name`. */
  async findActive(sha256: string, name: string): Promise<KeyRecord<S> | undefined> {
    const { rows } = await this.db.query<Row>(
      `SELECT ${COLUMNS} FROM api_keys WHERE revoked_at IS NULL AND (sha256 = $1 OR name = $2)
       ORDER BY (sha256 = $1) DESC LIMIT 1`,
      [sha256, name],
      'api_keys_find_active',
    );
    return rows[0] && this.record(rows[0]);
  }

  /** The number of keys ever made, revoked ones too (a default name counts them, as the file's does). */
  async count(): Promise<number> {
    const { rows } = await this.db.query<{ n: string }>(
      'SELECT count(*) AS n FROM api_keys',
      [],
      'api_keys_count',
    );
    return Number(rows[0]?.n ?? 0);
  }

  /**
   * Adds a key. A name taken by an active key is refused (the partial unique index decides, so two
   * hosts creating the same name at once cannot both succeed); a key already there is left as it is
   * and false returned (an import run twice).
   */
  async insert(k: KeyRecord<S>): Promise<boolean> {
    try {
      const { rowCount } = await this.db.query(
        `INSERT INTO api_keys (${COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
         ON CONFLICT (sha256) DO NOTHING`,
        [
          k.sha256,
          k.name,
          k.prefix,
          k.createdAt,
          k.updatedAt ?? null,
          k.revokedAt ?? null,
          k.settings === undefined ? null : JSON.stringify(k.settings),
          k.secretSha256 ?? null,
        ],
        'api_keys_insert',
      );
      return rowCount > 0;
    } catch (e) {
      throw nameTaken(e, k.name);
    }
  }

  /**
   * Reads the active key matching `sha256` or `name`, lets `change` edit it, and writes it back,
   * with the row locked meanwhile so that two changes at once are applied one after the other.
   * Undefined when no active key matches.
   */
  async modify<T>(
    sha256: string,
    name: string,
    change: (k: KeyRecord<S>) => T,
  ): Promise<{ record: KeyRecord<S>; out: T } | undefined> {
    return this.db.transaction(async (client: PoolClient) => {
      const { rows } = await client.query<Row>({
        name: 'api_keys_lock_active',
        text: `SELECT ${COLUMNS} FROM api_keys WHERE revoked_at IS NULL AND (sha256 = $1 OR name = $2)
               ORDER BY (sha256 = $1) DESC LIMIT 1 FOR UPDATE`,
        values: [sha256, name],
      });
      const row = rows[0];
      if (!row) return undefined;
      const record = this.record(row);
      const out = change(record);
      try {
        await client.query({
          name: 'api_keys_save',
          text: `UPDATE api_keys SET name = $2, updated_at = $3, revoked_at = $4, settings = $5, secret_sha256 = $6
                 WHERE sha256 = $1`,
          values: [
            record.sha256,
            record.name,
            record.updatedAt ?? null,
            record.revokedAt ?? null,
            record.settings === undefined ? null : JSON.stringify(record.settings),
            record.secretSha256 ?? null,
          ],
        });
      } catch (e) {
        throw nameTaken(e, record.name);
      }
      return { record, out };
    });
  }

  private record(r: Row): KeyRecord<S> {
    return {
      name: r.name,
      prefix: r.prefix,
      sha256: r.sha256,
      createdAt: r.created_at.toISOString(),
      ...(r.revoked_at ? { revokedAt: r.revoked_at.toISOString() } : {}),
      ...(r.updated_at ? { updatedAt: r.updated_at.toISOString() } : {}),
      // The table only ever holds what the keys' logic wrote (checked as it was made).
      ...(r.settings === null ? {} : { settings: r.settings as S }),
      ...(r.secret_sha256 === null ? {} : { secretSha256: r.secret_sha256 }),
    };
  }
}

/** An active key has the name already (told apart so that hosts starting at once can each try). */
export class KeyNameTaken extends UserError {
  constructor(name: string) {
    super(`a key named "${name}" already exists`);
  }
}

function nameTaken(e: unknown, name: string): unknown {
  const err = e as { code?: string; constraint?: string };
  if (err.code === UNIQUE_VIOLATION && err.constraint === 'api_keys_active_name')
    return new KeyNameTaken(name);
  return e;
}
