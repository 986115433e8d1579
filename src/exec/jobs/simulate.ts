import type { BlockHeader } from '@ethereumjs/block';
import type { ChainReader } from '../../chain/reader.ts';
import type { CallLimits } from '../../config/limits.ts';
import type {
  CallRequest,
  SimulatedBlockCalls,
  SimulatedBlockOverrides,
  SimulateRequest,
  StateOverrides,
} from '../../core/call.ts';
import { ChainRewound, RequestFailed, type SimulationFault, SimulationRejected } from '../../core/errors.ts';
import {
  beginBlock,
  depositContractOf,
  encodeReceipt,
  encodeWithdrawal,
  finishBlock,
  logsBloom,
  nextBaseFee,
  nextExcessBlobGas,
  type Receipt,
  requestsHash,
  type Withdrawal,
} from '../../evm/block.ts';
import type { BlockEnv } from '../../evm/env.ts';
import type { Precompile } from '../../evm/precompiles/index.ts';
import { WorldState } from '../../evm/state.ts';
import {
  applyTransaction,
  floorDataGas,
  InvalidTransaction,
  type Transaction,
  type TransactionResult,
} from '../../evm/transaction.ts';
import { orderedTrieRoot } from '../../evm/trie.ts';
import { addressBytes, bytesToBigint, wordBytes } from '../../evm/words.ts';
import { quantityToHex, toHex } from '../../primitives/hex.ts';
import { keccak256 } from '../../primitives/keccak.ts';
import { BlockReads, evmFork } from '../evmEngine.ts';
import type { EvmFork } from '../evmRules.ts';
import { evmStateAt, untilComplete } from '../fetchingState.ts';
import { precompilesUnder } from '../precompileOverrides.ts';
import { CallLogs, type NumberedLog } from '../simulate/callLogs.ts';
import {
  blockSize,
  encodeHeader,
  encodeSimulatedTransaction,
  headerJson,
  type SimulatedHeader,
  transactionJson,
} from '../simulate/encoding.ts';
import { SimulatedStateRoot } from '../simulate/stateRoot.ts';
import { bigMax } from '../transaction.ts';

/** eth_simulateV1 on the state after block `blockHash`. */
export interface SimulateJob extends SimulateRequest {
  blockHash: Uint8Array;
}

/** geth's step between simulated blocks' timestamps when none is given. */
const TIMESTAMP_INCREMENT = 12n;
/** The uncle hash of a block without uncles (keccak of the empty list). */
const EMPTY_UNCLE_HASH = keccak256(Uint8Array.of(0xc0));
const ZERO_HASH = new Uint8Array(32);
/** A base fee before London's first block (EIP-1559's initial one). */
const INITIAL_BASE_FEE = 1_000_000_000n;

/** A block to simulate, its number and time settled (gaps filled with empty blocks). */
interface PlannedBlock {
  number: bigint;
  time: bigint;
  overrides: SimulatedBlockOverrides;
  stateOverrides: StateOverrides | undefined;
  calls: CallRequest[];
}

/** A block about to run: its fork, environment and the header fields known before its calls. */
interface PreparedBlock {
  fork: EvmFork;
  env: BlockEnv;
  mixHash: Uint8Array;
  baseFee: bigint | null;
  excessBlobGas: bigint | null;
  beaconRoot: Uint8Array | null;
  withdrawals: Withdrawal[] | null;
}

/** What a block's calls did. */
interface CallsRun {
  receipts: Receipt[];
  calls: SimulatedCall[];
  gasUsed: bigint;
  blobGasUsed: bigint;
}

/** One call as run: the transaction made of it and its outcome. */
interface SimulatedCall {
  tx: Transaction;
  encoded: Uint8Array;
  hash: Uint8Array;
  result: TransactionResult;
  logs: NumberedLog[];
  maxUsedGas: bigint;
}

/** The parent a simulated block builds on. */
interface Parent {
  hash: Uint8Array;
  number: bigint;
  timestamp: bigint;
  gasLimit: bigint;
  gasUsed: bigint;
  baseFee: bigint | null;
  excessBlobGas: bigint | null;
  blobGasUsed: bigint | null;
  coinbase: bigint;
  difficulty: bigint;
}

/**
 * Numbers and times of the blocks, as geth settles them: each block after the one before it (or
 * the base), a number skipped over filled with empty blocks 12 s apart, no more than `maxBlocks`
 * past the base; numbers and times must grow.
 */
export function planBlocks(
  base: { number: bigint; timestamp: bigint },
  blocks: readonly SimulatedBlockCalls[],
  maxBlocks: number,
): PlannedBlock[] {
  const out: PlannedBlock[] = [];
  let number = base.number;
  let time = base.timestamp;
  for (const block of blocks) {
    const overrides = block.blockOverrides ?? {};
    const wanted = overrides.number ?? number + 1n;
    if (wanted <= number)
      throw new SimulationRejected(
        'block number order',
        `block numbers must be in order: ${wanted} <= ${number}`,
      );
    if (wanted - base.number > BigInt(maxBlocks))
      throw new SimulationRejected('client limit', 'too many blocks');
    for (let n = number + 1n; n < wanted; n++) {
      time += TIMESTAMP_INCREMENT;
      out.push({ number: n, time, overrides: {}, stateOverrides: undefined, calls: [] });
    }
    number = wanted;
    let t = overrides.time;
    if (t === undefined) t = time + TIMESTAMP_INCREMENT;
    else if (t <= time)
      throw new SimulationRejected(
        'block timestamp order',
        `block timestamps must be in order: ${t} <= ${time}`,
      );
    time = t;
    out.push({ number, time, overrides, stateOverrides: block.stateOverrides, calls: block.calls });
  }
  return out;
}

/** eth_simulateV1: the blocks in order on one state, each as geth's block JSON with its calls. */
export async function runSimulate(
  chain: ChainReader,
  limits: CallLimits,
  job: SimulateJob,
): Promise<Uint8Array> {
  const base = await chain.header(job.blockHash);
  if (!base) throw ChainRewound.during();
  const planned = planBlocks(base, job.blocks, limits.maxSimulateBlocks);
  const fork = evmFork(chain, chain.commonAt(base.number, base.timestamp));
  const state = evmStateAt(
    chain.store,
    { number: base.number, hash: job.blockHash },
    fork,
    BlockReads.of(chain.store, job.blockHash),
  );
  // The root of the state trie the store holds for the block: its own, which is the header's on a
  // verified chain but not on one imported without root checks (a dev node's export).
  const trieNode = chain.store.getTrieNodeSync?.bind(chain.store);
  const storedRoot = trieNode ? await chain.store.getStateRoot(job.blockHash) : null;
  const trie = trieNode && storedRoot ? { trieNode, root: storedRoot } : null;
  const result = await untilComplete(state.fetching, () => {
    const simulator = new Simulator(chain, limits, job, base, state.reader, state.hashes, trie);
    return planned.map((block) => simulator.block(block));
  });
  return Buffer.from(JSON.stringify(result));
}

class Simulator {
  private readonly world: WorldState;
  private readonly roots: SimulatedStateRoot | null;
  private parent: Parent;
  /** Gas the request may still use across its blocks (the RPC gas cap, as geth's budget). */
  private budget: bigint;
  /** Hashes of the blocks simulated so far, by number (BLOCKHASH sees them). */
  private readonly hashes = new Map<bigint, bigint>();
  private readonly depositContract: bigint;

  constructor(
    private readonly chain: ChainReader,
    limits: CallLimits,
    private readonly job: SimulateJob,
    private readonly base: BlockHeader,
    reader: ConstructorParameters<typeof WorldState>[0],
    private readonly canonical: { canonicalHash(number: bigint): Uint8Array | null },
    trie: { trieNode: (hash: Uint8Array) => Uint8Array | null; root: Uint8Array } | null,
  ) {
    this.world = new WorldState(reader);
    this.roots = trie ? new SimulatedStateRoot(trie, trie.root) : null;
    this.budget = limits.gasCap;
    this.depositContract = depositContractOf(chain.spec.json.config as unknown as Record<string, unknown>);
    this.parent = {
      hash: base.hash(),
      number: base.number,
      timestamp: base.timestamp,
      gasLimit: base.gasLimit,
      gasUsed: base.gasUsed,
      baseFee: base.baseFeePerGas ?? null,
      excessBlobGas: base.excessBlobGas ?? null,
      blobGasUsed: base.blobGasUsed ?? null,
      coinbase: bytesToBigint(base.coinbase.bytes),
      difficulty: base.difficulty,
    };
  }

  /** Simulates one block on the state the blocks before it left; its JSON. */
  block(plan: PlannedBlock): Record<string, unknown> {
    const block = this.prepare(plan);
    const { fork, env } = block;
    const rules = fork.rules;
    const moved = plan.stateOverrides ? this.applyOverrides(plan.stateOverrides, fork.precompiles) : null;
    beginBlock(this.world, rules, fork.precompiles, {
      env,
      parentHash: bytesToBigint(this.parent.hash),
      parentBeaconBlockRoot: block.beaconRoot === null ? null : bytesToBigint(block.beaconRoot),
    });
    const run = this.runCalls(plan.calls, block, moved);
    const requests = finishBlock(
      this.world,
      rules,
      fork.precompiles,
      { env, ommers: [], withdrawals: block.withdrawals },
      run.receipts,
      { depositContract: this.depositContract, requestContractsOptional: true },
    );
    this.world.endTransaction(rules.emptyIsAbsent);
    return this.seal(block, run, requests);
  }

  /** The block's environment, from its overrides and its parent, as geth makes its header. */
  private prepare(plan: PlannedBlock): PreparedBlock {
    const { chain, parent } = this;
    const fork = evmFork(chain, chain.commonAt(plan.number, plan.time));
    const rules = fork.rules;
    const o = plan.overrides;
    // Fee recipient and gas limit carry over from the block before; randomness and fees do not.
    const coinbase = o.feeRecipient ? bytesToBigint(o.feeRecipient) : parent.coinbase;
    const gasLimit = o.gasLimit ?? parent.gasLimit;
    const difficulty = rules.proofOfStake ? 0n : parent.difficulty;
    const mixHash = o.prevRandao ?? ZERO_HASH;
    let baseFee: bigint | null = null;
    if (rules.baseFee) {
      // Without validation a call pays no fee: geth's base fee is then zero unless overridden.
      baseFee =
        o.baseFeePerGas ??
        (this.job.validation
          ? parent.baseFee === null
            ? INITIAL_BASE_FEE
            : nextBaseFee(parent.gasLimit, parent.gasUsed, parent.baseFee)
          : 0n);
    }
    let excessBlobGas: bigint | null = null;
    if (rules.blobs) {
      excessBlobGas =
        parent.excessBlobGas === null
          ? 0n
          : nextExcessBlobGas(rules, parent.excessBlobGas, parent.blobGasUsed ?? 0n, parent.baseFee ?? 0n);
    }
    const env: BlockEnv = {
      number: plan.number,
      timestamp: plan.time,
      coinbase,
      gasLimit,
      difficulty,
      prevRandao: bytesToBigint(mixHash),
      baseFee: baseFee ?? 0n,
      excessBlobGas: excessBlobGas ?? 0n,
      chainId: fork.chainId,
      blockHash: (n) => this.blockHash(n),
    };
    if (o.blobBaseFee !== undefined) env.blobBaseFee = o.blobBaseFee;
    return {
      fork,
      env,
      mixHash,
      baseFee,
      excessBlobGas,
      beaconRoot: rules.beaconRoots ? (o.beaconRoot ?? ZERO_HASH) : null,
      withdrawals: rules.withdrawals
        ? (o.withdrawals ?? []).map((w) => ({ ...w, address: bytesToBigint(w.address) }))
        : null,
    };
  }

  /**
   * The block's calls in order, each as the transaction geth makes of it: its nonce the sender's
   * when it names none, its gas what is left of the block's (and of the request's budget).
   */
  private runCalls(
    calls: readonly CallRequest[],
    block: PreparedBlock,
    moved: ReadonlyMap<bigint, Precompile> | null,
  ): CallsRun {
    const { world, job } = this;
    const { fork, env } = block;
    const rules = fork.rules;
    const run: CallsRun = { receipts: [], calls: [], gasUsed: 0n, blobGasUsed: 0n };
    const counter = { next: 0 };
    for (const call of calls) {
      const remaining = env.gasLimit - run.gasUsed;
      const from = call.from ? bytesToBigint(call.from) : 0n;
      const wanted = call.gas ?? remaining;
      if (remaining < wanted)
        throw new SimulationRejected(
          'block gas limit reached',
          `block gas limit reached: remaining: ${remaining}, required: ${wanted}`,
        );
      const gas = bigMin(wanted, this.budget);
      const nonce = call.nonce ?? world.account(from).nonce;
      const tx = simulatedTransaction(call, from, nonce, gas, block.baseFee !== null);
      const encoded = encodeSimulatedTransaction(tx, fork.chainId);
      const logs = new CallLogs(job.traceTransfers, counter);
      let result: TransactionResult;
      try {
        result = applyTransaction(world, env, rules, fork.precompiles, tx, logs.tracer, {
          call: true,
          nonceCheck: job.validation,
          noBaseFee: !job.validation,
          ...(moved ? { precompilesAt: moved } : {}),
        });
      } catch (e) {
        if (e instanceof InvalidTransaction) throw rejection(e, gas);
        throw e;
      }
      if (result.gasUsed > this.budget)
        throw new RequestFailed(`RPC gas cap exhausted: need ${result.gasUsed}, remaining ${this.budget}`);
      this.budget -= result.gasUsed;
      run.gasUsed += result.gasUsed;
      run.blobGasUsed += result.blobGasUsed;
      run.receipts.push({
        type: tx.type,
        success: result.success,
        postState: null,
        cumulativeGasUsed: run.gasUsed,
        logs: result.logs,
        result,
      });
      run.calls.push({
        tx,
        encoded,
        hash: keccak256(encoded),
        result,
        logs: logs.logs,
        // geth's peak gas: before the refund, at least EIP-7623's floor.
        maxUsedGas: bigMax(result.gasUsedBeforeRefund, floorDataGas(rules, tx)),
      });
    }
    return run;
  }

  /** The block's header from what ran (the state root after it), made the next block's parent; its JSON. */
  private seal(block: PreparedBlock, run: CallsRun, requests: Uint8Array[] | null): Record<string, unknown> {
    const { fork, env } = block;
    const rules = fork.rules;
    const stateRoot = this.roots ? this.roots.apply(this.world.takeChanges()) : ZERO_HASH;
    const bloom = new Uint8Array(256);
    for (const receipt of run.receipts) {
      const bits = logsBloom(receipt.logs);
      for (let i = 0; i < 256; i++) bloom[i] = (bloom[i] as number) | (bits[i] as number);
    }
    const encodedTxs = run.calls.map((c) => c.encoded);
    const withdrawals = block.withdrawals?.map(encodeWithdrawal) ?? null;
    const header: SimulatedHeader = {
      parentHash: this.parent.hash,
      uncleHash: EMPTY_UNCLE_HASH,
      coinbase: env.coinbase,
      stateRoot,
      transactionsRoot: orderedTrieRoot(encodedTxs),
      receiptsRoot: orderedTrieRoot(run.receipts.map(encodeReceipt)),
      logsBloom: bloom,
      difficulty: env.difficulty,
      number: env.number,
      gasLimit: env.gasLimit,
      gasUsed: run.gasUsed,
      timestamp: env.timestamp,
      mixHash: block.mixHash,
      baseFee: block.baseFee,
      withdrawalsRoot: withdrawals === null ? null : orderedTrieRoot(withdrawals),
      blobGasUsed: rules.blobs ? run.blobGasUsed : null,
      excessBlobGas: block.excessBlobGas,
      parentBeaconBlockRoot: block.beaconRoot,
      requestsHash: requests === null ? null : requestsHash(requests),
    };
    const headerBytes = encodeHeader(header);
    const hash = keccak256(headerBytes);
    this.hashes.set(env.number, bytesToBigint(hash));
    this.parent = {
      hash,
      number: env.number,
      timestamp: env.timestamp,
      gasLimit: env.gasLimit,
      gasUsed: run.gasUsed,
      baseFee: block.baseFee,
      excessBlobGas: block.excessBlobGas,
      blobGasUsed: header.blobGasUsed,
      coinbase: env.coinbase,
      difficulty: env.difficulty,
    };
    const at = { blockHash: hash, number: env.number, timestamp: env.timestamp, baseFee: block.baseFee };
    return {
      ...headerJson(header, hash),
      calls: run.calls.map((c, index) => callJson(c, { ...at, index })),
      size: quantityToHex(blockSize(headerBytes, encodedTxs, withdrawals)),
      transactions: this.job.returnFullTransactions
        ? run.calls.map((c, index) => transactionJson(c.tx, c.hash, fork.chainId, { ...at, index }))
        : run.calls.map((c) => toHex(c.hash)),
      uncles: [],
      ...(block.withdrawals !== null && {
        withdrawals: block.withdrawals.map((w) => ({
          index: quantityToHex(w.index),
          validatorIndex: quantityToHex(w.validatorIndex),
          address: toHex(addressBytes(w.address)),
          amount: quantityToHex(w.amount),
        })),
      }),
    };
  }

  /** BLOCKHASH: a simulated block's hash, or a canonical one at or below the base. */
  private blockHash(number: bigint): bigint {
    if (number > this.base.number) return this.hashes.get(number) ?? 0n;
    const hash = this.canonical.canonicalHash(number);
    return hash === null ? 0n : bytesToBigint(hash);
  }

  /**
   * A block's state overrides, in address order as geth applies them; the block's precompiles by
   * address when an override moved or replaced one (null: as the fork has them).
   */
  private applyOverrides(
    overrides: StateOverrides,
    precompiles: ReadonlyMap<number, Precompile>,
  ): Map<bigint, Precompile> | null {
    const world = this.world;
    // Refusals first, before any account is written.
    const active = precompilesUnder(overrides, precompiles);
    const sorted = [...overrides].sort((a, b) =>
      Buffer.compare(Buffer.from(a.address), Buffer.from(b.address)),
    );
    for (const { address, override } of sorted) {
      const at = bytesToBigint(address);
      const account = world.account(at);
      if (override.nonce !== undefined) world.setNonce(account, override.nonce);
      if (override.code !== undefined) world.setCode(account, override.code);
      if (override.balance !== undefined) world.setBalance(account, override.balance);
      // geth makes the account only by writing one of its fields.
      const writes =
        override.nonce !== undefined ||
        override.code !== undefined ||
        override.balance !== undefined ||
        override.state !== undefined ||
        override.stateDiff !== undefined;
      if (writes && !account.exists) world.createAccount(account);
      if (override.state) world.clearStorage(account);
      for (const [slot, value] of [...(override.state ?? []), ...(override.stateDiff ?? [])])
        world.setStorage(account, bytesToBigint(slot), bytesToBigint(value));
    }
    // As if made by a transaction just before the block's: committed, empty accounts kept.
    world.endTransaction(false);
    return active;
  }
}

/**
 * The call as the transaction geth makes of it: a fee-market transaction unless it names a gas
 * price (legacy), blobs or authorizations; unnamed fees zero.
 */
function simulatedTransaction(
  call: CallRequest,
  sender: bigint,
  nonce: bigint,
  gas: bigint,
  london: boolean,
): Transaction {
  let type = 2;
  if (call.authorizationList !== undefined) type = 4;
  else if (call.blobVersionedHashes !== undefined) type = 3;
  if (call.gasPrice !== undefined || !london) type = 0;
  return {
    type,
    sender,
    nonce,
    gasLimit: gas,
    gasPrice: call.gasPrice ?? 0n,
    maxFeePerGas: call.maxFeePerGas ?? 0n,
    maxPriorityFeePerGas: call.maxPriorityFeePerGas ?? 0n,
    to: call.to ? bytesToBigint(call.to) : null,
    value: call.value ?? 0n,
    data: call.data ?? new Uint8Array(0),
    accessList: (call.accessList ?? []).map((e) => ({
      address: bytesToBigint(e.address),
      storageKeys: e.storageKeys.map((k) => bytesToBigint(k)),
    })),
    blobVersionedHashes: (call.blobVersionedHashes ?? []).map((h) => bytesToBigint(h)),
    maxFeePerBlobGas: call.maxFeePerBlobGas ?? 0n,
    authorizationList: (call.authorizationList ?? []).map((a) => ({
      chainId: a.chainId,
      address: bytesToBigint(a.address),
      nonce: a.nonce,
      yParity: a.yParity,
      r: a.r,
      s: a.s,
    })),
  };
}

const FAULTS: Record<string, SimulationFault> = {
  NONCE_MISMATCH_TOO_LOW: 'nonce too low',
  NONCE_MISMATCH_TOO_HIGH: 'nonce too high',
  INSUFFICIENT_MAX_FEE_PER_GAS: 'fee cap below base fee',
  PRIORITY_GREATER_THAN_MAX_FEE_PER_GAS: 'invalid fee fields',
  INTRINSIC_GAS_TOO_LOW: 'intrinsic gas',
  INTRINSIC_GAS_BELOW_FLOOR_GAS_COST: 'intrinsic gas',
  INSUFFICIENT_ACCOUNT_FUNDS: 'insufficient funds',
  INITCODE_SIZE_EXCEEDED: 'init code too large',
  SENDER_NOT_EOA: 'sender not an account',
};

/** A call the block cannot include, as the request's error (geth words it "err: … (supplied gas N)"). */
function rejection(e: InvalidTransaction, gas: bigint): SimulationRejected {
  return new SimulationRejected(
    FAULTS[e.code] ?? 'invalid transaction',
    `err: ${e.message} (supplied gas ${gas})`,
  );
}

/** geth's code for a call that failed in the EVM (not a revert). */
const VM_ERROR = -32015;
/** Error(string)'s selector: a revert's reason is shown when it is one. */
const ERROR_SELECTOR = '08c379a0';

function callJson(
  call: SimulatedCall,
  at: { blockHash: Uint8Array; number: bigint; timestamp: bigint; index: number },
): Record<string, unknown> {
  const { result } = call;
  const out: Record<string, unknown> = {
    // geth's ExecutionResult.Return: nothing for a failed call (a revert's data is in its error).
    returnData: result.success ? toHex(result.output) : '0x',
    logs: call.logs.map((log) => ({
      address: toHex(addressBytes(log.address)),
      topics: log.topics.map((t) => toHex(wordBytes(t))),
      data: toHex(log.data),
      blockNumber: quantityToHex(at.number),
      transactionHash: toHex(call.hash),
      transactionIndex: quantityToHex(at.index),
      blockHash: toHex(at.blockHash),
      blockTimestamp: quantityToHex(at.timestamp),
      logIndex: quantityToHex(log.index),
      removed: false,
    })),
    gasUsed: quantityToHex(result.gasUsed),
    maxUsedGas: quantityToHex(call.maxUsedGas),
    status: result.success ? '0x1' : '0x0',
  };
  if (!result.success) {
    if (result.error === 'revert') {
      out.error = { message: revertMessage(result.output), code: 3, data: toHex(result.output) };
    } else {
      out.error = { message: result.error ?? 'execution failed', code: VM_ERROR };
    }
  }
  return out;
}

/** "execution reverted", with the reason when the output is an Error(string). */
function revertMessage(output: Uint8Array): string {
  const hex = Buffer.from(output).toString('hex');
  if (!hex.startsWith(ERROR_SELECTOR) || output.length < 68) return 'execution reverted';
  const length = Number(BigInt(`0x${hex.slice(8 + 64, 8 + 128)}`));
  const text = Buffer.from(output.subarray(68, 68 + length)).toString('utf8');
  return `execution reverted: ${text}`;
}

function bigMin(a: bigint, b: bigint): bigint {
  return a < b ? a : b;
}
