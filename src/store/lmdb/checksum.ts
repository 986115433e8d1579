// Every value the LMDB store writes carries a CRC-32 of its key and itself, appended (4 bytes, BE),
// and every read checks it, so that a flipped byte in a stored value is reported as damage instead
// of being served (issue 19, item 10). LMDB checks none of its data pages: a flip in one is read
// back as it is. The key is covered too, so a value read by a range scan (the history tables) is
// known to be the one written under the key the scan found.

import * as zlib from 'node:zlib';

export const CHECKSUM_LENGTH = 4;

/**
 * zlib's CRC-32 (native; Node 20.15 and later), else the same CRC in JavaScript: both give the same
 * numbers, so a store written by either is read by the other.
 */
const nativeCrc32 = (zlib as { crc32?: (data: Uint8Array, seed?: number) => number }).crc32;

// An empty input is not handed to zlib: a zero-length array may have no memory behind it, and zlib
// answers a CRC of "no buffer" with its initial value, 0, whatever the seed.
function crc32(data: Uint8Array, seed = 0): number {
  if (data.length === 0) return seed;
  return nativeCrc32 === undefined ? tableCrc32(data, seed) : nativeCrc32(data, seed);
}

/** The CRC-32 of `key ‖ value`. */
export function checksumOf(key: Uint8Array, value: Uint8Array): number {
  return crc32(value, crc32(key));
}

/** `value ‖ checksum`: what is written under `key`. */
export function seal(key: Uint8Array, value: Uint8Array): Uint8Array {
  const sealed = new Uint8Array(value.length + CHECKSUM_LENGTH);
  sealed.set(value);
  new DataView(sealed.buffer).setUint32(value.length, checksumOf(key, value));
  return sealed;
}

/**
 * The value written under `key`, a plain view of `stored` without its checksum; null when the
 * checksum does not match (the value, or the key it is under, is not what was written).
 */
export function unseal(key: Uint8Array, stored: Uint8Array): Uint8Array | null {
  // `length`, not `byteLength`: lmdb-js's getBinaryFast lends a Buffer whose byteLength is that of
  // its whole shared buffer.
  const length = stored.length - CHECKSUM_LENGTH;
  if (length < 0) return null;
  const expected =
    (((stored[length] as number) << 24) |
      ((stored[length + 1] as number) << 16) |
      ((stored[length + 2] as number) << 8) |
      (stored[length + 3] as number)) >>>
    0;
  const value = new Uint8Array(stored.buffer, stored.byteOffset, length);
  return checksumOf(key, value) === expected ? value : null;
}

/** The checksum of a slice of a value, for values checked piece by piece (receiptsJson). */
export function sliceChecksum(bytes: Uint8Array): number {
  return crc32(bytes);
}

let table: Int32Array | undefined;

function tableCrc32(data: Uint8Array, seed = 0): number {
  if (table === undefined) {
    table = new Int32Array(256);
    for (let n = 0; n < 256; n++) {
      let c = n;
      for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
      table[n] = c;
    }
  }
  let c = ~seed;
  for (let i = 0; i < data.length; i++) c = (table[(c ^ (data[i] as number)) & 0xff] as number) ^ (c >>> 8);
  return ~c >>> 0;
}
