import { type Precompile, PrecompileError } from './precompile.ts';

// No maintained npm package exposes BLAKE2b's compression function F with a caller-given round count
// (@noble/hashes exports it for BLAKE2s only, with 32-bit words; blake2b packages hide it behind a
// 12-round hash), so F alone is written here from RFC 7693 section 3.2, as EIP-152 specifies it.
// Each 64-bit word is held as two 32-bit halves (low at 2i, high at 2i + 1): BigInt words would
// allocate at every step, and a call may ask for millions of rounds (one gas each).

const INPUT_LENGTH = 213;
const INVALID_LENGTH = new PrecompileError('invalid input length');
const INVALID_FINAL_FLAG = new PrecompileError('invalid final flag');

/** BLAKE2b's initialisation vector (RFC 7693 section 2.6), as low/high halves. */
const IV = new Uint32Array([
  0xf3bcc908, 0x6a09e667, 0x84caa73b, 0xbb67ae85, 0xfe94f82b, 0x3c6ef372, 0x5f1d36f1, 0xa54ff53a, 0xade682d1,
  0x510e527f, 0x2b3e6c1f, 0x9b05688c, 0xfb41bd6b, 0x1f83d9ab, 0x137e2179, 0x5be0cd19,
]);

/** The message schedule SIGMA (RFC 7693 section 2.7), ten rows of sixteen word indices. */
const SIGMA = new Uint8Array([
  0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 14, 10, 4, 8, 9, 15, 13, 6, 1, 12, 0, 2, 11, 7, 5, 3,
  11, 8, 12, 0, 5, 2, 15, 13, 10, 14, 3, 6, 7, 1, 9, 4, 7, 9, 3, 1, 13, 12, 11, 14, 2, 6, 5, 10, 4, 0, 15, 8,
  9, 0, 5, 7, 2, 4, 10, 15, 14, 1, 11, 12, 6, 8, 3, 13, 2, 12, 6, 10, 0, 11, 8, 3, 4, 13, 7, 5, 15, 14, 1, 9,
  12, 5, 1, 15, 14, 13, 4, 10, 0, 7, 6, 3, 9, 2, 8, 11, 13, 11, 7, 14, 12, 1, 3, 9, 5, 0, 15, 4, 8, 6, 2, 10,
  6, 15, 14, 9, 11, 3, 0, 8, 12, 2, 13, 7, 1, 4, 10, 5, 10, 2, 8, 4, 7, 6, 1, 5, 15, 11, 9, 14, 3, 12, 13, 0,
]);

// Scratch state reused by every call (calls are synchronous): the work vector v and message m.
const v = new Uint32Array(32);
const m = new Uint32Array(32);

/**
 * The mixing function G (RFC 7693 section 3.1) on words a, b, c, d of v with message words x and y.
 * The eight halves are read once into locals and written back once; a 64-bit sum's carry is whether
 * its low half wrapped below an addend.
 */
function mix(a: number, b: number, c: number, d: number, x: number, y: number): void {
  let alo = v[2 * a] ?? 0;
  let ahi = v[2 * a + 1] ?? 0;
  let blo = v[2 * b] ?? 0;
  let bhi = v[2 * b + 1] ?? 0;
  let clo = v[2 * c] ?? 0;
  let chi = v[2 * c + 1] ?? 0;
  let dlo = v[2 * d] ?? 0;
  let dhi = v[2 * d + 1] ?? 0;
  let lo: number;
  let t: number;
  // a = a + b + m[x]; d = (d ^ a) >>> 32
  lo = (alo + blo) >>> 0;
  ahi = (ahi + bhi + (lo < alo ? 1 : 0)) >>> 0;
  alo = lo;
  lo = (alo + (m[2 * x] ?? 0)) >>> 0;
  ahi = (ahi + (m[2 * x + 1] ?? 0) + (lo < alo ? 1 : 0)) >>> 0;
  alo = lo;
  t = (dlo ^ alo) >>> 0;
  dlo = (dhi ^ ahi) >>> 0;
  dhi = t;
  // c = c + d; b = (b ^ c) >>> 24
  lo = (clo + dlo) >>> 0;
  chi = (chi + dhi + (lo < clo ? 1 : 0)) >>> 0;
  clo = lo;
  blo ^= clo;
  bhi ^= chi;
  t = ((blo >>> 24) | (bhi << 8)) >>> 0;
  bhi = ((bhi >>> 24) | (blo << 8)) >>> 0;
  blo = t;
  // a = a + b + m[y]; d = (d ^ a) >>> 16
  lo = (alo + blo) >>> 0;
  ahi = (ahi + bhi + (lo < alo ? 1 : 0)) >>> 0;
  alo = lo;
  lo = (alo + (m[2 * y] ?? 0)) >>> 0;
  ahi = (ahi + (m[2 * y + 1] ?? 0) + (lo < alo ? 1 : 0)) >>> 0;
  alo = lo;
  dlo ^= alo;
  dhi ^= ahi;
  t = ((dlo >>> 16) | (dhi << 16)) >>> 0;
  dhi = ((dhi >>> 16) | (dlo << 16)) >>> 0;
  dlo = t;
  // c = c + d; b = (b ^ c) >>> 63, that is, rotated left by 1
  lo = (clo + dlo) >>> 0;
  chi = (chi + dhi + (lo < clo ? 1 : 0)) >>> 0;
  clo = lo;
  blo ^= clo;
  bhi ^= chi;
  t = ((blo << 1) | (bhi >>> 31)) >>> 0;
  bhi = ((bhi << 1) | (blo >>> 31)) >>> 0;
  blo = t;
  v[2 * a] = alo;
  v[2 * a + 1] = ahi;
  v[2 * b] = blo;
  v[2 * b + 1] = bhi;
  v[2 * c] = clo;
  v[2 * c + 1] = chi;
  v[2 * d] = dlo;
  v[2 * d + 1] = dhi;
}

/** 0x09 (EIP-152): BLAKE2b's compression function F, one gas per round. */
export const blake2f: Precompile = {
  // A malformed input is priced at nothing, as geth does: run rejects it and the call's gas goes.
  gas: (input) =>
    input.length === INPUT_LENGTH
      ? new DataView(input.buffer, input.byteOffset, input.byteLength).getUint32(0, false)
      : 0,
  run(input) {
    if (input.length !== INPUT_LENGTH) return INVALID_LENGTH;
    const final = input[212];
    if (final !== 0 && final !== 1) return INVALID_FINAL_FLAG;
    const view = new DataView(input.buffer, input.byteOffset, input.byteLength);
    const rounds = view.getUint32(0, false);
    for (let i = 0; i < 16; i++) v[i] = view.getUint32(4 + 4 * i, true);
    v.set(IV, 16);
    for (let i = 0; i < 32; i++) m[i] = view.getUint32(68 + 4 * i, true);
    // The offset counter t (two 64-bit words) goes into v[12] and v[13], the final flag into v[14].
    for (let i = 0; i < 4; i++) v[24 + i] = (v[24 + i] ?? 0) ^ view.getUint32(196 + 4 * i, true);
    if (final === 1) {
      v[28] = ~(v[28] ?? 0);
      v[29] = ~(v[29] ?? 0);
    }
    for (let round = 0; round < rounds; round++) {
      const s = (round % 10) * 16;
      mix(0, 4, 8, 12, SIGMA[s] ?? 0, SIGMA[s + 1] ?? 0);
      mix(1, 5, 9, 13, SIGMA[s + 2] ?? 0, SIGMA[s + 3] ?? 0);
      mix(2, 6, 10, 14, SIGMA[s + 4] ?? 0, SIGMA[s + 5] ?? 0);
      mix(3, 7, 11, 15, SIGMA[s + 6] ?? 0, SIGMA[s + 7] ?? 0);
      mix(0, 5, 10, 15, SIGMA[s + 8] ?? 0, SIGMA[s + 9] ?? 0);
      mix(1, 6, 11, 12, SIGMA[s + 10] ?? 0, SIGMA[s + 11] ?? 0);
      mix(2, 7, 8, 13, SIGMA[s + 12] ?? 0, SIGMA[s + 13] ?? 0);
      mix(3, 4, 9, 14, SIGMA[s + 14] ?? 0, SIGMA[s + 15] ?? 0);
    }
    const out = new Uint8Array(64);
    const outView = new DataView(out.buffer);
    for (let i = 0; i < 16; i++) {
      const h = view.getUint32(4 + 4 * i, true);
      outView.setUint32(4 * i, (h ^ (v[i] ?? 0) ^ (v[i + 16] ?? 0)) >>> 0, true);
    }
    return out;
  },
};
