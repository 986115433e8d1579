// src/evm/stateTrie.ts against @ethereumjs/mpt: the same roots after every round of puts and
// deletes (each round applied on the unstored trie of the round before, as a block applies changes
// on top of a dev chain's own writes), and the nodes it hands over are all a fresh trie needs to read
// every key back from the store, and nothing else.

import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { describe, it } from 'node:test';
import { MerklePatriciaTrie } from '@ethereumjs/mpt';
import { bytesToHex } from '@ethereumjs/util';
import { nibbles, StateTrie, storedRoot, type TrieNode } from '../../src/evm/stateTrie.ts';

/** A deterministic byte source, so a failure reproduces. */
function rng(seed: number) {
  let s = seed >>> 0;
  return (n: number) => {
    const out = new Uint8Array(n);
    for (let i = 0; i < n; i++) {
      s = (s * 1664525 + 1013904223) >>> 0;
      out[i] = s >>> 24;
    }
    return out;
  };
}

describe('StateTrie', () => {
  for (const seed of [1, 2, 3]) {
    it(`gives @ethereumjs/mpt's roots over rounds of puts and deletes (seed ${seed})`, async () => {
      const bytes = rng(seed);
      const nodes = new Map<string, Uint8Array>();
      const trie = new StateTrie({ trieNode: (hash) => nodes.get(bytesToHex(hash)) ?? null });
      const oracle = new MerklePatriciaTrie();
      const live = new Map<string, Uint8Array>();
      let root: TrieNode | null = null;
      for (let round = 0; round < 12; round++) {
        // Short values stay inside their parent node; long ones are nodes of their own.
        for (let i = 0; i < 40; i++) {
          const key = bytes(32);
          // Keys sharing long prefixes make extensions and deep branches.
          if (i % 5 === 0 && live.size > 0)
            key.set(Buffer.from([...live.keys()][i % live.size] as string, 'hex').subarray(0, 20));
          const value = bytes(1 + ((bytes(1)[0] as number) % 3 === 0 ? 40 : 2));
          root = trie.put(root, nibbles(key), value);
          await oracle.put(key, value);
          live.set(Buffer.from(key).toString('hex'), value);
        }
        const keys = [...live.keys()];
        for (let i = 0; i < 15 && keys.length > 0; i++) {
          const key = keys[(bytes(1)[0] as number) % keys.length] as string;
          if (!live.delete(key)) continue;
          root = trie.delete(root, nibbles(Buffer.from(key, 'hex')));
          await oracle.del(Buffer.from(key, 'hex'));
        }
        assert.equal(bytesToHex(trie.rootHash(root)), bytesToHex(oracle.root()), `round ${round}`);
        // Every other round is stored, as a block is; the next round builds on what is unstored too.
        if (round % 2 === 1) {
          const fresh: Array<[Uint8Array, Uint8Array]> = [];
          trie.newNodes(root, fresh);
          for (const [hash, node] of fresh) nodes.set(bytesToHex(hash), node);
        }
      }
      const fresh: Array<[Uint8Array, Uint8Array]> = [];
      trie.newNodes(root, fresh);
      for (const [hash, node] of fresh) nodes.set(bytesToHex(hash), node);
      const reader = new StateTrie({ trieNode: (hash) => nodes.get(bytesToHex(hash)) ?? null });
      const stored = storedRoot(trie.rootHash(root));
      for (const [key, value] of live)
        assert.deepEqual(reader.get(stored, nibbles(Buffer.from(key, 'hex'))), value);
      assert.equal(reader.get(stored, nibbles(randomBytes(32))), null);
    });
  }
});
