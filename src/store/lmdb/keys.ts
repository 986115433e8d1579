// Binary keys of the LMDB store. Every block number is 8 bytes big-endian so that LMDB's bytewise
// key order is numeric order, which is what makes "the latest entry at or before block N" a single
// reverse cursor step.

const ADDRESS_LENGTH = 20;
const SLOT_LENGTH = 32;
const NUMBER_LENGTH = 8;
const MAX_UINT64 = (1n << 64n) - 1n;

export function blockNumberKey(number: bigint): Uint8Array {
  const key = new Uint8Array(NUMBER_LENGTH);
  writeUint64(key, 0, number);
  return key;
}

/** The block number every history key ends with. */
export function blockNumberSuffix(key: Uint8Array): bigint {
  return readUint64(key, key.length - NUMBER_LENGTH);
}

export function writeUint64(target: Uint8Array, offset: number, value: bigint): void {
  // DataView would silently wrap a negative or oversized value into a wrong key.
  if (value < 0n || value > MAX_UINT64) throw new RangeError(`out of the unsigned 64-bit range: ${value}`);
  new DataView(target.buffer, target.byteOffset, target.byteLength).setBigUint64(offset, value);
}

export function readUint64(bytes: Uint8Array, offset = 0): bigint {
  return new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength).getBigUint64(offset);
}

/** address ‖ number: keys of the account history and of storage wipes. */
export function addressHistoryKey(address: Uint8Array, number: bigint): Uint8Array {
  checkLength('address', address, ADDRESS_LENGTH);
  const key = new Uint8Array(ADDRESS_LENGTH + NUMBER_LENGTH);
  key.set(address);
  writeUint64(key, ADDRESS_LENGTH, number);
  return key;
}

/** address ‖ slot ‖ number: keys of the storage history. */
export function slotHistoryKey(address: Uint8Array, slot: Uint8Array, number: bigint): Uint8Array {
  checkLength('address', address, ADDRESS_LENGTH);
  if (slot.length > SLOT_LENGTH) throw new RangeError(`storage slot longer than ${SLOT_LENGTH} bytes`);
  const key = new Uint8Array(ADDRESS_LENGTH + SLOT_LENGTH + NUMBER_LENGTH);
  key.set(address);
  // Left-padding makes a short slot the same key as its 32-byte form.
  key.set(slot, ADDRESS_LENGTH + SLOT_LENGTH - slot.length);
  writeUint64(key, ADDRESS_LENGTH + SLOT_LENGTH, number);
  return key;
}

/**
 * The exclusive lower bound of a reverse scan from `key`: the key without its block number. Every
 * key greater than this prefix and at most `key` shares the prefix, so the scan cannot reach a
 * neighbouring address or slot.
 */
export function historyPrefix(key: Uint8Array): Uint8Array {
  return key.subarray(0, key.length - NUMBER_LENGTH);
}

const textEncoder = new TextEncoder();

export function metaKey(name: string): Uint8Array {
  return textEncoder.encode(name);
}

function checkLength(what: string, bytes: Uint8Array, length: number): void {
  if (bytes.length !== length) throw new RangeError(`${what} must be ${length} bytes, got ${bytes.length}`);
}
