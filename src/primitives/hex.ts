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
