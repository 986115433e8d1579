import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { caughtCounts } from '../../src/core/caught.ts';
import { openPostgres, type Postgres } from '../../src/store/postgres/pool.ts';
import { readUsageRows, writeUsageBatch } from '../../src/store/postgres/usage.ts';
import { UsageBook } from '../../src/transport/access/usage.ts';
import { UsageShipper, type UsageSink } from '../../src/transport/access/usageShipper.ts';
import { type PgProxy, pgProxy } from '../support/pgProxy.ts';
import { type TestDatabase, testDatabase } from '../support/postgres.ts';

/**
 * Usage shipped to the real PostgreSQL (issue 23 item 3): batches of a book's records, each added
 * once however many times it is sent, through a proxy that loses the server's answer to a COMMIT
 * (the transaction committed, the client told it failed) or refuses connections (the database gone).
 */

function sinkOf(db: Postgres): UsageSink {
  return {
    description: db.description,
    write: async (batch) => {
      await writeUsageBatch(db, batch);
    },
  };
}

async function sums(db: Postgres): Promise<{ requests: number; credits: number }> {
  const rows = await readUsageRows(db, 0);
  return {
    requests: rows.reduce((n, r) => n + r.requests, 0),
    credits: rows.reduce((n, r) => n + r.credits, 0),
  };
}

describe('usage shipped to PostgreSQL', () => {
  let database: TestDatabase;
  let proxy: PgProxy;
  /** Through the proxy: what the shipper writes with. */
  let viaProxy: Postgres;
  /** Straight to the server: what the test reads with. */
  let direct: Postgres;
  before(async () => {
    database = await testDatabase();
    direct = await openPostgres(database.url);
    proxy = await pgProxy();
    viaProxy = await openPostgres(proxy.url(database.name), { connectTimeoutMs: 1000 });
  });
  after(async () => {
    await viaProxy?.close();
    await direct?.close();
    await proxy?.close();
    await database?.drop();
  });

  it('adds a batch once when its acknowledgement was lost and it is sent again', async () => {
    const book = new UsageBook();
    const shipper = new UsageShipper(book, sinkOf(viaProxy), {
      host: 'host-a:8545',
      writer: 'host-a:8545/lost-ack',
      flushMs: 3_600_000,
    });
    for (let i = 0; i < 7; i++) book.record('id-lost', 'lost', 'eth_call', 'ok', 80);
    for (let i = 0; i < 3; i++) book.record('id-lost', 'lost', 'eth_chainId', 'ok', 5);
    proxy.cutAfterCommit();
    await shipper.flush();
    assert.equal(proxy.cuts, 1);
    // Committed, though the shipper was told it failed: it says so, and keeps the batch.
    assert.deepEqual(await sums(direct), { requests: 10, credits: 575 });
    assert.equal(shipper.health().up, false);
    assert.match(shipper.problem() ?? '', /usage cannot be written to postgres:\/\/.*2 rows wait/);
    book.record('id-lost', 'lost', 'eth_call', 'ok', 80);
    await shipper.flush();
    assert.equal(shipper.health().up, true);
    // The lost batch again (added nothing), then the new one.
    await shipper.flush();
    assert.deepEqual(await sums(direct), { requests: 11, credits: 655 });
    const flushes = await direct.query<{ n: string }>('SELECT count(*)::text AS n FROM usage_flushes');
    assert.equal(flushes.rows[0]?.n, '2');
    await shipper.close();
    assert.deepEqual(await sums(direct), { requests: 11, credits: 655 });
  });

  it('keeps rows while the database is gone, up to its bound, and ships them when it returns', async () => {
    const book = new UsageBook();
    const lines: string[] = [];
    const shipper = new UsageShipper(book, sinkOf(viaProxy), {
      host: 'host-b:8545',
      writer: 'host-b:8545/outage',
      flushMs: 3_600_000,
      maxRows: 3,
      log: (line) => lines.push(line),
    });
    const droppedBefore = caughtCounts().get('usage-dropped') ?? 0;
    proxy.refuse(true);
    book.record('id-out', 'out', 'eth_call', 'ok', 80);
    await shipper.flush();
    assert.equal(shipper.health().up, false);
    assert.ok(shipper.problem());
    // Two more rows fill the bound (the batch sent is one); calls adding to a row still waiting
    // count; calls that need a new row are dropped.
    book.record('id-out', 'out', 'eth_chainId', 'ok', 5);
    book.record('id-out', 'out', 'eth_getLogs', 'ok', 255);
    book.record('id-out', 'out', 'eth_chainId', 'ok', 5);
    book.record('id-out', 'out', 'eth_getBalance', 'ok', 80);
    book.record('id-out', 'out', 'eth_getCode', 'ok', 80);
    book.record('id-out', 'out', 'eth_getCode', 'ok', 80);
    assert.equal(shipper.health().dropped, 3);
    assert.equal((caughtCounts().get('usage-dropped') ?? 0) - droppedBefore, 3);
    await shipper.flush();
    proxy.refuse(false);
    await shipper.flush();
    assert.equal(shipper.health().up, true);
    assert.equal(shipper.problem(), null);
    const rows = await readUsageRows(direct, 0, { host: 'host-b:8545' });
    assert.deepEqual(rows.map((r) => [r.method, r.requests, r.credits]).sort(), [
      ['eth_call', 1, 80],
      ['eth_chainId', 2, 10],
      ['eth_getLogs', 1, 255],
    ]);
    assert.equal(lines.filter((l) => /cannot be written/.test(l)).length, 1);
    assert.equal(lines.filter((l) => /written to .* again after/.test(l)).length, 1);
    await shipper.close();
  });
  it('ships once per interval under steady traffic, not a transaction after each commit', async () => {
    const book = new UsageBook();
    const writes: number[] = [];
    const sink = sinkOf(direct);
    const shipper = new UsageShipper(
      book,
      {
        description: sink.description,
        write: async (batch) => {
          writes.push(Date.now());
          await sink.write(batch);
        },
      },
      { host: 'host-c:8545', writer: 'host-c:8545/steady', flushMs: 250 },
    );
    // A request every millisecond or so for 1.5 s, on keys and methods that make new rows.
    const before = await sums(direct);
    let sent = 0;
    const until = Date.now() + 1_500;
    while (Date.now() < until) {
      book.record(`key-${sent % 3}`, `name-${sent % 3}`, sent % 2 ? 'eth_call' : 'eth_chainId', 'ok', 5);
      sent++;
      await new Promise((r) => setImmediate(r));
    }
    await shipper.close();
    // 1.5 s at 250 ms is 6 intervals, plus the close; a run that chased new rows would write after
    // every commit (dozens on this machine).
    assert.ok(writes.length <= 8, `${writes.length} writes`);
    const after = await sums(direct);
    assert.deepEqual(
      { requests: after.requests - before.requests, credits: after.credits - before.credits },
      { requests: sent, credits: 5 * sent },
    );
  });
});
