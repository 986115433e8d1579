import type { WeierstrassPoint } from '@noble/curves/abstract/weierstrass.js';
import { bn254 as curve } from '@noble/curves/bn254.js';
import { getData, isZero, putBigInt, toBigInt, trueWord } from './bytes.ts';
import { inSubgroup, onCurve } from './curves.ts';
import { type Precompile, PrecompileError } from './precompile.ts';

// EIP-196 and EIP-197 on @noble/curves' bn254 (alt_bn128). Inputs are checked in geth's order and
// rejected with its texts (gnark-crypto's, which geth's bn256 wraps): each coordinate below the field
// modulus, then the curve equation, then (G2 only: G1's cofactor is 1) the prime-order subgroup.

type G1 = WeierstrassPoint<bigint>;
type G2 = ReturnType<typeof curve.G2.Point.fromAffine>;

const P = curve.fields.Fp.ORDER;
const R = curve.fields.Fr.ORDER;
const NON_CANONICAL = new PrecompileError('invalid fp.Element encoding');
const NOT_ON_CURVE = new PrecompileError('point is not on curve');
const NOT_IN_SUBGROUP = new PrecompileError('point is not in correct subgroup');
const BAD_PAIRING_SIZE = new PrecompileError('bad elliptic curve pairing size');

/** The G1 point at `bytes[offset, offset + 64)`: x, y big-endian; all zeros is the point at infinity. */
function readG1(bytes: Uint8Array, offset: number): G1 | PrecompileError {
  if (isZero(bytes, offset, offset + 64)) return curve.G1.Point.ZERO;
  const x = toBigInt(bytes.subarray(offset, offset + 32));
  const y = toBigInt(bytes.subarray(offset + 32, offset + 64));
  if (x >= P || y >= P) return NON_CANONICAL;
  if (!onCurve(curve.G1.Point, x, y)) return NOT_ON_CURVE;
  // G1's cofactor is 1, so this holds; the check marks the point valid for the pairing (see inSubgroup).
  const point = curve.G1.Point.fromAffine({ x, y });
  return inSubgroup(point) ? point : NOT_IN_SUBGROUP;
}

/** The G2 point at `bytes[offset, offset + 128)`: x.c1, x.c0, y.c1, y.c0 (imaginary part first). */
function readG2(bytes: Uint8Array, offset: number): G2 | PrecompileError {
  if (isZero(bytes, offset, offset + 128)) return curve.G2.Point.ZERO;
  const parts: bigint[] = [];
  for (let i = 0; i < 4; i++) {
    const part = toBigInt(bytes.subarray(offset + 32 * i, offset + 32 * i + 32));
    if (part >= P) return NON_CANONICAL;
    parts.push(part);
  }
  const [x1 = 0n, x0 = 0n, y1 = 0n, y0 = 0n] = parts;
  const Fp2 = curve.fields.Fp2;
  const x = Fp2.fromBigTuple([x0, x1]);
  const y = Fp2.fromBigTuple([y0, y1]);
  if (!onCurve(curve.G2.Point, x, y)) return NOT_ON_CURVE;
  const point = curve.G2.Point.fromAffine({ x, y });
  return inSubgroup(point) ? point : NOT_IN_SUBGROUP;
}

function writeG1(point: G1): Uint8Array {
  const out = new Uint8Array(64);
  if (point.is0()) return out;
  const { x, y } = point.toAffine();
  putBigInt(out, 0, 32, x);
  putBigInt(out, 32, 32, y);
  return out;
}

function add(input: Uint8Array): Uint8Array | PrecompileError {
  const data = getData(input, 0, 128);
  const a = readG1(data, 0);
  if (a instanceof PrecompileError) return a;
  const b = readG1(data, 64);
  if (b instanceof PrecompileError) return b;
  return writeG1(a.add(b));
}

function mul(input: Uint8Array): Uint8Array | PrecompileError {
  const data = getData(input, 0, 96);
  const point = readG1(data, 0);
  if (point instanceof PrecompileError) return point;
  // Any 256-bit scalar: G1 has prime order R, so k and k mod R give the same point.
  const k = toBigInt(data.subarray(64, 96)) % R;
  return writeG1(k === 0n ? curve.G1.Point.ZERO : point.multiplyUnsafe(k));
}

function pairing(input: Uint8Array): Uint8Array | PrecompileError {
  if (input.length % 192 !== 0) return BAD_PAIRING_SIZE;
  const pairs: { g1: G1; g2: G2 }[] = [];
  for (let offset = 0; offset < input.length; offset += 192) {
    const g1 = readG1(input, offset);
    if (g1 instanceof PrecompileError) return g1;
    const g2 = readG2(input, offset + 64);
    if (g2 instanceof PrecompileError) return g2;
    // A pair with the point at infinity contributes a factor of 1: noble's batch takes none.
    if (!g1.is0() && !g2.is0()) pairs.push({ g1, g2 });
  }
  if (pairs.length === 0) return trueWord();
  const Fp12 = curve.fields.Fp12;
  return Fp12.eql(curve.pairingBatch(pairs), Fp12.ONE) ? trueWord() : new Uint8Array(32);
}

/** Prices of 0x06-0x08: Byzantium's (EIP-196/197) and Istanbul's (EIP-1108). */
export interface Bn254Prices {
  add: number;
  mul: number;
  pairingBase: number;
  pairingPerPair: number;
}

export const BYZANTIUM_BN254: Bn254Prices = {
  add: 500,
  mul: 40000,
  pairingBase: 100000,
  pairingPerPair: 80000,
};
export const ISTANBUL_BN254: Bn254Prices = { add: 150, mul: 6000, pairingBase: 45000, pairingPerPair: 34000 };

/** 0x06 (point addition), 0x07 (scalar multiplication), 0x08 (pairing check) at the given prices. */
export function bn254Precompiles(prices: Bn254Prices): {
  add: Precompile;
  mul: Precompile;
  pairing: Precompile;
} {
  return {
    add: { gas: () => prices.add, run: add },
    mul: { gas: () => prices.mul, run: mul },
    pairing: {
      gas: (input) => prices.pairingBase + Math.floor(input.length / 192) * prices.pairingPerPair,
      run: pairing,
    },
  };
}
