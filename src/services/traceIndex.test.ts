import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { FlatBlockTraces, FlatEntry } from '../exec/api.ts';
import { type AddressFilter, entryMatches, TraceIndex } from './traceIndex.ts';

const A = `0x${'aa'.repeat(20)}`;
const B = `0x${'bb'.repeat(20)}`;
const C = `0x${'cc'.repeat(20)}`;
const D = `0x${'dd'.repeat(20)}`;
const MINER = `0x${'ee'.repeat(20)}`;
const NOBODY = `0x${'99'.repeat(20)}`;

const blockHash = (n: number) => `0x${n.toString(16).padStart(64, '0')}`;

function entry(tx: number, from: string | null, to: string | null, path = ''): FlatEntry {
  return { json: '{}', tx, path, from, to };
}

/** A block of two transactions: A calls B (which calls C), D creates a contract that failed; a reward. */
function block(n: number): FlatBlockTraces {
  return {
    blockHash: blockHash(n),
    blockNumber: n,
    txStart: [0, 2, 3],
    entries: [entry(0, A, B), entry(0, B, C, '0'), entry(1, D, null), entry(-1, null, MINER)],
  };
}

function filter(from: string[], to: string[], mode: AddressFilter['mode'] = 'union'): AddressFilter {
  return { from: new Set(from), to: new Set(to), mode };
}

describe('TraceIndex.mayMatch', () => {
  it('is true for a block not indexed, whatever the filter', () => {
    const index = new TraceIndex(1 << 20);
    index.add(block(1));
    assert.equal(index.mayMatch(blockHash(2), filter([NOBODY], [NOBODY])), true);
    assert.equal(index.mayMatch(blockHash(2), filter([NOBODY], [], 'intersection')), true);
  });

  it('is true with no addresses in the filter, even for a block where nothing could match', () => {
    const index = new TraceIndex(1 << 20);
    index.add({ blockHash: blockHash(1), blockNumber: 1, txStart: [0], entries: [] });
    assert.equal(index.mayMatch(blockHash(1), filter([], [])), true);
    assert.equal(index.mayMatch(blockHash(1), filter([], [], 'intersection')), true);
  });

  it('an empty indexed block matches no address', () => {
    const index = new TraceIndex(1 << 20);
    index.add({ blockHash: blockHash(1), blockNumber: 1, txStart: [0], entries: [] });
    assert.equal(index.mayMatch(blockHash(1), filter([A], [])), false);
    assert.equal(index.mayMatch(blockHash(1), filter([], [A])), false);
  });

  it('with only `from` given, tests the senders of every entry, internal calls included', () => {
    const index = new TraceIndex(1 << 20);
    index.add(block(1));
    assert.equal(index.mayMatch(blockHash(1), filter([A], [])), true);
    assert.equal(index.mayMatch(blockHash(1), filter([B], [])), true, 'B sends the internal call');
    assert.equal(index.mayMatch(blockHash(1), filter([D], [])), true);
    assert.equal(index.mayMatch(blockHash(1), filter([C], [])), false, 'C only receives');
    assert.equal(index.mayMatch(blockHash(1), filter([MINER], [])), false, 'a reward has no sender');
    assert.equal(index.mayMatch(blockHash(1), filter([NOBODY, C], [])), false);
    assert.equal(index.mayMatch(blockHash(1), filter([NOBODY, A], [])), true, 'any one address of the list');
  });

  it('with only `to` given, tests the recipients, reward authors included', () => {
    const index = new TraceIndex(1 << 20);
    index.add(block(1));
    assert.equal(index.mayMatch(blockHash(1), filter([], [B])), true);
    assert.equal(index.mayMatch(blockHash(1), filter([], [C])), true);
    assert.equal(index.mayMatch(blockHash(1), filter([], [MINER])), true);
    assert.equal(index.mayMatch(blockHash(1), filter([], [A])), false, 'A only sends');
    assert.equal(index.mayMatch(blockHash(1), filter([], [D])), false, "D's creation failed: no recipient");
  });

  it('with one list given, union and intersection mean the same', () => {
    const index = new TraceIndex(1 << 20);
    index.add(block(1));
    for (const mode of ['union', 'intersection'] as const) {
      assert.equal(index.mayMatch(blockHash(1), filter([A], [], mode)), true, mode);
      assert.equal(index.mayMatch(blockHash(1), filter([C], [], mode)), false, mode);
      assert.equal(index.mayMatch(blockHash(1), filter([], [C], mode)), true, mode);
      assert.equal(index.mayMatch(blockHash(1), filter([], [A], mode)), false, mode);
    }
  });

  it('union: either list hitting is enough', () => {
    const index = new TraceIndex(1 << 20);
    index.add(block(1));
    assert.equal(index.mayMatch(blockHash(1), filter([A], [NOBODY])), true);
    assert.equal(index.mayMatch(blockHash(1), filter([NOBODY], [C])), true);
    assert.equal(index.mayMatch(blockHash(1), filter([C], [A])), false, 'C never sends, A never receives');
  });

  it('intersection: both lists must hit', () => {
    const index = new TraceIndex(1 << 20);
    index.add(block(1));
    assert.equal(index.mayMatch(blockHash(1), filter([A], [B], 'intersection')), true);
    assert.equal(index.mayMatch(blockHash(1), filter([A], [NOBODY], 'intersection')), false);
    assert.equal(index.mayMatch(blockHash(1), filter([NOBODY], [B], 'intersection')), false);
    // A block-level index over-approximates: A sends one entry and C receives another, so the
    // block may match though no single entry does; entryMatches then decides per entry.
    assert.equal(index.mayMatch(blockHash(1), filter([A], [C], 'intersection')), true);
  });

  it('indexes each block separately', () => {
    const index = new TraceIndex(1 << 20);
    index.add(block(1));
    index.add({
      blockHash: blockHash(2),
      blockNumber: 2,
      txStart: [0, 1],
      entries: [entry(0, NOBODY, NOBODY)],
    });
    assert.equal(index.mayMatch(blockHash(1), filter([NOBODY], [])), false);
    assert.equal(index.mayMatch(blockHash(2), filter([NOBODY], [])), true);
    assert.equal(index.mayMatch(blockHash(2), filter([A], [])), false);
  });

  it('forgets the least recently used blocks past its byte capacity; a forgotten block may match', () => {
    // block(n) indexes senders {A, B, D} and recipients {B, C, MINER}: weighed 128 + 6 × 100 = 728
    // bytes. Two blocks fit in 1500, three do not.
    const index = new TraceIndex(1500);
    index.add(block(1));
    index.add(block(2));
    assert.equal(index.mayMatch(blockHash(1), filter([NOBODY], [])), false, 'still indexed');
    assert.equal(index.mayMatch(blockHash(2), filter([NOBODY], [])), false, 'still indexed');
    // mayMatch read block 2 last: adding block 3 evicts block 1.
    index.add(block(3));
    assert.equal(index.mayMatch(blockHash(1), filter([NOBODY], [])), true, 'evicted: unknown again');
    assert.equal(index.mayMatch(blockHash(2), filter([NOBODY], [])), false);
    assert.equal(index.mayMatch(blockHash(3), filter([NOBODY], [])), false);
  });

  it('a lookup refreshes the block, so the other one is evicted', () => {
    const index = new TraceIndex(1500);
    index.add(block(1));
    index.add(block(2));
    assert.equal(index.mayMatch(blockHash(1), filter([NOBODY], [])), false);
    index.add(block(3));
    assert.equal(index.mayMatch(blockHash(2), filter([NOBODY], [])), true, 'evicted');
    assert.equal(index.mayMatch(blockHash(1), filter([NOBODY], [])), false);
  });

  it('does not index a block whose sets alone outweigh the capacity', () => {
    const index = new TraceIndex(500); // block(1) weighs 728
    index.add(block(1));
    assert.equal(index.mayMatch(blockHash(1), filter([NOBODY], [])), true);
  });
});

describe('entryMatches', () => {
  const call = { from: A, to: B };
  const reward = { from: null, to: MINER };
  const failedCreate = { from: D, to: null };

  it('with no lists, every entry matches, rewards included', () => {
    assert.equal(entryMatches(call, filter([], [])), true);
    assert.equal(entryMatches(reward, filter([], [])), true);
    assert.equal(entryMatches(reward, filter([], [], 'intersection')), true);
  });

  it('tests from against fromAddress and to against toAddress', () => {
    assert.equal(entryMatches(call, filter([A], [])), true);
    assert.equal(entryMatches(call, filter([B], [])), false);
    assert.equal(entryMatches(call, filter([], [B])), true);
    assert.equal(entryMatches(call, filter([], [A])), false);
  });

  it('an entry without a sender (a reward) never matches a from list', () => {
    assert.equal(entryMatches(reward, filter([MINER], [])), false);
    assert.equal(entryMatches(reward, filter([], [MINER])), true);
    assert.equal(entryMatches(reward, filter([NOBODY], [MINER])), true, 'union: the to list suffices');
    assert.equal(entryMatches(reward, filter([NOBODY], [MINER], 'intersection')), false);
  });

  it('an entry without a recipient (a failed creation) never matches a to list', () => {
    assert.equal(entryMatches(failedCreate, filter([], [D])), false);
    assert.equal(entryMatches(failedCreate, filter([D], [])), true);
    assert.equal(entryMatches(failedCreate, filter([D], [NOBODY], 'intersection')), false);
  });

  it('union and intersection with both lists', () => {
    assert.equal(entryMatches(call, filter([A], [NOBODY])), true);
    assert.equal(entryMatches(call, filter([NOBODY], [B])), true);
    assert.equal(entryMatches(call, filter([NOBODY], [NOBODY])), false);
    assert.equal(entryMatches(call, filter([A], [B], 'intersection')), true);
    assert.equal(entryMatches(call, filter([A], [NOBODY], 'intersection')), false);
    assert.equal(entryMatches(call, filter([NOBODY], [B], 'intersection')), false);
  });
});
