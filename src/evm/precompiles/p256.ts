import { p256 } from '@noble/curves/nist.js';
import { trueWord } from './bytes.ts';
import { EMPTY, fixedGas, type Precompile } from './precompile.ts';

const INPUT_LENGTH = 160;

/**
 * 0x100 (EIP-7951): ECDSA verification over secp256r1. Input: hash, r, s, qx, qy (32 bytes each).
 * @noble/curves' verify follows the EIP step for step: r and s in [1, n), the key a point of the curve
 * other than infinity, R' = (h/s)G + (r/s)Q not infinity, R'.x mod n = r, the hash taken as given
 * (mod n) and high s allowed. Any failure, a wrong length included, answers an empty output and the
 * call succeeds: the EIP says so and geth does so.
 */
export const p256Verify: Precompile = fixedGas(6900, (input) => {
  if (input.length !== INPUT_LENGTH) return EMPTY;
  const publicKey = new Uint8Array(65);
  publicKey[0] = 0x04;
  publicKey.set(input.subarray(96, 160), 1);
  const valid = p256.verify(input.subarray(32, 96), input.subarray(0, 32), publicKey, {
    prehash: false,
    lowS: false,
    format: 'compact',
  });
  return valid ? trueWord() : EMPTY;
});
