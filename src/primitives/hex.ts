/**
 * Hex conversion at the service's edges. Node's native hex codec is used because receipts and traces
 * can carry megabytes of data (one conformance block has 21 MB of log data), where a per-byte
 * JavaScript loop dominates the cost.
 */
export function toHex(bytes: Uint8Array): `0x${string}` {
  return `0x${Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('hex')}`;
}

export function quantityToHex(n: bigint | number): `0x${string}` {
  return `0x${n.toString(16)}`;
}

/** Unprefixed lowercase hex: a map key for bytes (ethereumjs keys addresses, precompiles included, so). */
export function bytesKey(bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('hex');
}

/** A 256-bit value as the 32-byte big-endian word the EVM holds. */
export function bigintWord(value: bigint): Uint8Array {
  return Buffer.from(value.toString(16).padStart(64, '0'), 'hex');
}

/** `bytes` as a 32-byte word: left-padded with zeros (stored values are minimal), or its low 32 bytes. */
export function padWord(bytes: Uint8Array): Uint8Array {
  if (bytes.length === 32) return bytes;
  if (bytes.length > 32) return bytes.slice(bytes.length - 32);
  const out = new Uint8Array(32);
  out.set(bytes, 32 - bytes.length);
  return out;
}

/** A 32-byte word as geth prints hashes and slots: 0x and 64 digits. */
export function wordHex(value: bigint | Uint8Array): `0x${string}` {
  if (typeof value === 'bigint') return `0x${value.toString(16).padStart(64, '0')}`;
  return `0x${bytesKey(value).padStart(64, '0')}`;
}
