/*
 * Copied from test/support/traceWorkload.ts for scripts/answers: it imports anvil.ts and workload.ts (and through them src/). The answers tool must not load
 * src/ (the code it compares), so it carries its own copy; keep it in step with the original.
 */
import {
  type Address,
  concatHex,
  encodeAbiParameters,
  getAddress,
  getContractAddress,
  type Hex,
  keccak256,
  numberToHex,
  parseEther,
  size,
  slice,
  stringToHex,
} from 'viem';
import type { PrivateKeyAccount } from 'viem/accounts';
import { asm } from '../../../test/support/asm.ts';
import { devAccount } from '../../../test/support/devAccounts.ts';
import {
  act,
  GAS_BURNING_INITCODE,
  LAST_CREATED,
  PROBE_INITCODE,
  program,
  REVERTING_INITCODE,
  SELFDESTRUCTING_INITCODE,
} from '../../../test/support/probe.ts';
import type { RpcReceipt } from '../../../test/support/rpcTypes.ts';
import { type Anvil, mineBlock, type TxOutcome } from './anvil.ts';
import { isActive } from './genesis.ts';
import { freshAddress, TxFactory, type TxSpec } from './workload.ts';

/**
 * The trace workload: a chain whose transactions between them produce every trace shape the
 * differential trace suite compares — each call kind nested and mixed, creations that succeed,
 * revert, run out of gas and collide, every failure an EVM frame can end in, precompiles traced and
 * untraced, SELFDESTRUCT under EIP-6780, storage and transient storage, LOG0–LOG4, and every
 * transaction envelope including EIP-7702 delegation. All behaviour comes from the probe contract
 * (probe.ts) running programs given in call data.
 *
 * Every transaction has a fixed gas limit and is mined whatever its outcome: failed transactions are
 * as much the point as successful ones, and `mineBlock` checks each outcome is the planned one.
 * Timestamps, nonces and fees are fixed, so a rerun on the same hardfork gives the same hashes.
 *
 * Not covered: the 1024 call-depth limit. EIP-150 passes on at most 63/64 of the gas per level,
 * so even a 2^24-gas transaction runs dry some 600 frames down.
 *
 * anvil quirk this chain provokes: failed creations (top-level and inner) and calls to never-seen
 * accounts leave empty accounts in anvil's state, so its state roots are non-canonical; import the
 * chain with `--no-verify-state-root`. Receipts, gas and logs are unaffected.
 */

export interface TraceWorkloadTx {
  hash: Hex;
  /** `category/case`, unique in the workload. */
  label: string;
  expect: TxOutcome;
}

export interface TraceWorkloadBlock {
  number: bigint;
  hash: Hex;
  txs: TraceWorkloadTx[];
  /** anvil's receipts, index for index with `txs`. */
  receipts: RpcReceipt[];
}

export interface TraceWorkload {
  blocks: TraceWorkloadBlock[];
  /**
   * probe, probe2 (two probes, so nested calls alternate between accounts), victim (a probe made
   * by a creation with value, later self-destructed as an old contract), create2Probe (a probe
   * made by CREATE2 from probe), constructorFactory (made by a transaction whose constructor calls,
   * logs and creates), delegatedEoa (from Prague on: an EOA delegated to probe).
   */
  contracts: Record<string, Address>;
}

/** Generous for any probe program here, and small enough that a block of 25 stays under 30M gas. */
const CALL_GAS = 1_000_000n;
/** Deploying the ~0.9 KiB probe costs ~0.25M. */
const DEPLOY_GAS = 600_000n;
/** A failed top-level frame that burns all its gas: kept small, every unit costs CPU on import. */
const SMALL_GAS = 120_000n;
const TRANSFER_GAS = 21_000n;

const ECRECOVER: Address = '0x0000000000000000000000000000000000000001';
const SHA256: Address = '0x0000000000000000000000000000000000000002';
const IDENTITY: Address = '0x0000000000000000000000000000000000000004';
const MODEXP: Address = '0x0000000000000000000000000000000000000005';
const BN256_ADD: Address = '0x0000000000000000000000000000000000000006';

const word = (n: bigint | number): Hex => numberToHex(BigInt(n), { size: 32 });
const topic = (name: string): Hex => keccak256(stringToHex(name));

/** 3^5 mod 7 = 5: lengths 1, 1, 1, then base, exponent, modulus. */
const MODEXP_SMALL: Hex = concatHex([word(1), word(1), word(1), '0x03', '0x05', '0x07']);
/**
 * 64-byte base and modulus with a 64-byte all-ones exponent: tens of thousands of gas under
 * EIP-2565 and EIP-7883 alike, so a 2300-gas stipend or a few hundred gas cannot pay for it.
 */
const MODEXP_COSTLY: Hex = concatHex([
  word(64),
  word(64),
  word(64),
  `0x${'ab'.repeat(64)}`,
  `0x${'ff'.repeat(64)}`,
  `0x${'cd'.repeat(63)}01`,
]);
/** (1, 3) is not on alt_bn128, so the addition fails and the precompile consumes all its gas. */
const BN256_ADD_NOT_ON_CURVE: Hex = concatHex([word(1), word(3), word(1), word(2)]);
/** An `Error(string)` revert, the shape Solidity's `require` produces. */
const ERROR_STRING: Hex = concatHex([
  '0x08c379a0',
  encodeAbiParameters([{ type: 'string' }], ['probe says no']),
]);

interface Planned {
  label: string;
  expect: TxOutcome;
  raw: Hex;
}

/** Builds the chain described above on a fresh anvil (any hardfork from Cancun; 7702 from Prague). */
export async function buildTraceWorkload(anvil: Anvil): Promise<TraceWorkload> {
  const f = new TxFactory(anvil);
  const blocks: TraceWorkloadBlock[] = [];
  const labels = new Set<string>();
  const mine = async (planned: Planned[]): Promise<TraceWorkloadBlock> => {
    for (const { label } of planned) {
      if (labels.has(label)) throw new Error(`trace workload: label ${label} used twice`);
      labels.add(label);
    }
    const mined = await mineBlock(
      anvil,
      planned.map((p) => p.raw),
      { expect: planned.map((p) => p.expect) },
    );
    const block: TraceWorkloadBlock = {
      number: mined.number,
      hash: mined.hash,
      txs: planned.map(({ label, expect }, i) => ({
        hash: mined.receipts[i]?.transactionHash as Hex,
        label,
        expect,
      })),
      receipts: mined.receipts,
    };
    blocks.push(block);
    return block;
  };
  const tx = async (label: string, expect: TxOutcome, spec: TxSpec): Promise<Planned> => ({
    label,
    expect,
    raw: await f.sign(spec),
  });

  const deployed = await mine(await deployments(tx));
  const created = (i: number): Address => {
    const address = deployed.receipts[i]?.contractAddress;
    if (!address) throw new Error(`trace workload: deployment ${i} made no contract`);
    return getAddress(address);
  };
  const c: Contracts = { probe: created(0), probe2: created(1), victim: created(2) };
  const contracts: Record<string, Address> = { ...c };

  await mine(await transfers(tx, c));
  contracts.create2Probe = getContractAddress({
    opcode: 'CREATE2',
    from: c.probe,
    salt: word(1),
    bytecode: PROBE_INITCODE,
  });
  await mine(await creations(tx, c));
  await mine(await calls(tx, c));
  await mine(await precompiles(tx, c));
  await mine(await storageAndLogs(tx, c));
  await mine(await failures(tx, c));
  await mine(await staticViolations(tx, c));
  await mine(await selfdestructs(tx, c));
  const built = await mine(await constructors(tx, c));
  const factory = built.receipts[0]?.contractAddress;
  if (!factory) throw new Error('trace workload: the constructor factory made no contract');
  contracts.constructorFactory = getAddress(factory);
  if (isActive(anvil.hardfork, 'prague')) {
    const eoa = devAccount(8);
    contracts.delegatedEoa = eoa.address;
    await mine(await delegation(tx, c, eoa));
    // Not in the delegation's block: anvil's pool holds back a transaction *from* the delegated EOA
    // whose nonce only the authorization makes valid.
    await mine(await delegatedCalls(tx, c, eoa));
  }
  return { blocks, contracts };
}

interface Contracts {
  probe: Address;
  probe2: Address;
  victim: Address;
}

type Tx = (label: string, expect: TxOutcome, spec: TxSpec) => Promise<Planned>;

const accounts = (): PrivateKeyAccount[] => [0, 1, 2, 3, 4, 5, 6, 7].map(devAccount);

/** The probes (one per pre-7702 envelope) and top-level creations that fail. */
async function deployments(tx: Tx): Promise<Planned[]> {
  const [a0, a1, a2, a3, a4] = accounts() as Eight;
  const data = PROBE_INITCODE;
  return [
    await tx('create/tx-deploy-probe', 'success', { type: 'eip1559', from: a0, data, gas: DEPLOY_GAS }),
    await tx('create/tx-deploy-probe2', 'success', {
      type: 'legacy',
      eip155: true,
      from: a1,
      data,
      gas: DEPLOY_GAS,
    }),
    await tx('create/tx-with-value', 'success', {
      type: 'eip2930',
      from: a2,
      data,
      value: parseEther('1'),
      gas: DEPLOY_GAS,
      accessList: [],
    }),
    await tx('create/tx-constructor-reverts', 'reverted', {
      type: 'legacy',
      eip155: false,
      from: a3,
      data: REVERTING_INITCODE,
      gas: SMALL_GAS,
    }),
    await tx('create/tx-constructor-out-of-gas', 'reverted', {
      type: 'eip1559',
      from: a4,
      data: GAS_BURNING_INITCODE,
      gas: SMALL_GAS,
    }),
  ];
}

type Eight = [
  PrivateKeyAccount,
  PrivateKeyAccount,
  PrivateKeyAccount,
  PrivateKeyAccount,
  PrivateKeyAccount,
  PrivateKeyAccount,
  PrivateKeyAccount,
  PrivateKeyAccount,
];

/** Value transfers of every kind, funding for the probes, and transactions sent to precompiles. */
async function transfers(tx: Tx, c: Contracts): Promise<Planned[]> {
  const [a0, a1, a2, a3, a4, a5, a6] = accounts() as Eight;
  const ecrecoverInput = await ecrecoverCall(a0);
  const zeroValueFresh = freshAddress('trace/zero-value');
  return [
    await tx('transfer/pre-eip155-to-fresh', 'success', {
      type: 'legacy',
      eip155: false,
      from: a0,
      to: freshAddress('trace/pre-eip155'),
      value: parseEther('1'),
      gas: TRANSFER_GAS,
    }),
    await tx('transfer/eip155-to-eoa', 'success', {
      type: 'legacy',
      eip155: true,
      from: a1,
      to: a2.address,
      value: 12_345n,
      gas: TRANSFER_GAS,
    }),
    await tx('transfer/zero-value-to-fresh', 'success', {
      type: 'eip2930',
      from: a2,
      to: zeroValueFresh,
      gas: 30_000n,
      accessList: [{ address: zeroValueFresh, storageKeys: [word(0)] }],
    }),
    await tx('transfer/zero-value-to-eoa', 'success', {
      type: 'eip1559',
      from: a3,
      to: a4.address,
      gas: TRANSFER_GAS,
    }),
    await tx('transfer/to-self', 'success', {
      type: 'eip1559',
      from: a5,
      to: a5.address,
      value: 1n,
      gas: TRANSFER_GAS,
    }),
    await tx('transfer/fund-probe', 'success', {
      type: 'eip1559',
      from: a0,
      to: c.probe,
      value: parseEther('10'),
      gas: 50_000n,
    }),
    await tx('transfer/fund-probe2', 'success', {
      type: 'legacy',
      eip155: false,
      from: a1,
      to: c.probe2,
      value: parseEther('1'),
      gas: 50_000n,
    }),
    await tx('precompile/tx-ecrecover', 'success', {
      type: 'eip1559',
      from: a6,
      to: ECRECOVER,
      data: ecrecoverInput,
      gas: 50_000n,
    }),
    await tx('precompile/tx-sha256-with-value', 'success', {
      type: 'legacy',
      eip155: true,
      from: a6,
      to: SHA256,
      value: 1n,
      data: stringToHex('ethtrace'),
      gas: 50_000n,
    }),
    await tx('precompile/tx-identity-empty-input', 'success', {
      type: 'eip2930',
      from: a6,
      to: IDENTITY,
      gas: 50_000n,
      accessList: [],
    }),
    await tx('precompile/tx-bn256add-not-on-curve', 'reverted', {
      type: 'eip1559',
      from: a6,
      to: BN256_ADD,
      data: BN256_ADD_NOT_ON_CURVE,
      gas: 50_000n,
    }),
    await tx('precompile/tx-modexp-too-little-gas', 'reverted', {
      type: 'eip1559',
      from: a6,
      to: MODEXP,
      data: MODEXP_COSTLY,
      gas: barelyIntrinsic(MODEXP_COSTLY),
    }),
  ];
}

/** ecrecover's input for a real signature by `signer`, so the precompile returns its address. */
async function ecrecoverCall(signer: PrivateKeyAccount): Promise<Hex> {
  const hash = keccak256(stringToHex('ethtrace ecrecover'));
  const signature = await signer.sign({ hash });
  const v = word(BigInt(slice(signature, 64, 65)));
  return concatHex([hash, v, slice(signature, 0, 32), slice(signature, 32, 64)]);
}

/**
 * A gas limit that covers a call's intrinsic gas and EIP-7623's calldata floor with 100 to spare:
 * far less than any real execution.
 */
function barelyIntrinsic(data: Hex): bigint {
  const bytes = Array.from({ length: size(data) }, (_, i) => slice(data, i, i + 1));
  const zeros = BigInt(bytes.filter((b) => b === '0x00').length);
  const nonZeros = BigInt(bytes.length) - zeros;
  const intrinsic = 21_000n + 4n * zeros + 16n * nonZeros;
  const floor = 21_000n + 10n * (zeros + 4n * nonZeros);
  return (intrinsic > floor ? intrinsic : floor) + 100n;
}

/** CREATE and CREATE2 from the probe: success, collision, value, constructors that fail. */
async function creations(tx: Tx, c: Contracts): Promise<Planned[]> {
  const [a0, a1, a2, a3, a4, a5] = accounts() as Eight;
  const call = (from: PrivateKeyAccount, data: Hex, type: 'eip1559' | 'legacy' = 'eip1559'): TxSpec =>
    type === 'legacy'
      ? { type, eip155: false, from, to: c.probe, data, gas: 1_500_000n }
      : { type, from, to: c.probe, data, gas: 1_500_000n };
  return [
    // The new probe is called at once and itself CREATEs, so a create sits below a call below a create2.
    await tx(
      'create/create2-then-call-it-create',
      'success',
      call(
        a0,
        program(
          act.create2(PROBE_INITCODE, 1n),
          act.call(LAST_CREATED, program(act.log([topic('create2')]), act.create(PROBE_INITCODE))),
        ),
      ),
    ),
    await tx(
      'create/create2-collision',
      'success',
      call(a1, program(act.create2(PROBE_INITCODE, 1n), act.log([topic('after collision')]))),
    ),
    await tx(
      'create/create-with-value',
      'success',
      call(
        a2,
        program(act.create(PROBE_INITCODE, 1_000n), act.call(LAST_CREATED, act.sstore(1, 1))),
        'legacy',
      ),
    ),
    await tx(
      'create/constructor-reverts',
      'success',
      call(a3, program(act.create(REVERTING_INITCODE), act.logReturnData())),
    ),
    await tx('create/constructor-out-of-gas', 'success', {
      ...call(a4, program(act.create(GAS_BURNING_INITCODE), act.log([]))),
      gas: 300_000n,
    }),
    await tx(
      'create/create2-with-value-constructor-reverts',
      'success',
      call(a5, program(act.create2(REVERTING_INITCODE, 2n, 5n), act.logReturnData())),
    ),
  ];
}

/** Nested and mixed call kinds, value and stipend, calls to EOAs and to accounts that do not exist. */
async function calls(tx: Tx, c: Contracts): Promise<Planned[]> {
  const [a0, a1, a2, a3, a4, a5, a6, a7] = accounts() as Eight;
  const { probe, probe2 } = c;
  const call = (from: PrivateKeyAccount, data: Hex): TxSpec => ({
    type: 'eip1559',
    from,
    to: probe,
    data,
    gas: CALL_GAS,
  });
  return [
    await tx(
      'call/call-4-deep',
      'success',
      call(
        a0,
        act.call(
          probe2,
          act.call(
            probe,
            act.call(probe2, program(act.sstore(7, 1), act.log([topic('deep')])), { value: 1n }),
          ),
        ),
      ),
    ),
    await tx('call/delegatecall-3-deep', 'success', {
      ...call(
        a1,
        act.delegatecall(
          probe2,
          act.delegatecall(probe, act.delegatecall(probe2, program(act.sstore(8, 1), act.log([])))),
        ),
      ),
      value: 7n,
    }),
    await tx(
      'call/staticcall-3-deep',
      'success',
      call(
        a2,
        program(
          act.staticcall(probe2, act.staticcall(probe, program(act.staticcall(probe2, act.ret('0xc0ffee'))))),
          act.logReturnData(),
        ),
      ),
    ),
    await tx(
      'call/callcode-with-value',
      'success',
      call(
        a3,
        act.callcode(
          probe2,
          program(act.sstore(9, 1), act.callcode(probe, act.sstore(10, 1), { value: 2n })),
          { value: 5n },
        ),
      ),
    ),
    await tx(
      'call/delegatecall-inside-staticcall',
      'success',
      call(
        a4,
        program(
          act.staticcall(
            probe2,
            program(act.delegatecall(probe, act.staticcall(probe2, act.ret('0x01'))), act.bubbleFailure()),
          ),
          act.bubbleFailure(),
        ),
      ),
    ),
    await tx(
      'call/staticcall-inside-delegatecall-inside-callcode',
      'success',
      call(
        a5,
        act.callcode(probe2, act.delegatecall(probe, act.staticcall(probe2, act.ret('0x02'))), { value: 1n }),
      ),
    ),
    await tx(
      'call/value-with-stipend-only',
      'success',
      call(
        a6,
        program(
          act.call(probe2, '0x', { value: 1n, gas: 0 }),
          act.call(a7.address, '0x', { value: 1n, gas: 0 }),
        ),
      ),
    ),
    await tx(
      'call/to-eoa',
      'success',
      call(
        a7,
        program(act.call(a0.address), act.call(a0.address, '0x', { value: 2n }), act.staticcall(a0.address)),
      ),
    ),
    await tx(
      'call/to-nonexistent',
      'success',
      call(
        a0,
        program(
          act.call(freshAddress('trace/nx-zero')),
          act.call(freshAddress('trace/nx-value'), '0x', { value: 3n }),
          act.staticcall(freshAddress('trace/nx-static')),
          act.delegatecall(freshAddress('trace/nx-delegate')),
          act.callcode(freshAddress('trace/nx-callcode'), '0x', { value: 4n }),
        ),
      ),
    ),
    await tx(
      'call/insufficient-balance-in-subcall',
      'success',
      call(
        a1,
        program(
          act.call(probe2, act.log([]), { value: 2n ** 100n }),
          act.call(probe2, act.call(probe, act.log([]), { value: 2n ** 100n })),
          act.log([topic('after insufficient balance')]),
        ),
      ),
    ),
    await tx(
      'call/calls-to-self',
      'success',
      call(a2, act.call(probe, act.delegatecall(probe, act.staticcall(probe, act.ret('0x03'))))),
    ),
  ];
}

/** Precompiles called from a contract: untraced without value, traced with it, and failing. */
async function precompiles(tx: Tx, c: Contracts): Promise<Planned[]> {
  const [a0, a1, a2, a3, a4] = accounts() as Eight;
  const ecrecoverInput = await ecrecoverCall(a0);
  const call = (from: PrivateKeyAccount, data: Hex): TxSpec => ({
    type: 'eip1559',
    from,
    to: c.probe,
    data,
    gas: CALL_GAS,
  });
  const each = (opts: { value?: bigint }): Hex =>
    program(
      act.call(ECRECOVER, ecrecoverInput, opts),
      act.logReturnData(),
      act.call(SHA256, stringToHex('ethtrace'), opts),
      act.logReturnData(),
      act.call(IDENTITY, stringToHex('identity'), opts),
      act.logReturnData(),
      act.call(MODEXP, MODEXP_SMALL, opts),
      act.logReturnData(),
    );
  return [
    await tx(
      'precompile/from-contract-no-value',
      'success',
      call(
        a0,
        program(
          each({}),
          act.staticcall(SHA256, '0x'),
          act.logReturnData(),
          act.delegatecall(IDENTITY, '0xabcd'),
          act.logReturnData(),
          act.callcode(IDENTITY, '0xef', { value: 1n }),
          act.logReturnData(),
        ),
      ),
    ),
    await tx('precompile/from-contract-with-value', 'success', call(a1, each({ value: 1n }))),
    await tx(
      'precompile/bn256add-fails-no-value',
      'success',
      call(a2, program(act.call(BN256_ADD, BN256_ADD_NOT_ON_CURVE, { gas: 10_000 }), act.log([]))),
    ),
    await tx(
      'precompile/bn256add-fails-with-value',
      'success',
      call(a3, program(act.call(BN256_ADD, BN256_ADD_NOT_ON_CURVE, { value: 1n }), act.log([]))),
    ),
    await tx(
      'precompile/modexp-too-little-gas',
      'success',
      call(
        a4,
        program(
          act.call(MODEXP, MODEXP_COSTLY, { gas: 1_000 }),
          act.call(MODEXP, MODEXP_COSTLY, { gas: 0, value: 1n }),
          act.log([]),
        ),
      ),
    ),
  ];
}

/** LOG0–LOG4, the storage transitions, and transient storage seen by a reentrant call. */
async function storageAndLogs(tx: Tx, c: Contracts): Promise<Planned[]> {
  const [a0, a1, a2, a3, a4, a5] = accounts() as Eight;
  const to = c.probe2;
  const call = (from: PrivateKeyAccount, data: Hex, type: 'eip1559' | 'eip2930' = 'eip1559'): TxSpec =>
    type === 'eip2930'
      ? {
          type,
          from,
          to,
          data,
          gas: CALL_GAS,
          accessList: [{ address: to, storageKeys: [word(1), word(2)] }],
        }
      : { type, from, to, data, gas: CALL_GAS };
  const [t1, t2, t3, t4] = [topic('one'), topic('two'), topic('three'), topic('four')];
  return [
    await tx(
      'log/log0-to-log4',
      'success',
      call(
        a0,
        program(
          act.log([]),
          act.log([t1]),
          act.log([t1, t2]),
          act.log([t1, t2, t3]),
          act.log([t1, t2, t3, t4]),
        ),
      ),
    ),
    await tx(
      'storage/set',
      'success',
      call(a1, program(act.sstore(1, 0x11), act.sstore(2, 0x22), act.sstore(3, 0x33))),
    ),
    await tx('storage/change', 'success', call(a1, act.sstore(1, 0x12), 'eip2930')),
    await tx('storage/clear', 'success', call(a1, program(act.sstore(1, 0), act.sstore(3, 0)))),
    await tx(
      'storage/write-then-restore',
      'success',
      call(
        a2,
        program(
          act.sstore(2, 0x99),
          act.logSload(2),
          act.sstore(2, 0x22),
          act.sstore(4, 5),
          act.sstore(4, 0),
          act.logSload(4),
        ),
      ),
    ),
    await tx(
      'transient/reentrant-call',
      'success',
      call(
        a3,
        program(
          act.tstore(1, 0xabc),
          act.call(
            to,
            program(act.logTload(1), act.tstore(1, 0xdef), act.delegatecall(c.probe, act.logTload(1))),
          ),
          act.logTload(1),
          act.logTload(2),
        ),
      ),
    ),
    await tx(
      'transient/lost-on-revert',
      'success',
      call(
        a4,
        program(act.tstore(5, 1), act.call(to, program(act.tstore(5, 2), act.revert())), act.logTload(5)),
      ),
    ),
    await tx(
      'log/in-reverted-subcall-dropped',
      'success',
      call(a5, program(act.call(c.probe, program(act.log([t1]), act.revert())), act.log([t2]))),
    ),
  ];
}

/** REVERT, out of gas and exceptional halts, each at top level and in a subcall the parent outlives. */
async function failures(tx: Tx, c: Contracts): Promise<Planned[]> {
  const [a0, a1, a2, a3, a4, a5, a6, a7] = accounts() as Eight;
  const { probe, probe2 } = c;
  const call = (from: PrivateKeyAccount, data: Hex, gas = CALL_GAS): TxSpec => ({
    type: 'eip1559',
    from,
    to: probe,
    data,
    gas,
  });
  const legacy = (from: PrivateKeyAccount, data: Hex): TxSpec => ({
    type: 'legacy',
    eip155: false,
    from,
    to: probe,
    data,
    gas: SMALL_GAS,
  });
  const survived = (action: Hex): Hex => program(act.call(probe2, action), act.logReturnData(), act.log([]));
  return [
    await tx(
      'revert/tx-with-error-string',
      'reverted',
      call(a0, program(act.sstore(20, 1), act.revert(ERROR_STRING))),
    ),
    await tx('revert/tx-empty', 'reverted', call(a1, act.revert())),
    await tx('revert/subcall-with-data', 'success', call(a2, survived(act.revert('0xdeadbeef')))),
    await tx('revert/subcall-empty', 'success', call(a3, survived(program(act.log([]), act.revert())))),
    await tx(
      'revert/bubbled-3-levels',
      'reverted',
      call(
        a4,
        program(
          act.call(
            probe2,
            program(
              act.call(probe, program(act.call(probe2, act.revert(ERROR_STRING)), act.bubbleFailure())),
              act.bubbleFailure(),
            ),
          ),
          act.bubbleFailure(),
        ),
      ),
    ),
    await tx('oog/tx-gas-loop', 'reverted', call(a5, program(act.sstore(21, 1), act.burnGas()), SMALL_GAS)),
    await tx('oog/tx-memory-expansion', 'reverted', call(a6, act.memoryOutOfGas(), SMALL_GAS)),
    // 1/64 of ~1M is left to the parent after the child burns the rest: enough for its LOG.
    await tx('oog/subcall-gas-loop-63-64', 'success', call(a7, survived(act.burnGas()))),
    await tx(
      'oog/subcall-explicit-gas',
      'success',
      call(a0, program(act.call(probe2, act.sstore(22, 1), { gas: 5_000 }), act.log([]))),
    ),
    await tx('oog/subcall-memory-expansion', 'success', call(a1, survived(act.memoryOutOfGas()))),
    await tx('halt/tx-invalid-fe', 'reverted', legacy(a2, act.invalid())),
    await tx('halt/tx-undefined-0c', 'reverted', legacy(a3, act.undefinedOpcode())),
    await tx('halt/tx-bad-jump', 'reverted', legacy(a4, act.badJump())),
    await tx('halt/tx-stack-underflow', 'reverted', legacy(a5, act.stackUnderflow())),
    await tx('halt/subcall-invalid-fe', 'success', call(a6, survived(act.invalid()))),
    await tx('halt/subcall-undefined-0c', 'success', call(a7, survived(act.undefinedOpcode()))),
    await tx('halt/subcall-bad-jump', 'success', call(a0, survived(act.badJump()))),
    await tx('halt/subcall-stack-underflow', 'success', call(a1, survived(act.stackUnderflow()))),
  ];
}

/** Every kind of write attempted below a STATICCALL, each failing the frame that tries it. */
async function staticViolations(tx: Tx, c: Contracts): Promise<Planned[]> {
  const [a0, a1, a2, a3, a4, a5, a6, a7] = accounts() as Eight;
  const { probe, probe2 } = c;
  const call = (from: PrivateKeyAccount, action: Hex): TxSpec => ({
    type: 'eip1559',
    from,
    to: probe,
    data: program(act.staticcall(probe2, action), act.log([])),
    gas: CALL_GAS,
  });
  return [
    await tx('static/sstore', 'success', call(a0, act.sstore(30, 1))),
    await tx('static/log', 'success', call(a1, act.log([]))),
    await tx('static/create', 'success', call(a2, act.create(PROBE_INITCODE))),
    await tx('static/create2', 'success', call(a3, act.create2(PROBE_INITCODE, 3n))),
    await tx('static/call-with-value', 'success', call(a4, act.call(a0.address, '0x', { value: 1n }))),
    await tx('static/tstore', 'success', call(a5, act.tstore(1, 1))),
    await tx('static/selfdestruct', 'success', call(a6, act.selfdestruct(a0.address))),
    // The write is two frames below the STATICCALL, reached through a zero-value CALL (allowed).
    await tx(
      'static/sstore-two-levels-down',
      'success',
      call(a7, act.call(probe, act.delegatecall(probe2, act.sstore(31, 1)))),
    ),
  ];
}

/** SELFDESTRUCT under EIP-6780: of contracts made in the same transaction, and of an old one. */
async function selfdestructs(tx: Tx, c: Contracts): Promise<Planned[]> {
  const [a0, a1, a2, a3, a4, a5, a6] = accounts() as Eight;
  const call = (from: PrivateKeyAccount, to: Address, data: Hex, value = 0n): TxSpec => ({
    type: 'eip1559',
    from,
    to,
    data,
    value,
    gas: CALL_GAS,
  });
  const createThen = (action: Hex): Hex =>
    program(
      act.create(PROBE_INITCODE, 1_000n),
      act.call(LAST_CREATED, action),
      act.call(LAST_CREATED, act.log([])),
    );
  return [
    await tx(
      'selfdestruct/same-tx-created-to-other',
      'success',
      call(a0, c.probe, createThen(act.selfdestruct(freshAddress('trace/sd-beneficiary')))),
    ),
    await tx(
      'selfdestruct/same-tx-created-to-self',
      'success',
      call(a1, c.probe, createThen(act.selfdestructToSelf())),
    ),
    await tx(
      'selfdestruct/in-constructor',
      'success',
      call(a2, c.probe, program(act.create(SELFDESTRUCTING_INITCODE, 77n), act.log([]))),
    ),
    await tx(
      'selfdestruct/old-contract-to-other',
      'success',
      call(a3, c.victim, act.selfdestruct(a0.address)),
    ),
    await tx(
      'selfdestruct/old-contract-to-self',
      'success',
      call(a4, c.victim, act.selfdestructToSelf(), 5n),
    ),
    await tx(
      'selfdestruct/old-contract-to-self-in-subcall',
      'success',
      call(a6, c.probe, act.call(c.victim, act.selfdestructToSelf())),
    ),
    await tx(
      'selfdestruct/old-contract-in-subcall',
      'success',
      call(
        a5,
        c.probe,
        program(
          act.call(c.victim, act.selfdestruct(c.probe), { value: 9n }),
          act.call(c.victim, act.log([])),
        ),
      ),
    ),
  ];
}

/**
 * A contract that forwards every call to probe by DELEGATECALL, so it acts as a probe of its own
 * (its storage, its address as sender) at a fraction of the probe's deployment cost.
 */
function probeProxy(probe: Address): Hex {
  return asm(`
    CALLDATASIZE PUSH0 PUSH0 CALLDATACOPY
    PUSH0 PUSH0 CALLDATASIZE PUSH0 PUSH20 ${probe} GAS DELEGATECALL
    RETURNDATASIZE PUSH0 PUSH0 RETURNDATACOPY
    @ok JUMPI RETURNDATASIZE PUSH0 REVERT
    ok: JUMPDEST RETURNDATASIZE PUSH0 RETURN
  `);
}

/**
 * Initcode whose constructor runs a probe program as the contract under construction: it first
 * CALLs `firstCall` (if given) straight from the constructor's own code, then DELEGATECALLs probe
 * with `steps`, so the program's calls, creations, logs, reverts and SELFDESTRUCT are the new
 * contract's. A failed program reverts the creation with its revert data; otherwise the contract
 * deployed is a probe proxy, so it can be called later to make contracts of its own.
 */
function constructing(probe: Address, steps: Hex, firstCall?: { to: Address; value: bigint }): Hex {
  const runtime = probeProxy(probe);
  const stepsLength = size(steps);
  const direct = firstCall
    ? `PUSH0 PUSH0 PUSH0 PUSH0 PUSH ${firstCall.value} PUSH20 ${firstCall.to} GAS CALL POP`
    : '';
  return asm(`
    ${direct}
    PUSH ${stepsLength} @steps PUSH0 CODECOPY
    PUSH0 PUSH0 PUSH ${stepsLength} PUSH0 PUSH20 ${probe} GAS DELEGATECALL
    @ok JUMPI
    RETURNDATASIZE PUSH0 PUSH0 RETURNDATACOPY RETURNDATASIZE PUSH0 REVERT
    ok: JUMPDEST
    PUSH ${size(runtime)} DUP1 @runtime PUSH0 CODECOPY PUSH0 RETURN
    runtime: .data ${runtime}
    steps: .data ${steps}
  `);
}

/**
 * Frames opened while a contract is being created, at every depth: constructors (of transactions
 * and of CREATE/CREATE2) that call, create, log, revert and self-destruct, and factories whose
 * products create more contracts. Every such frame's sender is the contract under construction.
 */
async function constructors(tx: Tx, c: Contracts): Promise<Planned[]> {
  const [a0, a1, a2, a3, a4, a5, a6, a7] = accounts() as Eight;
  const { probe, probe2 } = c;
  const create = (from: PrivateKeyAccount, data: Hex, value = 0n): TxSpec => ({
    type: 'eip1559',
    from,
    data,
    value,
    gas: 2_000_000n,
  });
  const call = (from: PrivateKeyAccount, data: Hex): TxSpec => ({
    type: 'eip1559',
    from,
    to: probe,
    data,
    gas: 2_000_000n,
  });
  // A product whose constructor calls probe2 and logs, and which can later make contracts itself.
  const product = (tag: string): Hex =>
    constructing(probe, program(act.call(probe2, act.log([topic(tag)])), act.log([topic(tag)])));
  return [
    // The first transaction's contract is the workload's constructorFactory.
    await tx(
      'constructor/tx-calls-creates-logs',
      'success',
      create(
        a0,
        constructing(
          probe,
          program(
            act.log([topic('factory')]),
            act.call(probe2, act.sstore(40, 1), { value: 3n }),
            act.staticcall(probe2, act.ret('0x07')),
            act.create(product('product')),
            act.call(LAST_CREATED, act.create(product('grandproduct'))),
            act.create2(PROBE_INITCODE, 9n),
          ),
          { to: probe2, value: 2n },
        ),
        10n,
      ),
    ),
    await tx(
      'constructor/tx-reverts-after-calls',
      'reverted',
      create(
        a1,
        constructing(
          probe,
          program(act.call(probe2, act.log([])), act.create(product('lost')), act.revert('0x0bad')),
          { to: probe2, value: 0n },
        ),
      ),
    ),
    await tx(
      'constructor/factory-product-creates',
      'success',
      call(
        a2,
        program(
          act.create(
            constructing(
              probe,
              program(
                act.create(constructing(probe, program(act.create(product('nested')), act.log([])))),
                act.call(LAST_CREATED, act.create(product('deeper'))),
              ),
            ),
          ),
          act.call(LAST_CREATED, program(act.create(product('later')), act.log([]))),
        ),
      ),
    ),
    await tx(
      'constructor/create2-calls-and-logs',
      'success',
      call(
        a3,
        act.create2(
          constructing(probe, program(act.log([topic('c2'), topic('ctor')]), act.call(probe2, act.log([])))),
          11n,
          5n,
        ),
      ),
    ),
    await tx(
      'constructor/subcall-reverts-constructor-survives',
      'success',
      call(
        a4,
        act.create(
          constructing(
            probe,
            program(act.call(probe2, act.revert('0x01')), act.logReturnData(), act.log([])),
          ),
        ),
      ),
    ),
    await tx(
      'constructor/inner-constructor-reverts',
      'success',
      call(
        a5,
        program(
          act.create(
            constructing(probe, program(act.call(probe2, act.sstore(41, 1)), act.revert('0xdead'))),
            7n,
          ),
          act.logReturnData(),
        ),
      ),
    ),
    await tx(
      'constructor/selfdestructs-after-call',
      'success',
      call(
        a6,
        program(
          act.create(
            constructing(
              probe,
              program(
                act.call(probe2, act.log([]), { value: 1n }),
                act.selfdestruct(freshAddress('trace/ctor-beneficiary')),
              ),
            ),
            1_000n,
          ),
          act.call(LAST_CREATED, act.log([])),
        ),
      ),
    ),
    await tx('constructor/halts-after-call', 'success', {
      ...call(
        a7,
        program(
          act.create(constructing(probe, program(act.call(probe2, act.log([])), act.invalid()))),
          act.log([]),
        ),
      ),
      gas: 400_000n,
    }),
  ];
}

/** EIP-7702: the authorization and a call running the delegate's code in the EOA, in one transaction. */
async function delegation(tx: Tx, c: Contracts, eoa: PrivateKeyAccount): Promise<Planned[]> {
  return [
    await tx('7702/delegate-and-call', 'success', {
      type: 'eip7702',
      from: devAccount(5),
      to: eoa.address,
      data: program(act.sstore(1, 7), act.log([topic('delegated')]), act.call(c.probe2, act.log([]))),
      gas: CALL_GAS,
      delegations: [{ authority: eoa, contract: c.probe }],
    }),
  ];
}

/** The delegated EOA called by an EOA, by a contract (CALL and DELEGATECALL), and sending itself. */
async function delegatedCalls(tx: Tx, c: Contracts, eoa: PrivateKeyAccount): Promise<Planned[]> {
  const [a0, a1, a2] = accounts() as Eight;
  return [
    await tx('7702/eoa-calls-delegated', 'success', {
      type: 'eip1559',
      from: a0,
      to: eoa.address,
      data: program(act.sstore(2, 8), act.log([topic('delegated')])),
      value: 3n,
      gas: CALL_GAS,
    }),
    await tx('7702/contract-calls-delegated', 'success', {
      type: 'eip1559',
      from: a1,
      to: c.probe,
      data: program(
        act.call(eoa.address, act.call(c.probe2, act.log([])), { value: 4n }),
        act.delegatecall(eoa.address, act.log([])),
        act.staticcall(eoa.address, act.ret('0x07')),
      ),
      gas: CALL_GAS,
    }),
    await tx('7702/delegated-eoa-sends-to-itself', 'success', {
      type: 'eip1559',
      from: eoa,
      to: eoa.address,
      data: act.log([]),
      gas: CALL_GAS,
    }),
    await tx('7702/delegated-eoa-reverts', 'reverted', {
      type: 'legacy',
      eip155: true,
      from: a2,
      to: eoa.address,
      data: act.revert('0x0bad'),
      gas: CALL_GAS,
    }),
  ];
}
