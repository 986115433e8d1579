import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { KeyNameTaken, PostgresKeyTable } from '../../src/store/postgres/keys.ts';
import { Listener } from '../../src/store/postgres/listener.ts';
import { KEYS_CHANNEL } from '../../src/store/postgres/migrations.ts';
import { openPostgres, type Postgres } from '../../src/store/postgres/pool.ts';
import type { KeySettings } from '../../src/transport/access/settings.ts';
import { KeyRing } from '../../src/transport/apiKeys.ts';
import { DatabaseKeyStore, KeyMirror } from '../../src/transport/keyStore.ts';
import { type TestDatabase, testDatabase } from '../support/postgres.ts';

/**
 * The database key store against a real PostgreSQL, as several hosts use it at once: names unique
 * among active keys whoever asks first, changes to one key applied one after the other (none lost),
 * and a KeyRing fed by LISTEN/NOTIFY alone (the periodic re-read set far beyond the test).
 */
describe('the PostgreSQL key store, used by several hosts at once', () => {
  let db: TestDatabase;
  const hosts: Postgres[] = [];
  const stores: DatabaseKeyStore[] = [];
  before(async () => {
    db = await testDatabase();
    for (let i = 0; i < 3; i++) {
      const pg = await openPostgres(db.url);
      hosts.push(pg);
      stores.push(new DatabaseKeyStore(new PostgresKeyTable<KeySettings>(pg)));
    }
  });
  after(async () => {
    await Promise.all(hosts.map((h) => h.close()));
    await db.drop();
  });

  it('lets one of several hosts making the same name at once have it; the others are told it is taken', async () => {
    const results = await Promise.allSettled(stores.map((s) => s.create('shared-name')));
    assert.equal(results.filter((r) => r.status === 'fulfilled').length, 1);
    for (const r of results)
      if (r.status === 'rejected') assert.ok(r.reason instanceof KeyNameTaken, String(r.reason));
    // Revoked, the name is free again.
    await stores[0]?.revoke('shared-name');
    await stores[1]?.create('shared-name');
  });

  it('applies changes to one key made at once one after the other, losing none', async () => {
    await stores[0]?.create('busy');
    const methods = Array.from({ length: 12 }, (_, i) => `eth_method${i}`);
    await Promise.all(
      methods.map((m, i) =>
        stores[i % stores.length]?.update('busy', (current) => ({
          settings: {
            ...current.settings,
            allow: { methods: [...(current.settings?.allow?.methods ?? []), m] },
          },
        })),
      ),
    );
    const kept = (await stores[2]?.find('busy'))?.settings?.allow?.methods ?? [];
    assert.deepEqual([...kept].sort(), [...methods].sort());
  });

  it('brings a KeyRing up to date from the NOTIFY of each change, well within a second', async (t) => {
    const ring = KeyRing.from([], null);
    const pg = hosts[0] as Postgres;
    const mirror = new KeyMirror(new PostgresKeyTable<KeySettings>(pg), ring, 600_000, () => {});
    await mirror.start((events) => new Listener(pg.settings, KEYS_CHANNEL, events));
    try {
      const { key } = await (stores[1] as DatabaseKeyStore).create('heard');
      const t0 = Date.now();
      while (!ring.accepts(key) && Date.now() - t0 < 5000) await new Promise((r) => setTimeout(r, 2));
      const createdLag = Date.now() - t0;
      await (stores[2] as DatabaseKeyStore).revoke('heard');
      const t1 = Date.now();
      while (ring.accepts(key) && Date.now() - t1 < 5000) await new Promise((r) => setTimeout(r, 2));
      const revokedLag = Date.now() - t1;
      t.diagnostic(`heard a create after ${createdLag} ms, a revoke after ${revokedLag} ms`);
      assert.ok(createdLag < 1000 && revokedLag < 1000, `${createdLag} ms, ${revokedLag} ms`);
      assert.equal(mirror.problem(), null);
    } finally {
      await mirror.close();
    }
  });
});
