import type { WeierstrassPoint, WeierstrassPointCons } from '@noble/curves/abstract/weierstrass.js';

/**
 * Whether affine (x, y) satisfies the curve's equation y² = x³ + ax + b, in @noble/curves' own field
 * arithmetic. Noble's assertValidity() checks the equation and the prime-order subgroup together,
 * and EIP-2537's additions want the first without the second; geth also tells the two apart in its
 * error texts.
 */
export function onCurve<T>(Point: WeierstrassPointCons<T>, x: T, y: T): boolean {
  const Fp = Point.Fp;
  const { a, b } = Point.CURVE();
  const rhs = Fp.add(Fp.add(Fp.mul(Fp.sqr(x), x), Fp.mul(a, x)), b);
  return Fp.eql(Fp.sqr(y), rhs);
}

/**
 * Whether a point already known to be on its curve lies in the prime-order subgroup. Noble's
 * assertValidity() checks the equation and the subgroup and remembers the point as valid, so a
 * pairing that follows (noble's pairingBatch validates its inputs) does not check it again: the
 * pairing precompiles would otherwise pay for each subgroup check twice.
 */
export function inSubgroup<T>(point: WeierstrassPoint<T>): boolean {
  try {
    point.assertValidity();
    return true;
  } catch {
    return false;
  }
}
