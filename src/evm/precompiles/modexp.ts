import { getData, putBigInt, toBigInt } from './bytes.ts';
import { EMPTY, type Precompile, PrecompileError } from './precompile.ts';

/** Which pricing and bounds modexp follows: EIP-198 (Byzantium), EIP-2565 (Berlin), EIP-7823 + 7883 (Osaka). */
export type ModexpRules = 'eip198' | 'eip2565' | 'eip7883';

const HEADER = 96;
/** EIP-7823's bound on each of the three lengths, from Osaka on. */
const OSAKA_MAX_LENGTH = 1024n;
const TOO_LONG = new PrecompileError('one or more of base/exponent/modulus length exceeded 1024 bytes');
const OUT_OF_GAS = new PrecompileError('out of gas');
/** 128 MiB: a base or modulus this long costs over 2^45 gas under EIP-198 and EIP-2565 (Osaka bounds it). */
const UNPAYABLE_LENGTH = 2n ** 27n;

interface Header {
  baseLen: bigint;
  expLen: bigint;
  modLen: bigint;
}

function header(input: Uint8Array): Header {
  return {
    baseLen: toBigInt(getData(input, 0, 32)),
    expLen: toBigInt(getData(input, 32, 32)),
    modLen: toBigInt(getData(input, 64, 32)),
  };
}

/** The larger of two BigInts (Math.max takes none). */
function larger(a: bigint, b: bigint): bigint {
  if (a > b) return a;
  return b;
}

function bitLength(n: bigint): number {
  return n === 0n ? 0 : n.toString(2).length;
}

/** EIP-198's complexity of multiplying two `x`-byte numbers. */
function byzantiumComplexity(x: bigint): bigint {
  if (x <= 64n) return x * x;
  if (x <= 1024n) return (x * x) / 4n + 96n * x - 3072n;
  return (x * x) / 16n + 480n * x - 199680n;
}

/**
 * The iteration count (EIP-198's "adjusted exponent length"): from the exponent's length past 32
 * bytes and the highest set bit of its first 32 bytes, never below 1. The exponent's head is read
 * zero-padded at `baseLen` past the header, or taken as zero when the input ends before it.
 */
function iterations(input: Uint8Array, h: Header, perByte: bigint): bigint {
  const body = Math.max(input.length - HEADER, 0);
  let head = 0n;
  if (BigInt(body) > h.baseLen) {
    const size = h.expLen > 32n ? 32 : Number(h.expLen);
    head = toBigInt(getData(input, HEADER + Number(h.baseLen), size));
  }
  let count = h.expLen > 32n ? (h.expLen - 32n) * perByte : 0n;
  const bits = bitLength(head);
  if (bits > 0) count += BigInt(bits - 1);
  return count > 1n ? count : 1n;
}

/**
 * The price of an input. Computed exactly in BigInt; geth saturates at 2^64 - 1 instead, and both
 * lie past any gas limit wherever they differ, so the call is out of gas either way.
 */
function modexpGas(input: Uint8Array, rules: ModexpRules): number {
  const h = header(input);
  const maxLen = larger(h.baseLen, h.modLen);
  if (rules === 'eip198') {
    return Number((iterations(input, h, 8n) * byzantiumComplexity(maxLen)) / 20n);
  }
  const words = (maxLen + 7n) / 8n;
  if (rules === 'eip2565') {
    const gas = (iterations(input, h, 8n) * words * words) / 3n;
    return gas > 200n ? Number(gas) : 200;
  }
  const complexity = maxLen <= 32n ? 16n : 2n * words * words;
  const gas = iterations(input, h, 16n) * complexity;
  return gas > 500n ? Number(gas) : 500;
}

/**
 * base^exponent mod modulus, left to right over the exponent's bytes (no BigInt shifts of the
 * exponent). A long exponent goes four bits at a time from a table of base^0..15: a quarter of the
 * multiplications of bit-by-bit squaring, for 14 multiplications up front that a short exponent (RSA's
 * 65537) would not repay.
 */
function modPow(base: bigint, exponent: Uint8Array, modulus: bigint): bigint {
  if (modulus === 1n) return 0n;
  let first = 0;
  while (first < exponent.length && exponent[first] === 0) first++;
  if (first === exponent.length) return 1n;
  const b = base % modulus;
  let r = 1n;
  if (exponent.length - first <= 8) {
    for (let i = first; i < exponent.length; i++) {
      const byte = exponent[i] ?? 0;
      for (let bit = 7; bit >= 0; bit--) {
        r = (r * r) % modulus;
        if ((byte >> bit) & 1) r = (r * b) % modulus;
      }
    }
    return r;
  }
  const table: bigint[] = [1n, b];
  for (let i = 2; i < 16; i++) table.push(((table[i - 1] ?? 1n) * b) % modulus);
  for (let i = first; i < exponent.length; i++) {
    const byte = exponent[i] ?? 0;
    for (const nibble of [byte >> 4, byte & 15]) {
      r = (r * r) % modulus;
      r = (r * r) % modulus;
      r = (r * r) % modulus;
      r = (r * r) % modulus;
      if (nibble !== 0) r = (r * (table[nibble] ?? 1n)) % modulus;
    }
  }
  return r;
}

function modexpRun(input: Uint8Array, rules: ModexpRules): Uint8Array | PrecompileError {
  const h = header(input);
  if (
    rules === 'eip7883' &&
    (h.baseLen > OSAKA_MAX_LENGTH || h.expLen > OSAKA_MAX_LENGTH || h.modLen > OSAKA_MAX_LENGTH)
  ) {
    return TOO_LONG;
  }
  if (h.baseLen === 0n && h.modLen === 0n) return EMPTY;
  // No block holds the gas such a base or modulus costs: the EVM never gets here with one, and the
  // answer (geth's too) is running out of gas.
  if (h.baseLen >= UNPAYABLE_LENGTH || h.modLen >= UNPAYABLE_LENGTH) return OUT_OF_GAS;
  const modLen = Number(h.modLen);
  const body = input.subarray(Math.min(HEADER, input.length));
  // Operands past the input's end read as zeros. A modulus that starts past it is zero, and the
  // answer is modLen zero bytes; otherwise base and exponent lie wholly inside the input.
  const modStart = h.baseLen + h.expLen;
  if (modStart >= BigInt(body.length)) return new Uint8Array(modLen);
  const modulus = toBigInt(getData(body, Number(modStart), modLen));
  const out = new Uint8Array(modLen);
  if (modulus === 0n) return out;
  const baseLen = Number(h.baseLen);
  const base = toBigInt(body.subarray(0, baseLen));
  putBigInt(out, 0, modLen, modPow(base, body.subarray(baseLen, Number(modStart)), modulus));
  return out;
}

/** 0x05: modular exponentiation of big-endian integers (EIP-198), priced and bounded per `rules`. */
export function modexp(rules: ModexpRules): Precompile {
  return { gas: (input) => modexpGas(input, rules), run: (input) => modexpRun(input, rules) };
}
