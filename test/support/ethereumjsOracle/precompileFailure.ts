import type { Common } from '@ethereumjs/common';
import { type EVM, type ExecResult, getActivePrecompiles, type PrecompileFunc } from '@ethereumjs/evm';
import { bls12_381 } from '@noble/curves/bls12-381.js';
import { bn254 } from '@noble/curves/bn254.js';
import { sha256 } from '@noble/hashes/sha2.js';

// Why a precompile failed, in geth's words (core/vm/contracts.go and the libraries it calls, gnark's
// bn254 and BLS12-381 codecs and go-eth-kzg). ethereumjs runs the precompiles and decides that
// they failed; its own errors say too little (a BN254 input that is not a curve point comes back as
// REVERT, a blake2f input of the wrong length as "value out of range"), so the reason is found
// again here, from the failed call's input, in the order geth checks.

/** A failed precompile call as geth reports it. */
export interface PrecompileFailure {
  /** geth ran out of gas before the precompile ran: the error is then its plain `out of gas`. */
  outOfGas: boolean;
  /** geth's error: `out of gas`, or the precompile's own error. */
  text: string;
}

const OUT_OF_GAS: PrecompileFailure = { outOfGas: true, text: 'out of gas' };

interface FailedCall {
  address: number;
  input: Uint8Array;
  gas: bigint;
  common: Common;
  evmOutOfGas: boolean;
  explained?: PrecompileFailure;
}

/** The failed precompile calls, by the error object ethereumjs gave the call's result. */
const failedCalls = new WeakMap<object, FailedCall>();

interface PrecompileRunner {
  runPrecompile(code: PrecompileFunc, data: Uint8Array, gasLimit: bigint): Promise<ExecResult> | ExecResult;
}

/**
 * Notes each precompile call of this EVM that fails, so `precompileFailure` can say why. The reason is
 * worked out only when it is asked for (a tracer or eth_call's error); noting costs a copy of the
 * input, on failure only.
 */
export function notePrecompileFailures(evm: EVM): void {
  const runner = evm as unknown as PrecompileRunner;
  const addresses = new Map<PrecompileFunc, number>();
  for (const [address, code] of getActivePrecompiles(evm.common))
    addresses.set(code, Number.parseInt(address, 16));
  const run = runner.runPrecompile.bind(evm);
  const note = (result: ExecResult, code: PrecompileFunc, data: Uint8Array, gas: bigint): ExecResult => {
    const error = result.exceptionError;
    const address = addresses.get(code);
    if (error && address !== undefined) {
      failedCalls.set(error, {
        address,
        input: data.slice(),
        gas,
        common: evm.common,
        evmOutOfGas: error.error === 'out of gas',
      });
    }
    return result;
  };
  runner.runPrecompile = (code, data, gasLimit) => {
    const result = run(code, data, gasLimit);
    return result instanceof Promise
      ? result.then((r) => note(r, code, data, gasLimit))
      : note(result, code, data, gasLimit);
  };
}

/** Why the precompile call whose result carries `error` failed, if it was a precompile call. */
export function precompileFailure(error: object): PrecompileFailure | undefined {
  const call = failedCalls.get(error);
  if (!call) return undefined;
  call.explained ??= explain(call.address, call.input, call.gas, call.common, call.evmOutOfGas);
  return call.explained;
}

/**
 * geth's error for a failed call of the precompile at `address` with `input` and `gas`: out of gas
 * when the gas does not cover the precompile's price (geth charges it before running anything),
 * else the first check of geth's that the input fails. `evmOutOfGas` is ethereumjs's verdict, taken
 * where its checks come in geth's order (the prices are the fork's, so they agree); where they do
 * not (the pairings' input length, blake2f's, modexp's EIP-7823 bound), the price is computed here.
 * A failure no check explains keeps ethereumjs's verdict, and is worded `precompile failed`.
 */
export function explain(
  address: number,
  input: Uint8Array,
  gas: bigint,
  common: Common,
  evmOutOfGas: boolean,
): PrecompileFailure {
  const price = PRICES[address]?.(input, common);
  if (price === undefined ? evmOutOfGas : gas < price) return OUT_OF_GAS;
  const text = CHECKS[address]?.(input, common);
  if (text) return { outOfGas: false, text };
  return evmOutOfGas ? OUT_OF_GAS : { outOfGas: false, text: 'precompile failed' };
}

type Price = (input: Uint8Array, common: Common) => bigint | undefined;
type Check = (input: Uint8Array, common: Common) => string | null;

const param = (common: Common, name: string): bigint => common.param(name);

// Prices (geth's RequiredGas) of the precompiles that can fail for a reason other than gas. The
// G1/G2 multi-scalar multiplications are left to ethereumjs's verdict: it prices them (with EIP-2537's
// discount table) before any check but the empty input, as geth does.
const PRICES: Record<number, Price> = {
  5: (input, common) => (common.isActivatedEIP(7823) ? osakaModexpPrice(input) : undefined),
  6: (_, common) => param(common, 'bn254AddGas'),
  7: (_, common) => param(common, 'bn254MulGas'),
  8: (input, common) =>
    param(common, 'bn254PairingGas') +
    BigInt(Math.floor(input.length / 192)) * param(common, 'bn254PairingWordGas'),
  // Malformed input is free: it fails on its length whatever the gas.
  9: (input, common) =>
    input.length === BLAKE2F_INPUT ? BigInt(readUint32(input, 0)) * param(common, 'blake2RoundGas') : 0n,
  10: (_, common) => param(common, 'kzgPointEvaluationPrecompileGas'),
  11: (_, common) => param(common, 'bls12381G1AddGas'),
  13: (_, common) => param(common, 'bls12381G2AddGas'),
  15: (input, common) =>
    param(common, 'bls12381PairingBaseGas') +
    BigInt(Math.floor(input.length / 384)) * param(common, 'bls12381PairingPerPairGas'),
  16: (_, common) => param(common, 'bls12381MapG1Gas'),
  17: (_, common) => param(common, 'bls12381MapG2Gas'),
};

const CHECKS: Record<number, Check> = {
  5: (input, common) =>
    common.isActivatedEIP(7823) && modexpLengths(input).some((l) => l > MODEXP_MAX_LENGTH)
      ? 'one or more of base/exponent/modulus length exceeded 1024 bytes'
      : null,
  6: (input) => bnG1(padded(input, 0, 64)) ?? bnG1(padded(input, 64, 64)),
  7: (input) => bnG1(padded(input, 0, 64)),
  8: (input) => {
    if (input.length % 192 !== 0) return 'bad elliptic curve pairing size';
    for (let i = 0; i < input.length; i += 192) {
      const failed = bnG1(input.subarray(i, i + 64)) ?? bnG2(input.subarray(i + 64, i + 192));
      if (failed) return failed;
    }
    return null;
  },
  9: (input) => {
    if (input.length !== BLAKE2F_INPUT) return 'invalid input length';
    const flag = input[BLAKE2F_INPUT - 1];
    return flag === 0 || flag === 1 ? null : 'invalid final flag';
  },
  10: pointEvaluation,
  11: (input) => (input.length !== 256 ? BLS_LENGTH : (blsG1(input, 0) ?? blsG1(input, 128))),
  12: (input) => blsMsm(input, 160, (offset) => blsG1(input, offset) ?? blsG1Subgroup(input, offset)),
  13: (input) => (input.length !== 512 ? BLS_LENGTH : (blsG2(input, 0) ?? blsG2(input, 256))),
  14: (input) => blsMsm(input, 288, (offset) => blsG2(input, offset) ?? blsG2Subgroup(input, offset)),
  15: (input) =>
    blsMsm(
      input,
      384,
      (offset) =>
        blsG1(input, offset) ??
        blsG2(input, offset + 128) ??
        blsG1Subgroup(input, offset) ??
        blsG2Subgroup(input, offset + 128),
    ),
  16: (input) => (input.length !== 64 ? BLS_LENGTH : blsField(input, 0).error),
  17: (input) =>
    input.length !== 128 ? BLS_LENGTH : (blsField(input, 0).error ?? blsField(input, 64).error),
};

// --- modexp (EIP-7823's bound and EIP-7883's price, both from Osaka) --------------------------------

const MODEXP_MAX_LENGTH = 1024n;

function modexpLengths(input: Uint8Array): [bigint, bigint, bigint] {
  return [word(padded(input, 0, 32)), word(padded(input, 32, 32)), word(padded(input, 64, 32))];
}

function osakaModexpPrice(input: Uint8Array): bigint {
  const [baseLength, expLength, modLength] = modexpLengths(input);
  const operands = input.subarray(96);
  // The exponent's first 32 bytes (fewer if it is shorter), read past the base; zeros past the input.
  let head = 0n;
  if (BigInt(operands.length) > baseLength) {
    const take = expLength > 32n ? 32 : Number(expLength);
    head = word(padded(operands, Number(baseLength), take));
  }
  const longest = bigMax(baseLength, modLength);
  const words = (longest + 7n) / 8n;
  const complexity = longest <= 32n ? 16n : 2n * words * words;
  let iterations = expLength > 32n ? 16n * (expLength - 32n) : 0n;
  if (head > 0n) iterations += BigInt(head.toString(2).length - 1);
  return bigMax(complexity * bigMax(iterations, 1n), 500n);
}

// --- BN254 (EIP-196/197), as gnark decodes points -------------------------------------------------

const BN_G1 = bn254.G1.Point;
const BN_G2 = bn254.G2.Point;
const NOT_CANONICAL = 'invalid fp.Element encoding';

/** A G1 point (64 bytes): each coordinate below p, on the curve; all zeros is the point at infinity. */
function bnG1(bytes: Uint8Array): string | null {
  if (isZero(bytes)) return null;
  const x = word(bytes.subarray(0, 32));
  const y = word(bytes.subarray(32, 64));
  const Fp = BN_G1.Fp;
  if (x >= Fp.ORDER || y >= Fp.ORDER) return NOT_CANONICAL;
  return onCurve(BN_G1, x, y) ? null : 'point is not on curve';
}

/** A G2 point (128 bytes: x.imaginary, x.real, y.imaginary, y.real), on the twist and in G2. */
function bnG2(bytes: Uint8Array): string | null {
  if (isZero(bytes)) return null;
  const parts = [0, 32, 64, 96].map((at) => word(bytes.subarray(at, at + 32)));
  if (parts.some((part) => part >= BN_G1.Fp.ORDER)) return NOT_CANONICAL;
  const [x1 = 0n, x0 = 0n, y1 = 0n, y0 = 0n] = parts;
  const x = { c0: x0, c1: x1 };
  const y = { c0: y0, c1: y1 };
  if (!onCurve(BN_G2, x, y)) return 'point is not on curve';
  return BN_G2.fromAffine({ x, y }).isTorsionFree() ? null : 'point is not in correct subgroup';
}

// --- BLS12-381 (EIP-2537) -------------------------------------------------------------------------

const BLS_G1 = bls12_381.G1.Point;
const BLS_G2 = bls12_381.G2.Point;
const BLS_LENGTH = 'invalid input length';
const BLS_NOT_ON_CURVE = 'invalid point: not on curve';

/** A base-field element in 64 bytes: 16 zero bytes, then a value below p. */
function blsField(input: Uint8Array, offset: number): { value: bigint; error: string | null } {
  const bytes = input.subarray(offset, offset + 64);
  if (!isZero(bytes.subarray(0, 16))) return { value: 0n, error: 'invalid field element top bytes' };
  const value = word(bytes.subarray(16));
  return { value, error: value >= BLS_G1.Fp.ORDER ? NOT_CANONICAL : null };
}

function blsG1Coordinates(input: Uint8Array, offset: number): { x: bigint; y: bigint } {
  return { x: blsField(input, offset).value, y: blsField(input, offset + 64).value };
}

function blsG1(input: Uint8Array, offset: number): string | null {
  const error = blsField(input, offset).error ?? blsField(input, offset + 64).error;
  if (error) return error;
  const { x, y } = blsG1Coordinates(input, offset);
  return (x === 0n && y === 0n) || onCurve(BLS_G1, x, y) ? null : BLS_NOT_ON_CURVE;
}

function blsG2Coordinates(input: Uint8Array, offset: number) {
  const [x0, x1, y0, y1] = [0, 64, 128, 192].map((at) => blsField(input, offset + at).value);
  return { x: { c0: x0 ?? 0n, c1: x1 ?? 0n }, y: { c0: y0 ?? 0n, c1: y1 ?? 0n } };
}

function blsG2(input: Uint8Array, offset: number): string | null {
  for (const at of [0, 64, 128, 192]) {
    const { error } = blsField(input, offset + at);
    if (error) return error;
  }
  const { x, y } = blsG2Coordinates(input, offset);
  const Fp2 = BLS_G2.Fp;
  if (Fp2.is0(x) && Fp2.is0(y)) return null;
  return onCurve(BLS_G2, x, y) ? null : BLS_NOT_ON_CURVE;
}

function blsG1Subgroup(input: Uint8Array, offset: number): string | null {
  const { x, y } = blsG1Coordinates(input, offset);
  if (x === 0n && y === 0n) return null;
  return BLS_G1.fromAffine({ x, y }).isTorsionFree() ? null : 'g1 point is not on correct subgroup';
}

function blsG2Subgroup(input: Uint8Array, offset: number): string | null {
  const { x, y } = blsG2Coordinates(input, offset);
  const Fp2 = BLS_G2.Fp;
  if (Fp2.is0(x) && Fp2.is0(y)) return null;
  return BLS_G2.fromAffine({ x, y }).isTorsionFree() ? null : 'g2 point is not on correct subgroup';
}

/** Inputs of `size`-byte items, at least one: each checked in turn until one fails. */
function blsMsm(input: Uint8Array, size: number, check: (offset: number) => string | null): string | null {
  if (input.length === 0 || input.length % size !== 0) return BLS_LENGTH;
  for (let offset = 0; offset < input.length; offset += size) {
    const failed = check(offset);
    if (failed) return failed;
  }
  return null;
}

// --- KZG point evaluation (EIP-4844), as geth and go-eth-kzg check it ------------------------------

const KZG_INPUT = 192;
const KZG_VERSION = 0x01;
const KZG_PREFIX = 'error verifying kzg proof: ';

function pointEvaluation(input: Uint8Array): string | null {
  if (input.length !== KZG_INPUT) return 'invalid input length';
  const commitment = input.subarray(96, 144);
  const hash = sha256(commitment);
  hash[0] = KZG_VERSION;
  if (!equal(hash, input.subarray(0, 32))) return 'mismatched versioned hash';
  // go-eth-kzg reads the claimed value, then the point, then the commitment and the proof.
  const order = bls12_381.fields.Fr.ORDER;
  for (const scalar of [input.subarray(64, 96), input.subarray(32, 64)]) {
    if (word(scalar) >= order) {
      return `${KZG_PREFIX}scalar is not canonical when interpreted as a big integer in big-endian`;
    }
  }
  const failed = compressedG1(commitment) ?? compressedG1(input.subarray(144, 192));
  if (failed) return KZG_PREFIX + failed;
  return `${KZG_PREFIX}can't verify opening proof`;
}

/** gnark's decoding of a 48-byte compressed G1 point: flags, then x, then y, then the subgroup. */
function compressedG1(bytes: Uint8Array): string | null {
  const first = bytes[0] ?? 0;
  const flags = first & 0xe0;
  // 0b001, 0b011 and 0b111 are no encoding; 0b000 and 0b010 are uncompressed, which takes 96 bytes.
  if (flags === 0x20 || flags === 0x60 || flags === 0xe0) return 'invalid point encoding';
  if (flags === 0x00 || flags === 0x40) return 'short buffer';
  if (flags === 0xc0) {
    return (first & 0x1f) === 0 && isZero(bytes.subarray(1)) ? null : 'invalid infinity point encoding';
  }
  const x = word(Uint8Array.from([first & 0x1f, ...bytes.subarray(1)]));
  const Fp = BLS_G1.Fp;
  if (x >= Fp.ORDER) return NOT_CANONICAL;
  const ySquared = Fp.add(Fp.mul(Fp.sqr(x), x), BLS_G1.CURVE().b);
  // Euler's criterion: a square unless the power is p − 1.
  if (Fp.pow(ySquared, (Fp.ORDER - 1n) / 2n) === Fp.ORDER - 1n) {
    return "invalid compressed coordinate: square root doesn't exist";
  }
  // Either root: negation keeps a point in (or out of) the subgroup.
  const y = Fp.sqrt(ySquared);
  return BLS_G1.fromAffine({ x, y }).isTorsionFree() ? null : 'invalid point: subgroup check failed';
}

// --- helpers ----------------------------------------------------------------------------------------

const BLAKE2F_INPUT = 213;

interface CurvePoint<F> {
  Fp: {
    add(a: F, b: F): F;
    mul(a: F, b: F): F;
    sqr(a: F): F;
    eql(a: F, b: F): boolean;
  };
  CURVE(): { a: F; b: F };
}

/** y² = x³ + ax + b in the curve's field. */
function onCurve<F>(point: CurvePoint<F>, x: F, y: F): boolean {
  const { Fp } = point;
  const { a, b } = point.CURVE();
  const right = Fp.add(Fp.add(Fp.mul(Fp.sqr(x), x), Fp.mul(a, x)), b);
  return Fp.eql(Fp.sqr(y), right);
}

/** `length` bytes of `input` from `offset`, zeros past its end (geth's getData). */
function padded(input: Uint8Array, offset: number, length: number): Uint8Array {
  const out = new Uint8Array(length);
  if (offset < input.length) out.set(input.subarray(offset, offset + length));
  return out;
}

function bigMax(a: bigint, b: bigint): bigint {
  return a > b ? a : b;
}

function word(bytes: Uint8Array): bigint {
  let value = 0n;
  for (const b of bytes) value = (value << 8n) | BigInt(b);
  return value;
}

function readUint32(bytes: Uint8Array, offset: number): number {
  return new DataView(bytes.buffer, bytes.byteOffset + offset, 4).getUint32(0);
}

function isZero(bytes: Uint8Array): boolean {
  return bytes.every((b) => b === 0);
}

function equal(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && a.every((v, i) => v === b[i]);
}
