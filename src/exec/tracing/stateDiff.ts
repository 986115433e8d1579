import { quantityToHex, toHex, wordHex } from '../../primitives/hex.ts';
import type { AccountChange } from '../stateAccess.ts';

type Delta = '=' | { '+': string } | { '-': string } | { '*': { from: string; to: string } };

export type StateDiff = Record<
  string,
  { balance: Delta; code: Delta; nonce: Delta; storage: Record<string, Delta> }
>;

/**
 * The OpenEthereum/Erigon stateDiff of one call: an account that did not exist before is all "+", a
 * deleted one all "-", otherwise each field "*" or "=". Only accounts and slots whose value changed
 * appear; storage keys and values are 32-byte words; addresses and slots in ascending order.
 */
export function buildStateDiff(changes: AccountChange[]): StateDiff {
  const diff: StateDiff = {};
  const sorted = [...changes].sort((a, b) => Buffer.compare(Buffer.from(a.address), Buffer.from(b.address)));
  for (const change of sorted) {
    const { before, after } = change;
    if (!before && !after) continue;
    const slots = [...change.storage.values()]
      .filter((s) => !sameBytes(trim(s.before), trim(s.after)))
      .sort((a, b) => Buffer.compare(Buffer.from(a.slot), Buffer.from(b.slot)));
    const storage: Record<string, Delta> = {};
    if (!before && after) {
      for (const s of slots)
        if (trim(s.after).length > 0) storage[wordHex(s.slot)] = { '+': wordHex(s.after) };
      diff[toHex(change.address)] = {
        balance: { '+': quantityToHex(after.balance) },
        code: { '+': toHex(after.code) },
        nonce: { '+': quantityToHex(after.nonce) },
        storage,
      };
      continue;
    }
    if (before && !after) {
      for (const s of slots)
        if (trim(s.before).length > 0) storage[wordHex(s.slot)] = { '-': wordHex(s.before) };
      diff[toHex(change.address)] = {
        balance: { '-': quantityToHex(before.balance) },
        code: { '-': toHex(before.code) },
        nonce: { '-': quantityToHex(before.nonce) },
        storage,
      };
      continue;
    }
    if (!before || !after) continue;
    for (const s of slots)
      storage[wordHex(s.slot)] = { '*': { from: wordHex(s.before), to: wordHex(s.after) } };
    const balance = changed(before.balance, after.balance, quantityToHex);
    const nonce = changed(before.nonce, after.nonce, quantityToHex);
    const code: Delta = sameBytes(before.code, after.code)
      ? '='
      : { '*': { from: toHex(before.code), to: toHex(after.code) } };
    if (balance === '=' && nonce === '=' && code === '=' && slots.length === 0) continue;
    diff[toHex(change.address)] = { balance, code, nonce, storage };
  }
  return diff;
}

function changed(from: bigint, to: bigint, format: (n: bigint) => string): Delta {
  return from === to ? '=' : { '*': { from: format(from), to: format(to) } };
}

function trim(bytes: Uint8Array): Uint8Array {
  let i = 0;
  while (i < bytes.length && bytes[i] === 0) i++;
  return bytes.subarray(i);
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}
