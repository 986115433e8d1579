import type { AffinePoint } from '@noble/curves/abstract/curve.js';
import { pippenger } from '@noble/curves/abstract/curve.js';
import type { WeierstrassPoint, WeierstrassPointCons } from '@noble/curves/abstract/weierstrass.js';
import { bls12_381 as curve } from '@noble/curves/bls12-381.js';
import { isZero, putBigInt, toBigInt, trueWord } from './bytes.ts';
import { inSubgroup, onCurve } from './curves.ts';
import { type Precompile, PrecompileError } from './precompile.ts';

// EIP-2537 (final, Prague) on @noble/curves' BLS12-381. A base-field element is 64 bytes: 16 zero
// bytes, then 48 big-endian bytes below the modulus. A G1 point is x, y; a G2 point is x.c0, x.c1,
// y.c0, y.c1; all zeros is the point at infinity. Inputs are checked in geth's order and rejected with
// its texts: per point, each element's top bytes then its value, then the curve equation; subgroup
// checks only where the EIP asks (MSM, pairing), not for additions.

type Fp2 = ReturnType<typeof curve.fields.Fp2.fromBigTuple>;
type G1 = WeierstrassPoint<bigint>;
type G2 = WeierstrassPoint<Fp2>;

const P = curve.fields.Fp.ORDER;
const R = curve.fields.Fr.ORDER;
const INVALID_LENGTH = new PrecompileError('invalid input length');
const TOP_BYTES = new PrecompileError('invalid field element top bytes');
const NON_CANONICAL = new PrecompileError('invalid fp.Element encoding');
const NOT_ON_CURVE = new PrecompileError('invalid point: not on curve');
const G1_SUBGROUP = new PrecompileError('g1 point is not on correct subgroup');
const G2_SUBGROUP = new PrecompileError('g2 point is not on correct subgroup');

const G1_LENGTH = 128;
const G2_LENGTH = 256;
const SCALAR_LENGTH = 32;
const PIPPENGER_FROM = 4;

function readFp(bytes: Uint8Array, offset: number): bigint | PrecompileError {
  if (!isZero(bytes, offset, offset + 16)) return TOP_BYTES;
  const value = toBigInt(bytes.subarray(offset + 16, offset + 64));
  return value < P ? value : NON_CANONICAL;
}

/** A point given its affine coordinates, once they are on the curve; (0, 0) is the point at infinity. */
function toPoint<T>(Point: WeierstrassPointCons<T>, x: T, y: T): WeierstrassPoint<T> | PrecompileError {
  const Fp = Point.Fp;
  if (Fp.is0(x) && Fp.is0(y)) return Point.ZERO;
  if (!onCurve(Point, x, y)) return NOT_ON_CURVE;
  return Point.fromAffine({ x, y });
}

function readG1(bytes: Uint8Array, offset: number): G1 | PrecompileError {
  const x = readFp(bytes, offset);
  if (x instanceof PrecompileError) return x;
  const y = readFp(bytes, offset + 64);
  if (y instanceof PrecompileError) return y;
  return toPoint(curve.G1.Point, x, y);
}

function readFp2(bytes: Uint8Array, offset: number): Fp2 | PrecompileError {
  const c0 = readFp(bytes, offset);
  if (c0 instanceof PrecompileError) return c0;
  const c1 = readFp(bytes, offset + 64);
  if (c1 instanceof PrecompileError) return c1;
  return curve.fields.Fp2.fromBigTuple([c0, c1]);
}

function readG2(bytes: Uint8Array, offset: number): G2 | PrecompileError {
  const x = readFp2(bytes, offset);
  if (x instanceof PrecompileError) return x;
  const y = readFp2(bytes, offset + 128);
  if (y instanceof PrecompileError) return y;
  return toPoint(curve.G2.Point, x, y);
}

/** The encoding of affine (x, y); the point at infinity, whose affine form noble gives as (0, 0), is zeros. */
function writeG1Affine({ x, y }: AffinePoint<bigint>): Uint8Array {
  const out = new Uint8Array(G1_LENGTH);
  putBigInt(out, 16, 48, x);
  putBigInt(out, 80, 48, y);
  return out;
}

function writeG2Affine({ x, y }: AffinePoint<Fp2>): Uint8Array {
  const out = new Uint8Array(G2_LENGTH);
  putBigInt(out, 16, 48, x.c0);
  putBigInt(out, 80, 48, x.c1);
  putBigInt(out, 144, 48, y.c0);
  putBigInt(out, 208, 48, y.c1);
  return out;
}

const writeG1 = (point: G1) => writeG1Affine(point.toAffine());
const writeG2 = (point: G2) => writeG2Affine(point.toAffine());

/**
 * @noble/curves 2.4.0 declares its hashers' mapToCurve as taking bigint[] and giving affine x, y. At run
 * time G1's (one base-field element per input) takes a single bigint, and both give the cofactor-cleared
 * point, whose x and y getters are its affine coordinates: this wrapper states what G1's is called with.
 */
const mapToG1 = curve.G1.mapToCurve as unknown as (u: bigint) => AffinePoint<bigint>;

interface Group<T> {
  Point: WeierstrassPointCons<T>;
  length: number;
  read(bytes: Uint8Array, offset: number): WeierstrassPoint<T> | PrecompileError;
  write(point: WeierstrassPoint<T>): Uint8Array;
  subgroupError: PrecompileError;
  /** EIP-2537's price of one multiplication, and its MSM discounts for k = 1..128 pairs (per mille). */
  mulGas: number;
  discounts: readonly number[];
}

function addition<T>(group: Group<T>, gas: number): Precompile {
  return {
    gas: () => gas,
    run(input) {
      if (input.length !== 2 * group.length) return INVALID_LENGTH;
      const a = group.read(input, 0);
      if (a instanceof PrecompileError) return a;
      const b = group.read(input, group.length);
      if (b instanceof PrecompileError) return b;
      return group.write(a.add(b));
    },
  };
}

function msm<T>(group: Group<T>): Precompile {
  const pairLength = group.length + SCALAR_LENGTH;
  return {
    gas(input) {
      const k = Math.floor(input.length / pairLength);
      if (k === 0) return 0;
      const discount = group.discounts[Math.min(k, group.discounts.length) - 1] ?? 0;
      return Math.floor((k * group.mulGas * discount) / 1000);
    },
    run(input) {
      if (input.length === 0 || input.length % pairLength !== 0) return INVALID_LENGTH;
      const points: WeierstrassPoint<T>[] = [];
      const scalars: bigint[] = [];
      for (let offset = 0; offset < input.length; offset += pairLength) {
        const point = group.read(input, offset);
        if (point instanceof PrecompileError) return point;
        if (!inSubgroup(point)) return group.subgroupError;
        // A scalar is any 32-byte value: the points have prime order R, so k acts as k mod R.
        const scalar = toBigInt(input.subarray(offset + group.length, offset + pairLength)) % R;
        if (scalar === 0n || point.is0()) continue;
        points.push(point);
        scalars.push(scalar);
      }
      // Pippenger's buckets repay their setup from four pairs on (bench/precompiles.ts): below that,
      // each product is summed.
      if (points.length >= PIPPENGER_FROM) return group.write(pippenger(group.Point, points, scalars));
      let sum = group.Point.ZERO;
      for (let i = 0; i < points.length; i++)
        sum = sum.add(points[i]?.multiplyUnsafe(scalars[i] ?? 0n) ?? group.Point.ZERO);
      return group.write(sum);
    },
  };
}

const G1_GROUP: Group<bigint> = {
  Point: curve.G1.Point,
  length: G1_LENGTH,
  read: readG1,
  write: writeG1,
  subgroupError: G1_SUBGROUP,
  mulGas: 12000,
  discounts: [
    1000, 949, 848, 797, 764, 750, 738, 728, 719, 712, 705, 698, 692, 687, 682, 677, 673, 669, 665, 661, 658,
    654, 651, 648, 645, 642, 640, 637, 635, 632, 630, 627, 625, 623, 621, 619, 617, 615, 613, 611, 609, 608,
    606, 604, 603, 601, 599, 598, 596, 595, 593, 592, 591, 589, 588, 586, 585, 584, 582, 581, 580, 579, 577,
    576, 575, 574, 573, 572, 570, 569, 568, 567, 566, 565, 564, 563, 562, 561, 560, 559, 558, 557, 556, 555,
    554, 553, 552, 551, 550, 549, 548, 547, 547, 546, 545, 544, 543, 542, 541, 540, 540, 539, 538, 537, 536,
    536, 535, 534, 533, 532, 532, 531, 530, 529, 528, 528, 527, 526, 525, 525, 524, 523, 522, 522, 521, 520,
    520, 519,
  ],
};

const G2_GROUP: Group<Fp2> = {
  Point: curve.G2.Point,
  length: G2_LENGTH,
  read: readG2,
  write: writeG2,
  subgroupError: G2_SUBGROUP,
  mulGas: 22500,
  discounts: [
    1000, 1000, 923, 884, 855, 832, 812, 796, 782, 770, 759, 749, 740, 732, 724, 717, 711, 704, 699, 693, 688,
    683, 679, 674, 670, 666, 663, 659, 655, 652, 649, 646, 643, 640, 637, 634, 632, 629, 627, 624, 622, 620,
    618, 615, 613, 611, 609, 607, 606, 604, 602, 600, 598, 597, 595, 593, 592, 590, 589, 587, 586, 584, 583,
    582, 580, 579, 578, 576, 575, 574, 573, 571, 570, 569, 568, 567, 566, 565, 563, 562, 561, 560, 559, 558,
    557, 556, 555, 554, 553, 552, 552, 551, 550, 549, 548, 547, 546, 545, 545, 544, 543, 542, 541, 541, 540,
    539, 538, 537, 537, 536, 535, 535, 534, 533, 532, 532, 531, 530, 530, 529, 528, 528, 527, 526, 526, 525,
    524, 524,
  ],
};

const PAIR_LENGTH = G1_LENGTH + G2_LENGTH;

/** 0x0f: whether the product of the pairings of k (G1, G2) pairs is 1; every point subgroup-checked. */
const pairingCheck: Precompile = {
  gas: (input) => 37700 + 32600 * Math.floor(input.length / PAIR_LENGTH),
  run(input) {
    if (input.length === 0 || input.length % PAIR_LENGTH !== 0) return INVALID_LENGTH;
    const pairs: { g1: G1; g2: G2 }[] = [];
    for (let offset = 0; offset < input.length; offset += PAIR_LENGTH) {
      const g1 = readG1(input, offset);
      if (g1 instanceof PrecompileError) return g1;
      const g2 = readG2(input, offset + G1_LENGTH);
      if (g2 instanceof PrecompileError) return g2;
      if (!inSubgroup(g1)) return G1_SUBGROUP;
      if (!inSubgroup(g2)) return G2_SUBGROUP;
      // A pair with the point at infinity contributes a factor of 1: noble's batch takes none.
      if (!g1.is0() && !g2.is0()) pairs.push({ g1, g2 });
    }
    if (pairs.length === 0) return trueWord();
    const Fp12 = curve.fields.Fp12;
    return Fp12.eql(curve.pairingBatch(pairs), Fp12.ONE) ? trueWord() : new Uint8Array(32);
  },
};

/** 0x10: map a base-field element to G1 (RFC 9380's simplified SWU, then cofactor clearing). */
const mapFpToG1: Precompile = {
  gas: () => 5500,
  run(input) {
    if (input.length !== 64) return INVALID_LENGTH;
    const u = readFp(input, 0);
    if (u instanceof PrecompileError) return u;
    return writeG1Affine(mapToG1(u));
  },
};

/** 0x11: map an Fp2 element (c0, c1) to G2. */
const mapFp2ToG2: Precompile = {
  gas: () => 23800,
  run(input) {
    if (input.length !== 128) return INVALID_LENGTH;
    const u = readFp2(input, 0);
    if (u instanceof PrecompileError) return u;
    return writeG2Affine(curve.G2.mapToCurve([u.c0, u.c1]));
  },
};

/** 0x0b-0x11 (EIP-2537), by address. */
export const bls12381Precompiles: ReadonlyMap<number, Precompile> = new Map([
  [0x0b, addition(G1_GROUP, 375)],
  [0x0c, msm(G1_GROUP)],
  [0x0d, addition(G2_GROUP, 600)],
  [0x0e, msm(G2_GROUP)],
  [0x0f, pairingCheck],
  [0x10, mapFpToG1],
  [0x11, mapFp2ToG2],
]);
