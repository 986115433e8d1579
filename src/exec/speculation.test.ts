import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { StateAccess } from './sessionTypes.ts';
import {
  ConflictBoard,
  type PartResult,
  type PartRun,
  partitionBySender,
  type SpeculationStats,
  speculate,
  validPrefix,
} from './speculation.ts';
import { accessKeys } from './stateAccess.ts';

// Account keys are unprefixed 40-digit hex addresses (see accessKeys in stateAccess.ts).
const ALICE = 'a1'.repeat(20);
const BOB = 'b0'.repeat(20);
const TOKEN = 'c0'.repeat(20);
const SLOT_0 = '00'.repeat(32);
const SLOT_1 = `${'00'.repeat(31)}01`;

const access = (reads: string[] = [], writes: string[] = []): StateAccess => ({ reads, writes });

describe('partitionBySender', () => {
  it('is null for fewer than two ways', () => {
    assert.equal(partitionBySender(['a', 'b', 'c'], 1), null);
    assert.equal(partitionBySender(['a', 'b', 'c'], 0), null);
  });

  it('is null for fewer than two senders', () => {
    assert.equal(partitionBySender([], 4), null);
    assert.equal(partitionBySender(['a'], 4), null);
    assert.equal(partitionBySender(['a', 'a', 'a'], 4), null);
  });

  it('splits two senders into two parts, each in request order', () => {
    assert.deepEqual(partitionBySender(['a', 'b', 'a', 'b', 'a'], 2), [
      [0, 2, 4],
      [1, 3],
    ]);
  });

  it('makes no more parts than senders, nor than ways', () => {
    assert.equal(partitionBySender(['a', 'b', 'c'], 8)?.length, 3);
    assert.equal(partitionBySender(['a', 'b', 'c', 'd', 'e'], 2)?.length, 2);
  });

  it("keeps each sender's calls in one part", () => {
    const senders = ['a', 'b', 'c', 'a', 'd', 'b', 'e', 'a', 'c', 'f', 'f', 'g'];
    const parts = partitionBySender(senders, 3);
    assert.ok(parts);
    assert.equal(parts.length, 3);
    const partOfSender = new Map<string, number>();
    for (const [p, part] of parts.entries()) {
      for (const index of part) {
        const sender = senders[index] as string;
        const seen = partOfSender.get(sender);
        if (seen !== undefined) assert.equal(seen, p, `sender ${sender} split across parts`);
        partOfSender.set(sender, p);
      }
    }
    // Every index exactly once, each part ascending.
    assert.deepEqual(
      parts.flat().sort((x, y) => x - y),
      senders.map((_, i) => i),
    );
    for (const part of parts)
      assert.deepEqual(
        part,
        [...part].sort((x, y) => x - y),
      );
  });

  it('balances the parts by count, biggest senders first', () => {
    // a: 3 calls, b, c, d: 1 each. a fills one part; the single calls go to the other.
    assert.deepEqual(partitionBySender(['a', 'a', 'a', 'b', 'c', 'd'], 2), [
      [0, 1, 2],
      [3, 4, 5],
    ]);
    // a: 4, b: 3, c: 2, d: 2 over two parts, each sender to the smaller part: a | b, then c joins
    // b (5), then d joins a (6); not a+b (7) against c+d (4).
    assert.deepEqual(partitionBySender(['a', 'b', 'c', 'd', 'a', 'b', 'c', 'd', 'a', 'b', 'a'], 2), [
      [0, 3, 4, 7, 8, 10],
      [1, 2, 5, 6, 9],
    ]);
  });

  it('one sender per part when there are as many ways as senders', () => {
    assert.deepEqual(partitionBySender(['x', 'y', 'z', 'y'], 3), [[1, 3], [0], [2]]);
  });
});

describe('validPrefix', () => {
  it('is the count when no call reads what another part wrote', () => {
    const parts: PartRun[] = [
      { indices: [0, 2], access: [access([ALICE], [ALICE]), access([ALICE], [ALICE])] },
      { indices: [1, 3], access: [access([BOB], [BOB]), access([BOB], [BOB])] },
    ];
    assert.equal(validPrefix(parts, 4), 4);
  });

  it('stops at the first call that reads a key last written by another part', () => {
    const parts: PartRun[] = [
      { indices: [0, 2], access: [access([ALICE], [ALICE, TOKEN]), access([ALICE], [ALICE])] },
      // Call 1 reads TOKEN, which call 0 (the other part) changed: its part did not see that.
      { indices: [1, 3], access: [access([BOB, TOKEN], [BOB]), access([BOB], [BOB])] },
    ];
    assert.equal(validPrefix(parts, 4), 1);
  });

  it('a read of a key the same part wrote last is fine', () => {
    const parts: PartRun[] = [
      { indices: [0, 2], access: [access([ALICE], [TOKEN]), access([TOKEN], [TOKEN])] },
      { indices: [1], access: [access([BOB], [BOB])] },
    ];
    assert.equal(validPrefix(parts, 3), 3);
  });

  it('a write by another part later in request order does not affect an earlier read', () => {
    const parts: PartRun[] = [
      { indices: [0], access: [access([TOKEN], [ALICE])] },
      { indices: [1], access: [access([BOB], [TOKEN])] },
    ];
    assert.equal(validPrefix(parts, 2), 2);
  });

  it('the last writer decides: a part reading its own earlier write after another part wrote it stops', () => {
    const parts: PartRun[] = [
      { indices: [0, 2], access: [access([], [TOKEN]), access([TOKEN], [])] },
      { indices: [1], access: [access([], [TOKEN])] },
    ];
    assert.equal(validPrefix(parts, 3), 2);
  });

  it('a part that wrote the key last may read it, whoever wrote it before', () => {
    const parts: PartRun[] = [
      { indices: [0, 2], access: [access([], [TOKEN]), access([TOKEN], [])] },
      { indices: [1, 3], access: [access([], [TOKEN]), access([], [])] },
    ];
    // Call 2 (part 0) reads TOKEN last written by call 1 (part 1): stops at 2 regardless of call 3.
    assert.equal(validPrefix(parts, 4), 2);
    const rewritten: PartRun[] = [
      { indices: [0, 3], access: [access([], [TOKEN]), access([TOKEN], [])] },
      { indices: [1, 2], access: [access([], [TOKEN]), access([TOKEN], [])] },
    ];
    // Call 2 (part 1) reads what call 1 (part 1) wrote last: fine; call 3 (part 0) then stops.
    assert.equal(validPrefix(rewritten, 4), 3);
  });

  it('slot keys are compared whole: another slot of the same account does not conflict', () => {
    const parts: PartRun[] = [
      { indices: [0], access: [access([], [accessKeys.slot(TOKEN, SLOT_0)])] },
      { indices: [1], access: [access([accessKeys.slot(TOKEN, SLOT_1)], [])] },
    ];
    assert.equal(validPrefix(parts, 2), 2);
    const same: PartRun[] = [
      { indices: [0], access: [access([], [accessKeys.slot(TOKEN, SLOT_0)])] },
      { indices: [1], access: [access([accessKeys.slot(TOKEN, SLOT_0)], [])] },
    ];
    assert.equal(validPrefix(same, 2), 1);
  });

  it("a slot read conflicts with another part's wipe of that account's storage", () => {
    const parts: PartRun[] = [
      { indices: [0], access: [access([], [accessKeys.wipe(TOKEN)])] },
      { indices: [1], access: [access([accessKeys.slot(TOKEN, SLOT_1)], [])] },
    ];
    assert.equal(accessKeys.wipeOf(accessKeys.slot(TOKEN, SLOT_1)), accessKeys.wipe(TOKEN));
    assert.equal(validPrefix(parts, 2), 1);
  });

  it("a wipe of another account, or the same part's wipe, does not conflict", () => {
    const other: PartRun[] = [
      { indices: [0], access: [access([], [accessKeys.wipe(ALICE)])] },
      { indices: [1], access: [access([accessKeys.slot(TOKEN, SLOT_1)], [])] },
    ];
    assert.equal(validPrefix(other, 2), 2);
    const own: PartRun[] = [
      {
        indices: [0, 2],
        access: [access([], [accessKeys.wipe(TOKEN)]), access([accessKeys.slot(TOKEN, SLOT_1)])],
      },
      { indices: [1], access: [access([BOB], [BOB])] },
    ];
    assert.equal(validPrefix(own, 3), 3);
  });

  it("an account read does not depend on a wipe of the account's storage", () => {
    const parts: PartRun[] = [
      { indices: [0], access: [access([], [accessKeys.wipe(TOKEN)])] },
      { indices: [1], access: [access([TOKEN], [])] },
    ];
    assert.equal(validPrefix(parts, 2), 2);
  });

  it('an unfinished part stops at its first missing call', () => {
    const parts: PartRun[] = [
      { indices: [0, 2, 4], access: [access([ALICE]), access([ALICE])] }, // call 4 missing
      { indices: [1, 3, 5], access: [access([BOB]), access([BOB]), access([BOB])] },
    ];
    assert.equal(validPrefix(parts, 6), 4);
    const none: PartRun[] = [
      { indices: [0, 2], access: [access([ALICE]), access([ALICE])] },
      { indices: [1, 3], access: [] },
    ];
    assert.equal(validPrefix(none, 4), 1);
  });

  it('a conflict before the unfinished call wins', () => {
    const parts: PartRun[] = [
      { indices: [0, 2], access: [access([], [TOKEN])] },
      { indices: [1], access: [access([TOKEN])] },
    ];
    assert.equal(validPrefix(parts, 3), 1);
  });
});

describe('speculate', () => {
  const bytes = (text: string) => Buffer.from(text);
  const text = (results: Uint8Array[] | null) => results?.map((r) => Buffer.from(r).toString());

  it('runs every part and answers the results in request order', async () => {
    const parts = [
      [0, 2, 3],
      [1, 4],
    ];
    const asked: number[][] = [];
    const stats: SpeculationStats = { speculated: 0, fellBack: 0 };
    const results = await speculate(
      parts,
      5,
      async (indices): Promise<PartResult> => {
        asked.push(indices);
        return {
          results: indices.map((i) => bytes(`r${i}`)),
          access: indices.map(() => access([ALICE], [])),
        };
      },
      stats,
    );
    assert.deepEqual(text(results), ['r0', 'r1', 'r2', 'r3', 'r4']);
    assert.deepEqual(
      asked.sort((a, b) => (a[0] as number) - (b[0] as number)),
      parts,
    );
    assert.deepEqual(stats, { speculated: 1, fellBack: 0 });
  });

  it('runs the parts at once, not one after another', async () => {
    let running = 0;
    let most = 0;
    const stats: SpeculationStats = { speculated: 0, fellBack: 0 };
    await speculate(
      [[0], [1], [2]],
      3,
      async (indices) => {
        running++;
        most = Math.max(most, running);
        await new Promise((resolve) => setTimeout(resolve, 10));
        running--;
        return { results: [bytes('x')], access: indices.map(() => access()) };
      },
      stats,
    );
    assert.equal(most, 3);
  });

  it('falls back (null) on a conflict, counting it', async () => {
    const stats: SpeculationStats = { speculated: 3, fellBack: 1 };
    const results = await speculate(
      [[0], [1]],
      2,
      async ([index]) =>
        index === 0
          ? { results: [bytes('a')], access: [access([], [TOKEN])] }
          : { results: [bytes('b')], access: [access([TOKEN], [])] },
      stats,
    );
    assert.equal(results, null);
    assert.deepEqual(stats, { speculated: 4, fellBack: 2 });
  });

  it('falls back when a part did not finish', async () => {
    const stats: SpeculationStats = { speculated: 0, fellBack: 0 };
    const results = await speculate(
      [[0, 2], [1]],
      3,
      async (indices) =>
        indices.length === 2
          ? { results: [bytes('a')], access: [access()] }
          : { results: [bytes('b')], access: [access()] },
      stats,
    );
    assert.equal(results, null);
    assert.deepEqual(stats, { speculated: 1, fellBack: 1 });
  });

  it('passes a failing part on as a rejection', async () => {
    const stats: SpeculationStats = { speculated: 0, fellBack: 0 };
    await assert.rejects(
      speculate(
        [[0], [1]],
        2,
        async ([index]) => {
          if (index === 1) throw new Error('worker died');
          return { results: [bytes('a')], access: [access()] };
        },
        stats,
      ),
      /worker died/,
    );
    assert.deepEqual(stats, { speculated: 1, fellBack: 0 });
  });
});

describe('ConflictBoard', () => {
  const slot = (owner: string, key: string) => accessKeys.slot(owner, key);
  const boards = () => {
    const buffer = ConflictBoard.create(2, 8);
    return [new ConflictBoard(buffer, 0), new ConflictBoard(buffer, 1)] as const;
  };

  it('lets parts touching different keys go on', () => {
    const [a, b] = boards();
    assert.equal(a.post(0, access([ALICE, slot(TOKEN, SLOT_0)], [ALICE, slot(TOKEN, SLOT_0)])), true);
    assert.equal(b.post(1, access([BOB, slot(TOKEN, SLOT_1)], [BOB, slot(TOKEN, SLOT_1)])), true);
    assert.equal(a.post(2, access([ALICE, slot(TOKEN, SLOT_0)], [slot(TOKEN, SLOT_0)])), true);
    assert.equal(a.lost || b.lost, false);
  });

  it('stops every part when one reads what another changed at a lower index, whichever posts first', () => {
    const [a, b] = boards();
    assert.equal(a.post(0, access([], [slot(TOKEN, SLOT_0)])), true);
    assert.equal(b.post(1, access([slot(TOKEN, SLOT_0)], [])), false);
    assert.equal(a.lost, true);
    const [c, d] = boards();
    assert.equal(d.post(1, access([slot(TOKEN, SLOT_0)], [])), true);
    assert.equal(c.post(0, access([], [slot(TOKEN, SLOT_0)])), false);
    assert.equal(d.lost, true);
  });

  it('does not stop when the change comes later in request order than the read', () => {
    const [a, b] = boards();
    assert.equal(a.post(0, access([slot(TOKEN, SLOT_0)], [])), true);
    assert.equal(b.post(1, access([], [slot(TOKEN, SLOT_0)])), true);
  });

  it('a part reading its own changes is fine', () => {
    const [a] = boards();
    assert.equal(a.post(0, access([ALICE], [ALICE])), true);
    assert.equal(a.post(3, access([ALICE], [ALICE])), true);
  });

  it("a slot read conflicts with another part's earlier wipe of the account's storage", () => {
    const [a, b] = boards();
    assert.equal(a.post(0, access([], [accessKeys.wipe(TOKEN)])), true);
    assert.equal(b.post(1, access([slot(TOKEN, SLOT_1)], [])), false);
  });
});
