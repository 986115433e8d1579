import { MerklePatriciaTrie } from '@ethereumjs/mpt';
import { RLP } from '@ethereumjs/rlp';
import { keccak256 } from '../primitives/keccak.ts';

/**
 * Root of the trie mapping rlp(index) to each item: the transactions, receipts and withdrawals
 * roots of a header. The empty list gives the empty-trie root.
 */
export async function orderedTrieRoot(items: readonly Uint8Array[]): Promise<Uint8Array> {
  const trie = new MerklePatriciaTrie({ useKeyHashingFunction: keccak256 });
  for (const [i, item] of items.entries()) await trie.put(RLP.encode(i), item);
  return trie.root();
}
