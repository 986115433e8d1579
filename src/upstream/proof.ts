import { RLP } from '@ethereumjs/rlp';
import { bytesToBigInt, KECCAK256_NULL, KECCAK256_RLP } from '@ethereumjs/util';
import { bigintWord } from '../primitives/hex.ts';
import { keccak256 } from '../primitives/keccak.ts';
import { Fields, Subject, sameBytes, show } from './answer.ts';

/** An account as the state trie holds it. */
export interface ProvenAccount {
  nonce: bigint;
  balance: bigint;
  codeHash: Uint8Array;
  storageRoot: Uint8Array;
}

export interface ProvenSlot {
  /** The slot, 32 bytes. */
  slot: Uint8Array;
  /** Its value as a 32-byte word (zero when the proof shows the slot empty). */
  value: Uint8Array;
  /** The proof's nodes, checked, as given (to serve the proof on). */
  proof: Uint8Array[];
}

export interface ProvenState {
  /** null when the proof shows the account absent. */
  account: ProvenAccount | null;
  /** The account proof's nodes, checked, as given. */
  accountProof: Uint8Array[];
  storage: ProvenSlot[];
}

export interface ProofExpectations {
  /** The slots asked for: the answer must prove exactly these, in this order. */
  slots?: readonly Uint8Array[];
  /** The account's code (eth_getCode at the same block), checked against the proven code hash. */
  code?: Uint8Array;
}

const ZERO_HASH = new Uint8Array(32);

/**
 * An eth_getProof answer at a block whose state root is `stateRoot` → the account (null when the
 * proof shows it absent) and the proven slots, checked:
 *
 * - `address` is the one asked for; the account proof is a path of trie nodes from `stateRoot`
 *   (each node the one its parent references by hash, nothing after the path ends) to the
 *   account's leaf, or to where the path shows there is none;
 * - the answer's `nonce`, `balance`, `codeHash` and `storageHash` are the proven account's; for an
 *   absent account zero, with the zero hash or the empty code hash / empty-trie root (geth gives
 *   the zero hashes, anvil and Reth the empty ones);
 * - each storage proof is likewise a path from the account's storage root (the empty trie for an
 *   absent account: no nodes, or the empty node alone) and `value` is the proven value, zero when
 *   the slot is shown absent; with `expect.slots`, the slots are the ones asked for;
 * - with `expect.code`, keccak(code) is the proven code hash (the empty code's for an absent account).
 */
export function accountFromProof(
  stateRoot: Uint8Array,
  address: Uint8Array,
  json: unknown,
  expect: ProofExpectations = {},
): ProvenState {
  const subject = new Subject(`account ${show(address)} at state root ${show(stateRoot)}`);
  const fields = Fields.of(json, '', subject);
  const given = fields.data('address', 20);
  if (!sameBytes(given, address)) throw subject.mismatch('address', given, 'the address asked for', address);
  const accountProof = fields.dataList('accountProof');
  const leaf = walkProof(
    subject,
    'account proof',
    accountProof,
    stateRoot,
    'the state root',
    keccak256(address),
  );
  const account = leaf && decodeAccount(subject, leaf);
  checkAccountFields(fields, account);
  const storageRoot = account?.storageRoot ?? KECCAK256_RLP;
  const entries = fields.objects('storageProof');
  if (expect.slots && entries.length !== expect.slots.length) {
    throw subject.mismatch(
      'storage proof count',
      entries.length,
      'the number of slots asked for',
      expect.slots.length,
    );
  }
  const storage = entries.map((entry, i): ProvenSlot => {
    // geth echoes a 32-byte key as sent and others as a quantity (`0x0`): both name the same slot.
    const slot = bigintWord(entry.quantity('key'));
    const asked = expect.slots?.[i];
    if (asked && !sameBytes(slot, asked))
      throw subject.mismatch(`${entry.path}.key`, slot, 'the slot asked for', asked);
    const proof = entry.dataList('proof');
    const what = `storage proof of slot ${show(slot)}`;
    const found = walkProof(subject, what, proof, storageRoot, "the account's storage root", keccak256(slot));
    const proven = found === null ? 0n : decodeStorageValue(subject, what, found);
    const value = entry.quantity('value');
    if (value !== proven)
      throw subject.mismatch(`slot ${show(slot)} value`, value, "the storage proof's", proven);
    return { slot, value: bigintWord(proven), proof };
  });
  if (expect.code) {
    const codeHash = keccak256(expect.code);
    const want = account?.codeHash ?? KECCAK256_NULL;
    if (!sameBytes(codeHash, want)) {
      throw subject.mismatch('code hash (keccak of the code given)', codeHash, "the proof's code hash", want);
    }
  }
  return { account, accountProof, storage };
}

function checkAccountFields(fields: Fields, account: ProvenAccount | null): void {
  const { subject } = fields;
  const nonce = fields.quantity('nonce', 64);
  const balance = fields.quantity('balance');
  const codeHash = fields.data('codeHash', 32);
  const storageHash = fields.data('storageHash', 32);
  if (account) {
    if (nonce !== account.nonce) throw subject.mismatch('nonce', nonce, "the proof's", account.nonce);
    if (balance !== account.balance)
      throw subject.mismatch('balance', balance, "the proof's", account.balance);
    if (!sameBytes(codeHash, account.codeHash)) {
      throw subject.mismatch('codeHash', codeHash, "the proof's", account.codeHash);
    }
    if (!sameBytes(storageHash, account.storageRoot)) {
      throw subject.mismatch('storageHash', storageHash, "the proof's storage root", account.storageRoot);
    }
    return;
  }
  const absent = 'for an account the proof shows absent';
  if (nonce !== 0n) throw subject.mismatch('nonce', nonce, `0 ${absent}:`, 0n);
  if (balance !== 0n) throw subject.mismatch('balance', balance, `0 ${absent}:`, 0n);
  if (!sameBytes(codeHash, ZERO_HASH) && !sameBytes(codeHash, KECCAK256_NULL)) {
    throw subject.mismatch(
      'codeHash',
      codeHash,
      `the zero hash or the empty code's ${absent}:`,
      KECCAK256_NULL,
    );
  }
  if (!sameBytes(storageHash, ZERO_HASH) && !sameBytes(storageHash, KECCAK256_RLP)) {
    throw subject.mismatch(
      'storageHash',
      storageHash,
      `the zero hash or the empty trie's ${absent}:`,
      KECCAK256_RLP,
    );
  }
}

function decodeAccount(subject: Subject, leaf: Uint8Array): ProvenAccount {
  const fields = decodeRlp(subject, 'account proof leaf', leaf);
  const [nonce, balance, storageRoot, codeHash] = Array.isArray(fields) ? fields : [];
  if (
    !Array.isArray(fields) ||
    fields.length !== 4 ||
    !(nonce instanceof Uint8Array && nonce.length <= 8) ||
    !(balance instanceof Uint8Array && balance.length <= 32) ||
    !(storageRoot instanceof Uint8Array && storageRoot.length === 32) ||
    !(codeHash instanceof Uint8Array && codeHash.length === 32)
  ) {
    throw subject.fail(
      `account proof leaf ${show(leaf)} is not an account [nonce, balance, storageRoot, codeHash]`,
    );
  }
  return { nonce: bytesToBigInt(nonce), balance: bytesToBigInt(balance), storageRoot, codeHash };
}

function decodeStorageValue(subject: Subject, what: string, leaf: Uint8Array): bigint {
  const value = decodeRlp(subject, `${what} leaf`, leaf);
  if (!(value instanceof Uint8Array) || value.length > 32) {
    throw subject.fail(`${what} leaf ${show(leaf)} is not a storage value of at most 32 bytes`);
  }
  return bytesToBigInt(value);
}

type Decoded = Uint8Array | Decoded[];

function decodeRlp(subject: Subject, what: string, bytes: Uint8Array): Decoded {
  try {
    return RLP.decode(bytes) as Decoded;
  } catch (e) {
    throw subject.fail(`${what} ${show(bytes)} is not RLP: ${(e as Error).message}`);
  }
}

/** Where the walk must go next: a node the proof must hold (by hash), or one inlined in its parent. */
type NodeRef = { hash: Uint8Array; whose: string } | { inline: Decoded[] };

/**
 * Follows `key` (already hashed: 32 bytes, 64 nibbles) from `root` through the proof's nodes and
 * answers the leaf's value, or null where the path shows there is none (an empty branch slot, a
 * leaf or extension for another path, the empty trie). Each node taken from the proof must hash to
 * the reference that leads to it, the proof must not end early, and no node may follow the path's end.
 */
function walkProof(
  subject: Subject,
  what: string,
  nodes: readonly Uint8Array[],
  root: Uint8Array,
  rootName: string,
  key: Uint8Array,
): Uint8Array | null {
  const nibbles = toNibbles(key);
  let used = 0;
  let position = 0;
  let ref: NodeRef = { hash: root, whose: rootName };
  const end = (value: Uint8Array | null): Uint8Array | null => {
    if (used < nodes.length) {
      throw subject.fail(
        `${what} has ${nodes.length - used} node(s) after node ${used - 1}, where the path ends`,
      );
    }
    return value;
  };
  // The empty trie has no nodes; a proof of it may also give the empty node itself.
  if (nodes.length === 0 && sameBytes(root, KECCAK256_RLP)) return null;
  for (;;) {
    let node: Decoded;
    if ('hash' in ref) {
      const encoded = nodes[used];
      if (encoded === undefined) {
        throw subject.fail(
          `${what} ends after ${used} node(s), before its path does (${ref.whose} is ${show(ref.hash)})`,
        );
      }
      const hash = keccak256(encoded);
      if (!sameBytes(hash, ref.hash)) {
        throw subject.fail(
          `${what} node ${used} hashes to ${show(hash)}, not ${ref.whose} ${show(ref.hash)}`,
        );
      }
      node = decodeRlp(subject, `${what} node ${used}`, encoded);
      used++;
    } else {
      node = ref.inline;
    }
    const at = `${what} node ${used - 1}`;
    if (node instanceof Uint8Array) {
      if (node.length === 0 && used === 1 && position === 0) return end(null);
      throw subject.fail(`${at} is not a trie node`);
    }
    if (node.length === 17) {
      const nibble = nibbles[position];
      if (nibble === undefined) throw subject.fail(`${at} is a branch past the key's end`);
      position++;
      const child = node[nibble] as Decoded;
      if (child instanceof Uint8Array && child.length === 0) return end(null);
      ref = childRef(subject, at, child);
      continue;
    }
    if (node.length !== 2) throw subject.fail(`${at} is a list of ${node.length} items, not a trie node`);
    const [encodedPath, next] = node as [Decoded, Decoded];
    const { leaf, path } = decodePath(subject, at, encodedPath);
    const matches = path.every((n, i) => nibbles[position + i] === n);
    if (leaf) {
      if (!matches || position + path.length !== nibbles.length) return end(null);
      if (!(next instanceof Uint8Array)) throw subject.fail(`${at} is a leaf whose value is a list`);
      return end(next);
    }
    if (!matches) return end(null);
    position += path.length;
    ref = childRef(subject, at, next);
  }
}

function childRef(subject: Subject, at: string, child: Decoded): NodeRef {
  if (Array.isArray(child)) return { inline: child };
  if (child.length === 32) return { hash: child, whose: `the hash ${at} references` };
  throw subject.fail(`${at} references a child by ${child.length} bytes, neither a hash nor an inline node`);
}

/** A leaf's or extension's hex-prefix path (its first nibble says which, and whether it is odd). */
function decodePath(subject: Subject, at: string, encoded: Decoded): { leaf: boolean; path: number[] } {
  const first = encoded instanceof Uint8Array ? encoded[0] : undefined;
  if (
    first === undefined ||
    !(encoded instanceof Uint8Array) ||
    first >> 4 > 3 ||
    (!(first & 0x10) && first & 0x0f)
  ) {
    throw subject.fail(`${at} has no valid path prefix`);
  }
  const nibbles = toNibbles(encoded.subarray(1));
  return { leaf: (first & 0x20) !== 0, path: first & 0x10 ? [first & 0x0f, ...nibbles] : nibbles };
}

function toNibbles(bytes: Uint8Array): number[] {
  const out: number[] = [];
  for (const b of bytes) out.push(b >> 4, b & 0x0f);
  return out;
}
