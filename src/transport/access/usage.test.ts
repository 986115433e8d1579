import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { BOOK_MS, mergeRows, readUsage, UsageBook, UsageLog } from './usage.ts';

const T0 = Date.parse('2026-03-01T12:00:00Z');

describe('UsageBook', () => {
  it('aggregates per minute, key, method and status, and answers the dashboard', () => {
    const c = { t: T0 };
    const book = new UsageBook(() => c.t);
    book.record('id-a', 'alice', 'eth_call', 'ok', 80);
    book.record('id-a', 'alice', 'eth_call', 'ok', 80);
    book.record('id-a', 'alice', 'eth_call', 'refused-rate', 0);
    book.record('id-b', 'bob', 'eth_getLogs', '-32000', 255);
    c.t += 60_000;
    book.record('id-a', 'alice', 'eth_chainId', 'ok', 5);
    assert.deepEqual(book.perMinute(T0), [
      { minute: T0, requests: 4, credits: 415 },
      { minute: T0 + 60_000, requests: 1, credits: 5 },
    ]);
    assert.deepEqual(book.perMinute(T0, { keyId: 'id-a', method: 'eth_call' }), [
      { minute: T0, requests: 3, credits: 160 },
    ]);
    assert.deepEqual(book.totals(T0, 'key'), [
      { name: 'bob', requests: 1, credits: 255 },
      { name: 'alice', requests: 4, credits: 165 },
    ]);
    assert.deepEqual(book.failures(T0), [
      { name: '-32000', requests: 1, credits: 255 },
      { name: 'refused-rate', requests: 1, credits: 0 },
    ]);
    assert.equal(book.rows(T0 + 60_000).length, 1);
  });

  it('keeps one day', () => {
    const c = { t: T0 };
    const book = new UsageBook(() => c.t);
    book.record('id', 'k', 'eth_call', 'ok', 80);
    c.t += BOOK_MS;
    book.record('id', 'k', 'eth_call', 'ok', 80);
    assert.equal(book.rows(0).length, 1);
  });
});

describe('UsageLog and readUsage', () => {
  const dir = mkdtempSync(join(tmpdir(), 'ethtrace-usage-'));
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('appends finished minutes, snapshots the running one, and reads both without double counting', () => {
    const c = { t: T0 + 5_000 };
    const book = new UsageBook(() => c.t);
    const log = new UsageLog(dir, book, () => c.t);
    book.record('id-a', 'alice', 'eth_call', 'ok', 80);
    log.flush();
    // The running minute is visible from another process at once.
    assert.deepEqual(
      readUsage(dir, T0).map((r) => [r.key, r.requests, r.credits]),
      [['alice', 1, 80]],
    );
    c.t += 60_000;
    book.record('id-a', 'alice', 'eth_call', 'ok', 80);
    log.flush();
    const rows = readUsage(dir, T0);
    assert.deepEqual(
      rows.map((r) => [r.minute - T0, r.requests]),
      [
        [0, 1],
        [60_000, 1],
      ],
    );
    // A snapshot that still holds a minute already in the log (a flush between the two reads) is
    // not counted twice.
    const snapshot = readdirSync(join(dir, 'usage')).find((n) => n.startsWith('current.')) ?? '';
    const first = readFileSync(
      join(dir, 'usage', readdirSync(join(dir, 'usage')).find((n) => n.endsWith('.jsonl')) ?? ''),
      'utf8',
    );
    const running = readFileSync(join(dir, 'usage', snapshot), 'utf8');
    writeFileSync(join(dir, 'usage', snapshot), first + running);
    assert.equal(
      readUsage(dir, T0).reduce((n, r) => n + r.requests, 0),
      2,
    );
    log.close();
    assert.ok(!readdirSync(join(dir, 'usage')).some((n) => n.startsWith('current.')));
    assert.equal(
      readUsage(dir, T0).reduce((n, r) => n + r.requests, 0),
      2,
    );
    assert.equal(readUsage(dir, T0 + 60_000).length, 1);
  });

  it('merges the rows of several processes, and skips a torn line', () => {
    const other = join(dir, 'usage', '2026-03-01.999-1.jsonl');
    writeFileSync(
      other,
      `${JSON.stringify({ minute: new Date(T0).toISOString(), keyId: 'id-a', key: 'alice', method: 'eth_call', status: 'ok', requests: 3, credits: 240 })}\n{"minute":"2026-03-01T12:0`,
    );
    const merged = mergeRows(readUsage(dir, T0)).filter((r) => r.minute === T0);
    assert.deepEqual(
      merged.map((r) => [r.key, r.requests, r.credits]),
      [['alice', 4, 320]],
    );
  });
});
