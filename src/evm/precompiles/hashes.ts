import { createRIPEMD160, createSHA256 } from 'hash-wasm';
import { type Precompile, wordGas } from './precompile.ts';

// hash-wasm, as src/primitives/keccak.ts does for keccak: bench/precompiles.ts measures it against
// @noble/hashes and node:crypto on the inputs these precompiles see.
const sha256Hasher = await createSHA256();
const ripemdHasher = await createRIPEMD160();

/** 0x02: SHA-256 of the input. */
export const sha256: Precompile = {
  gas: wordGas(60, 12),
  run: sha256Digest,
};

/** SHA-256 of `data` (EIP-4844's versioned hashes use it too). */
export function sha256Digest(data: Uint8Array): Uint8Array {
  sha256Hasher.init();
  sha256Hasher.update(data);
  return sha256Hasher.digest('binary');
}

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
