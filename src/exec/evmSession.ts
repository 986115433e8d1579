import type { Block, BlockHeader } from '@ethereumjs/block';
import type { Common } from '@ethereumjs/common';
import type { TypedTransaction } from '@ethereumjs/tx';
import { Address, toChecksumAddress } from '@ethereumjs/util';
import type { ChainReader } from '../chain/reader.ts';
import type { BlockOverrides, CallRequest, StateOverrides, TraceTypes } from '../core/call.ts';
import { ChainRewound } from '../core/errors.ts';
import type { BlockEnv } from '../evm/env.ts';
import type { ForkRules } from '../evm/forks.ts';
import type { EvmTracer, FrameEnd, StepTracer } from '../evm/hooks.ts';
import { createAddress } from '../evm/interpreter.ts';
import type { Precompile } from '../evm/precompiles/index.ts';
import { type StateReader, WorldState } from '../evm/state.ts';
import {
  type AccessListEntry,
  applyTransaction,
  blobBaseFee,
  floorDataGas,
  InvalidTransaction,
  intrinsicGas,
  type Transaction,
  type TransactionResult,
} from '../evm/transaction.ts';
import { addressBytes, bytesToBigint } from '../evm/words.ts';
import type { SyncStateReads } from '../store/types.ts';
import { CallValidationError } from './callValidation.ts';
import { blockEnvironment, cachedEnvironment, environmentBlock, simulationCommon } from './environment.ts';
import { BlockReads, blockEnv, evmFork, evmTransaction } from './evmEngine.ts';
import { beforeTransactions } from './evmReplay.ts';
import type { EvmFork } from './evmRules.ts';
import { evmStateAt, type FetchingStateReader, untilComplete, WrittenSlots } from './fetchingState.ts';
import { callMessage, checkGethFees } from './message.ts';
import { precompilesUnder } from './precompileOverrides.ts';
import {
  type CallFailure,
  type CallTrace,
  checkSameFork,
  type OpListener,
  type SimulatedCall,
  type StateAccess,
} from './sessionTypes.ts';
import {
  AccessRecorder,
  adaptTracer,
  allEvmTracers,
  changedKeys,
  StateDiffRecorder,
} from './tracing/evmAdapter.ts';
import { EvmVmTracer } from './tracing/evmVmTrace.ts';
import type { ExecutionTracer } from './tracing/frames.ts';
import { ParityCallTracer } from './tracing/parity.ts';
import { buildStateDiff } from './tracing/stateDiff.ts';
import {
  bigMax,
  blobGas,
  callTransaction,
  effectivePrice,
  firstLine,
  floorGas,
  txType,
} from './transaction.ts';
import { Watchdog } from './watchdog.ts';

const ZERO_ADDRESS = new Uint8Array(20);
const EMPTY_DATA = new Uint8Array(0);

/** Makes a call's tracer for one run, on the state and rules it runs on (debug_traceCall). */
export type CallTracerMaker = (world: WorldState, rules: ForkRules) => EvmTracer | null;

/**
 * trace_call / trace_callMany / trace_rawTransaction on the EVM of src/evm: calls simulated in order
 * on the state after one block, with Reth's pure simulation (no fees, no nonce check; the sender's
 * nonce moves), answering what the ethereumjs path's `CallSession` answered (now the tests' oracle,
 * test/support/ethereumjsOracle/session.ts). The call is
 * checked, and built as a transaction, by the same code as there, so a call refused is refused in the
 * same words; only the execution differs.
 */
export class EvmCallSession {
  private diffs: StateDiffRecorder | null = null;
  private overrides: StateOverrides | null = null;
  /** The precompiles by address when an override moved or replaced one (precompileOverrides.ts). */
  private precompilesAt: ReadonlyMap<bigint, Precompile> | null = null;
  private recorder: AccessRecorder | null = null;
  private lastWrites: string[] = [];
  private watchdog: EvmTracer | null = null;
  /** Upstream mode: the slots each call writes, for the keys its stateDiff may read. */
  private written: WrittenSlots | null = null;

  private constructor(
    private readonly chain: ChainReader,
    readonly header: BlockHeader,
    /** The header the calls see: the block's, or as the block overrides make it. */
    private envHeader: BlockHeader,
    private readonly fork: EvmFork,
    private readonly world: WorldState,
    private readonly reader: StateReader,
    /** Upstream mode: what the calls reach that is not fetched yet is fetched, and the call runs again. */
    private readonly fetching: FetchingStateReader | null,
    private env: BlockEnv,
    private readonly gasCap: bigint,
    /** The environment block CallSession runs the calls in when block overrides make one. */
    private overriddenBlock: Block | null,
    /** Where BLOCKHASH reads the chain's hashes. */
    private readonly hashes: BlockHashes,
  ) {
    this.common = simulationCommon(chain.commonAt(header.number, header.timestamp));
  }

  /** The fork's ethereumjs rules, which build the call's transaction (its checks and words). */
  private readonly common: Common;

  /**
   * A session on the state after the block `blockHash` names or, with `before`, on the state
   * between its transactions: its parent's state with the block's first `before` transactions
   * applied as the block applied them (debug_traceCallMany's and eth_callMany's transactionIndex).
   * The calls see the block's own environment either way.
   */
  static async openAt(
    chain: ChainReader,
    blockHash: Uint8Array,
    opts: {
      gasCap: bigint;
      stateOverrides?: StateOverrides;
      blockOverrides?: BlockOverrides;
      /** Stop the geth-dialect calls past this performance.now() time (src/exec/watchdog.ts). */
      deadline?: number;
      /** Run the calls after only this many of the block's transactions. */
      before?: number;
    },
  ): Promise<EvmCallSession> {
    const header = await chain.header(blockHash);
    if (!header) throw ChainRewound.during();
    const common = chain.commonAt(header.number, header.timestamp);
    const fork = evmFork(chain, common);
    const before = opts.before;
    const state =
      before === undefined
        ? evmStateAt(
            chain.store,
            { number: header.number, hash: blockHash },
            fork,
            BlockReads.of(chain.store, blockHash),
          )
        : evmStateAt(
            chain.store,
            { number: header.number - 1n, hash: header.parentHash },
            fork,
            BlockReads.of(chain.store, header.parentHash),
          );
    const { reader, fetching } = state;
    const world = new WorldState(reader);
    if (before !== undefined) {
      const block = await chain.block(blockHash);
      if (!block) throw ChainRewound.during();
      await replayFirst(
        world,
        fetching,
        block,
        common,
        fork,
        blockEnv(header, fork.chainId, state.hashes),
        before,
      );
    }
    const built = environmentOf(chain, header, common, fork, state.hashes, opts.blockOverrides);
    const session = new EvmCallSession(
      chain,
      header,
      built.envHeader,
      fork,
      world,
      reader,
      fetching,
      built.env,
      opts.gasCap,
      built.overriddenBlock,
      state.hashes,
    );
    if (opts.deadline !== undefined) session.watchdog = { step: new Watchdog(opts.deadline) };
    if (opts.stateOverrides) {
      const overrides = opts.stateOverrides;
      session.overrides = overrides;
      session.precompilesAt = precompilesUnder(overrides, fork.precompiles);
      await untilComplete(
        fetching,
        () => applyStateOverrides(world, overrides),
        () => world.abortTransaction(),
      );
    }
    return session;
  }

  /**
   * The environment the next calls see, with the state kept: the block's, moved on `bundle` blocks
   * (each bundle of debug_traceCallMany and eth_callMany runs a block later, `seconds` later per
   * bundle), and `overrides` on top.
   */
  moveTo(bundle: number, seconds: bigint, overrides: BlockOverrides | undefined): void {
    const moved: BlockOverrides = {
      number: this.header.number + BigInt(bundle),
      time: this.header.timestamp + BigInt(bundle) * seconds,
      ...overrides,
    };
    const common = this.chain.commonAt(this.header.number, this.header.timestamp);
    const built = environmentOf(this.chain, this.header, common, this.fork, this.hashes, moved);
    this.envHeader = built.envHeader;
    this.env = built.env;
    this.overriddenBlock = built.overriddenBlock;
    this.environments.clear();
  }

  /** The coinbase the calls see now (block overrides included). */
  get coinbase(): Uint8Array {
    return this.envHeader.coinbase.bytes;
  }

  /**
   * A signed transaction applied as a block would apply it (nonce, fees and the fee cap checked, the
   * fees paid to the coinbase): eth_callBundle. `tracer` watches it.
   */
  async apply(tx: TypedTransaction, tracer: EvmTracer | null): Promise<TransactionResult> {
    return untilComplete(this.fetching, () =>
      applyTransaction(
        this.world,
        this.env,
        this.fork.rules,
        this.fork.precompiles,
        evmTransaction(tx),
        tracer,
        this.relocated(),
      ),
    );
  }

  /** An account's balance as the session's state holds it now. */
  async balance(address: Uint8Array): Promise<bigint> {
    return (await this.account(address)).balance;
  }

  close(): void {}

  /** The base fee the session's calls see; undefined before London. */
  get baseFee(): bigint | undefined {
    return this.envHeader.baseFeePerGas;
  }

  /** The fork's precompiles, by address (createAccessList leaves them out of its list). */
  precompileAddresses(): Uint8Array[] {
    return [...this.fork.precompiles.keys()].map((address) => addressBytes(BigInt(address)));
  }

  private readonly environments = new Map<string, BlockEnv>();

  /**
   * The environment a call runs in: the session's, or with a zero base fee (a call that pays no
   * price sees BASEFEE 0, as Reth and geth do) and/or a zero blob base fee (a blob call naming no
   * blob fee cap, as geth).
   */
  private environment(zeroBaseFee: boolean, zeroBlobBaseFee: boolean): BlockEnv {
    if (!zeroBaseFee && !zeroBlobBaseFee) return this.env;
    const key = `${zeroBaseFee}/${zeroBlobBaseFee}`;
    let env = this.environments.get(key);
    if (!env) {
      env = {
        ...this.env,
        ...(zeroBaseFee ? { baseFee: 0n } : {}),
        ...(zeroBlobBaseFee && this.envHeader.excessBlobGas !== undefined ? { blobBaseFee: 0n } : {}),
      };
      this.environments.set(key, env);
    }
    return env;
  }

  /** The environment of `call` (see `environment`). */
  private callEnvironment(call: CallRequest, price: bigint): BlockEnv {
    const baseFee = this.envHeader.baseFeePerGas;
    return this.environment(
      price === 0n && baseFee !== undefined && baseFee !== 0n,
      call.blobVersionedHashes !== undefined && !call.maxFeePerBlobGas,
    );
  }

  /**
   * A blob fee cap below the blob base fee, refused before the run in the words CallSession's
   * ethereumjs run refuses it (naming the VM's fork, the environment block and the transaction).
   */
  private checkBlobFee(tx: TypedTransaction, env: BlockEnv, price: bigint, index: number): void {
    if (!('maxFeePerBlobGas' in tx) || !this.fork.rules.blobs) return;
    const blobFee = env.blobBaseFee ?? blobBaseFee(this.fork.rules, env.excessBlobGas);
    if (tx.maxFeePerBlobGas >= blobFee) return;
    const baseFee = this.envHeader.baseFeePerGas;
    let block = this.overriddenBlock ?? cachedEnvironment(this.header, this.common);
    if (price === 0n && baseFee !== undefined && baseFee !== 0n)
      block = environmentBlock({ ...block.header.toJSON(), baseFeePerGas: 0n }, this.common);
    const message =
      `Transaction's maxFeePerBlobGas ${tx.maxFeePerBlobGas}) is less than block blobGasPrice (${blobFee}). ` +
      `(vm hf=${this.common.hardfork()} -> ${block.errorStr()} -> ${tx.errorStr()})`;
    throw new CallValidationError(index, firstLine(message));
  }

  /** The account as the session's state holds it now (overrides and earlier calls included). */
  async account(address: Uint8Array): Promise<{ balance: bigint; nonce: bigint; code: Uint8Array }> {
    return untilComplete(this.fetching, () => {
      const account = this.world.account(bytesToBigint(address));
      return { balance: account.balance, nonce: account.nonce, code: account.code(this.reader) };
    });
  }

  /**
   * One call under geth's rules (eth_call, eth_estimateGas): as CallSession.simulate with the geth
   * dialect (its fee checks, the sender pays for its gas). `isolated` runs it on a world of its own
   * (the block's state and the overrides), so the session's state stays as it was.
   */
  async simulate(
    request: CallRequest,
    index: number,
    tracer: CallTracerMaker | null,
    options: { dialect: 'geth'; isolated?: boolean; onOp?: OpListener },
  ): Promise<SimulatedCall> {
    return untilComplete(this.fetching, () =>
      this.runGeth(options.isolated ? this.freshWorld() : this.world, request, index, options.onOp, tracer),
    );
  }

  /** The transaction option that hands the calls the precompiles the overrides left. */
  private relocated(): { precompilesAt?: ReadonlyMap<bigint, Precompile> } {
    return this.precompilesAt ? { precompilesAt: this.precompilesAt } : {};
  }

  private freshWorld(): WorldState {
    const world = new WorldState(this.reader);
    if (this.overrides) applyStateOverrides(world, this.overrides);
    return world;
  }

  private runGeth(
    world: WorldState,
    request: CallRequest,
    index: number,
    onOp: OpListener | undefined,
    makeTracer: CallTracerMaker | null = null,
  ): SimulatedCall {
    const baseFee = this.envHeader.baseFeePerGas;
    const call = callMessage(request, baseFee, this.gasCap, 'geth');
    checkGethFees(call, baseFee);
    const callerBytes = call.from ?? ZERO_ADDRESS;
    const caller = new Address(callerBytes);
    const price = effectivePrice(call, baseFee, index);
    const env = this.callEnvironment(call, price);
    const sender = world.account(bytesToBigint(callerBytes));
    const built = this.build(call, caller, sender.nonce, price, index);
    const value = call.value ?? 0n;
    // geth checks the funds (buyGas) before the intrinsic gas; so does CallSession, and so here.
    const want = call.gas * built.feeCap + value + built.blobFeeCap;
    if (sender.balance < want) {
      throw new CallValidationError(
        index,
        `insufficient funds for gas * price + value: address ${toChecksumAddress(caller.toString())} ` +
          `have ${sender.balance} want ${want}`,
        'insufficient funds',
      );
    }
    const intrinsic = bigMax(built.intrinsic, built.floor);
    if (call.gas < intrinsic) {
      throw new CallValidationError(
        index,
        `intrinsic gas too low: have ${call.gas}, want ${intrinsic}`,
        'intrinsic gas',
      );
    }
    if (sender.balance < value) {
      // Only with no price at all: the sender cannot pay the value (CallSession's unaffordable call).
      world.setNonce(sender, sender.nonce + 1n);
      world.endTransaction(this.fork.rules.emptyIsAbsent);
      return { output: new Uint8Array(), gasUsed: 0n, gasSpent: null, failed: true };
    }
    if (built.ethereumjs) this.checkBlobFee(built.ethereumjs, env, price, index);
    // A tracer of the call (debug_traceCall), made for this run as it starts.
    const extra = makeTracer ? makeTracer(world, this.fork.rules) : null;
    let end: FrameEnd | null = null;
    const top: EvmTracer = {
      frameEnd: (e) => {
        if (e.depth === 0) end = e;
      },
      ...(onOp ? { step: opSteps(onOp) } : {}),
    };
    let result: TransactionResult;
    try {
      const tracer = allEvmTracers([top, this.watchdog, extra]);
      result = applyTransaction(world, env, this.fork.rules, this.fork.precompiles, built.tx, tracer, {
        call: true,
        ...this.relocated(),
      });
    } catch (e) {
      if (e instanceof InvalidTransaction) throw new CallValidationError(index, e.message);
      throw e;
    }
    const last = end as FrameEnd | null;
    const failure: CallFailure | undefined =
      last?.error && !result.success
        ? {
            kind: last.error,
            ...(last.failedOp ? { failedOp: last.failedOp } : {}),
            ...(last.precompileError === undefined ? {} : { precompileError: last.precompileError }),
          }
        : undefined;
    return {
      // A copy: the EVM's output may be its shared empty array, and an eth_call answer is transferred
      // out of the worker, which would detach that array for every later run.
      output: result.output.slice(),
      // EIP-7623's floor bounds the total, not the intrinsic part (geth's peak gas).
      gasUsed: bigMax(result.gasUsedBeforeRefund, built.floor),
      gasSpent: result.gasUsed,
      failed: !result.success,
      ...(failure ? { failure } : {}),
    };
  }

  /**
   * The call as the EVM's transaction, with its intrinsic gas, its EIP-7623 floor and the fee cap
   * its funds are checked against. A plain call (legacy, EIP-2930 or EIP-1559, to an address, fields
   * in range) is built here directly: ethereumjs's createTx, whose checks such a call always
   * passes, cost about a quarter of an eth_call. Any other call is built by callTransaction, so that
   * its refusals keep their words.
   */
  private build(
    call: CallRequest & { gas: bigint },
    caller: Address,
    nonce: bigint,
    price: bigint,
    index: number,
  ): BuiltCall {
    const baseFee = this.envHeader.baseFeePerGas;
    const rules = this.fork.rules;
    const direct = plainCall(call, caller, nonce, price, baseFee, rules);
    if (direct) {
      return {
        tx: direct,
        ethereumjs: null,
        intrinsic: intrinsicGas(rules, direct),
        floor: floorDataGas(rules, direct),
        feeCap: direct.type >= 2 ? direct.maxFeePerGas : direct.gasPrice,
        blobFeeCap: 0n,
      };
    }
    const tx = callTransaction(
      call,
      { caller, nonce, gasLimit: call.gas, price, index },
      this.common,
      baseFee,
    );
    return {
      tx: evmTransaction(tx),
      ethereumjs: tx,
      intrinsic: tx.getIntrinsicGas(),
      floor: floorGas(tx),
      feeCap: 'maxFeePerGas' in tx ? tx.maxFeePerGas : tx.gasPrice,
      blobFeeCap: 'maxFeePerBlobGas' in tx ? tx.maxFeePerBlobGas * blobGas(tx, this.common) : 0n,
    };
  }

  /** From now on, notes what each call reads and changes, for `access` (speculative execution). */
  recordAccess(): void {
    this.recorder = new AccessRecorder();
    if (!this.diffs) {
      this.diffs = new StateDiffRecorder(this.world, this.reader);
      this.diffs.skip();
    }
  }

  /** CallSession's position for `access`; here each `access` covers the call traced last. */
  mark(): number {
    return 0;
  }

  /** What the last call read and changed (see CallSession.access). */
  access(_mark: number): StateAccess {
    return { reads: this.recorder?.takeReads() ?? [], writes: this.lastWrites };
  }

  /** Simulates one call and traces what `types` asks for. */
  async trace(request: CallRequest, index: number, types: TraceTypes): Promise<CallTrace> {
    if (types.stateDiff && !this.diffs) {
      this.diffs = new StateDiffRecorder(this.world, this.reader);
      this.diffs.skip();
    }
    if (this.fetching && this.diffs && !this.written) this.written = new WrittenSlots();
    const written = this.written;
    const { parity, vm, output } = await untilComplete(
      this.fetching,
      () => {
        const parity = types.trace ? new ParityCallTracer() : null;
        const vm = types.vmTrace ? new EvmVmTracer(this.world, this.fork.rules) : null;
        return { parity, vm, output: this.run(request, index, parity, this.diffs, vm) };
      },
      () => {
        this.diffs?.abandon();
        this.recorder?.abandon();
        written?.clear();
      },
    );
    if (written) {
      await untilComplete(this.fetching, () => this.fetching?.prepareDiff(this.world, written.slots));
      written.clear();
    }
    // Each call's changes are taken after it: a stateDiff counts from the start of its call.
    const changes = this.diffs?.changes() ?? null;
    if (this.recorder && this.diffs && changes) this.lastWrites = changedKeys(changes, this.diffs.wiped);
    const stateDiff = types.stateDiff && changes ? buildStateDiff(changes) : null;
    return { output, trace: parity?.traces() ?? [], stateDiff, vmTrace: vm?.result() ?? null };
  }

  private run(
    request: CallRequest,
    index: number,
    parity: ParityCallTracer | null,
    diffs: StateDiffRecorder | null,
    vm: EvmVmTracer | null,
  ): Uint8Array {
    const baseFee = this.envHeader.baseFeePerGas;
    const call = callMessage(request, baseFee, this.gasCap, 'parity');
    const callerBytes = call.from ?? ZERO_ADDRESS;
    const caller = new Address(callerBytes);
    const price = effectivePrice(call, baseFee, index);
    const env = this.callEnvironment(call, price);
    const world = this.world;
    const sender = world.account(bytesToBigint(callerBytes));
    this.recorder?.noteAccount(sender.address);
    const built = this.build(call, caller, sender.nonce, price, index);
    const intrinsic = bigMax(built.intrinsic, built.floor);
    if (call.gas < intrinsic) {
      throw new CallValidationError(
        index,
        `intrinsic gas too low: have ${call.gas}, want ${intrinsic}`,
        'intrinsic gas',
      );
    }
    const value = call.value ?? 0n;
    if (sender.balance < value) {
      this.unaffordable(call, callerBytes, call.gas - intrinsic, parity, vm);
      return new Uint8Array();
    }
    if (built.ethereumjs) this.checkBlobFee(built.ethereumjs, env, price, index);
    const tracer = allEvmTracers([
      parity && adaptTracer(parity, world),
      diffs?.tracer ?? null,
      this.recorder?.tracer ?? null,
      this.written?.tracer ?? null,
      vm?.tracer ?? null,
    ]);
    let result: TransactionResult;
    try {
      result = applyTransaction(world, env, this.fork.rules, this.fork.precompiles, built.tx, tracer, {
        call: true,
        fees: false,
        ...this.relocated(),
      });
    } catch (e) {
      if (e instanceof InvalidTransaction) throw new CallValidationError(index, e.message);
      throw e;
    }
    return result.output;
  }

  /** A value the sender cannot afford fails the top frame; only the nonce moves (Reth). */
  private unaffordable(
    call: CallRequest,
    caller: Uint8Array,
    gas: bigint,
    tracer: ExecutionTracer | null,
    vm: EvmVmTracer | null,
  ): void {
    const world = this.world;
    const sender = world.account(bytesToBigint(caller));
    const creation = call.to === undefined || call.to === null;
    // The vmTrace of a frame never entered: its code for a creation, no ops.
    vm?.frameStart({ kind: creation ? 'create' : 'call', input: call.data ?? new Uint8Array(), gas });
    vm?.frameEnd({ error: 'insufficient balance', gasUsed: 0n });
    tracer?.frameStart({
      kind: creation ? 'create' : 'call',
      depth: 0,
      from: caller,
      to: creation ? null : (call.to as Uint8Array),
      value: call.value ?? 0n,
      gas,
      input: call.data ?? new Uint8Array(),
      precompile: false,
    });
    tracer?.frameEnd({
      gasUsed: 0n,
      output: new Uint8Array(),
      error: 'insufficient balance',
      createdAddress: creation ? addressBytes(createAddress(sender.address, sender.nonce)) : null,
    });
    world.setNonce(sender, sender.nonce + 1n);
    world.endTransaction(this.fork.rules.emptyIsAbsent);
  }
}

type BlockHashes = Pick<SyncStateReads, 'canonicalHash'>;

/**
 * The environment calls on `header` see with `overrides` (checked and built by ethereumjs's block,
 * src/exec/environment.ts, in its words). BLOCKHASH of a block past `header` (a number moved on by
 * an override) reads the chain's hash, or zero where the chain has none yet (as geth answers for a
 * block it lacks), and a `blockHash` override answers for the numbers it names.
 */
function environmentOf(
  chain: ChainReader,
  header: BlockHeader,
  common: Common,
  fork: EvmFork,
  hashes: BlockHashes,
  overrides: BlockOverrides | undefined,
): { envHeader: BlockHeader; env: BlockEnv; overriddenBlock: Block | null } {
  let envHeader = header;
  let overriddenBlock: Block | null = null;
  if (overrides) {
    if (overrides.number !== undefined || overrides.time !== undefined) {
      checkSameFork(
        chain,
        header,
        simulationCommon(common),
        overrides.number ?? header.number,
        overrides.time ?? header.timestamp,
      );
    }
    overriddenBlock = blockEnvironment(header, simulationCommon(common), overrides);
    envHeader = overriddenBlock.header;
  }
  const env = blockEnv(envHeader, fork.chainId, hashes);
  // As CallSession: the override binds only where the block has a blob base fee (Cancun on).
  if (overrides?.blobBaseFee !== undefined && envHeader.excessBlobGas !== undefined)
    env.blobBaseFee = overrides.blobBaseFee;
  const named = overrides?.blockHashes;
  if (named !== undefined || envHeader.number > header.number) {
    const stored = env.blockHash;
    const byNumber = new Map((named ?? []).map(([number, hash]) => [number, bytesToBigint(hash)]));
    env.blockHash = (number) => {
      const given = byNumber.get(number);
      if (given !== undefined) return given;
      if (number <= header.number) return stored(number);
      // A block after the state's: the chain's if it has one (as Reth reads it), else zero.
      const later = hashes.canonicalHash(number);
      return later === null ? 0n : bytesToBigint(later);
    };
  }
  return { envHeader, env, overriddenBlock };
}

/** The block's first `count` transactions applied to `world` (on its parent's state) as the block applied them. */
async function replayFirst(
  world: WorldState,
  fetching: FetchingStateReader | null,
  block: Block,
  common: Common,
  fork: EvmFork,
  env: BlockEnv,
  count: number,
): Promise<void> {
  await beforeTransactions(world, fetching, fork.rules, block.header, common);
  for (const tx of block.transactions.slice(0, count)) {
    await untilComplete(fetching, () =>
      applyTransaction(world, env, fork.rules, fork.precompiles, evmTransaction(tx), null),
    );
  }
}

/** Overrides before the first call: not part of any stateDiff (diffs start from them). */
function applyStateOverrides(world: WorldState, overrides: StateOverrides): void {
  for (const { address, override } of overrides) {
    const account = world.account(bytesToBigint(address));
    if (override.balance !== undefined) world.setBalance(account, override.balance);
    if (override.nonce !== undefined) world.setNonce(account, override.nonce);
    if (override.code !== undefined) world.setCode(account, override.code);
    // An account an override names exists afterwards, as the ethereumjs overlay's write makes it.
    if (!account.exists) world.createAccount(account);
    // `state` replaces the whole storage; CallSession writes its slots, then stateDiff's.
    if (override.state) world.clearStorage(account);
    for (const [slot, value] of [...(override.state ?? []), ...(override.stateDiff ?? [])]) {
      world.setStorage(account, bytesToBigint(slot), bytesToBigint(value));
    }
  }
  // Committed as they are: an empty account an override makes lives until a call touches it.
  world.endTransaction(false);
}

/** An OpListener as the interpreter's step tracer. */
function opSteps(onOp: OpListener): StepTracer {
  return {
    step: (view) => onOp(view.opcode, view.address, view.stack, view.sp),
  };
}

interface BuiltCall {
  tx: Transaction;
  /** The ethereumjs transaction it was built as (null for a plain call): blob fee refusals name it. */
  ethereumjs: TypedTransaction | null;
  intrinsic: bigint;
  floor: bigint;
  feeCap: bigint;
  /** What the blobs may cost at most (the funds check counts it). */
  blobFeeCap: bigint;
}

const MAX_UINT64 = (1n << 64n) - 1n;
const MAX_UINT256 = (1n << 256n) - 1n;

/**
 * The transaction callTransaction would build, or null when the call is not one whose every
 * field ethereumjs's createTx is sure to accept: a creation (its initcode limit), a blob or 7702
 * call, a type the fork lacks, an access list entry of the wrong length, or a fee, value or gas
 * product out of range (each its own refusal there).
 */
function plainCall(
  call: CallRequest & { gas: bigint },
  caller: Address,
  nonce: bigint,
  price: bigint,
  baseFee: bigint | undefined,
  rules: ForkRules,
): Transaction | null {
  const to = call.to;
  if (to === undefined || to === null) return null;
  const type = txType(call);
  if (type === 1 ? !rules.accessLists : type === 2 ? baseFee === undefined : type !== 0) return null;
  const gas = call.gas;
  const value = call.value ?? 0n;
  if (gas > MAX_UINT64 || nonce >= MAX_UINT64 || value > MAX_UINT256) return null;
  let gasPrice = 0n;
  let maxFeePerGas = 0n;
  let maxPriorityFeePerGas = 0n;
  if (type >= 2) {
    maxFeePerGas = call.maxFeePerGas ?? price;
    maxPriorityFeePerGas = call.maxPriorityFeePerGas ?? (price === 0n ? 0n : price - (baseFee ?? 0n));
    if (maxPriorityFeePerGas < 0n || maxPriorityFeePerGas > maxFeePerGas || gas * maxFeePerGas > MAX_UINT256)
      return null;
  } else {
    gasPrice = price;
    if (gas * gasPrice > MAX_UINT256) return null;
  }
  const accessList: AccessListEntry[] = [];
  if (type >= 1) {
    for (const entry of call.accessList ?? []) {
      if (entry.address.length !== 20 || entry.storageKeys.some((k) => k.length !== 32)) return null;
      accessList.push({
        address: bytesToBigint(entry.address),
        storageKeys: entry.storageKeys.map((k) => bytesToBigint(k)),
      });
    }
  }
  return {
    type,
    sender: bytesToBigint(caller.bytes),
    nonce,
    gasLimit: gas,
    gasPrice,
    maxFeePerGas,
    maxPriorityFeePerGas,
    to: bytesToBigint(to),
    value,
    data: call.data ?? EMPTY_DATA,
    accessList,
    blobVersionedHashes: [],
    maxFeePerBlobGas: 0n,
    authorizationList: [],
  };
}
