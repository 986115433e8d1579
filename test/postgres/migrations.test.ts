import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { MIGRATIONS, migrate } from '../../src/store/postgres/migrations.ts';
import { openPostgres, type Postgres } from '../../src/store/postgres/pool.ts';
import { type TestDatabase, testDatabase } from '../support/postgres.ts';

/**
 * The schema runner on a database of this test's own: several processes opening the database at
 * once apply each step exactly once (the advisory lock), and a slow statement is cut by the
 * statement timeout and counted.
 */
describe('PostgreSQL migrations', () => {
  let db: TestDatabase;
  before(async () => {
    db = await testDatabase();
  });
  after(async () => {
    await db.drop();
  });

  it('applies each step once when several hosts open the database at the same moment', async () => {
    const opened: Postgres[] = await Promise.all(Array.from({ length: 5 }, () => openPostgres(db.url)));
    try {
      const first = opened[0] as Postgres;
      const { rows } = await first.query<{ version: number; name: string }>(
        'SELECT version, name FROM schema_migrations ORDER BY version',
      );
      assert.deepEqual(
        rows,
        MIGRATIONS.map((m) => ({ version: m.version, name: m.name })),
      );
      // Opening again applies nothing.
      assert.deepEqual(await migrate(first), []);
      const tables = await first.query<{ tablename: string }>(
        "SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY tablename",
      );
      assert.deepEqual(
        tables.rows.map((r) => r.tablename),
        ['api_keys', 'schema_migrations', 'usage_flushes', 'usage_minutes'],
      );
    } finally {
      await Promise.all(opened.map((p) => p.close()));
    }
  });

  it('a step that fails leaves nothing of itself and is not recorded', async () => {
    const pg = await openPostgres(db.url);
    try {
      await assert.rejects(
        migrate(pg, [
          ...MIGRATIONS,
          { version: 1000, name: 'broken', sql: 'CREATE TABLE half_done (x int); SELECT no_such_function()' },
        ]),
        /no_such_function/,
      );
      const left = await pg.query("SELECT 1 FROM pg_tables WHERE tablename = 'half_done'");
      assert.equal(left.rowCount, 0);
      const recorded = await pg.query('SELECT 1 FROM schema_migrations WHERE version = 1000');
      assert.equal(recorded.rowCount, 0);
    } finally {
      await pg.close();
    }
  });

  it('cuts a statement at the statement timeout and counts it', async () => {
    const pg = await openPostgres(db.url, { statementTimeoutMs: 200 });
    try {
      const t0 = Date.now();
      await assert.rejects(
        pg.query('SELECT pg_sleep(5)'),
        (e: Error & { code?: string }) => e.code === '57014',
      );
      assert.ok(Date.now() - t0 < 2000, `cut after ${Date.now() - t0} ms`);
      assert.equal(pg.statementTimeouts, 1);
      const name = await pg.query<{ application_name: string }>('SHOW application_name');
      assert.equal(name.rows[0]?.application_name, 'ethtrace');
    } finally {
      await pg.close();
    }
  });

  it('refuses an unreachable server with one line naming the URL without its password', async () => {
    await assert.rejects(
      openPostgres('postgres://postgres:hunter2@127.0.0.1:1/test', { connectTimeoutMs: 1000 }),
      (e: Error) => {
        assert.equal(e.name, 'UserError');
        assert.match(e.message, /^--database postgres:\/\/127\.0\.0\.1:1\/test: cannot reach it \(/);
        assert.doesNotMatch(e.message, /hunter2|\n/);
        return true;
      },
    );
  });
});
