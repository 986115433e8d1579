/**
 * The RLP encoding the EVM needs itself: trie nodes, account records, log lists and CREATE
 * addresses. Items are byte strings; a list is made of items already encoded, so a trie node can
 * embed a child node's encoding as it is.
 */

function lengthPrefix(length: number, offset: number): Uint8Array {
  if (length < 56) return Uint8Array.of(offset + length);
  const bytes: number[] = [];
  for (let n = length; n > 0; n = Math.floor(n / 256)) bytes.unshift(n % 256);
  return Uint8Array.of(offset + 55 + bytes.length, ...bytes);
}

/**
 * The length of the RLP encoding of a string or list whose payload is `payload` bytes, without
 * building it (not of a single byte below 0x80, which is its own encoding). A typed array of 100
 * bytes or more costs 1–4 µs to make on Node 20 (its backing store is allocated outside the heap),
 * so a length wanted alone is counted.
 */
export function encodedLength(payload: number): number {
  if (payload < 56) return 1 + payload;
  let bytes = 0;
  for (let n = payload; n > 0; n = Math.floor(n / 256)) bytes++;
  return 1 + bytes + payload;
}

export function encodeBytes(bytes: Uint8Array): Uint8Array {
  if (bytes.length === 1 && (bytes[0] as number) < 0x80) return bytes;
  const prefix = lengthPrefix(bytes.length, 0x80);
  const out = new Uint8Array(prefix.length + bytes.length);
  out.set(prefix);
  out.set(bytes, prefix.length);
  return out;
}

/** A list of items given already encoded. */
export function encodeList(items: readonly Uint8Array[]): Uint8Array {
  let length = 0;
  for (const item of items) length += item.length;
  const prefix = lengthPrefix(length, 0xc0);
  const out = new Uint8Array(prefix.length + length);
  out.set(prefix);
  let at = prefix.length;
  for (const item of items) {
    out.set(item, at);
    at += item.length;
  }
  return out;
}

/** The minimal big-endian bytes of a non-negative integer (empty for zero), as RLP wants it. */
export function bigintBytes(value: bigint): Uint8Array {
  if (value === 0n) return new Uint8Array(0);
  const hex = value.toString(16);
  return Buffer.from(hex.length % 2 === 0 ? hex : `0${hex}`, 'hex');
}

export function encodeBigint(value: bigint): Uint8Array {
  if (value < 0x80n) return value === 0n ? Uint8Array.of(0x80) : Uint8Array.of(Number(value));
  return encodeBytes(bigintBytes(value));
}
