import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { bls12_381 } from '@noble/curves/bls12-381.js';
import { bn254 } from '@noble/curves/bn254.js';
import { sha256 } from '@noble/hashes/sha2.js';
import { type Address, bytesToHex, concatHex, getAddress, type Hex, numberToHex, zeroAddress } from 'viem';
import { readChainSpec } from '../../src/chain/genesis.ts';
import { importChain } from '../../src/ingest/importer.ts';
import { openLmdbStore } from '../../src/store/lmdb/index.ts';
import { type Anvil, AnvilRpcError, mineBlock, startAnvil } from '../support/anvil.ts';
import { normaliseAnvilEntry, type TraceEntry } from '../support/anvilTraces.ts';
import { asm, deployCode } from '../support/asm.ts';
import { tempDir } from '../support/cli.ts';
import { devAccount } from '../support/devAccounts.ts';
import { exportChain } from '../support/exportChain.ts';
import { type RunningServer, startServer } from '../support/server.ts';
import { TxFactory } from '../support/workload.ts';

/**
 * A failed precompile (issue 19, item 6): geth reports each precompile's own error, or `out of gas`
 * where the gas does not cover its price; it never reverts. One mined transaction per failing input
 * calls the precompile from a contract (with 1 wei where the Parity traces should show the call:
 * zero-value calls to precompiles are not traced there), on a chain built on anvil (Osaka) and
 * imported into ethtrace. The references, per answer:
 *
 * - callTracer `error`: the wording is geth's (core/vm/contracts.go at v1.17, with gnark's BN254 and
 *   BLS12-381 decoders and go-eth-kzg, which geth's precompiles call; quoted per case below); anvil
 *   cannot say it (every such failure is its "precompiled failed"), so anvil is the reference for
 *   which failures are out of gas and for the rest of the call tree (gas used, values).
 * - eth_call's error, the same call made straight to the precompile: geth's wording (geth answers
 *   the EVM error as the message); anvil for out of gas or not (PrecompileOOG/PrecompileError).
 * - the struct logger: anvil (as in geth, a failed precompile runs no op, so no log carries an error
 *   and the CALL that made it simply returns 0).
 * - Parity traces (trace_replayBlockTransactions, trace_transaction): anvil, whose wording is
 *   OpenEthereum's (`Built-in failed`, `Out of gas`), as ours stays.
 */

const word = (n: bigint | number, bytes = 32): Hex => numberToHex(BigInt(n), { size: bytes });
const zeros = (n: number): Hex => `0x${'00'.repeat(n)}`;
const at = (n: number): Address => getAddress(numberToHex(n, { size: 20 }));

/** calldata: target (20 bytes) ‖ gas (4) ‖ input; CALLs the target with it and CALLVALUE, returns success. */
const CALLER_CODE = asm(`
  PUSH1 24 CALLDATASIZE SUB PUSH1 24 PUSH0 CALLDATACOPY
  PUSH0 PUSH0 PUSH1 24 CALLDATASIZE SUB PUSH0 CALLVALUE
  PUSH0 CALLDATALOAD PUSH1 0x60 SHR
  PUSH1 20 CALLDATALOAD PUSH1 0xe0 SHR
  CALL PUSH0 MSTORE PUSH1 32 PUSH0 RETURN
`);

// --- inputs -----------------------------------------------------------------------------------------

const BN = bn254.G1.Point.Fp.ORDER;
const BLS_P = bls12_381.G1.Point.Fp.ORDER;
const BLS_R = bls12_381.fields.Fr.ORDER;
/** The BN254 G1 generator (1, 2). */
const BN_G1 = concatHex([word(1), word(2)]);

/** A point on BN254's twist outside G2 (almost every one is): x = k, y its square root. */
function bnTwistPointOutsideG2(): Hex {
  const Fp2 = bn254.G2.Point.Fp;
  const { b } = bn254.G2.Point.CURVE();
  for (let k = 1n; ; k++) {
    const x = { c0: k, c1: 0n };
    let y: { c0: bigint; c1: bigint };
    try {
      y = Fp2.sqrt(Fp2.add(Fp2.mul(Fp2.sqr(x), x), b));
    } catch {
      continue;
    }
    if (bn254.G2.Point.fromAffine({ x, y }).isTorsionFree()) continue;
    return concatHex([word(x.c1), word(x.c0), word(y.c1), word(y.c0)]);
  }
}

const blsFp = (v: bigint): Hex => concatHex([zeros(16), word(v, 48)]);

/** A point on BLS12-381's G1 curve outside the subgroup. */
function blsG1OutsideSubgroup(): Hex {
  const Fp = bls12_381.G1.Point.Fp;
  for (let x = 1n; ; x++) {
    let y: bigint;
    try {
      y = Fp.sqrt(Fp.add(Fp.mul(Fp.sqr(x), x), 4n));
    } catch {
      continue;
    }
    if (bls12_381.G1.Point.fromAffine({ x, y }).isTorsionFree()) continue;
    return concatHex([blsFp(x), blsFp(y)]);
  }
}

/** A point on BLS12-381's G2 curve outside the subgroup. */
function blsG2OutsideSubgroup(): Hex {
  const Fp2 = bls12_381.G2.Point.Fp;
  const { b } = bls12_381.G2.Point.CURVE();
  for (let k = 1n; ; k++) {
    const x = { c0: k, c1: 0n };
    let y: { c0: bigint; c1: bigint };
    try {
      y = Fp2.sqrt(Fp2.add(Fp2.mul(Fp2.sqr(x), x), b));
    } catch {
      continue;
    }
    if (bls12_381.G2.Point.fromAffine({ x, y }).isTorsionFree()) continue;
    return concatHex([blsFp(x.c0), blsFp(x.c1), blsFp(y.c0), blsFp(y.c1)]);
  }
}

/** KZG point-evaluation input with the right versioned hash for `commitment`. */
function pointEvaluation(z: bigint, y: bigint, commitment: Hex, proof: Hex): Hex {
  const hash = sha256(Uint8Array.from(Buffer.from(commitment.slice(2), 'hex')));
  hash[0] = 0x01;
  return concatHex([bytesToHex(hash), word(z), word(y), commitment, proof]);
}
/** The compressed point at infinity (flags 110). */
const G1_INFINITY = concatHex(['0xc0', zeros(47)]);

/** A compressed G1 point (flags 100) with x = the first `x` for which `keep` holds. */
function compressedG1(keep: (square: boolean, torsionFree: boolean) => boolean): Hex {
  const Fp = bls12_381.G1.Point.Fp;
  for (let x = 1n; ; x++) {
    const ySquared = Fp.add(Fp.mul(Fp.sqr(x), x), 4n);
    const square = Fp.pow(ySquared, (Fp.ORDER - 1n) / 2n) !== Fp.ORDER - 1n;
    const torsionFree = square && bls12_381.G1.Point.fromAffine({ x, y: Fp.sqrt(ySquared) }).isTorsionFree();
    if (!keep(square, torsionFree)) continue;
    const bytes = Buffer.from(word(x, 48).slice(2), 'hex');
    bytes[0] = (bytes[0] ?? 0) | 0x80;
    return bytesToHex(bytes);
  }
}

interface Case {
  name: string;
  precompile: Address;
  input: Hex;
  /** Gas the caller hands the precompile (plus the 2300 stipend when it sends value). */
  gas: number;
  /** Wei sent along, so the Parity traces show the call. */
  value: 0n | 1n;
  /** geth's error. */
  geth: string;
  /** anvil's callTracer error, where it is not the one `anvilWord` expects (a deviation of anvil's). */
  anvil?: string;
}

const OOG = 'out of gas';
const KZG = 'error verifying kzg proof: ';

const CASES: Case[] = [
  // Only out of gas can stop these: their input is never wrong (geth's ecrecover and P-256 answer
  // nothing for a bad signature).
  { name: 'ecrecover out of gas', precompile: at(1), input: '0x', gas: 100, value: 0n, geth: OOG },
  { name: 'sha256 out of gas', precompile: at(2), input: '0x01', gas: 10, value: 0n, geth: OOG },
  { name: 'ripemd160 out of gas', precompile: at(3), input: '0x01', gas: 10, value: 0n, geth: OOG },
  { name: 'identity out of gas', precompile: at(4), input: '0x0102', gas: 10, value: 0n, geth: OOG },
  { name: 'P-256 verify out of gas', precompile: at(0x100), input: '0x01', gas: 100, value: 0n, geth: OOG },
  {
    name: 'modexp out of gas',
    precompile: at(5),
    input: concatHex([word(1), word(1), word(1), '0x030507']),
    gas: 100,
    value: 0n,
    geth: OOG,
  },
  // EIP-7823 (Osaka): an operand over 1024 bytes fails once the gas (EIP-7883: 2·⌈1025/8⌉² = 33282)
  // is paid; 1 gas short of paying it is out of gas.
  {
    name: 'modexp operand over 1024 bytes',
    precompile: at(5),
    input: concatHex([word(1025), word(1), word(1)]),
    gas: 33_282 - 2_300,
    value: 1n,
    geth: 'one or more of base/exponent/modulus length exceeded 1024 bytes',
  },
  {
    // anvil (revm's modexp) checks the bound before the price, so it calls this a failure where geth,
    // pricing first, runs out of gas: all the gas is gone either way.
    name: 'modexp operand over 1024 bytes, gas short of its price',
    precompile: at(5),
    input: concatHex([word(1025), word(1), word(1)]),
    gas: 33_281 - 2_300,
    value: 1n,
    geth: OOG,
    anvil: 'precompiled failed',
  },
  // gnark's bn254 decoding (crypto/bn256/gnark): a coordinate not below p, then the curve equation.
  {
    name: 'bn256Add coordinate not below p',
    precompile: at(6),
    input: concatHex([word(BN), word(2), BN_G1]),
    gas: 100_000,
    value: 1n,
    geth: 'invalid fp.Element encoding',
  },
  {
    name: 'bn256Add first point not on the curve',
    precompile: at(6),
    input: concatHex([word(1), word(3), BN_G1]),
    gas: 100_000,
    value: 1n,
    geth: 'point is not on curve',
  },
  {
    name: 'bn256Add second point not on the curve',
    precompile: at(6),
    input: concatHex([BN_G1, word(1), word(3)]),
    gas: 100_000,
    value: 1n,
    geth: 'point is not on curve',
  },
  {
    name: 'bn256Add out of gas',
    precompile: at(6),
    input: concatHex([BN_G1, BN_G1]),
    gas: 100,
    value: 0n,
    geth: OOG,
  },
  {
    name: 'bn256ScalarMul point not on the curve',
    precompile: at(7),
    input: concatHex([word(1), word(3), word(2)]),
    gas: 100_000,
    value: 1n,
    geth: 'point is not on curve',
  },
  {
    name: 'bn256Pairing length not a multiple of 192',
    precompile: at(8),
    input: word(1),
    gas: 100_000,
    value: 1n,
    geth: 'bad elliptic curve pairing size',
  },
  {
    // geth prices the input (45000 + 34000 per whole pair) before it looks at its length.
    name: 'bn256Pairing bad length, gas short of the base price',
    precompile: at(8),
    input: word(1),
    gas: 40_000,
    value: 1n,
    geth: OOG,
  },
  {
    name: 'bn256Pairing G2 coordinate not below p',
    precompile: at(8),
    input: concatHex([BN_G1, word(BN), zeros(96)]),
    gas: 200_000,
    value: 1n,
    geth: 'invalid fp.Element encoding',
  },
  {
    name: 'bn256Pairing G2 point not on the twist',
    precompile: at(8),
    input: concatHex([BN_G1, word(1), word(1), word(1), word(1)]),
    gas: 200_000,
    value: 1n,
    geth: 'point is not on curve',
  },
  {
    name: 'bn256Pairing G2 point outside the subgroup',
    precompile: at(8),
    input: concatHex([BN_G1, bnTwistPointOutsideG2()]),
    gas: 200_000,
    value: 1n,
    geth: 'point is not in correct subgroup',
  },
  {
    name: 'blake2f input not 213 bytes',
    precompile: at(9),
    input: '0x01',
    gas: 100_000,
    value: 1n,
    geth: 'invalid input length',
  },
  {
    name: 'blake2f final flag not 0 or 1',
    precompile: at(9),
    input: concatHex([word(12, 4), zeros(208), '0x02']),
    gas: 100_000,
    value: 1n,
    geth: 'invalid final flag',
  },
  {
    // Priced at its rounds (100000) before the flag is read.
    name: 'blake2f bad flag, gas short of its rounds',
    precompile: at(9),
    input: concatHex([word(100_000, 4), zeros(208), '0x02']),
    gas: 50_000,
    value: 1n,
    geth: OOG,
  },
  {
    name: 'point evaluation input not 192 bytes',
    precompile: at(0x0a),
    input: '0x01',
    gas: 100_000,
    value: 1n,
    geth: 'invalid input length',
  },
  {
    name: 'point evaluation versioned hash not the commitment’s',
    precompile: at(0x0a),
    input: zeros(192),
    gas: 100_000,
    value: 1n,
    geth: 'mismatched versioned hash',
  },
  {
    name: 'point evaluation claimed value not below the field order',
    precompile: at(0x0a),
    input: pointEvaluation(0n, BLS_R, G1_INFINITY, G1_INFINITY),
    gas: 100_000,
    value: 1n,
    geth: `${KZG}scalar is not canonical when interpreted as a big integer in big-endian`,
  },
  {
    name: 'point evaluation commitment with no valid encoding',
    precompile: at(0x0a),
    input: pointEvaluation(0n, 1n, concatHex(['0x20', zeros(47)]), G1_INFINITY),
    gas: 100_000,
    value: 1n,
    geth: `${KZG}invalid point encoding`,
  },
  // gnark's decoding of the 48-byte commitment and proof (go-eth-kzg reads them that way).
  {
    name: 'point evaluation commitment uncompressed (flags 000), which takes 96 bytes',
    precompile: at(0x0a),
    input: pointEvaluation(0n, 1n, concatHex(['0x01', zeros(47)]), G1_INFINITY),
    gas: 100_000,
    value: 1n,
    geth: `${KZG}short buffer`,
  },
  {
    name: 'point evaluation commitment at infinity with bits set',
    precompile: at(0x0a),
    input: pointEvaluation(0n, 1n, concatHex(['0xc0', zeros(46), '0x01']), G1_INFINITY),
    gas: 100_000,
    value: 1n,
    geth: `${KZG}invalid infinity point encoding`,
  },
  {
    name: 'point evaluation commitment x not below p',
    precompile: at(0x0a),
    input: pointEvaluation(0n, 1n, concatHex(['0x9f', `0x${'ff'.repeat(47)}`]), G1_INFINITY),
    gas: 100_000,
    value: 1n,
    geth: `${KZG}invalid fp.Element encoding`,
  },
  {
    name: 'point evaluation commitment x with no point on the curve',
    precompile: at(0x0a),
    input: pointEvaluation(
      0n,
      1n,
      compressedG1((square) => !square),
      G1_INFINITY,
    ),
    gas: 100_000,
    value: 1n,
    geth: `${KZG}invalid compressed coordinate: square root doesn't exist`,
  },
  {
    name: 'point evaluation proof outside the subgroup',
    precompile: at(0x0a),
    input: pointEvaluation(
      0n,
      1n,
      G1_INFINITY,
      compressedG1((square, free) => square && !free),
    ),
    gas: 100_000,
    value: 1n,
    geth: `${KZG}invalid point: subgroup check failed`,
  },
  {
    name: 'point evaluation proof that does not verify',
    precompile: at(0x0a),
    input: pointEvaluation(0n, 1n, G1_INFINITY, G1_INFINITY),
    gas: 100_000,
    value: 1n,
    geth: `${KZG}can't verify opening proof`,
  },
  // EIP-2537 (geth's decodePointG1/G2 and decodeBLS12381FieldElement).
  {
    name: 'BLS12-381 G1 add input not 256 bytes',
    precompile: at(0x0b),
    input: '0x01',
    gas: 100_000,
    value: 1n,
    geth: 'invalid input length',
  },
  {
    name: 'BLS12-381 G1 add field element top bytes not zero',
    precompile: at(0x0b),
    input: concatHex(['0x01', zeros(255)]),
    gas: 100_000,
    value: 1n,
    geth: 'invalid field element top bytes',
  },
  {
    name: 'BLS12-381 G1 add coordinate not below p',
    precompile: at(0x0b),
    input: concatHex([blsFp(BLS_P), zeros(192)]),
    gas: 100_000,
    value: 1n,
    geth: 'invalid fp.Element encoding',
  },
  {
    name: 'BLS12-381 G1 add point not on the curve',
    precompile: at(0x0b),
    input: concatHex([blsFp(1n), blsFp(1n), zeros(128)]),
    gas: 100_000,
    value: 1n,
    geth: 'invalid point: not on curve',
  },
  {
    name: 'BLS12-381 G1 add out of gas',
    precompile: at(0x0b),
    input: zeros(256),
    gas: 100,
    value: 0n,
    geth: OOG,
  },
  {
    name: 'BLS12-381 G1 MSM empty input',
    precompile: at(0x0c),
    input: '0x',
    gas: 100_000,
    value: 1n,
    geth: 'invalid input length',
  },
  {
    name: 'BLS12-381 G1 MSM point outside the subgroup',
    precompile: at(0x0c),
    input: concatHex([blsG1OutsideSubgroup(), word(1)]),
    gas: 100_000,
    value: 1n,
    geth: 'g1 point is not on correct subgroup',
  },
  {
    name: 'BLS12-381 G2 add input not 512 bytes',
    precompile: at(0x0d),
    input: '0x01',
    gas: 100_000,
    value: 1n,
    geth: 'invalid input length',
  },
  {
    name: 'BLS12-381 G2 add point not on the curve',
    precompile: at(0x0d),
    input: concatHex([blsFp(1n), blsFp(1n), blsFp(1n), blsFp(1n), zeros(256)]),
    gas: 100_000,
    value: 1n,
    geth: 'invalid point: not on curve',
  },
  {
    name: 'BLS12-381 G2 MSM point outside the subgroup',
    precompile: at(0x0e),
    input: concatHex([blsG2OutsideSubgroup(), word(1)]),
    gas: 100_000,
    value: 1n,
    geth: 'g2 point is not on correct subgroup',
  },
  {
    name: 'BLS12-381 pairing empty input',
    precompile: at(0x0f),
    input: '0x',
    gas: 100_000,
    value: 1n,
    geth: 'invalid input length',
  },
  {
    // geth prices the input (37700 + 32600 per whole pair) before it looks at its length; anvil
    // (revm) looks at the length first and calls it a failure.
    name: 'BLS12-381 pairing bad length, gas short of the base price',
    precompile: at(0x0f),
    input: zeros(100),
    gas: 30_000,
    value: 1n,
    geth: OOG,
    anvil: 'precompiled failed',
  },
  {
    name: 'BLS12-381 pairing G1 point outside the subgroup',
    precompile: at(0x0f),
    input: concatHex([blsG1OutsideSubgroup(), zeros(256)]),
    gas: 200_000,
    value: 1n,
    geth: 'g1 point is not on correct subgroup',
  },
  {
    name: 'BLS12-381 map to G1 input not 64 bytes',
    precompile: at(0x10),
    input: '0x01',
    gas: 100_000,
    value: 1n,
    geth: 'invalid input length',
  },
  {
    name: 'BLS12-381 map to G1 element not below p',
    precompile: at(0x10),
    input: blsFp(BLS_P),
    gas: 100_000,
    value: 1n,
    geth: 'invalid fp.Element encoding',
  },
  {
    name: 'BLS12-381 map to G2 field element top bytes not zero',
    precompile: at(0x11),
    input: concatHex([blsFp(1n), '0x01', zeros(63)]),
    gas: 100_000,
    value: 1n,
    geth: 'invalid field element top bytes',
  },
];

interface CallFrame {
  type: string;
  gas: string;
  gasUsed: string;
  error?: string;
  calls?: CallFrame[];
  [key: string]: unknown;
}
interface StructLog {
  op: string;
  error?: string;
  refund?: number;
  [key: string]: unknown;
}
interface StructResult {
  failed: boolean;
  returnValue: string;
  structLogs: StructLog[];
}
type Replayed = { trace: TraceEntry[]; transactionHash: Hex; [key: string]: unknown };

describe('a failed precompile, in geth’s words (anvil for the rest)', () => {
  let anvil: Anvil;
  let server: RunningServer;
  let caller: Address;
  let block: bigint;
  const hashes = new Map<string, Hex>();
  const work = tempDir('ethtrace-precompiles-');
  const sender = devAccount(1);

  const callData = (c: Case): Hex => concatHex([c.precompile, numberToHex(c.gas, { size: 4 }), c.input]);

  before(async () => {
    anvil = await startAnvil();
    const f = new TxFactory(anvil);
    const deployed = await mineBlock(anvil, [
      await f.sign({ type: 'eip1559', from: devAccount(0), data: deployCode(CALLER_CODE), gas: 200_000n }),
    ]);
    caller = getAddress(deployed.receipts[0]?.contractAddress ?? zeroAddress);
    const raw: Hex[] = [];
    for (const c of CASES) {
      raw.push(
        await f.sign({
          type: 'eip1559',
          from: sender,
          to: caller,
          value: c.value,
          data: callData(c),
          gas: 400_000n,
        }),
      );
    }
    const mined = await mineBlock(anvil, raw);
    block = mined.number;
    for (const [i, c] of CASES.entries()) hashes.set(c.name, mined.receipts[i]?.transactionHash as Hex);
    const chain = await exportChain(anvil, join(work.path, 'anvil'));
    const datadir = join(work.path, 'data');
    const store = await openLmdbStore(datadir);
    try {
      await importChain({
        store,
        spec: readChainSpec(chain.genesisPath),
        files: [chain.rlpPath],
        verifyStateRoot: false,
      });
    } finally {
      await store.close();
    }
    // A generous deadline: the first replay also starts the worker, on a machine that may be busy.
    server = await startServer(datadir, { limits: { pool: { deadlineMs: 60_000 } } });
  });

  after(async () => {
    await server?.close();
    await anvil?.stop();
    work.cleanup();
  });

  const hashOf = (c: Case): Hex => {
    const hash = hashes.get(c.name);
    assert.ok(hash, c.name);
    return hash;
  };
  /** anvil's word for the same failure: its own for any precompile error, geth's for out of gas. */
  const anvilWord = (c: Case) => c.anvil ?? (c.geth === OOG ? OOG : 'precompiled failed');

  describe('callTracer: the error geth gives; out of gas, gas used and the rest as anvil', () => {
    for (const c of CASES) {
      it(c.name, async () => {
        const params = [hashOf(c), { tracer: 'callTracer' }];
        const ours = await server.rpc<CallFrame>('debug_traceTransaction', params);
        const theirs = await anvil.rpc<CallFrame>('debug_traceTransaction', params);
        const receipt = await anvil.rpc<{ gasUsed: Hex }>('eth_getTransactionReceipt', [hashOf(c)]);
        const [inner] = ours.calls ?? [];
        const [anvilInner] = theirs.calls ?? [];
        assert.equal(inner?.error, c.geth);
        assert.equal(anvilInner?.error, anvilWord(c));
        // The call used all its gas and did not revert: no output, no revert reason.
        assert.equal(inner?.gasUsed, inner?.gas);
        assert.equal(ours.gasUsed, receipt.gasUsed);
        // anvil gives the top frame the gas left after intrinsic gas, and the block's gas used so far
        // (its receipt's cumulative gas); geth (and we) the transaction's gas and its receipt's.
        assert.deepEqual(ours, {
          ...theirs,
          gas: ours.gas,
          gasUsed: receipt.gasUsed,
          calls: [{ ...anvilInner, error: c.geth }],
        });
      });
    }
  });

  describe('eth_call and eth_estimateGas straight to the precompile: geth’s error (anvil: failed or out of gas)', () => {
    for (const c of CASES) {
      // Out-of-gas cases are made by the caller's gas; a call of its own pays EIP-7623's floor first.
      if (c.geth === OOG) continue;
      it(c.name, async () => {
        const call = { from: sender.address, to: c.precompile, input: c.input, gas: '0x1000000' };
        await assert.rejects(server.rpc('eth_call', [call, 'latest']), (e: Error & { code: number }) => {
          assert.equal(e.message, c.geth);
          assert.equal(e.code, -32000);
          return true;
        });
        await assert.rejects(server.rpc('eth_estimateGas', [call, 'latest']), { message: c.geth });
        await assert.rejects(anvil.rpc('eth_call', [call, 'latest']), (e: AnvilRpcError) => {
          assert.ok(e instanceof AnvilRpcError);
          assert.match(e.rpcMessage, /PrecompileError/);
          return true;
        });
      });
    }
    it('bn256Pairing bad length, straight and short of gas: out of gas, as anvil', async () => {
      // 21000 + 31·4 + 16 = 21140 of intrinsic gas leaves 8860 for the 45000 the pairing costs.
      const call = { from: sender.address, to: at(8), input: word(1), gas: numberToHex(30_000) };
      await assert.rejects(server.rpc('eth_call', [call, 'latest']), { message: OOG });
      await assert.rejects(anvil.rpc('eth_call', [call, 'latest']), /PrecompileOOG/);
    });
  });

  describe('struct logger: no op carries the failure, as anvil (and geth) log it', () => {
    for (const c of CASES) {
      it(c.name, async () => {
        const call = {
          from: sender.address,
          to: caller,
          value: numberToHex(c.value),
          input: callData(c),
          gas: numberToHex(400_000),
        };
        const ours = await server.rpc<StructResult>('debug_traceCall', [call, 'latest', {}]);
        const theirs = await anvil.rpc<StructResult>('debug_traceCall', [call, 'latest', {}]);
        assert.ok(ours.structLogs.every((log) => log.error === undefined));
        assert.equal(ours.structLogs.find((log) => log.op === 'MSTORE')?.stack?.toString(), '0x0,0x0');
        // anvil prints a zero refund on every op; geth (and we) leave it out.
        const withoutZeroRefund = theirs.structLogs.map(({ refund, ...log }) =>
          refund === 0 ? log : { ...log, refund },
        );
        assert.deepEqual(ours, { ...theirs, structLogs: withoutZeroRefund });
      });
    }
  });

  describe('Parity traces keep Parity’s words, as anvil', () => {
    it('trace_replayBlockTransactions: Built-in failed, or Out of gas', async () => {
      const params = [numberToHex(block), ['trace']];
      const ours = await server.rpc<Replayed[]>('trace_replayBlockTransactions', params);
      const theirs = await anvil.rpc<Replayed[]>('trace_replayBlockTransactions', params);
      assert.equal(ours.length, CASES.length);
      for (const [i, c] of CASES.entries()) {
        const mine = ours[i];
        const other = theirs[i];
        assert.ok(mine && other, c.name);
        const precompileCall = mine.trace[1];
        if (c.value > 0n) {
          assert.equal(precompileCall?.error, c.geth === OOG ? 'Out of gas' : 'Built-in failed', c.name);
          assert.equal(precompileCall?.result, null, c.name);
        } else {
          assert.equal(
            precompileCall,
            undefined,
            `${c.name}: a zero-value call to a precompile is not traced`,
          );
        }
        const normalised = other.trace.map((e, j) => {
          const entry = normaliseAnvilEntry(e, mine.trace[j]);
          // The cases where anvil fails what geth (and we) run out of gas on (see the cases).
          return c.anvil && entry.error === 'Built-in failed' ? { ...entry, error: 'Out of gas' } : entry;
        });
        assert.deepEqual(mine, { ...other, trace: normalised }, c.name);
      }
    });
  });
});
