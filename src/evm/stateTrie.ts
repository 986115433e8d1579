import { RLP } from '@ethereumjs/rlp';
import { encodeBytes, encodeList } from '../evm/rlp.ts';
import { EMPTY_TRIE_ROOT } from '../evm/trie.ts';
import { keccak256 } from '../primitives/keccak.ts';

/**
 * A Merkle-Patricia trie kept in the store node by node and changed a key at a time: the state trie
 * and the storage tries of an imported chain. src/evm/trie.ts builds a root from all of a trie's
 * keys at once, which a chain's state (too large to list per block) cannot use; this one reads only
 * the nodes on the paths of the keys read or changed, and hands over only the nodes a new root
 * reaches that the store does not hold yet.
 *
 * Nodes are never changed in place: a put or delete makes new nodes along the key's path and shares
 * the rest, so the trie of the last stored block stays whole while a block is applied beside it, and
 * dropping a block that fails its checks is dropping its root.
 */

/** Where stored nodes are read, synchronously (by hash). */
export interface NodeSource {
  trieNode(hash: Uint8Array): Uint8Array | null;
}

const LEAF = 0;
const EXTENSION = 1;
const BRANCH = 2;
const STORED = 3;

interface Leaf {
  kind: typeof LEAF;
  /** Nibbles, one per byte. */
  path: Uint8Array;
  value: Uint8Array;
  enc: Uint8Array | null;
  hash: Uint8Array | null;
  /** In the store already (read from it, embedded in a stored node, or handed over by `newNodes`). */
  stored: boolean;
}

interface Extension {
  kind: typeof EXTENSION;
  path: Uint8Array;
  child: TrieNode;
  enc: Uint8Array | null;
  hash: Uint8Array | null;
  stored: boolean;
}

interface Branch {
  kind: typeof BRANCH;
  children: Array<TrieNode | null>;
  value: Uint8Array | null;
  enc: Uint8Array | null;
  hash: Uint8Array | null;
  stored: boolean;
}

/** A stored node not read yet. */
interface StoredRef {
  kind: typeof STORED;
  hash: Uint8Array;
}

export type TrieNode = Leaf | Extension | Branch | StoredRef;

/** The trie of a stored root (null: the empty trie). */
export function storedRoot(root: Uint8Array): TrieNode | null {
  if (equal(root, EMPTY_TRIE_ROOT)) return null;
  return { kind: STORED, hash: root };
}

/** A key as the nibbles the trie walks. */
export function nibbles(key: Uint8Array): Uint8Array {
  const out = new Uint8Array(key.length * 2);
  for (let i = 0; i < key.length; i++) {
    const b = key[i] as number;
    out[2 * i] = b >> 4;
    out[2 * i + 1] = b & 15;
  }
  return out;
}

export class StateTrie {
  /** Nodes read from the store so far (what a caller may bound its memory by). */
  nodesRead = 0;

  constructor(private readonly source: NodeSource) {}

  /** The value under `key` (nibbles), or null. */
  get(root: TrieNode | null, key: Uint8Array): Uint8Array | null {
    let node = root;
    let at = 0;
    for (;;) {
      if (node === null) return null;
      if (node.kind === STORED) node = this.resolve(node);
      if (node.kind === LEAF) return equalFrom(key, at, node.path) ? node.value : null;
      if (node.kind === EXTENSION) {
        if (!startsWith(key, at, node.path)) return null;
        at += node.path.length;
        if (node.child.kind === STORED) node.child = this.resolve(node.child);
        node = node.child;
        continue;
      }
      if (at === key.length) return node.value;
      const child: TrieNode | null = node.children[key[at] as number] ?? null;
      // A stored child read once stays in its (stored) parent: later walks need not read it again.
      if (child !== null && child.kind === STORED) node.children[key[at] as number] = this.resolve(child);
      node = node.children[key[at] as number] ?? null;
      at++;
    }
  }

  /** The trie with `value` under `key`; `root` is left as it was. */
  put(root: TrieNode | null, key: Uint8Array, value: Uint8Array): TrieNode {
    return this.insert(root, key, 0, value);
  }

  /** The trie without `key`; `root` is left as it was. */
  delete(root: TrieNode | null, key: Uint8Array): TrieNode | null {
    return this.remove(root, key, 0);
  }

  /** The root hash of a trie (its nodes encoded and hashed once, the encodings kept). */
  rootHash(root: TrieNode | null): Uint8Array {
    if (root === null) return EMPTY_TRIE_ROOT;
    if (root.kind === STORED) return root.hash;
    return this.hashOf(root);
  }

  /**
   * The nodes of `root` the store does not hold yet (hash, encoding), the root's own always among
   * them; from then on they count as stored. Nodes shorter than a hash live inside their parent.
   */
  newNodes(root: TrieNode | null, out: Array<[Uint8Array, Uint8Array]>): void {
    if (root === null || root.kind === STORED || root.stored) return;
    this.collect(root, out);
    out.push([this.hashOf(root), root.enc as Uint8Array]);
    root.stored = true;
  }

  private collect(node: Leaf | Extension | Branch, out: Array<[Uint8Array, Uint8Array]>): void {
    const visit = (child: TrieNode | null) => {
      if (child === null || child.kind === STORED || child.stored) return;
      this.collect(child, out);
      const enc = this.encode(child);
      if (enc.length >= 32) out.push([this.hashOf(child), enc]);
      child.stored = true;
    };
    if (node.kind === EXTENSION) visit(node.child);
    else if (node.kind === BRANCH) for (const child of node.children) visit(child);
  }

  private resolve(ref: StoredRef): Leaf | Extension | Branch {
    const bytes = this.source.trieNode(ref.hash);
    if (bytes === null)
      throw new Error(`the store is missing trie node ${Buffer.from(ref.hash).toString('hex')}`);
    this.nodesRead++;
    const node = decodeNode(RLP.decode(bytes) as unknown as Decoded[]);
    node.enc = bytes;
    node.hash = ref.hash;
    return node;
  }

  private insert(node: TrieNode | null, key: Uint8Array, at: number, value: Uint8Array): TrieNode {
    if (node === null) return leaf(key.subarray(at), value);
    if (node.kind === STORED) node = this.resolve(node);
    if (node.kind === LEAF) {
      if (equalFrom(key, at, node.path)) return leaf(node.path, value);
      const shared = sharedLength(key, at, node.path);
      const branch = emptyBranch();
      place(branch, node.path.subarray(shared), node.value);
      place(branch, key.subarray(at + shared), value);
      return shared > 0 ? extension(node.path.subarray(0, shared), branch) : branch;
    }
    if (node.kind === EXTENSION) {
      const shared = sharedLength(key, at, node.path);
      if (shared === node.path.length)
        return extension(node.path, this.insert(node.child, key, at + shared, value));
      const branch = emptyBranch();
      const rest = node.path.subarray(shared + 1);
      branch.children[node.path[shared] as number] =
        rest.length > 0 ? extension(rest, node.child) : node.child;
      place(branch, key.subarray(at + shared), value);
      return shared > 0 ? extension(node.path.subarray(0, shared), branch) : branch;
    }
    const copy = branchCopy(node);
    if (at === key.length) copy.value = value;
    else {
      const n = key[at] as number;
      copy.children[n] = this.insert(node.children[n] ?? null, key, at + 1, value);
    }
    return copy;
  }

  private remove(node: TrieNode | null, key: Uint8Array, at: number): TrieNode | null {
    if (node === null) return null;
    if (node.kind === STORED) node = this.resolve(node);
    if (node.kind === LEAF) return equalFrom(key, at, node.path) ? null : node;
    if (node.kind === EXTENSION) {
      if (!startsWith(key, at, node.path)) return node;
      const child = this.remove(node.child, key, at + node.path.length);
      if (child === node.child) return node;
      if (child === null) return null;
      return this.joined(node.path, child);
    }
    let copy: Branch;
    if (at === key.length) {
      if (node.value === null) return node;
      copy = branchCopy(node);
      copy.value = null;
    } else {
      const n = key[at] as number;
      const before = node.children[n] ?? null;
      const after = this.remove(before, key, at + 1);
      if (after === before) return node;
      copy = branchCopy(node);
      copy.children[n] = after;
    }
    let count = copy.value === null ? 0 : 1;
    let only = -1;
    for (let i = 0; i < 16; i++) {
      if (copy.children[i] === null) continue;
      count++;
      only = i;
    }
    if (count >= 2) return copy;
    if (count === 0) return null;
    if (only === -1) return leaf(new Uint8Array(0), copy.value as Uint8Array);
    return this.joined(Uint8Array.of(only), copy.children[only] as TrieNode);
  }

  /** `path` followed by `child`, merged as the trie's shape requires (no extension above a leaf or an extension). */
  private joined(path: Uint8Array, child: TrieNode): TrieNode {
    const node = child.kind === STORED ? this.resolve(child) : child;
    if (node.kind === LEAF) return leaf(concat(path, node.path), node.value);
    if (node.kind === EXTENSION) return extension(concat(path, node.path), node.child);
    return extension(path, node);
  }

  private encode(node: Leaf | Extension | Branch): Uint8Array {
    if (node.enc !== null) return node.enc;
    let enc: Uint8Array;
    if (node.kind === LEAF)
      enc = encodeList([encodeBytes(compact(node.path, true)), encodeBytes(node.value)]);
    else if (node.kind === EXTENSION)
      enc = encodeList([encodeBytes(compact(node.path, false)), this.reference(node.child)]);
    else {
      const items: Uint8Array[] = [];
      for (const child of node.children) items.push(child === null ? EMPTY_ITEM : this.reference(child));
      items.push(node.value === null ? EMPTY_ITEM : encodeBytes(node.value));
      enc = encodeList(items);
    }
    node.enc = enc;
    return enc;
  }

  private hashOf(node: Leaf | Extension | Branch): Uint8Array {
    if (node.hash === null) node.hash = keccak256(this.encode(node));
    return node.hash;
  }

  /** A child as its parent holds it: its encoding when shorter than a hash, else its hash. */
  private reference(child: TrieNode): Uint8Array {
    if (child.kind === STORED) return encodeBytes(child.hash);
    const enc = this.encode(child);
    return enc.length < 32 ? enc : encodeBytes(this.hashOf(child));
  }
}

const EMPTY_ITEM = Uint8Array.of(0x80);

type Decoded = Uint8Array | Decoded[];

function decodeNode(items: Decoded[]): Leaf | Extension | Branch {
  if (items.length === 17) {
    const branch = emptyBranch();
    for (let i = 0; i < 16; i++) branch.children[i] = childOf(items[i] as Decoded);
    const value = items[16] as Uint8Array;
    branch.value = value.length === 0 ? null : value;
    branch.stored = true;
    return branch;
  }
  if (items.length !== 2) throw new Error(`a trie node of ${items.length} items`);
  const [key, second] = items as [Uint8Array, Decoded];
  const flag = (key[0] as number) >> 4;
  const all = nibbles(key);
  const path = all.subarray(flag & 1 ? 1 : 2);
  if (flag >= 2) {
    const node = leaf(path, second as Uint8Array);
    node.stored = true;
    return node;
  }
  const node = extension(path, childOf(second) as TrieNode);
  node.stored = true;
  return node;
}

/** A child reference inside a stored node: a hash, nothing, or a node embedded whole. */
function childOf(item: Decoded): TrieNode | null {
  if (item instanceof Uint8Array) {
    if (item.length === 0) return null;
    return { kind: STORED, hash: item };
  }
  const node = decodeNode(item);
  node.enc = RLP.encode(item as never);
  return node;
}

function leaf(path: Uint8Array, value: Uint8Array): Leaf {
  return { kind: LEAF, path, value, enc: null, hash: null, stored: false };
}

function extension(path: Uint8Array, child: TrieNode): Extension {
  return { kind: EXTENSION, path, child, enc: null, hash: null, stored: false };
}

function emptyBranch(): Branch {
  return {
    kind: BRANCH,
    children: new Array<TrieNode | null>(16).fill(null),
    value: null,
    enc: null,
    hash: null,
    stored: false,
  };
}

function branchCopy(node: Branch): Branch {
  return {
    kind: BRANCH,
    children: node.children.slice(),
    value: node.value,
    enc: null,
    hash: null,
    stored: false,
  };
}

/** Puts a value into a fresh branch under the rest of its key. */
function place(branch: Branch, rest: Uint8Array, value: Uint8Array): void {
  if (rest.length === 0) branch.value = value;
  else branch.children[rest[0] as number] = leaf(rest.subarray(1), value);
}

/** Hex-prefix encoding (yellow paper, appendix C) of nibbles. */
function compact(path: Uint8Array, isLeaf: boolean): Uint8Array {
  const odd = path.length % 2;
  const out = new Uint8Array(Math.floor(path.length / 2) + 1);
  out[0] = ((isLeaf ? 2 : 0) + odd) << 4;
  let i = 0;
  if (odd) {
    out[0] = (out[0] as number) | (path[0] as number);
    i = 1;
  }
  for (let o = 1; i < path.length; i += 2, o++) out[o] = ((path[i] as number) << 4) | (path[i + 1] as number);
  return out;
}

function sharedLength(key: Uint8Array, at: number, path: Uint8Array): number {
  const max = Math.min(key.length - at, path.length);
  let i = 0;
  while (i < max && key[at + i] === path[i]) i++;
  return i;
}

function startsWith(key: Uint8Array, at: number, path: Uint8Array): boolean {
  if (key.length - at < path.length) return false;
  for (let i = 0; i < path.length; i++) if (key[at + i] !== path[i]) return false;
  return true;
}

function equalFrom(key: Uint8Array, at: number, path: Uint8Array): boolean {
  return key.length - at === path.length && startsWith(key, at, path);
}

function concat(a: Uint8Array, b: Uint8Array): Uint8Array {
  const out = new Uint8Array(a.length + b.length);
  out.set(a);
  out.set(b, a.length);
  return out;
}

function equal(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}
