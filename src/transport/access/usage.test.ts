import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { caughtCounts, onCaught } from '../../core/caught.ts';
import {
  BOOK_MS,
  MAX_ROWS_PER_KEY_MINUTE,
  mergeRows,
  readUsage,
  totalsOf,
  UsageBook,
  UsageLog,
} from './usage.ts';

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

  it('counts method names the method table does not have as "other", and error codes outside JSON-RPC\'s', () => {
    const c = { t: T0 };
    const book = new UsageBook(() => c.t);
    for (let i = 0; i < 5000; i++) book.record('id-a', 'alice', `m${i}_${'x'.repeat(100)}`, '-32601', 80);
    book.record('id-a', 'alice', 'eth_call', 'ok', 80);
    book.record('id-a', 'alice', 'eth_call', '12345', 80);
    book.record('id-a', 'alice', 'eth_call', '3', 80);
    book.record('id-a', 'alice', 'eth_subscription:newHeads', 'ok', 50);
    assert.deepEqual(
      book.rows(T0).map((r) => [r.method, r.status, r.requests, r.credits]),
      [
        ['other', '-32601', 5000, 400_000],
        ['eth_call', 'ok', 1, 80],
        ['eth_call', 'other', 1, 80],
        ['eth_call', '3', 1, 80],
        ['eth_subscription:newHeads', 'ok', 1, 50],
      ],
    );
    // Given the served table, a method outside it is "other" too (as /metrics labels it).
    const upstreamless = new UsageBook(() => c.t, ['eth_call']);
    upstreamless.record('id-a', 'alice', 'eth_getLogs', 'ok', 255);
    assert.equal(upstreamless.rows(T0)[0]?.method, 'other');
  });

  it('keeps at most MAX_ROWS_PER_KEY_MINUTE rows of a key per minute, the rest under "other"', () => {
    const c = { t: T0 };
    const book = new UsageBook(() => c.t);
    const codes = ['ok', '-32000', '-32602', '3', '-32005'] as const;
    const methods = ['eth_call', 'eth_getBalance', 'eth_getCode', 'eth_getStorageAt', 'eth_getLogs'];
    const names = [...methods, 'trace_call', 'trace_block', 'eth_getProof', 'eth_estimateGas'];
    const more = ['eth_getTransactionCount', 'eth_blockNumber', 'eth_chainId', 'eth_gasPrice', 'net_version'];
    let calls = 0;
    for (const method of [...names, ...more])
      for (const status of codes) {
        book.record('id-a', 'alice', method, status, 1);
        calls++;
      }
    book.record('id-b', 'bob', 'eth_call', 'ok', 1);
    const alice = book.rows(T0, { keyId: 'id-a' });
    assert.ok(calls > MAX_ROWS_PER_KEY_MINUTE);
    assert.ok(alice.length <= MAX_ROWS_PER_KEY_MINUTE + codes.length, `${alice.length} rows`);
    assert.equal(
      alice.reduce((n, r) => n + r.requests, 0),
      calls,
    );
    const folded = totalsOf(
      alice.filter((r) => r.method === 'other'),
      'status',
    );
    assert.ok(folded.length > 0);
    // Another key, and the next minute, have rows of their own.
    assert.equal(book.rows(T0, { keyId: 'id-b' })[0]?.method, 'eth_call');
    c.t += 60_000;
    book.record('id-a', 'alice', 'net_version', '3', 1);
    assert.equal(book.rows(T0 + 60_000)[0]?.method, 'net_version');
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

  it('rewrites the running minute only when something was recorded since', () => {
    const c = { t: T0 + 5_000 };
    const own = join(dir, 'unchanged');
    const book = new UsageBook(() => c.t);
    const log = new UsageLog(own, book, () => c.t);
    book.record('id-a', 'alice', 'eth_call', 'ok', 80);
    log.flush();
    const snapshot = join(own, 'usage', readdirSync(join(own, 'usage'))[0] ?? '');
    const written = statSync(snapshot).ino;
    log.flush();
    assert.equal(statSync(snapshot).ino, written);
    book.record('id-a', 'alice', 'eth_call', 'ok', 80);
    log.flush();
    assert.notEqual(statSync(snapshot).ino, written);
    log.close();
  });

  it('merges the rows of several processes, and skips a torn line', () => {
    const other = join(dir, 'usage', '2026-03-01.999-1.jsonl');
    writeFileSync(
      other,
      `${JSON.stringify({ minute: new Date(T0).toISOString(), keyId: 'id-a', key: 'alice', method: 'eth_call', status: 'ok', requests: 3, credits: 240 })}\n{"minute":"2026-03-01T12:0`,
    );
    const lines: string[] = [];
    const stop = onCaught((site, line) => lines.push(`${site}: ${line}`));
    const before = caughtCounts().get('usage-line') ?? 0;
    try {
      const merged = mergeRows(readUsage(dir, T0)).filter((r) => r.minute === T0);
      assert.deepEqual(
        merged.map((r) => [r.key, r.requests, r.credits]),
        [['alice', 4, 320]],
      );
      // The torn line is counted and said, once: reading the same file again says nothing new.
      readUsage(dir, T0);
    } finally {
      stop();
    }
    assert.equal((caughtCounts().get('usage-line') ?? 0) - before, 1);
    assert.deepEqual(lines, [`usage-line: usage: 1 line(s) of ${other} are not usage rows and are left out`]);
  });
});
