import { LeafMPTNode, MerklePatriciaTrie } from '@ethereumjs/mpt';
import { RLP } from '@ethereumjs/rlp';
import {
  type BatchDBOp,
  bytesToBigInt,
  type DB,
  equalsBytes,
  KECCAK256_NULL,
  KECCAK256_RLP,
  unprefixedHexToBytes,
} from '@ethereumjs/util';
import { padWord, toHex } from '../primitives/hex.ts';
import { keccak256 } from '../primitives/keccak.ts';
import type { BlockRef, ChainStore, FlatAccount } from '../store/types.ts';

// A trie node is referenced by its hash only when its encoding is at least this long; shorter nodes
// sit inside their parent. Proofs carry the referenced ones (and the root), as geth's do.
const MIN_HASHED_NODE_LENGTH = 32;

/** An account as the state trie holds it: the flat history's fields plus its storage root. */
export interface TrieAccount extends FlatAccount {
  storageRoot: Uint8Array;
}

export interface StorageProof {
  /** The slot, 32 bytes. */
  slot: Uint8Array;
  value: bigint;
  /** Encoded trie nodes from the storage root towards the slot's leaf. */
  proof: Uint8Array[];
}

export interface AccountProof {
  /** null when the account does not exist at that block (the proof then proves its absence). */
  account: TrieAccount | null;
  proof: Uint8Array[];
  storage: StorageProof[];
}

/**
 * Account, code and storage of any block of the chain. Balance, nonce, code and storage come from the
 * flat history (one range lookup each, the same cost at every block); only proofs walk the trie.
 */
export class StateService {
  constructor(private readonly store: ChainStore) {}

  /** The account after block `number`, null if it did not exist then. */
  account(address: Uint8Array, number: bigint): Promise<FlatAccount | null> {
    return this.store.getAccountAt(address, number);
  }

  /** The code after block `number`; empty for accounts without code and for absent accounts. */
  async code(address: Uint8Array, number: bigint): Promise<Uint8Array> {
    const account = await this.store.getAccountAt(address, number);
    if (!account || equalsBytes(account.codeHash, KECCAK256_NULL)) return new Uint8Array(0);
    const code = await this.store.getCode(account.codeHash);
    if (!code) throw new Error(`store has no code for hash ${toHex(account.codeHash)}`);
    return code;
  }

  /** The storage word at `slot` (32 bytes) after block `number`, always 32 bytes. */
  async storage(address: Uint8Array, slot: Uint8Array, number: bigint): Promise<Uint8Array> {
    return padWord(await this.store.getStorageAt(address, slot, number));
  }

  /**
   * EIP-1186 proof of an account and some of its slots in the state after `block`, read from the trie
   * the store holds for that block (the proven values come from the trie, so they match the proof).
   */
  async proof(address: Uint8Array, slots: readonly Uint8Array[], block: BlockRef): Promise<AccountProof> {
    const root = await this.store.getStateRoot(block.hash);
    if (!root) throw new Error(`store has no state root for block ${block.number}`);
    const db = new StoreTrieDb(this.store);
    const accountPath = await prove(db, root, keccak256(address));
    const account = accountPath.value && decodeAccount(accountPath.value);
    const storage: StorageProof[] = [];
    for (const slot of slots) {
      if (!account || equalsBytes(account.storageRoot, KECCAK256_RLP)) {
        storage.push({ slot, value: 0n, proof: [] });
        continue;
      }
      const path = await prove(db, account.storageRoot, keccak256(slot));
      const value = path.value ? bytesToBigInt(RLP.decode(path.value) as Uint8Array) : 0n;
      storage.push({ slot, value, proof: path.proof });
    }
    return { account, proof: accountPath.proof, storage };
  }
}

/** The nodes on the path to `key` (already hashed) under `root`, and the leaf value if there is one. */
async function prove(
  db: StoreTrieDb,
  root: Uint8Array,
  key: Uint8Array,
): Promise<{ proof: Uint8Array[]; value: Uint8Array | null }> {
  const trie = new MerklePatriciaTrie({ db, root, useKeyHashingFunction: keccak256 });
  // Throwing on a missing node: a store that lost a node must fail, not hand out a short proof.
  const { node, remaining, stack } = await trie.findPath(key, true);
  const proof: Uint8Array[] = [];
  stack.forEach((n, i) => {
    const encoded = n.serialize();
    if (i === 0 || encoded.length >= MIN_HASHED_NODE_LENGTH) proof.push(encoded);
  });
  const value = node instanceof LeafMPTNode && remaining.length === 0 ? node.value() : null;
  return { proof, value };
}

function decodeAccount(rlp: Uint8Array): TrieAccount {
  const [nonce, balance, storageRoot, codeHash] = RLP.decode(rlp) as Uint8Array[];
  if (!nonce || !balance || !storageRoot || !codeHash) throw new Error('malformed account in the state trie');
  return { nonce: bytesToBigInt(nonce), balance: bytesToBigInt(balance), storageRoot, codeHash };
}

/**
 * The store's trie nodes as the database of a read-only MerklePatriciaTrie. Keys arrive as the
 * unprefixed hex of the node hash (see exec/trieDb.ts); nothing is ever written through it.
 */
class StoreTrieDb implements DB<string, string | Uint8Array> {
  constructor(private readonly store: ChainStore) {}

  async get(key: string): Promise<Uint8Array | undefined> {
    return (await this.store.getTrieNode(unprefixedHexToBytes(key))) ?? undefined;
  }

  async put(): Promise<void> {
    throw new Error('the state trie is read-only here');
  }

  async del(): Promise<void> {
    throw new Error('the state trie is read-only here');
  }

  async batch(_ops: BatchDBOp<string, string | Uint8Array>[]): Promise<void> {
    throw new Error('the state trie is read-only here');
  }

  shallowCopy(): DB<string, string | Uint8Array> {
    return this;
  }

  async open(): Promise<void> {}
}
