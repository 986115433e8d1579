import { RLP } from '@ethereumjs/rlp';
import { encodeBigint, encodeBytes, encodeList } from '../../evm/rlp.ts';
import type { AccountChange } from '../../evm/state.ts';
import { type NodeSource, nibbles, StateTrie, storedRoot, type TrieNode } from '../../evm/stateTrie.ts';
import { EMPTY_TRIE_ROOT } from '../../evm/trie.ts';
import { addressBytes, wordBytes } from '../../evm/words.ts';
import { keccak256 } from '../../primitives/keccak.ts';

/**
 * The state roots of simulated blocks (eth_simulateV1): the stored state trie of the block they
 * start from, changed in memory by each block's changes. Nothing is written back; only the nodes on
 * the paths of the accounts and slots changed are read.
 */
export class SimulatedStateRoot {
  private readonly trie: StateTrie;
  private root: TrieNode | null;
  /** Storage tries of the accounts changed so far (null: emptied). */
  private readonly storage = new Map<bigint, TrieNode | null>();

  constructor(source: NodeSource, stateRoot: Uint8Array) {
    this.trie = new StateTrie(source);
    this.root = storedRoot(stateRoot);
  }

  /** Applies one block's changes; the state root after them. */
  apply(changes: readonly AccountChange[]): Uint8Array {
    for (const change of changes) {
      const key = nibbles(keccak256(addressBytes(change.address)));
      const account = change.account;
      if (account === null) {
        this.root = this.trie.delete(this.root, key);
        this.storage.set(change.address, null);
        continue;
      }
      let storage = change.storageCleared ? null : this.storageTrie(change.address, key);
      for (const [slot, value] of change.slots) {
        const slotKey = nibbles(keccak256(wordBytes(slot)));
        storage =
          value === 0n
            ? this.trie.delete(storage, slotKey)
            : this.trie.put(storage, slotKey, encodeBigint(value));
      }
      this.storage.set(change.address, storage);
      const leaf = encodeList([
        encodeBigint(account.nonce),
        encodeBigint(account.balance),
        encodeBytes(this.trie.rootHash(storage)),
        encodeBytes(account.codeHash),
      ]);
      this.root = this.trie.put(this.root, key, leaf);
    }
    return this.trie.rootHash(this.root);
  }

  /** The account's storage trie: as changed here, or as its stored leaf names it. */
  private storageTrie(address: bigint, key: Uint8Array): TrieNode | null {
    if (this.storage.has(address)) return this.storage.get(address) ?? null;
    const leaf = this.trie.get(this.root, key);
    if (leaf === null) return null;
    const fields = RLP.decode(leaf) as Uint8Array[];
    const root = fields[2];
    return root instanceof Uint8Array ? storedRoot(root) : storedRoot(EMPTY_TRIE_ROOT);
  }
}
