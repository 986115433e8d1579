import type { PrecompileRules } from './precompiles/index.ts';

/**
 * The rules of every fork, one table row each. The interpreter, the transaction rules and the block
 * rules read named fields of a row; no code outside this file asks "is this fork after that one".
 * Each row is the previous one with what its EIPs changed, so a row says what its fork is.
 */

/** Fork names as the state tests' `post` keys spell them, in order. */
export const FORK_NAMES = [
  'Frontier',
  'Homestead',
  'EIP150',
  'EIP158',
  'Byzantium',
  'Constantinople',
  'ConstantinopleFix',
  'Istanbul',
  'Berlin',
  'London',
  'Paris',
  'Shanghai',
  'Cancun',
  'Prague',
  'Osaka',
  'BPO1',
  'BPO2',
  'BPO3',
  'BPO4',
  'BPO5',
] as const;
export type ForkName = (typeof FORK_NAMES)[number];

/** Other names the same forks go by (geth's and the execution specs'), lower-cased. */
const ALIASES: Readonly<Record<string, ForkName>> = {
  chainstart: 'Frontier',
  // The DAO fork changed state once (its block's irregular change, made by callers), not the rules.
  dao: 'Homestead',
  tangerinewhistle: 'EIP150',
  spuriousdragon: 'EIP158',
  petersburg: 'ConstantinopleFix',
  // Forks that only moved the difficulty bomb run their predecessor's rules.
  muirglacier: 'Istanbul',
  arrowglacier: 'London',
  grayglacier: 'London',
  merge: 'Paris',
  mergenetsplitblock: 'Paris',
  paris: 'Paris',
};

/** EIP-4844 blob parameters (EIP-7691, EIP-7892's blob schedule). */
export interface BlobParams {
  /** Blobs per block the base fee aims at. */
  readonly target: number;
  /** Blobs per block at most. */
  readonly max: number;
  readonly baseFeeUpdateFraction: bigint;
}

/** How SSTORE is priced and refunded. */
export interface SstoreRules {
  /** 'simple': Frontier's 20000/5000 with a refund for clearing; 'net': EIP-1283/2200 net metering. */
  readonly scheme: 'simple' | 'net';
  /** EIP-2200: fails unless more than the call stipend is left (not EIP-1283). */
  readonly sentry: boolean;
  /** Cost of a no-op write (EIP-1283/2200's SLOAD_GAS; EIP-2929's warm read). */
  readonly noop: number;
  readonly set: number;
  readonly reset: number;
  /** Refund for clearing a slot (EIP-3529 lowered it). */
  readonly clearRefund: number;
}

export interface ForkRules {
  readonly name: ForkName;
  /** Position in FORK_NAMES. */
  readonly index: number;

  // Transactions
  /** Intrinsic gas of a contract creation (EIP-2: 53000 from Homestead). */
  readonly txCreateGas: number;
  readonly txDataZeroGas: number;
  /** EIP-2028 lowered it to 16 at Istanbul. */
  readonly txDataNonZeroGas: number;
  /** Transaction types accepted (0 legacy, 1 EIP-2930, 2 EIP-1559, 3 EIP-4844, 4 EIP-7702). */
  readonly txTypes: ReadonlySet<number>;
  /** EIP-1559: a base fee, priority fees, the BASEFEE opcode. */
  readonly baseFee: boolean;
  /** EIP-7623: gas per calldata token a transaction pays at least (0 before Prague). */
  readonly calldataFloorPerToken: number;
  /** EIP-7825: gas limit of one transaction (Infinity before Osaka). */
  readonly txGasCap: number;
  /** EIP-3607: a sender with code (other than a delegation) is refused. */
  readonly rejectSenderWithCode: boolean;
  /** EIP-658: receipts carry a status (before Byzantium, the state root after the transaction). */
  readonly receiptStatus: boolean;

  // Gas of state access
  /** EIP-2929: warm and cold accounts and slots (and EIP-2930 access lists). */
  readonly accessLists: boolean;
  readonly coldAccountAccess: number;
  readonly coldSload: number;
  readonly warmAccess: number;
  /** Gas of BALANCE, EXTCODESIZE/COPY/HASH, SLOAD and CALL before EIP-2929 made them warm/cold. */
  readonly balanceGas: number;
  readonly extCodeGas: number;
  readonly extCodeHashGas: number;
  readonly sloadGas: number;
  readonly callGas: number;
  readonly sstore: SstoreRules;
  /** EIP-3651: the coinbase starts warm. */
  readonly warmCoinbase: boolean;

  // Calls and creations
  /** EIP-150: a call gets at most all but one 64th of what is left. */
  readonly allButOne64th: boolean;
  /**
   * EIP-161: an empty account counts as absent (calls and self-destructs pay for a new account only
   * when they send value to an empty one), touched empty accounts are deleted, a zero-value call to
   * an absent account creates nothing, a new contract starts at nonce 1.
   */
  readonly emptyIsAbsent: boolean;
  /** EIP-150 priced SELFDESTRUCT at 5000 and charged it for a new beneficiary. */
  readonly selfDestructGas: number;
  readonly selfDestructNewAccount: boolean;
  /** Refund for a self-destruct (EIP-3529 removed it). */
  readonly selfDestructRefund: number;
  /** EIP-6780: SELFDESTRUCT deletes only an account created in the same transaction. */
  readonly selfDestructOnlyNew: boolean;
  /** EIP-2: a creation that cannot pay for its code fails (Frontier kept the account, codeless). */
  readonly codeDepositOutOfGasFails: boolean;
  /** EIP-170: largest deployed code (Infinity before Spurious Dragon). */
  readonly maxCodeSize: number;
  /** EIP-3860: largest initcode, and gas per word of it (Infinity and 0 before Shanghai). */
  readonly maxInitCodeSize: number;
  readonly initCodeWordGas: number;
  /** EIP-3541: new code may not start with 0xEF. */
  readonly rejectEfCode: boolean;
  /** EIP-7702: delegation designators in accounts, resolved by calls and paid for. */
  readonly delegation: boolean;
  /** The max refund is gas used divided by this (2, then 5 from EIP-3529). */
  readonly refundQuotient: number;

  // Opcodes
  /** EIP-160 raised EXP's price per exponent byte from 10 to 50. */
  readonly expByteGas: number;
  /** Opcodes defined (1) or not (0), by value. */
  readonly opcodes: Uint8Array;

  // Precompiles, blobs, blocks
  readonly precompiles: PrecompileRules;
  /** EIP-4844 and successors; null before Cancun. */
  readonly blobs: BlobParams | null;
  /** EIP-7594: blobs one transaction may carry besides the block's max (Infinity before Osaka). */
  readonly maxBlobsPerTx: number;
  /** EIP-7918: the blob base fee is kept above a share of the execution base fee (Osaka). */
  readonly blobReservePrice: boolean;
  /** Reward of a block's miner (and, in part, its ommers') before the merge. */
  readonly blockReward: bigint;
  /** The merge (EIP-3675): no rewards, DIFFICULTY reads prevRandao (EIP-4399). */
  readonly proofOfStake: boolean;
  /** EIP-4895: withdrawals in blocks. */
  readonly withdrawals: boolean;
  /** EIP-4788: the parent beacon block root is stored by a system call before the transactions. */
  readonly beaconRoots: boolean;
  /** EIP-2935: parent block hashes are stored by a system call. */
  readonly historyStorage: boolean;
  /** EIP-7685 requests (EIP-6110 deposits, EIP-7002 withdrawals, EIP-7251 consolidations). */
  readonly requests: boolean;
}

// Opcodes each fork added, by value; the table below turns them into each fork's set.
const FRONTIER_OPCODES: readonly number[] = [
  ...range(0x00, 0x0b),
  ...range(0x10, 0x1a),
  0x20,
  ...range(0x30, 0x3c),
  ...range(0x40, 0x45),
  ...range(0x50, 0x5b),
  ...range(0x60, 0xa4),
  0xf0,
  0xf1,
  0xf2,
  0xf3,
  0xff,
];

function range(from: number, to: number): number[] {
  const out: number[] = [];
  for (let i = from; i <= to; i++) out.push(i);
  return out;
}

function withOpcodes(base: Uint8Array, added: readonly number[]): Uint8Array {
  const out = base.slice();
  for (const op of added) out[op] = 1;
  return out;
}

const NO_TYPES: ReadonlySet<number> = new Set([0]);
const EMPTY_OPCODES = new Uint8Array(256);

const FRONTIER: ForkRules = {
  name: 'Frontier',
  index: 0,
  txCreateGas: 21000,
  txDataZeroGas: 4,
  txDataNonZeroGas: 68,
  txTypes: NO_TYPES,
  baseFee: false,
  calldataFloorPerToken: 0,
  txGasCap: Number.POSITIVE_INFINITY,
  rejectSenderWithCode: true,
  receiptStatus: false,
  accessLists: false,
  coldAccountAccess: 0,
  coldSload: 0,
  warmAccess: 0,
  balanceGas: 20,
  extCodeGas: 20,
  extCodeHashGas: 400,
  sloadGas: 50,
  callGas: 40,
  sstore: { scheme: 'simple', sentry: false, noop: 5000, set: 20000, reset: 5000, clearRefund: 15000 },
  warmCoinbase: false,
  allButOne64th: false,
  emptyIsAbsent: false,
  selfDestructGas: 0,
  selfDestructNewAccount: false,
  selfDestructRefund: 24000,
  selfDestructOnlyNew: false,
  codeDepositOutOfGasFails: false,
  maxCodeSize: Number.POSITIVE_INFINITY,
  maxInitCodeSize: Number.POSITIVE_INFINITY,
  initCodeWordGas: 0,
  rejectEfCode: false,
  delegation: false,
  refundQuotient: 2,
  expByteGas: 10,
  opcodes: withOpcodes(EMPTY_OPCODES, FRONTIER_OPCODES),
  precompiles: 'frontier',
  blobs: null,
  maxBlobsPerTx: Number.POSITIVE_INFINITY,
  blobReservePrice: false,
  blockReward: 5_000_000_000_000_000_000n,
  proofOfStake: false,
  withdrawals: false,
  beaconRoots: false,
  historyStorage: false,
  requests: false,
};

type Change = Omit<Partial<ForkRules>, 'name' | 'index' | 'opcodes'> & { newOpcodes?: readonly number[] };

/** Each fork after Frontier as what it changed (the EIPs named beside each field). */
const CHANGES: ReadonlyArray<readonly [ForkName, Change]> = [
  // EIP-2 (creation gas, failing code deposit), EIP-7 (DELEGATECALL).
  ['Homestead', { txCreateGas: 53000, codeDepositOutOfGasFails: true, newOpcodes: [0xf4] }],
  // EIP-150: IO-heavy operations repriced, all but one 64th to calls.
  [
    'EIP150',
    {
      balanceGas: 400,
      extCodeGas: 700,
      sloadGas: 200,
      callGas: 700,
      selfDestructGas: 5000,
      selfDestructNewAccount: true,
      allButOne64th: true,
    },
  ],
  // EIP-155/160/161/170.
  ['EIP158', { expByteGas: 50, emptyIsAbsent: true, maxCodeSize: 24576 }],
  // EIP-140 REVERT, EIP-211 RETURNDATA*, EIP-214 STATICCALL, EIP-196/197/198 precompiles; 3 ether.
  [
    'Byzantium',
    {
      newOpcodes: [0x3d, 0x3e, 0xfa, 0xfd],
      precompiles: 'byzantium',
      receiptStatus: true,
      blockReward: 3_000_000_000_000_000_000n,
    },
  ],
  // EIP-145 shifts, EIP-1014 CREATE2, EIP-1052 EXTCODEHASH, EIP-1283 net SSTORE metering; 2 ether.
  [
    'Constantinople',
    {
      newOpcodes: [0x1b, 0x1c, 0x1d, 0x3f, 0xf5],
      sstore: { scheme: 'net', sentry: false, noop: 200, set: 20000, reset: 5000, clearRefund: 15000 },
      blockReward: 2_000_000_000_000_000_000n,
    },
  ],
  // Petersburg: EIP-1283 withdrawn.
  [
    'ConstantinopleFix',
    { sstore: { scheme: 'simple', sentry: false, noop: 5000, set: 20000, reset: 5000, clearRefund: 15000 } },
  ],
  // EIP-1344 CHAINID, EIP-1884 repricing and SELFBALANCE, EIP-2028 calldata, EIP-2200 SSTORE,
  // EIP-1108/152 precompiles.
  [
    'Istanbul',
    {
      newOpcodes: [0x46, 0x47],
      balanceGas: 700,
      extCodeHashGas: 700,
      sloadGas: 800,
      txDataNonZeroGas: 16,
      sstore: { scheme: 'net', sentry: true, noop: 800, set: 20000, reset: 5000, clearRefund: 15000 },
      precompiles: 'istanbul',
    },
  ],
  // EIP-2929 cold and warm access, EIP-2930 access lists (type 1), EIP-2565 modexp.
  [
    'Berlin',
    {
      accessLists: true,
      coldAccountAccess: 2600,
      coldSload: 2100,
      warmAccess: 100,
      balanceGas: 100,
      extCodeGas: 100,
      extCodeHashGas: 100,
      sloadGas: 100,
      callGas: 100,
      sstore: { scheme: 'net', sentry: true, noop: 100, set: 20000, reset: 2900, clearRefund: 15000 },
      txTypes: new Set([0, 1]),
      precompiles: 'berlin',
    },
  ],
  // EIP-1559 (type 2, BASEFEE), EIP-3529 refunds, EIP-3541 0xEF code.
  [
    'London',
    {
      newOpcodes: [0x48],
      baseFee: true,
      txTypes: new Set([0, 1, 2]),
      sstore: { scheme: 'net', sentry: true, noop: 100, set: 20000, reset: 2900, clearRefund: 4800 },
      selfDestructRefund: 0,
      refundQuotient: 5,
      rejectEfCode: true,
    },
  ],
  // EIP-3675 and EIP-4399 PREVRANDAO.
  ['Paris', { proofOfStake: true, blockReward: 0n }],
  // EIP-3651 warm coinbase, EIP-3855 PUSH0, EIP-3860 initcode limits, EIP-4895 withdrawals.
  [
    'Shanghai',
    {
      newOpcodes: [0x5f],
      warmCoinbase: true,
      maxInitCodeSize: 49152,
      initCodeWordGas: 2,
      withdrawals: true,
    },
  ],
  // EIP-1153 TLOAD/TSTORE, EIP-4788, EIP-4844 (type 3, BLOBHASH), EIP-5656 MCOPY, EIP-6780,
  // EIP-7516 BLOBBASEFEE.
  [
    'Cancun',
    {
      newOpcodes: [0x49, 0x4a, 0x5c, 0x5d, 0x5e],
      txTypes: new Set([0, 1, 2, 3]),
      selfDestructOnlyNew: true,
      beaconRoots: true,
      blobs: { target: 3, max: 6, baseFeeUpdateFraction: 3338477n },
      precompiles: 'cancun',
    },
  ],
  // EIP-2537, 2935, 6110, 7002, 7251, 7623, 7685, 7691, 7702.
  [
    'Prague',
    {
      txTypes: new Set([0, 1, 2, 3, 4]),
      calldataFloorPerToken: 10,
      delegation: true,
      historyStorage: true,
      requests: true,
      blobs: { target: 6, max: 9, baseFeeUpdateFraction: 5007716n },
      precompiles: 'prague',
    },
  ],
  // EIP-7594 (6 blobs a transaction), 7823/7883 modexp, 7825 gas cap, 7918, 7939 CLZ, 7951 P-256.
  [
    'Osaka',
    {
      newOpcodes: [0x1e],
      txGasCap: 16_777_216,
      maxBlobsPerTx: 6,
      blobs: { target: 6, max: 9, baseFeeUpdateFraction: 5007716n },
      blobReservePrice: true,
      precompiles: 'osaka',
    },
  ],
  // EIP-7892 blob-parameter-only forks. BPO3–5 have no mainnet values: a chain's blob schedule
  // gives them (withBlobSchedule); until then they keep BPO2's.
  ['BPO1', { blobs: { target: 10, max: 15, baseFeeUpdateFraction: 8346193n } }],
  ['BPO2', { blobs: { target: 14, max: 21, baseFeeUpdateFraction: 11684671n } }],
  ['BPO3', {}],
  ['BPO4', {}],
  ['BPO5', {}],
];

function buildTable(): ReadonlyMap<ForkName, ForkRules> {
  const table = new Map<ForkName, ForkRules>([['Frontier', FRONTIER]]);
  let previous = FRONTIER;
  for (const [name, change] of CHANGES) {
    const { newOpcodes, ...fields } = change;
    const rules: ForkRules = {
      ...previous,
      ...fields,
      name,
      index: FORK_NAMES.indexOf(name),
      opcodes: newOpcodes ? withOpcodes(previous.opcodes, newOpcodes) : previous.opcodes,
    };
    table.set(name, rules);
    previous = rules;
  }
  return table;
}

const TABLE = buildTable();

/** The rules of a fork. */
export function forkRules(name: ForkName): ForkRules {
  const rules = TABLE.get(name);
  if (!rules) throw new Error(`no rules for fork ${name}`);
  return rules;
}

/** The fork a name stands for (a state test's `post` key, or geth's name for it), or null. */
export function forkByName(name: string): ForkName | null {
  const exact = FORK_NAMES.find((f) => f === name);
  if (exact) return exact;
  const lower = name.toLowerCase();
  return ALIASES[lower] ?? FORK_NAMES.find((f) => f.toLowerCase() === lower) ?? null;
}

type ScheduleEntry = { target?: unknown; max?: unknown; baseFeeUpdateFraction?: unknown };

/**
 * A fork's rules on a chain: its row with the chain's `blobSchedule` entry for it (EIP-7840), found
 * under the fork's lower-cased name as geth's genesis writes it ("cancun", "bpo1"); a field the entry
 * leaves out stays the fork's.
 */
export function chainForkRules(name: ForkName, blobSchedule: Readonly<Record<string, unknown>>): ForkRules {
  const rules = forkRules(name);
  const found = blobSchedule[name.toLowerCase()];
  if (typeof found !== 'object' || found === null || !rules.blobs) return rules;
  const entry = found as ScheduleEntry;
  return withBlobSchedule(rules, {
    target: Number(entry.target ?? rules.blobs.target),
    max: Number(entry.max ?? rules.blobs.max),
    baseFeeUpdateFraction: BigInt(
      (entry.baseFeeUpdateFraction as number | string | undefined) ?? rules.blobs.baseFeeUpdateFraction,
    ),
  });
}

/** A chain's blob parameters for a fork (EIP-7840 `blobSchedule`); other fields stay the fork's. */
export function withBlobSchedule(
  rules: ForkRules,
  params: { target: number; max: number; baseFeeUpdateFraction: bigint },
): ForkRules {
  if (!rules.blobs) return rules;
  const same =
    rules.blobs.target === params.target &&
    rules.blobs.max === params.max &&
    rules.blobs.baseFeeUpdateFraction === params.baseFeeUpdateFraction;
  if (same) return rules;
  return { ...rules, blobs: { ...params } };
}
