import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { hashKey, KeyFile, KeyRing } from './apiKeys.ts';

const basic = (user: string, password: string) =>
  `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;

describe('keys with settings', () => {
  const dir = mkdtempSync(join(tmpdir(), 'ethtrace-keys-'));
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('reads a keys file written before keys had settings: unlimited, no secret', () => {
    writeFileSync(
      join(dir, 'keys.json'),
      JSON.stringify({
        keys: [
          {
            name: 'old',
            prefix: 'abcdef',
            sha256: hashKey('old-key'),
            createdAt: '2026-01-01T00:00:00.000Z',
          },
        ],
      }),
    );
    const ring = KeyRing.from([], new KeyFile(dir));
    const check = ring.check('old-key', undefined);
    assert.ok(check.ok);
    assert.equal(check.entry.name, 'old');
    assert.deepEqual(check.entry.limits, { creditsPerSecond: null, burst: 0, creditsPerDay: null });
    assert.equal(ring.check('other', undefined).ok, false);
  });

  it('keeps a secret hashed and checks it as the Basic auth password', () => {
    const file = new KeyFile(dir);
    const { key, secret, stored } = file.create('s', { secret: true, settings: { creditsPerSecond: 400 } });
    assert.ok(secret && /^[0-9a-f]{64}$/.test(secret));
    const text = readFileSync(file.path, 'utf8');
    assert.ok(!text.includes(secret) && !text.includes(key));
    assert.equal(stored.secretSha256, hashKey(secret));
    const ring = KeyRing.from([], file);
    assert.deepEqual(ring.check(key, undefined), { ok: false, problem: 'secret' });
    assert.deepEqual(ring.check(key, basic('', 'wrong')), { ok: false, problem: 'secret' });
    assert.deepEqual(ring.check(key, 'Bearer x'), { ok: false, problem: 'secret' });
    assert.ok(ring.check(key, basic('', secret)).ok);
    assert.ok(ring.check(key, basic('anyone', secret)).ok);
    const entry = ring.lookup(key);
    assert.equal(entry?.limits.creditsPerSecond, 400);
  });

  it('updates, renames and drops the secret, and a ring sees it on refresh', () => {
    const file = new KeyFile(dir);
    const { key } = file.create('u', { secret: true });
    const ring = KeyRing.from([], file);
    assert.equal(ring.check(key, undefined).ok, false);
    file.update('u', { secret: false, rename: 'u2', settings: { creditsPerDay: 1000 } });
    ring.refresh();
    const check = ring.check(key, undefined);
    assert.ok(check.ok);
    assert.equal(check.entry.name, 'u2');
    assert.equal(check.entry.limits.creditsPerDay, 1000);
    assert.throws(() => file.update('u', {}), /no active key matches "u"/);
    assert.throws(() => file.update('u2', { rename: 'old' }), /a key named "old" already exists/);
    file.update('u2', { settings: {} });
    assert.equal(file.find('u2').settings, undefined);
  });
});
