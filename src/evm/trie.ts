import { keccak256 } from '../primitives/keccak.ts';
import { encodeBigint, encodeBytes, encodeList } from './rlp.ts';
import { addressBytes, wordBytes } from './words.ts';

/**
 * The root of a Merkle-Patricia trie built in one pass over its sorted keys, for state roots of
 * state tests and for roots of lists (transactions, receipts, withdrawals). Nothing is stored: each
 * node is encoded once and hashed when 32 bytes or longer, as the yellow paper's TRIE function.
 */

export const EMPTY_TRIE_ROOT = keccak256(Uint8Array.of(0x80));

interface Entry {
  /** The key as lowercase hex (one character per nibble). */
  path: string;
  value: Uint8Array;
}

/** The root of a trie of `entries` (key bytes → value bytes; keys of one length, no duplicates). */
export function trieRoot(entries: Iterable<readonly [Uint8Array, Uint8Array]>): Uint8Array {
  const items: Entry[] = [];
  for (const [key, value] of entries) {
    items.push({ path: Buffer.from(key.buffer, key.byteOffset, key.byteLength).toString('hex'), value });
  }
  if (items.length === 0) return EMPTY_TRIE_ROOT;
  items.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  return keccak256(node(items, 0, items.length, 0));
}

/** The root of a trie keyed by the RLP of each index (transactions, receipts, withdrawals). */
export function orderedTrieRoot(values: readonly Uint8Array[]): Uint8Array {
  return trieRoot(values.map((value, i) => [indexKey(i), value] as const));
}

function indexKey(i: number): Uint8Array {
  if (i === 0) return Uint8Array.of(0x80);
  if (i < 0x80) return Uint8Array.of(i);
  const bytes: number[] = [];
  for (let n = i; n > 0; n = Math.floor(n / 256)) bytes.unshift(n % 256);
  return Uint8Array.of(0x80 + bytes.length, ...bytes);
}

function node(items: Entry[], lo: number, hi: number, depth: number): Uint8Array {
  const first = items[lo] as Entry;
  if (hi - lo === 1) {
    return encodeList([
      encodeBytes(compactPath(first.path, depth, first.path.length, true)),
      encodeBytes(first.value),
    ]);
  }
  const last = items[hi - 1] as Entry;
  let shared = depth;
  while (shared < first.path.length && first.path[shared] === last.path[shared]) shared++;
  if (shared > depth) {
    const branch = branchNode(items, lo, hi, shared);
    return encodeList([encodeBytes(compactPath(first.path, depth, shared, false)), reference(branch)]);
  }
  return branchNode(items, lo, hi, depth);
}

const EMPTY_ITEM = Uint8Array.of(0x80);

function branchNode(items: Entry[], lo: number, hi: number, depth: number): Uint8Array {
  const children: Uint8Array[] = [];
  let at = lo;
  for (let nibble = 0; nibble < 16; nibble++) {
    const digit = nibble.toString(16);
    let end = at;
    while (end < hi && (items[end] as Entry).path[depth] === digit) end++;
    children.push(end === at ? EMPTY_ITEM : reference(node(items, at, end, depth + 1)));
    at = end;
  }
  children.push(EMPTY_ITEM);
  return encodeList(children);
}

/** A child as its parent holds it: embedded when shorter than a hash, else its hash. */
function reference(encoded: Uint8Array): Uint8Array {
  return encoded.length < 32 ? encoded : encodeBytes(keccak256(encoded));
}

/** Hex-prefix encoding of the nibbles `path[from..to]` (yellow paper, appendix C). */
function compactPath(path: string, from: number, to: number, leaf: boolean): Uint8Array {
  const odd = (to - from) % 2 === 1;
  const flag = (leaf ? 2 : 0) + (odd ? 1 : 0);
  const hex = `${flag.toString(16)}${odd ? '' : '0'}${path.slice(from, to)}`;
  return Buffer.from(hex, 'hex');
}

/** An account as the state trie holds it. */
export interface AccountLeaf {
  nonce: bigint;
  balance: bigint;
  storageRoot: Uint8Array;
  codeHash: Uint8Array;
}

/** The root of an account's storage (zero values are absent). */
export function storageRoot(storage: Iterable<readonly [bigint, bigint]>): Uint8Array {
  const entries: Array<readonly [Uint8Array, Uint8Array]> = [];
  for (const [slot, value] of storage) {
    if (value !== 0n) entries.push([keccak256(wordBytes(slot)), encodeBigint(value)]);
  }
  return entries.length === 0 ? EMPTY_TRIE_ROOT : trieRoot(entries);
}

/** The state root of a whole state given account by account. */
export function stateRoot(accounts: Iterable<readonly [bigint, AccountLeaf]>): Uint8Array {
  const entries: Array<readonly [Uint8Array, Uint8Array]> = [];
  for (const [address, a] of accounts) {
    const leaf = encodeList([
      encodeBigint(a.nonce),
      encodeBigint(a.balance),
      encodeBytes(a.storageRoot),
      encodeBytes(a.codeHash),
    ]);
    entries.push([keccak256(addressBytes(address)), leaf]);
  }
  return trieRoot(entries);
}
