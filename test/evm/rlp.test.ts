// src/evm/rlp.ts against @ethereumjs/rlp: encodings, and the lengths counted without encoding,
// across every boundary where RLP's prefix grows (55/56 bytes, then each byte of the length).

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { RLP } from '@ethereumjs/rlp';
import { encodeBytes, encodedLength, encodeList } from '../../src/evm/rlp.ts';

const LENGTHS = [2, 54, 55, 56, 57, 255, 256, 257, 65_535, 65_536, 65_537, 1 << 24];

describe('RLP as @ethereumjs/rlp has it', () => {
  it('counts the length of a string and of a list of any payload as their encodings take', () => {
    for (const n of [0, ...LENGTHS]) {
      const bytes = new Uint8Array(n).fill(0xaa);
      assert.equal(encodedLength(n), RLP.encode(bytes).length, `string of ${n} bytes`);
      assert.deepEqual(encodeBytes(bytes), RLP.encode(bytes), `string of ${n} bytes`);
      // A list of one string of n bytes: its payload is that string's encoding.
      const item = RLP.encode(bytes);
      assert.equal(encodedLength(item.length), RLP.encode([bytes]).length, `list of ${item.length} bytes`);
      assert.deepEqual(encodeList([item]), RLP.encode([bytes]), `list of ${item.length} bytes`);
    }
  });
});
