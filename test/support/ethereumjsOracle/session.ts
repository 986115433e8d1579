import type { Block, BlockHeader } from '@ethereumjs/block';
import { type EVM, getActivePrecompiles, type InterpreterStep } from '@ethereumjs/evm';
import {
  Account,
  Address,
  bigIntToBytes,
  bytesToBigInt,
  equalsBytes,
  generateAddress,
  KECCAK256_NULL,
  setLengthLeft,
  toChecksumAddress,
} from '@ethereumjs/util';
import { type RunTxResult, runTx, type VM } from '@ethereumjs/vm';
import type { ChainReader } from '../../../src/chain/reader.ts';
import type { BlockOverrides, CallRequest, StateOverrides, TraceTypes } from '../../../src/core/call.ts';
import { NotFound } from '../../../src/core/errors.ts';
import { CallValidationError } from '../../../src/exec/callValidation.ts';
import { callMessage, checkGethFees, type Dialect } from '../../../src/exec/message.ts';
import { OutputLimitExceeded } from '../../../src/exec/responseLimit.ts';
import {
  type CallFailure,
  checkSameFork,
  type OpListener,
  type SimulatedCall,
  type StateAccess,
} from '../../../src/exec/sessionTypes.ts';
import {
  bigMax,
  blobGas,
  callTransaction,
  effectivePrice,
  firstLine,
  floorGas,
} from '../../../src/exec/transaction.ts';
import { StoreInconsistentError } from '../../../src/store/errors.ts';
import { allOf, type ExecutionTracer, failedOpOf, normaliseError, type TraceHooks } from './hooks.ts';
import {
  acquireMachine,
  blockEnvironment,
  cachedEnvironment,
  environmentBlock,
  type Machine,
  releaseMachine,
  setBlobBaseFee,
  simulationCommon,
} from './machine.ts';
import { OverlayStateManager, stateAtBlock } from './overlayState.ts';
import { precompileFailure } from './precompileFailure.ts';
import { ParityTracers, type ParityTraces } from './traceTypes.ts';

/**
 * How the call failed in ethereumjs, in the EVM's own terms. A call to a precompile that failed is
 * out of gas or a failed precompile, whatever ethereumjs named it (it names a bad BN254 point a
 * revert, and an operand past EIP-7823's bound out of gas).
 */
function ethereumjsFailure(result: RunTxResult): CallFailure | undefined {
  const error = result.execResult.exceptionError;
  if (!error) return undefined;
  const precompile = precompileFailure(error);
  if (precompile)
    return precompile.outOfGas
      ? { kind: 'out of gas' }
      : { kind: 'precompile failed', precompileError: precompile.text };
  const kind = normaliseError(error.error);
  const failedOp = failedOpOf(kind, result.execResult.runState);
  return failedOp ? { kind, failedOp } : { kind };
}

/** One call's outcome in the shape trace_callMany serves (its vmTrace a tree of objects here). */
export interface CallTrace extends ParityTraces {
  output: Uint8Array;
}

/** How `simulate` runs one call; the defaults are trace_call's (Reth's) semantics. */
export interface SimulateOptions {
  /**
   * Whose rules (src/exec/message.ts); `parity` by default. Under `geth` the sender must also afford
   * gas × fee cap + value (+ blob gas × blob fee cap) or the call fails validation; gas × price is
   * debited up front (so BALANCE sees it), unused gas is refunded and the coinbase earns the tip.
   */
  dialect?: Dialect;
  /** Roll the call back afterwards, so the session can run variants of it (estimates, access lists). */
  isolated?: boolean;
  /** Sees each opcode before it runs; while set, the EVM builds a step object per opcode. */
  onOp?: OpListener;
}

/**
 * Calls simulated in order on the state after one block, with that block's environment (number,
 * timestamp, coinbase, base fee, prevrandao, BLOCKHASH window) and no block gas limit. Pure
 * simulation as Reth does it: no nonce check, no fees debited, no refund, nothing paid to the
 * coinbase; the sender's nonce still increments. Each call sees what the previous ones left.
 */
export class CallSession {
  private constructor(
    private readonly machine: Machine,
    private readonly state: OverlayStateManager,
    private readonly block: Block,
    private readonly gasCap: bigint,
  ) {}

  static async open(
    chain: ChainReader,
    header: BlockHeader,
    opts: { gasCap: bigint; stateOverrides?: StateOverrides; blockOverrides?: BlockOverrides },
  ): Promise<CallSession> {
    const common = simulationCommon(chain.commonAt(header.number, header.timestamp));
    const env = opts.blockOverrides;
    if (env && (env.number !== undefined || env.time !== undefined)) {
      checkSameFork(chain, header, common, env.number ?? header.number, env.time ?? header.timestamp);
    }
    const state = new OverlayStateManager(
      stateAtBlock(chain.store, { number: header.number, hash: header.hash() }),
    );
    const machine = await acquireMachine(common, chain, state);
    const block = opts.blockOverrides
      ? blockEnvironment(header, common, opts.blockOverrides)
      : cachedEnvironment(header, common);
    const session = new CallSession(machine, state, block, opts.gasCap);
    if (opts.stateOverrides) await session.applyStateOverrides(opts.stateOverrides);
    return session;
  }

  /**
   * A session on the state after the block `blockHash` names, with the request's overrides. The
   * block was resolved on the main thread; if it is gone now, an evm_revert removed it meanwhile.
   */
  static async openAt(
    chain: ChainReader,
    blockHash: Uint8Array,
    opts: { gasCap: bigint; stateOverrides?: StateOverrides; blockOverrides?: BlockOverrides },
  ): Promise<{ session: CallSession; header: BlockHeader }> {
    const header = await chain.header(blockHash);
    if (!header) throw new NotFound('block not found: the chain was rewound while it was traced');
    return { session: await CallSession.open(chain, header, opts), header };
  }

  /** Hands the EVM back for the next request. */
  close(): void {
    releaseMachine(this.machine);
  }

  private get vm(): VM {
    return this.machine.vm;
  }

  /** The base fee the session's calls see (overrides included); undefined before London. */
  get baseFee(): bigint | undefined {
    return this.block.header.baseFeePerGas;
  }

  /** The EVM the session's calls run on, for tracers that listen to it (geth's debug tracers). */
  get evm(): EVM {
    return this.machine.vm.evm as EVM;
  }

  private get hooks(): TraceHooks {
    return this.machine.hooks;
  }

  /**
   * From now on, notes what each call reads, for `access` (speculative parallel execution checks it
   * against what calls run elsewhere changed).
   */
  recordAccess(): void {
    this.state.recordReads();
  }

  /** A position to pass to `access` after the calls it should cover. */
  mark(): number {
    return this.state.mark();
  }

  /** The state keys read (since the last `access`) and changed (since `mark`); see `accessKeys`. */
  access(mark: number): StateAccess {
    return { reads: this.state.takeReads(), writes: this.state.changedKeysSince(mark) };
  }

  /** Simulates one call and traces what `types` asks for. */
  async trace(call: CallRequest, index: number, types: TraceTypes): Promise<CallTrace> {
    const tracers = new ParityTracers(types, this.vm.evm as EVM, this.state);
    let outcome: SimulatedCall;
    try {
      outcome = await this.simulate(call, index, allOf(tracers.tracers()));
    } finally {
      tracers.detach();
    }
    return { output: outcome.output, ...(await tracers.finish()) };
  }

  async simulate(
    call: CallRequest,
    index: number,
    tracer: ExecutionTracer | null,
    options: SimulateOptions = {},
  ): Promise<SimulatedCall> {
    if (!options.isolated) return this.run(call, index, tracer, options);
    await this.state.checkpoint();
    try {
      return await this.run(call, index, tracer, options);
    } finally {
      await this.state.revert();
    }
  }

  /** The fork's precompiles, by address (createAccessList leaves them out of its list). */
  precompileAddresses(): Uint8Array[] {
    return [...getActivePrecompiles(this.vm.common).keys()].map((key) => Buffer.from(key, 'hex'));
  }

  /** The account as the session's state holds it now (overrides and earlier calls included). */
  async account(address: Uint8Array): Promise<{ balance: bigint; nonce: bigint; code: Uint8Array }> {
    const at = new Address(address);
    const account = await this.state.getAccount(at);
    return {
      balance: account?.balance ?? 0n,
      nonce: account?.nonce ?? 0n,
      code: account ? await this.state.getCode(at) : new Uint8Array(),
    };
  }

  private async run(
    request: CallRequest,
    index: number,
    tracer: ExecutionTracer | null,
    options: SimulateOptions,
  ): Promise<SimulatedCall> {
    const baseFee = this.block.header.baseFeePerGas;
    const chargeFees = options.dialect === 'geth';
    const call = callMessage(request, baseFee, this.gasCap, options.dialect ?? 'parity');
    if (chargeFees) checkGethFees(call, baseFee);
    const caller = new Address(call.from ?? new Uint8Array(20));
    const price = effectivePrice(call, baseFee, index);
    // A call that pays nothing sees a zero base fee (BASEFEE returns 0), as Reth and geth do; likewise
    // a blob call with no blob fee cap sees a zero blob base fee (geth).
    const block = this.environment(
      price === 0n && baseFee !== undefined && baseFee !== 0n,
      call.blobVersionedHashes !== undefined && !call.maxFeePerBlobGas,
    );
    const gasLimit = call.gas;
    const sender = (await this.state.getAccount(caller)) ?? new Account();
    const tx = callTransaction(
      call,
      { caller, nonce: sender.nonce, gasLimit, price, index },
      this.vm.common,
      this.block.header.baseFeePerGas,
    );
    const value = call.value ?? 0n;
    const feeCap = 'maxFeePerGas' in tx ? tx.maxFeePerGas : tx.gasPrice;
    const blobFeeCap = 'maxFeePerBlobGas' in tx ? tx.maxFeePerBlobGas * blobGas(tx, this.vm.common) : 0n;
    // geth checks the funds (buyGas) before the intrinsic gas; so do we, to fail with the same error.
    if (chargeFees && sender.balance < gasLimit * feeCap + value + blobFeeCap) {
      throw new CallValidationError(
        index,
        `insufficient funds for gas * price + value: address ${toChecksumAddress(caller.toString())} ` +
          `have ${sender.balance} want ${gasLimit * feeCap + value + blobFeeCap}`,
        'insufficient funds',
      );
    }
    const intrinsic = bigMax(tx.getIntrinsicGas(), floorGas(tx));
    if (gasLimit < intrinsic) {
      throw new CallValidationError(
        index,
        `intrinsic gas too low: have ${gasLimit}, want ${intrinsic}`,
        'intrinsic gas',
      );
    }
    if (sender.balance < value) return this.unaffordable(call, caller, sender, gasLimit - intrinsic, tracer);

    const credit = chargeFees ? 0n : gasLimit * feeCap + blobFeeCap;
    const coinbase = block.header.coinbase;
    const coinbaseBefore = await this.state.getAccount(coinbase);
    // runTx charges fees and pays the coinbase; the simulation does neither. Crediting the sender
    // what runTx will take up front, then settling the difference afterwards, leaves exactly the
    // state the EVM produced, with 7702, warm sets, refunds and cleanup still done by ethereumjs.
    await this.adjustBalance(caller, credit);
    this.hooks.attach(tracer, caller.bytes);
    const events = this.vm.evm.events;
    const onOp = options.onOp;
    const onStep =
      onOp &&
      ((step: InterpreterStep) =>
        onOp(step.opcode.code, bytesToBigInt(step.address.bytes), step.stack, step.stack.length));
    if (onStep) events?.on('step', onStep);
    let result: RunTxResult;
    try {
      result = await this.withoutSenderCodeCheck(caller, () =>
        runTx(this.vm, {
          tx,
          block,
          skipNonce: true,
          skipBlockGasLimitValidation: true,
          skipHardForkValidation: true,
        }),
      );
    } catch (e) {
      // A trace stopped for growing past the answer-size bound, or a damaged store, is the request's
      // failure, not the call's.
      if (e instanceof OutputLimitExceeded || e instanceof StoreInconsistentError) throw e;
      throw new CallValidationError(index, firstLine((e as Error).message));
    } finally {
      this.hooks.attach(null);
      if (onStep) events?.off('step', onStep);
    }
    const failure = ethereumjsFailure(result);
    const outcome: SimulatedCall = {
      output: result.execResult.returnValue,
      // EIP-7623's floor bounds the total, not the intrinsic part (geth's peak gas).
      gasUsed: bigMax(tx.getIntrinsicGas() + result.execResult.executionGasUsed, floorGas(tx)),
      gasSpent: result.totalGasSpent,
      failed: result.execResult.exceptionError !== undefined,
      ...(failure ? { failure } : {}),
    };
    // Charged fees stay as runTx settled them; otherwise undo its charge and the coinbase's reward.
    if (chargeFees) return outcome;
    const blobCost =
      (result.blobGasUsed ?? 0n) *
      (block.header.excessBlobGas !== undefined ? block.header.getBlobGasPrice() : 0n);
    await this.adjustBalance(caller, result.amountSpent + blobCost - credit);
    if (result.minerValue !== 0n) await this.adjustBalance(coinbase, -result.minerValue);
    if (!coinbaseBefore) await this.dropIfEmpty(coinbase);
    return outcome;
  }

  /**
   * Runs `runTx` with the sender's code hidden from its EIP-3607 check ("sender is not an EOA"), which
   * geth and Reth skip for calls: simulating a call from a contract (a multisig, say) is routine. The
   * code is hidden only until runTx first writes the sender (the fee debit, before any execution), and
   * that write keeps the real code hash.
   */
  private async withoutSenderCodeCheck<T>(caller: Address, run: () => Promise<T>): Promise<T> {
    const sender = await this.state.getAccount(caller);
    if (!sender || equalsBytes(sender.codeHash, KECCAK256_NULL)) return run();
    const code = await this.state.getCode(caller);
    if (equalsBytes(code.subarray(0, 3), DELEGATION_PREFIX)) return run();
    const state = this.state;
    const { getAccount, putAccount } = OverlayStateManager.prototype;
    const codeHash = sender.codeHash;
    let hidden = true;
    const masked = state as unknown as Pick<OverlayStateManager, 'getAccount' | 'putAccount'>;
    masked.getAccount = async (address) => {
      const account = await getAccount.call(state, address);
      if (hidden && account && address.equals(caller)) account.codeHash = KECCAK256_NULL;
      return account;
    };
    masked.putAccount = async (address, account) => {
      if (hidden && account && address.equals(caller)) {
        hidden = false;
        // runTx writes this same object again (nonce); fixing it in place keeps both writes right.
        if (equalsBytes(account.codeHash, KECCAK256_NULL)) account.codeHash = codeHash;
      }
      return putAccount.call(state, address, account);
    };
    try {
      return await run();
    } finally {
      masked.getAccount = getAccount;
      masked.putAccount = putAccount;
    }
  }

  /** A value the sender cannot afford fails the top frame; only the nonce moves (Reth). */
  private async unaffordable(
    call: CallRequest,
    caller: Address,
    sender: Account,
    gas: bigint,
    tracer: ExecutionTracer | null,
  ): Promise<SimulatedCall> {
    const creation = call.to === undefined || call.to === null;
    tracer?.frameStart({
      kind: creation ? 'create' : 'call',
      depth: 0,
      from: caller.bytes,
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
      createdAddress: creation ? generateAddress(caller.bytes, bigIntToBytes(sender.nonce)) : null,
    });
    sender.nonce += 1n;
    await this.state.putAccount(caller, sender);
    return { output: new Uint8Array(), gasUsed: 0n, gasSpent: null, failed: true };
  }

  private async adjustBalance(address: Address, delta: bigint): Promise<void> {
    if (delta === 0n) return;
    const account = (await this.state.getAccount(address)) ?? new Account();
    account.balance += delta;
    await this.state.putAccount(address, account);
  }

  private async dropIfEmpty(address: Address): Promise<void> {
    const account = await this.state.getAccount(address);
    if (
      account &&
      account.nonce === 0n &&
      account.balance === 0n &&
      account.codeHash.every((b, i) => b === KECCAK256_NULL[i])
    ) {
      await this.state.putAccount(address, undefined);
    }
  }

  private readonly environments = new Map<string, Block>();
  /** The session's block, or a copy of it with a zero base fee and/or a zero blob base fee. */
  private environment(zeroBaseFee: boolean, zeroBlobBaseFee: boolean): Block {
    if (!zeroBaseFee && !zeroBlobBaseFee) return this.block;
    const key = `${zeroBaseFee}/${zeroBlobBaseFee}`;
    let block = this.environments.get(key);
    if (!block) {
      const header = this.block.header;
      block = environmentBlock(
        { ...header.toJSON(), ...(zeroBaseFee ? { baseFeePerGas: 0n } : {}) },
        this.vm.common,
      );
      if (header.excessBlobGas !== undefined)
        setBlobBaseFee(block, zeroBlobBaseFee ? 0n : header.getBlobGasPrice());
      this.environments.set(key, block);
    }
    return block;
  }

  private async applyStateOverrides(overrides: StateOverrides): Promise<void> {
    for (const { address: raw, override } of overrides) {
      const address = new Address(raw);
      const account = (await this.state.getAccount(address)) ?? new Account();
      if (override.balance !== undefined) account.balance = override.balance;
      if (override.nonce !== undefined) account.nonce = override.nonce;
      await this.state.putAccount(address, account);
      if (override.code !== undefined) await this.state.putCode(address, override.code);
      if (override.state) await this.state.clearStorage(address);
      for (const [slot, value] of [...(override.state ?? []), ...(override.stateDiff ?? [])]) {
        await this.state.putStorage(address, setLengthLeft(slot, 32), value);
      }
    }
  }
}

/** EIP-7702's delegation designator: code `0xef0100 ‖ address`. */
const DELEGATION_PREFIX = Uint8Array.from([0xef, 0x01, 0x00]);

export type { CallFailure, OpListener, SimulatedCall, StateAccess };
