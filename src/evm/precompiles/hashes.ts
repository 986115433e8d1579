import { createHash } from 'node:crypto';
import { createRIPEMD160, createSHA256 } from 'hash-wasm';
import { type Precompile, wordGas } from './precompile.ts';

// Measured by bench/precompiles.ts: hash-wasm hashes small inputs fastest (SHA-256 of 64 bytes in
// ~0.7 of node:crypto's time, half of @noble/hashes'), node:crypto's SHA-256 (OpenSSL, with the CPU's
// SHA instructions) large ones (0.4 of hash-wasm's at 1 KiB, 0.15 at 16 KiB); for RIPEMD-160,
// hash-wasm at every size. Inputs are mostly a few words (hashes, EIP-4844 commitments).
const sha256Hasher = await createSHA256();
const ripemdHasher = await createRIPEMD160();
const SHA256_NATIVE_FROM = 256;

/** SHA-256 of `data` (EIP-4844's versioned hashes use it too). */
export function sha256Digest(data: Uint8Array): Uint8Array {
  if (data.length >= SHA256_NATIVE_FROM) {
    // A copy: the digest is a Buffer, and a small Buffer may be a view into a shared pool.
    return Uint8Array.from(createHash('sha256').update(data).digest());
  }
  sha256Hasher.init();
  sha256Hasher.update(data);
  return sha256Hasher.digest('binary');
}

/** 0x02: SHA-256 of the input. */
export const sha256: Precompile = {
  gas: wordGas(60, 12),
  run: sha256Digest,
};

/** 0x03: RIPEMD-160 of the input, left-padded to a 32-byte word. */
export const ripemd160: Precompile = {
  gas: wordGas(600, 120),
  run(input) {
    ripemdHasher.init();
    ripemdHasher.update(input);
    const out = new Uint8Array(32);
    out.set(ripemdHasher.digest('binary'), 12);
    return out;
  },
};

/** 0x04: the input itself, copied (the caller's buffer may be the memory of the calling frame). */
export const identity: Precompile = {
  gas: wordGas(15, 3),
  run: (input) => input.slice(),
};
