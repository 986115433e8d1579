// src/evm/trie.ts builds roots in one pass over sorted keys; @ethereumjs/mpt builds the trie node by
// node. Both must give the same root: hashed keys (state and storage tries, values short enough to be
// embedded and long enough to be hashed) and index keys (transactions, receipts; past 127 and 255
// entries, where the RLP of the index grows).

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createMPT } from '@ethereumjs/mpt';
import { RLP } from '@ethereumjs/rlp';
import { orderedTrieRoot, trieRoot } from '../../src/evm/trie.ts';
import { keccak256 } from '../../src/primitives/keccak.ts';

/** Deterministic bytes: keccak chained from a seed. */
function bytesOf(seed: number, length: number): Uint8Array {
  const out = new Uint8Array(length);
  let block = keccak256(Uint8Array.of(seed >> 8, seed & 255));
  for (let i = 0; i < length; i++) {
    if (i % 32 === 0 && i > 0) block = keccak256(block);
    out[i] = block[i % 32] as number;
  }
  return out;
}

async function mptRoot(entries: Array<readonly [Uint8Array, Uint8Array]>): Promise<string> {
  const trie = await createMPT({ useKeyHashing: false });
  for (const [key, value] of entries) await trie.put(key, value);
  return Buffer.from(trie.root()).toString('hex');
}

const hex = (b: Uint8Array) => Buffer.from(b).toString('hex');

describe('trie roots over sorted keys', () => {
  it('equal @ethereumjs/mpt for hashed keys, short and long values', async () => {
    for (const n of [1, 2, 3, 17, 100, 1000]) {
      for (const valueLength of [1, 5, 40]) {
        const entries = Array.from(
          { length: n },
          (_, i) => [keccak256(bytesOf(i, 4)), bytesOf(i + 7, valueLength)] as const,
        );
        assert.equal(hex(trieRoot(entries)), await mptRoot(entries), `${n} entries of ${valueLength} bytes`);
      }
    }
  });

  it('equal @ethereumjs/mpt for RLP index keys up to 300 items', async () => {
    for (const n of [1, 2, 16, 127, 128, 129, 255, 256, 300]) {
      const values = Array.from({ length: n }, (_, i) => bytesOf(i, 1 + (i % 50)));
      const entries = values.map((v, i) => [RLP.encode(i), v] as const);
      assert.equal(hex(orderedTrieRoot(values)), await mptRoot(entries), `${n} items`);
    }
  });
});
