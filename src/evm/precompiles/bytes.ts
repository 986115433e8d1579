// Byte and integer conversions the precompiles share. Node's native hex codec does the work: a
// per-byte JavaScript loop costs more than the conversion for the 32- to 1024-byte values seen here.

/** `input[start, start + size)`, reading zeros past its end (geth's getData; the EVM pads inputs so). */
export function getData(input: Uint8Array, start: number, size: number): Uint8Array {
  if (start + size <= input.length) return input.subarray(start, start + size);
  const out = new Uint8Array(size);
  if (start < input.length) out.set(input.subarray(start));
  return out;
}

/** The big-endian unsigned integer in `bytes`. */
export function toBigInt(bytes: Uint8Array): bigint {
  if (bytes.length === 0) return 0n;
  return BigInt(`0x${Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('hex')}`);
}

/** Writes `value` big-endian into `out[offset, offset + size)`, left-padded with zeros; `value` must fit. */
export function putBigInt(out: Uint8Array, offset: number, size: number, value: bigint): void {
  if (value === 0n) return;
  const hex = value.toString(16);
  const bytes = Buffer.from(hex.length % 2 === 0 ? hex : `0${hex}`, 'hex');
  out.set(bytes, offset + size - bytes.length);
}

/** Whether every byte of `bytes[start, end)` is zero. */
export function isZero(bytes: Uint8Array, start = 0, end = bytes.length): boolean {
  for (let i = start; i < end; i++) if (bytes[i] !== 0) return false;
  return true;
}

/** A 32-byte word holding 1: what a successful check answers (pairings, P-256). */
export function trueWord(): Uint8Array {
  const out = new Uint8Array(32);
  out[31] = 1;
  return out;
}
