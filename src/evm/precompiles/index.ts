import { blake2f } from './blake2f.ts';
import { bls12381Precompiles } from './bls12381.ts';
import { BYZANTIUM_BN254, bn254Precompiles, ISTANBUL_BN254 } from './bn254.ts';
import { ecrecover } from './ecrecover.ts';
import { identity, ripemd160, sha256 } from './hashes.ts';
import { modexp } from './modexp.ts';
import { p256Verify } from './p256.ts';
import { pointEvaluation } from './pointEvaluation.ts';
import type { Precompile } from './precompile.ts';

export { type Precompile, PrecompileError } from './precompile.ts';

/** The level at which the set of precompiles or their prices last changed. */
export type PrecompileRules =
  | 'frontier'
  | 'byzantium'
  | 'istanbul'
  | 'berlin'
  | 'cancun'
  | 'prague'
  | 'osaka';

const LEVELS: readonly PrecompileRules[] = [
  'frontier',
  'byzantium',
  'istanbul',
  'berlin',
  'cancun',
  'prague',
  'osaka',
];

function build(rules: PrecompileRules): ReadonlyMap<number, Precompile> {
  const level = LEVELS.indexOf(rules);
  const from = (r: PrecompileRules) => level >= LEVELS.indexOf(r);
  const map = new Map<number, Precompile>([
    [0x01, ecrecover],
    [0x02, sha256],
    [0x03, ripemd160],
    [0x04, identity],
  ]);
  if (from('byzantium')) {
    map.set(0x05, modexp(from('osaka') ? 'eip7883' : from('berlin') ? 'eip2565' : 'eip198'));
    const bn254 = bn254Precompiles(from('istanbul') ? ISTANBUL_BN254 : BYZANTIUM_BN254);
    map.set(0x06, bn254.add);
    map.set(0x07, bn254.mul);
    map.set(0x08, bn254.pairing);
  }
  if (from('istanbul')) map.set(0x09, blake2f);
  if (from('cancun')) map.set(0x0a, pointEvaluation);
  if (from('prague')) for (const [address, precompile] of bls12381Precompiles) map.set(address, precompile);
  if (from('osaka')) map.set(0x100, p256Verify);
  return map;
}

/**
 * Each precompile's name by the numeric value of its address: the names its EIPs give it, as
 * EIP-7910's configuration reports them (BN254 for what Byzantium's EIPs called alt_bn128).
 */
export const PRECOMPILE_NAMES: Readonly<Record<number, string>> = {
  1: 'ECREC',
  2: 'SHA256',
  3: 'RIPEMD160',
  4: 'ID',
  5: 'MODEXP',
  6: 'BN254_ADD',
  7: 'BN254_MUL',
  8: 'BN254_PAIRING',
  9: 'BLAKE2F',
  10: 'KZG_POINT_EVALUATION',
  11: 'BLS12_G1ADD',
  12: 'BLS12_G1MSM',
  13: 'BLS12_G2ADD',
  14: 'BLS12_G2MSM',
  15: 'BLS12_PAIRING_CHECK',
  16: 'BLS12_MAP_FP_TO_G1',
  17: 'BLS12_MAP_FP2_TO_G2',
  256: 'P256VERIFY',
};

const built = new Map<PrecompileRules, ReadonlyMap<number, Precompile>>();

/** Precompiles active under these rules, keyed by the numeric value of their address (1..0x11, 0x100). */
export function precompilesFor(rules: PrecompileRules): ReadonlyMap<number, Precompile> {
  let map = built.get(rules);
  if (map === undefined) {
    map = build(rules);
    built.set(rules, map);
  }
  return map;
}
