import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { LruCache } from './lru.ts';

/** The keys still held, by probing each candidate (a probe refreshes it, so probe last). */
function held<K, V>(cache: LruCache<K, V>, candidates: K[]): K[] {
  return candidates.filter((k) => cache.get(k) !== undefined);
}

describe('LruCache by count', () => {
  it('holds up to its capacity and answers what was set', () => {
    const cache = new LruCache<string, number>(3);
    cache.set('a', 1);
    cache.set('b', 2);
    cache.set('c', 3);
    assert.equal(cache.size, 3);
    assert.equal(cache.get('a'), 1);
    assert.equal(cache.get('b'), 2);
    assert.equal(cache.get('c'), 3);
    assert.equal(cache.get('d'), undefined);
  });

  it('evicts the least recently set entry first', () => {
    const cache = new LruCache<string, number>(2);
    cache.set('a', 1);
    cache.set('b', 2);
    cache.set('c', 3);
    assert.equal(cache.size, 2);
    assert.deepEqual(held(cache, ['a', 'b', 'c']), ['b', 'c']);
  });

  it('a get makes the entry the most recently used', () => {
    const cache = new LruCache<string, number>(2);
    cache.set('a', 1);
    cache.set('b', 2);
    assert.equal(cache.get('a'), 1);
    cache.set('c', 3);
    // 'b' was the least recently used once 'a' was read.
    assert.deepEqual(held(cache, ['a', 'b', 'c']), ['a', 'c']);
  });

  it('a get of a missing key changes nothing', () => {
    const cache = new LruCache<string, number>(2);
    cache.set('a', 1);
    cache.set('b', 2);
    assert.equal(cache.get('zzz'), undefined);
    cache.set('c', 3);
    assert.deepEqual(held(cache, ['a', 'b', 'c']), ['b', 'c']);
  });

  it('setting an existing key replaces its value, keeps the count, and refreshes it', () => {
    const cache = new LruCache<string, number>(2);
    cache.set('a', 1);
    cache.set('b', 2);
    cache.set('a', 10);
    assert.equal(cache.size, 2);
    cache.set('c', 3);
    assert.deepEqual(held(cache, ['a', 'b', 'c']), ['a', 'c']);
    assert.equal(cache.get('a'), 10);
  });

  it('keeps falsy values (0, empty string) as entries', () => {
    const cache = new LruCache<string, number | string>(2);
    cache.set('zero', 0);
    cache.set('empty', '');
    assert.equal(cache.get('zero'), 0);
    assert.equal(cache.get('empty'), '');
    assert.equal(cache.size, 2);
  });
});

describe('LruCache by weight', () => {
  const byLength = (capacity: number) => new LruCache<string, string>(capacity, (v) => v.length);

  it('evicts oldest entries until the total weight fits', () => {
    const cache = byLength(10);
    cache.set('a', 'xxxx'); // 4
    cache.set('b', 'xxxx'); // 8
    cache.set('c', 'xx'); // 10: exactly the capacity, nothing goes
    assert.deepEqual(held(cache, ['a', 'b', 'c']), ['a', 'b', 'c']);
    cache.set('d', 'xxxxx'); // 15 → drop a (11) → drop b (7)
    assert.deepEqual(held(cache, ['a', 'b', 'c', 'd']), ['c', 'd']);
  });

  it('evicts in recency order, counting gets', () => {
    const cache = byLength(10);
    cache.set('a', 'xxxx');
    cache.set('b', 'xxxx');
    cache.get('a');
    cache.set('c', 'xxxx'); // 12 → drop b
    assert.deepEqual(held(cache, ['a', 'b', 'c']), ['a', 'c']);
  });

  it('stores an entry exactly as heavy as the capacity, evicting all else', () => {
    const cache = byLength(5);
    cache.set('a', 'x');
    cache.set('b', 'xxxxx');
    assert.deepEqual(held(cache, ['a', 'b']), ['b']);
  });

  it('does not store an entry heavier than the capacity, and evicts nothing for it', () => {
    const cache = byLength(5);
    cache.set('a', 'xx');
    cache.set('b', 'xx');
    cache.set('big', 'xxxxxx');
    assert.equal(cache.get('big'), undefined);
    assert.equal(cache.size, 2);
    assert.deepEqual(held(cache, ['a', 'b']), ['a', 'b']);
  });

  it('replacing a key counts the new weight, not the old one', () => {
    const cache = byLength(10);
    cache.set('a', 'xxxxxxxx'); // 8
    cache.set('a', 'x'); // 1: were 8 still counted, adding 'b' (5) would evict
    cache.set('b', 'xxxxx');
    assert.deepEqual(held(cache, ['a', 'b']), ['a', 'b']);
    cache.set('b', 'xxxxxxxxx'); // 1 + 9 = 10, fits
    assert.deepEqual(held(cache, ['a', 'b']), ['a', 'b']);
    cache.set('c', 'x'); // 11 → drop the oldest
    assert.equal(cache.size, 2);
  });

  it('replacing a key with a heavier value evicts others to make room', () => {
    const cache = byLength(10);
    cache.set('a', 'xxx');
    cache.set('b', 'xxx');
    cache.set('b', 'xxxxxxxx'); // 3 + 8 = 11 → drop a
    assert.deepEqual(held(cache, ['a', 'b']), ['b']);
    assert.equal(cache.get('b'), 'xxxxxxxx');
  });

  it('replacing a key with a value heavier than the capacity keeps the previous value', () => {
    // The oversized value is ignored outright (the early return), so the key keeps its old value.
    // Every caller keys by content (a block hash, a block number checked against its hash), where
    // the old value is as good as the new; a caller whose values change per key would see it stale.
    const cache = byLength(5);
    cache.set('a', 'old');
    cache.set('a', 'far too heavy');
    assert.equal(cache.get('a'), 'old');
    assert.equal(cache.size, 1);
  });
});
