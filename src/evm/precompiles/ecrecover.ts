import secp256k1 from 'secp256k1';
import { keccak256 } from '../../primitives/keccak.ts';
import { getData, isZero } from './bytes.ts';
import { EMPTY, fixedGas, type Precompile } from './precompile.ts';

/**
 * 0x01: the address that signed a hash, as a 32-byte word. Input: hash, v, r, s (32 bytes each, read
 * zero-padded). Any signature that does not recover (v other than 27 or 28 as a whole word, r or s
 * zero or not below the curve order, r not the x of a point) answers an empty output, as geth does:
 * the call succeeds. The native libsecp256k1 binding recovers in ~50 µs against ~1.5 ms in pure JS
 * (src/chain/crypto.ts measured it); it throws on every such signature, and that is the empty case.
 */
export const ecrecover: Precompile = fixedGas(3000, (input) => {
  const data = getData(input, 0, 128);
  const v = data[63] ?? 0;
  if ((v !== 27 && v !== 28) || !isZero(data, 32, 63)) return EMPTY;
  let publicKey: Uint8Array;
  try {
    publicKey = secp256k1.ecdsaRecover(data.subarray(64, 128), v - 27, data.subarray(0, 32), false);
  } catch {
    return EMPTY;
  }
  const out = new Uint8Array(32);
  out.set(keccak256(publicKey.subarray(1)).subarray(12), 12);
  return out;
});
