// Cost per call of each precompile against @ethereumjs/evm's, on typical inputs (vectors from
// test/evm/fixtures/precompiles), side by side in one run: ours and theirs alternate in rounds, and the
// median of the rounds is printed with the ratio. Then the choices inside: SHA-256 and RIPEMD-160 by
// hash-wasm, @noble/hashes and node:crypto; BLS MSM by Pippenger and by summing products. Times are
// CPU time per call.
// Run: node --import tsx bench/precompiles.ts   (BENCH_ROUNDS, default 7; BENCH_MS per cell, default 200)
import { createHash } from 'node:crypto';
import { Common, Hardfork, Mainnet } from '@ethereumjs/common';
import { createEVM, getActivePrecompiles } from '@ethereumjs/evm';
import { pippenger } from '@noble/curves/abstract/curve.js';
import type { WeierstrassPoint, WeierstrassPointCons } from '@noble/curves/abstract/weierstrass.js';
import { bls12_381 } from '@noble/curves/bls12-381.js';
import { ripemd160 as nobleRipemd160 } from '@noble/hashes/legacy.js';
import { sha256 as nobleSha256 } from '@noble/hashes/sha2.js';
import { createRIPEMD160, createSHA256 } from 'hash-wasm';
import { chainCrypto } from '../src/chain/crypto.ts';
import { PrecompileError, type PrecompileRules, precompilesFor } from '../src/evm/precompiles/index.ts';
import { fromHex, loadVectors } from '../test/evm/precompileVectors.ts';
import { machineLine } from './lib/rpc.ts';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 7);
const CELL_MS = Number(process.env.BENCH_MS ?? 200);

const HARDFORKS: Record<PrecompileRules, Hardfork> = {
  frontier: Hardfork.Chainstart,
  byzantium: Hardfork.Byzantium,
  istanbul: Hardfork.Istanbul,
  berlin: Hardfork.Berlin,
  cancun: Hardfork.Cancun,
  prague: Hardfork.Prague,
  osaka: Hardfork.Osaka,
};

function vector(file: string, name: string): Uint8Array {
  const v = loadVectors(file).find((x) => x.Name === name);
  if (v === undefined) throw new Error(`no vector ${name} in ${file}`);
  return fromHex(v.Input);
}

const bytes = (n: number) => Uint8Array.from({ length: n }, (_, i) => (i * 131 + 7) & 0xff);

interface Case {
  name: string;
  address: number;
  input: Uint8Array;
}

const CASES: Case[] = [
  { name: 'ecrecover', address: 0x01, input: vector('geth/ecRecover.json', 'ValidKey') },
  { name: 'sha256 (64 B)', address: 0x02, input: bytes(64) },
  { name: 'sha256 (1 KiB)', address: 0x02, input: bytes(1024) },
  { name: 'ripemd160 (64 B)', address: 0x03, input: bytes(64) },
  { name: 'identity (256 B)', address: 0x04, input: bytes(256) },
  {
    name: 'modexp 64 B, e = 65537',
    address: 0x05,
    input: vector('geth/modexp_eip7883.json', 'nagydani-1-pow0x10001'),
  },
  {
    name: 'modexp 256 B, e = 65537',
    address: 0x05,
    input: vector('geth/modexp_eip7883.json', 'nagydani-3-pow0x10001'),
  },
  {
    name: 'modexp 256 B, e² ',
    address: 0x05,
    input: vector('geth/modexp_eip7883.json', 'nagydani-3-square'),
  },
  { name: 'bn254 add', address: 0x06, input: vector('geth/bn256Add.json', 'chfast1') },
  { name: 'bn254 mul', address: 0x07, input: vector('geth/bn256ScalarMul.json', 'chfast1') },
  { name: 'bn254 pairing, 2 pairs', address: 0x08, input: vector('geth/bn256Pairing.json', 'jeff1') },
  { name: 'blake2f, 12 rounds', address: 0x09, input: vector('geth/blake2F.json', 'vector 5') },
  { name: 'point evaluation', address: 0x0a, input: vector('geth/pointEvaluation.json', 'pointEvaluation1') },
  { name: 'BLS G1ADD', address: 0x0b, input: vector('geth/blsG1Add.json', 'bls_g1add_(2*g1+3*g1=5*g1)') },
  { name: 'BLS G1MSM, 1 pair', address: 0x0c, input: vector('geth/blsG1Mul.json', 'bls_g1mul_random*g1') },
  {
    name: 'BLS G1MSM, 8 pairs',
    address: 0x0c,
    input: vector('geth/blsG1MultiExp.json.gz', 'g1msm-8-jwasinger'),
  },
  { name: 'BLS G2ADD', address: 0x0d, input: vector('geth/blsG2Add.json', 'bls_g2add_(2*g2+3*g2=5*g2)') },
  { name: 'BLS G2MSM, 1 pair', address: 0x0e, input: vector('geth/blsG2Mul.json', 'bls_g2mul_random*g2') },
  {
    name: 'BLS G2MSM, 8 pairs',
    address: 0x0e,
    input: vector('geth/blsG2MultiExp.json.gz', 'g2msm-8-jwasinger'),
  },
  {
    name: 'BLS pairing, 2 pairs',
    address: 0x0f,
    input: vector('geth/blsPairing.json', 'bls_pairing_e(2*G1,3*G2)=e(6*G1,G2)'),
  },
  { name: 'BLS MAP_FP_TO_G1', address: 0x10, input: vector('geth/blsMapG1.json', 'matter_fp_to_g1_0') },
  { name: 'BLS MAP_FP2_TO_G2', address: 0x11, input: vector('geth/blsMapG2.json', 'matter_fp2_to_g2_0') },
  {
    name: 'P256VERIFY',
    address: 0x100,
    input: vector('geth/p256Verify.json', 'CallP256Verify'),
  },
];

/**
 * CPU microseconds per call of `fn` (this process's user + system time, which other work on a shared
 * machine skews far less than wall time), repeated for about CELL_MS of wall time (3 calls at least).
 */
async function perCall(fn: () => unknown): Promise<number> {
  let calls = 0;
  const start = performance.now();
  const cpu = process.cpuUsage();
  while (calls < 3 || performance.now() - start < CELL_MS) {
    const r = fn();
    if (r instanceof Promise) await r;
    calls++;
  }
  const used = process.cpuUsage(cpu);
  return (used.user + used.system) / calls;
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)] ?? Number.NaN;
}

function fmt(us: number): string {
  return us >= 1000 ? `${(us / 1000).toFixed(2)} ms` : `${us.toFixed(1)} µs`;
}

async function compare(
  rows: { name: string; a: () => unknown; b: () => unknown }[],
  labels: [string, string],
) {
  console.log(`\n${'case'.padEnd(28)}${labels[0].padStart(12)}${labels[1].padStart(12)}   ratio`);
  for (const row of rows) {
    await perCall(row.a);
    await perCall(row.b);
    const a: number[] = [];
    const b: number[] = [];
    for (let r = 0; r < ROUNDS; r++) {
      a.push(await perCall(row.a));
      b.push(await perCall(row.b));
    }
    const [ma, mb] = [median(a), median(b)];
    console.log(
      `${row.name.padEnd(28)}${fmt(ma).padStart(12)}${fmt(mb).padStart(12)}   ×${(mb / ma).toFixed(2)}`,
    );
  }
}

console.log(
  `precompiles: ${machineLine()}, ${ROUNDS} rounds of ${CELL_MS} ms per cell (median CPU time per call)`,
);

// 1. Ours against ethereumjs', at Osaka (every precompile, today's prices).
const { kzg } = chainCrypto();
if (kzg === undefined) throw new Error('no KZG');
const common = new Common({ chain: Mainnet, hardfork: HARDFORKS.osaka, customCrypto: { kzg } });
const evm = await createEVM({ common });
const theirs = getActivePrecompiles(common);
const ours = precompilesFor('osaka');
await compare(
  CASES.map((c) => {
    const mine = ours.get(c.address);
    const fn = theirs.get(c.address.toString(16).padStart(40, '0'));
    if (mine === undefined || fn === undefined) throw new Error(`no precompile ${c.address}`);
    const gas = mine.gas(c.input);
    const out = mine.run(c.input);
    if (out instanceof PrecompileError) throw new Error(`${c.name}: ${out.message}`);
    const opts = { data: c.input, gasLimit: BigInt(gas), common, _EVM: evm };
    return { name: c.name, a: () => mine.run(c.input), b: () => fn(opts) };
  }),
  ['ours', 'ethereumjs'],
);

// 2. The hash libraries, on the two precompiles' typical and large inputs.
const wasmSha = await createSHA256();
const wasmRipemd = await createRIPEMD160();
const hashRows = [64, 1024, 16384].flatMap((n) => {
  const data = bytes(n);
  return [
    {
      name: `sha256 ${n} B: noble`,
      a: () => {
        wasmSha.init();
        wasmSha.update(data);
        return wasmSha.digest('binary');
      },
      b: () => nobleSha256(data),
    },
    {
      name: `sha256 ${n} B: node:crypto`,
      a: () => {
        wasmSha.init();
        wasmSha.update(data);
        return wasmSha.digest('binary');
      },
      b: () => createHash('sha256').update(data).digest(),
    },
    {
      name: `ripemd160 ${n} B: noble`,
      a: () => {
        wasmRipemd.init();
        wasmRipemd.update(data);
        return wasmRipemd.digest('binary');
      },
      b: () => nobleRipemd160(data),
    },
    {
      name: `ripemd160 ${n} B: node:crypto`,
      a: () => {
        wasmRipemd.init();
        wasmRipemd.update(data);
        return wasmRipemd.digest('binary');
      },
      b: () => createHash('ripemd160').update(data).digest(),
    },
  ];
});
await compare(hashRows, ['hash-wasm', 'other']);

// 3. BLS MSM: Pippenger against the sum of products, by number of pairs.
function msmRows<T>(name: string, Point: WeierstrassPointCons<T>) {
  return [1, 2, 3, 4, 8, 16].map((k) => {
    const points: WeierstrassPoint<T>[] = [];
    const scalars: bigint[] = [];
    for (let i = 0; i < k; i++) {
      points.push(Point.BASE.multiply(BigInt(1000003 * (i + 1))));
      scalars.push(bls12_381.fields.Fr.create(-BigInt(7919 * (i + 1))));
    }
    return {
      name: `${name} MSM, ${k} pairs`,
      a: () => pippenger(Point, points, scalars),
      b: () => points.reduce((sum, p, i) => sum.add(p.multiplyUnsafe(scalars[i] ?? 0n)), Point.ZERO),
    };
  });
}
await compare(
  [...msmRows('G1', bls12_381.G1.Point), ...msmRows('G2', bls12_381.G2.Point)],
  ['pippenger', 'sum'],
);
