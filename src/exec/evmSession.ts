import type { BlockHeader } from '@ethereumjs/block';
import type { Common } from '@ethereumjs/common';
import { Address, toChecksumAddress } from '@ethereumjs/util';
import type { ChainReader } from '../chain/reader.ts';
import type { BlockOverrides, CallRequest, StateOverrides, TraceTypes } from '../core/call.ts';
import { NotFound } from '../core/errors.ts';
import type { BlockEnv } from '../evm/env.ts';
import type { ForkRules } from '../evm/forks.ts';
import type { EvmTracer, FrameEnd } from '../evm/hooks.ts';
import { createAddress } from '../evm/interpreter.ts';
import { WorldState } from '../evm/state.ts';
import { applyTransaction, InvalidTransaction, type TransactionResult } from '../evm/transaction.ts';
import { addressBytes, bytesToBigint } from '../evm/words.ts';
import { CallValidationError } from './callValidation.ts';
import { blockEnv, evmFork, evmTransaction, FlatStateReader } from './evmEngine.ts';
import type { EvmFork } from './evmRules.ts';
import { blockEnvironment, simulationCommon } from './machine.ts';
import { callMessage, checkGethFees } from './message.ts';
import {
  type CallFailure,
  type CallTrace,
  checkSameFork,
  type SimulatedCall,
  type StateAccess,
} from './session.ts';
import {
  AccessRecorder,
  adaptTracer,
  allEvmTracers,
  changedKeys,
  StateDiffRecorder,
} from './tracing/evmAdapter.ts';
import type { ExecutionTracer } from './tracing/hooks.ts';
import { ParityCallTracer } from './tracing/parity.ts';
import { buildStateDiff } from './tracing/stateDiff.ts';
import { bigMax, callTransaction, effectivePrice, floorGas } from './transaction.ts';

const ZERO_ADDRESS = new Uint8Array(20);

/**
 * trace_call / trace_callMany / trace_rawTransaction on the EVM of src/evm: calls simulated in order
 * on the state after one block, with Reth's pure simulation (no fees, no nonce check; the sender's
 * nonce moves), answering what `CallSession` (src/exec/session.ts) answers on ethereumjs. The call is
 * checked, and built as a transaction, by the same code as there, so a call refused is refused in the
 * same words; only the execution differs.
 */
export class EvmCallSession {
  private readonly zeroFeeEnv: BlockEnv;
  private diffs: StateDiffRecorder | null = null;
  private overrides: StateOverrides | null = null;
  private recorder: AccessRecorder | null = null;
  private lastWrites: string[] = [];

  private constructor(
    chain: ChainReader,
    readonly header: BlockHeader,
    /** The header the calls see: the block's, or as the block overrides make it. */
    private readonly envHeader: BlockHeader,
    private readonly fork: EvmFork,
    private readonly world: WorldState,
    private readonly reader: FlatStateReader,
    private readonly env: BlockEnv,
    private readonly gasCap: bigint,
  ) {
    this.zeroFeeEnv = { ...env, baseFee: 0n };
    this.common = simulationCommon(chain.commonAt(header.number, header.timestamp));
  }

  /** The fork's ethereumjs rules, which build the call's transaction (its checks and words). */
  private readonly common: Common;

  /**
   * A session on the state after the block `blockHash` names, or null when src/evm cannot serve the
   * request yet (the caller uses CallSession): a store without synchronous reads, a fork without a
   * rule row, a blob base fee override, or a state override that replaces an account's whole storage.
   */
  static async openAt(
    chain: ChainReader,
    blockHash: Uint8Array,
    opts: { gasCap: bigint; stateOverrides?: StateOverrides; blockOverrides?: BlockOverrides },
  ): Promise<EvmCallSession | null> {
    const reads = chain.store.syncReads;
    const env = opts.blockOverrides;
    if (!reads || env?.blobBaseFee !== undefined) return null;
    if (opts.stateOverrides?.some((o) => o.override.state !== undefined)) return null;
    const header = await chain.header(blockHash);
    if (!header) throw new NotFound('block not found: the chain was rewound while it was traced');
    const common = chain.commonAt(header.number, header.timestamp);
    const fork = evmFork(chain, common);
    if (!fork) return null;
    // Block overrides are checked and applied by the code CallSession uses (the same refusals in the
    // same words); the block it builds is the environment's source.
    let envHeader = header;
    if (env) {
      if (env.number !== undefined || env.time !== undefined) {
        checkSameFork(
          chain,
          header,
          simulationCommon(common),
          env.number ?? header.number,
          env.time ?? header.timestamp,
        );
      }
      envHeader = blockEnvironment(header, simulationCommon(common), env).header;
    }
    const reader = new FlatStateReader(reads, header.number);
    const world = new WorldState(reader);
    const session = new EvmCallSession(
      chain,
      header,
      envHeader,
      fork,
      world,
      reader,
      blockEnv(envHeader, fork.chainId, reads),
      opts.gasCap,
    );
    if (opts.stateOverrides) {
      session.overrides = opts.stateOverrides;
      applyStateOverrides(world, opts.stateOverrides);
    }
    return session;
  }

  close(): void {}

  /** The base fee the session's calls see; undefined before London. */
  get baseFee(): bigint | undefined {
    return this.envHeader.baseFeePerGas;
  }

  /** The account as the session's state holds it now (overrides and earlier calls included). */
  async account(address: Uint8Array): Promise<{ balance: bigint; nonce: bigint; code: Uint8Array }> {
    const account = this.world.account(bytesToBigint(address));
    return { balance: account.balance, nonce: account.nonce, code: account.code(this.reader) };
  }

  /**
   * One call under geth's rules (eth_call, eth_estimateGas): as CallSession.simulate with the geth
   * dialect (its fee checks, the sender pays for its gas). `isolated` runs it on a world of its own
   * (the block's state and the overrides), so the session's state stays as it was.
   */
  async simulate(
    request: CallRequest,
    index: number,
    tracer: EvmTracer | null,
    options: { dialect: 'geth'; isolated?: boolean },
  ): Promise<SimulatedCall> {
    const world = options.isolated ? this.freshWorld() : this.world;
    return this.runGeth(world, request, index, tracer);
  }

  /** The state the session's calls run on, and its fork's rules (for a tracer that reads them). */
  get state(): { world: WorldState; rules: ForkRules } {
    return { world: this.world, rules: this.fork.rules };
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
    tracer: EvmTracer | null,
  ): SimulatedCall {
    const baseFee = this.envHeader.baseFeePerGas;
    const call = callMessage(request, baseFee, this.gasCap, 'geth');
    checkGethFees(call, baseFee);
    const callerBytes = call.from ?? ZERO_ADDRESS;
    const caller = new Address(callerBytes);
    const price = effectivePrice(call, baseFee, index);
    const env = price === 0n && baseFee !== undefined && baseFee !== 0n ? this.zeroFeeEnv : this.env;
    const sender = world.account(bytesToBigint(callerBytes));
    const tx = callTransaction(
      call,
      { caller, nonce: sender.nonce, gasLimit: call.gas, price, index },
      this.common,
      baseFee,
    );
    const value = call.value ?? 0n;
    const feeCap = 'maxFeePerGas' in tx ? tx.maxFeePerGas : tx.gasPrice;
    // geth checks the funds (buyGas) before the intrinsic gas; so does CallSession, and so here.
    const want = call.gas * feeCap + value;
    if (sender.balance < want) {
      throw new CallValidationError(
        index,
        `insufficient funds for gas * price + value: address ${toChecksumAddress(caller.toString())} ` +
          `have ${sender.balance} want ${want}`,
        'insufficient funds',
      );
    }
    const intrinsic = bigMax(tx.getIntrinsicGas(), floorGas(tx));
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
    let end: FrameEnd | null = null;
    const top: EvmTracer = {
      frameEnd: (e) => {
        if (e.depth === 0) end = e;
      },
    };
    let result: TransactionResult;
    try {
      result = applyTransaction(
        world,
        env,
        this.fork.rules,
        this.fork.precompiles,
        evmTransaction(tx),
        tracer ? allEvmTracers([top, tracer]) : top,
        { call: true },
      );
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
      gasUsed: bigMax(result.gasUsedBeforeRefund, floorGas(tx)),
      gasSpent: result.gasUsed,
      failed: !result.success,
      ...(failure ? { failure } : {}),
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

  /** Simulates one call and traces what `types` asks for (never a vmTrace: see openAt's callers). */
  async trace(request: CallRequest, index: number, types: TraceTypes): Promise<CallTrace> {
    if (types.stateDiff && !this.diffs) {
      this.diffs = new StateDiffRecorder(this.world, this.reader);
      this.diffs.skip();
    }
    const parity = types.trace ? new ParityCallTracer() : null;
    const output = this.run(request, index, parity, this.diffs);
    // Each call's changes are taken after it: a stateDiff counts from the start of its call.
    const changes = this.diffs?.changes() ?? null;
    if (this.recorder && this.diffs && changes) this.lastWrites = changedKeys(changes, this.diffs.wiped);
    const stateDiff = types.stateDiff && changes ? buildStateDiff(changes) : null;
    return { output, trace: parity?.traces() ?? [], stateDiff, vmTrace: null };
  }

  private run(
    request: CallRequest,
    index: number,
    parity: ParityCallTracer | null,
    diffs: StateDiffRecorder | null,
  ): Uint8Array {
    const baseFee = this.envHeader.baseFeePerGas;
    const call = callMessage(request, baseFee, this.gasCap, 'parity');
    const callerBytes = call.from ?? ZERO_ADDRESS;
    const caller = new Address(callerBytes);
    const price = effectivePrice(call, baseFee, index);
    // A call that pays nothing sees a zero base fee (BASEFEE returns 0), as Reth and geth do.
    const env = price === 0n && baseFee !== undefined && baseFee !== 0n ? this.zeroFeeEnv : this.env;
    const world = this.world;
    const sender = world.account(bytesToBigint(callerBytes));
    this.recorder?.noteAccount(sender.address);
    const tx = callTransaction(
      call,
      { caller, nonce: sender.nonce, gasLimit: call.gas, price, index },
      this.common,
      baseFee,
    );
    const intrinsic = bigMax(tx.getIntrinsicGas(), floorGas(tx));
    if (call.gas < intrinsic) {
      throw new CallValidationError(
        index,
        `intrinsic gas too low: have ${call.gas}, want ${intrinsic}`,
        'intrinsic gas',
      );
    }
    const value = call.value ?? 0n;
    if (sender.balance < value) {
      this.unaffordable(call, callerBytes, call.gas - intrinsic, parity);
      return new Uint8Array();
    }
    const tracer = allEvmTracers([
      parity && adaptTracer(parity, world),
      diffs?.tracer ?? null,
      this.recorder?.tracer ?? null,
    ]);
    let result: TransactionResult;
    try {
      result = applyTransaction(
        world,
        env,
        this.fork.rules,
        this.fork.precompiles,
        evmTransaction(tx),
        tracer,
        { call: true, fees: false },
      );
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
  ): void {
    const world = this.world;
    const sender = world.account(bytesToBigint(caller));
    const creation = call.to === undefined || call.to === null;
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

/** Overrides before the first call: not part of any stateDiff (diffs start from them). */
function applyStateOverrides(world: WorldState, overrides: StateOverrides): void {
  for (const { address, override } of overrides) {
    const account = world.account(bytesToBigint(address));
    if (override.balance !== undefined) world.setBalance(account, override.balance);
    if (override.nonce !== undefined) world.setNonce(account, override.nonce);
    if (override.code !== undefined) world.setCode(account, override.code);
    // An account an override names exists afterwards, as the ethereumjs overlay's write makes it.
    if (!account.exists) world.createAccount(account);
    for (const [slot, value] of override.stateDiff ?? []) {
      world.setStorage(account, bytesToBigint(slot), bytesToBigint(value));
    }
  }
  // Committed as they are: an empty account an override makes lives until a call touches it.
  world.endTransaction(false);
}
