import { type Block, type BlockHeader, createBlock } from '@ethereumjs/block';
import type { Common } from '@ethereumjs/common';
import type { EVM } from '@ethereumjs/evm';
import { createTx, paramsTx, type TypedTransaction } from '@ethereumjs/tx';
import {
  Account,
  Address,
  bigIntToBytes,
  bigIntToUnpaddedBytes,
  generateAddress,
  KECCAK256_NULL,
  setLengthLeft,
} from '@ethereumjs/util';
import { createVM, type RunTxResult, runTx, type VM } from '@ethereumjs/vm';
import { ServerError } from '../rpc/errors.ts';
import type { ChainService } from '../services/chain.ts';
import type { BlockOverrides, CallRequest, StateOverrides, TraceTypes } from './callRequest.ts';
import { OverlayStateManager, stateAtBlock } from './overlayState.ts';
import { allOf, type ExecutionTracer, TraceHooks } from './tracing/hooks.ts';
import { ParityCallTracer, type ParityTrace } from './tracing/parity.ts';
import { buildStateDiff, type StateDiff } from './tracing/stateDiff.ts';
import { type VmTrace, VmTracer } from './tracing/vmTrace.ts';

/** One call's outcome in the shape trace_callMany serves (domain values; formatted at the edge). */
export interface CallTrace {
  output: Uint8Array;
  trace: ParityTrace[];
  stateDiff: StateDiff | null;
  vmTrace: VmTrace | null;
}

export interface SimulatedCall {
  result: RunTxResult | null;
  output: Uint8Array;
  /** Gas the call used including intrinsic gas, before refunds (what a gas estimate builds on). */
  gasUsed: bigint;
  failed: boolean;
}

/** A call that fails validation fails the whole request, naming the call (reference Part 1). */
export class CallValidationError extends ServerError {}

// The EIP-7825 cap (2^24 gas per transaction) does not bind simulated calls: Reth lifts it for
// calls as well, and the configured gas cap is the limit there.
const UNCAPPED_TX_GAS = Number.MAX_SAFE_INTEGER;

/**
 * Calls simulated in order on the state after one block, with that block's environment (number,
 * timestamp, coinbase, base fee, prevrandao, BLOCKHASH window) and no block gas limit. Pure
 * simulation as Reth does it: no nonce check, no fees debited, no refund, nothing paid to the
 * coinbase; the sender's nonce still increments. Each call sees what the previous ones left.
 */
export class CallSession {
  private constructor(
    private readonly vm: VM,
    private readonly state: OverlayStateManager,
    private readonly hooks: TraceHooks,
    private readonly block: Block,
    private readonly gasCap: bigint,
  ) {}

  static async open(
    chain: ChainService,
    header: BlockHeader,
    opts: { gasCap: bigint; stateOverrides?: StateOverrides; blockOverrides?: BlockOverrides },
  ): Promise<CallSession> {
    const common = simulationCommon(chain.commonAt(header.number, header.timestamp));
    const state = new OverlayStateManager(stateAtBlock(chain.store, header.number));
    const vm = await createVM({ common, stateManager: state, blockchain: blockHashes(chain) });
    const block = blockEnvironment(header, common, opts.blockOverrides);
    const session = new CallSession(vm, state, new TraceHooks(vm.evm as EVM), block, opts.gasCap);
    if (opts.stateOverrides) await session.applyStateOverrides(opts.stateOverrides);
    return session;
  }

  /** Simulates one call and traces what `types` asks for. */
  async trace(call: CallRequest, index: number, types: TraceTypes): Promise<CallTrace> {
    const mark = this.state.mark();
    const parity = types.trace ? new ParityCallTracer() : null;
    const vm = types.vmTrace ? new VmTracer(this.vm.evm as EVM) : null;
    let outcome: SimulatedCall;
    try {
      outcome = await this.simulate(call, index, allOf([parity, vm]));
    } finally {
      vm?.detach();
    }
    return {
      output: outcome.output,
      trace: parity?.traces() ?? [],
      stateDiff: types.stateDiff ? buildStateDiff(await this.state.changesSince(mark)) : null,
      vmTrace: vm?.result() ?? null,
    };
  }

  async simulate(call: CallRequest, index: number, tracer: ExecutionTracer | null): Promise<SimulatedCall> {
    const caller = new Address(call.from ?? new Uint8Array(20));
    const baseFee = this.block.header.baseFeePerGas;
    const price = effectivePrice(call, baseFee, index);
    // A call that pays nothing sees a zero base fee (BASEFEE returns 0), as Reth and geth do.
    const block = price === 0n && baseFee ? this.zeroBaseFeeBlock() : this.block;
    const gasLimit = call.gas === undefined || call.gas > this.gasCap ? this.gasCap : call.gas;
    const sender = (await this.state.getAccount(caller)) ?? new Account();
    const tx = this.transaction(call, caller, sender.nonce, gasLimit, price, index);
    const intrinsic = tx.getIntrinsicGas() > floorGas(tx) ? tx.getIntrinsicGas() : floorGas(tx);
    if (gasLimit < intrinsic) {
      throw new CallValidationError(
        `call ${index}: intrinsic gas too low: have ${gasLimit}, want ${intrinsic}`,
      );
    }
    const value = call.value ?? 0n;
    if (sender.balance < value) return this.unaffordable(call, caller, sender, gasLimit - intrinsic, tracer);

    const feeCap = 'maxFeePerGas' in tx ? tx.maxFeePerGas : tx.gasPrice;
    const blobFeeCap = 'maxFeePerBlobGas' in tx ? tx.maxFeePerBlobGas * blobGas(tx, this.vm.common) : 0n;
    const credit = gasLimit * feeCap + blobFeeCap;
    const coinbase = block.header.coinbase;
    const coinbaseBefore = await this.state.getAccount(coinbase);
    // runTx charges fees and pays the coinbase; the simulation does neither. Crediting the sender
    // what runTx will take up front, then settling the difference afterwards, leaves exactly the
    // state the EVM produced, with 7702, warm sets, refunds and cleanup still done by ethereumjs.
    await this.adjustBalance(caller, credit);
    this.hooks.attach(tracer, caller.bytes);
    let result: RunTxResult;
    try {
      result = await runTx(this.vm, {
        tx,
        block,
        skipNonce: true,
        skipBlockGasLimitValidation: true,
        skipHardForkValidation: true,
      });
    } catch (e) {
      throw new CallValidationError(`call ${index}: ${firstLine((e as Error).message)}`);
    } finally {
      this.hooks.attach(null);
    }
    const blobCost =
      (result.blobGasUsed ?? 0n) *
      (block.header.excessBlobGas !== undefined ? block.header.getBlobGasPrice() : 0n);
    await this.adjustBalance(caller, result.amountSpent + blobCost - credit);
    if (result.minerValue !== 0n) await this.adjustBalance(coinbase, -result.minerValue);
    if (!coinbaseBefore) await this.dropIfEmpty(coinbase);
    return {
      result,
      output: result.execResult.returnValue,
      gasUsed: intrinsic + result.execResult.executionGasUsed,
      failed: result.execResult.exceptionError !== undefined,
    };
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
    return { result: null, output: new Uint8Array(), gasUsed: 0n, failed: true };
  }

  private transaction(
    call: CallRequest,
    caller: Address,
    nonce: bigint,
    gasLimit: bigint,
    price: bigint,
    index: number,
  ): TypedTransaction {
    const common = this.vm.common;
    const base = {
      nonce,
      gasLimit,
      to: call.to ?? undefined,
      value: call.value ?? 0n,
      data: call.data ?? new Uint8Array(),
      chainId: common.chainId(),
    };
    const accessList = (call.accessList ?? []).map((e) => ({
      address: `0x${Buffer.from(e.address).toString('hex')}`,
      storageKeys: e.storageKeys.map((k) => `0x${Buffer.from(k).toString('hex')}`),
    }));
    const type = txType(call);
    const fees =
      type >= 2
        ? {
            maxFeePerGas: call.maxFeePerGas ?? price,
            maxPriorityFeePerGas:
              call.maxPriorityFeePerGas ??
              (price === 0n ? 0n : price - (this.block.header.baseFeePerGas ?? 0n)),
          }
        : { gasPrice: price };
    const data: Record<string, unknown> = { ...base, ...fees, type };
    if (type >= 1) data.accessList = accessList;
    if (type === 3) {
      data.blobVersionedHashes = call.blobVersionedHashes ?? [];
      data.maxFeePerBlobGas = call.maxFeePerBlobGas ?? 0n;
    }
    if (type === 4) {
      // Canonical RLP integers: no leading zero bytes, zero as the empty string.
      data.authorizationList = (call.authorizationList ?? []).map((a) => [
        bigIntToUnpaddedBytes(a.chainId),
        a.address,
        bigIntToUnpaddedBytes(a.nonce),
        bigIntToUnpaddedBytes(a.yParity),
        bigIntToUnpaddedBytes(a.r),
        bigIntToUnpaddedBytes(a.s),
      ]);
    }
    let tx: TypedTransaction;
    try {
      tx = createTx(data as Parameters<typeof createTx>[0], {
        common,
        freeze: false,
        params: SIMULATION_TX_PARAMS,
      });
    } catch (e) {
      throw new CallValidationError(`call ${index}: ${firstLine((e as Error).message)}`);
    }
    // The call is unsigned: its sender is whoever the request says.
    Object.defineProperty(tx, 'getSenderAddress', { value: () => caller });
    return tx;
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

  private zeroBaseFee: Block | undefined;
  private zeroBaseFeeBlock(): Block {
    this.zeroBaseFee ??= createBlock(
      { header: { ...this.block.header.toJSON(), baseFeePerGas: 0n } },
      { common: this.vm.common, skipConsensusFormatValidation: true },
    );
    return this.zeroBaseFee;
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

// Transactions re-apply their package's parameters to the Common they copy, so the lifted cap must be
// part of the parameters they are given.
const SIMULATION_TX_PARAMS = {
  ...paramsTx,
  7825: { ...paramsTx[7825], maxTransactionGasLimit: UNCAPPED_TX_GAS },
};

/** The fork's rules with the per-transaction gas cap lifted (see UNCAPPED_TX_GAS). */
function simulationCommon(forkCommon: Common): Common {
  const common = forkCommon.copy();
  common.updateParams(SIMULATION_TX_PARAMS);
  return common;
}

function blockEnvironment(header: BlockHeader, common: Common, overrides: BlockOverrides | undefined): Block {
  const data: Record<string, unknown> = { ...header.toJSON() };
  if (overrides) {
    if (overrides.number !== undefined) data.number = overrides.number;
    if (overrides.time !== undefined) data.timestamp = overrides.time;
    if (overrides.gasLimit !== undefined) data.gasLimit = overrides.gasLimit;
    if (overrides.feeRecipient !== undefined) data.coinbase = overrides.feeRecipient;
    if (overrides.prevRandao !== undefined) data.mixHash = overrides.prevRandao;
    if (overrides.baseFeePerGas !== undefined) data.baseFeePerGas = overrides.baseFeePerGas;
  }
  return createBlock({ header: data }, { common, skipConsensusFormatValidation: true });
}

/** BLOCKHASH before EIP-2935 asks the blockchain; it only ever needs canonical hashes. */
function blockHashes(chain: ChainService) {
  const source = {
    async getBlock(number: number) {
      const hash = await chain.store.getCanonicalHash(BigInt(number));
      return { hash: () => hash ?? new Uint8Array(32) };
    },
    async putBlock() {},
    shallowCopy: () => source,
  };
  return source;
}

/**
 * The price per gas the call pays. Legacy `gasPrice`, or the EIP-1559 pair: min(maxFee, base + tip).
 * A non-zero cap below the base fee is an error; no price at all means 0.
 */
function effectivePrice(call: CallRequest, baseFee: bigint | undefined, index: number): bigint {
  const base = baseFee ?? 0n;
  if (call.gasPrice !== undefined) {
    if (call.gasPrice !== 0n && call.gasPrice < base) {
      throw new CallValidationError(
        `call ${index}: gas price less than block base fee: gasPrice ${call.gasPrice}, baseFee ${base}`,
      );
    }
    return call.gasPrice;
  }
  if (call.maxFeePerGas === undefined && call.maxPriorityFeePerGas === undefined) return 0n;
  const tip = call.maxPriorityFeePerGas ?? 0n;
  const cap = call.maxFeePerGas ?? base + tip;
  if (cap !== 0n && cap < base) {
    throw new CallValidationError(
      `call ${index}: max fee per gas less than block base fee: maxFeePerGas ${cap}, baseFee ${base}`,
    );
  }
  if (tip > cap) {
    throw new CallValidationError(
      `call ${index}: max priority fee per gas higher than max fee per gas: ${tip} > ${cap}`,
    );
  }
  return cap === 0n ? 0n : base + tip < cap ? base + tip : cap;
}

function txType(call: CallRequest): number {
  if (call.type !== undefined) return call.type;
  if (call.authorizationList !== undefined) return 4;
  if (call.blobVersionedHashes !== undefined) return 3;
  if (call.maxFeePerGas !== undefined || call.maxPriorityFeePerGas !== undefined) return 2;
  if (call.accessList !== undefined) return 1;
  return 0;
}

/** EIP-7623: a transaction pays at least 10 gas per calldata token beyond the base cost. */
function floorGas(tx: TypedTransaction): bigint {
  const common = tx.common;
  if (!common.isActivatedEIP(7623)) return 0n;
  let tokens = 0n;
  for (const byte of tx.data) tokens += byte === 0 ? 1n : 4n;
  return common.param('txGas') + tokens * common.param('totalCostFloorPerToken');
}

function blobGas(tx: TypedTransaction, common: Common): bigint {
  return 'blobVersionedHashes' in tx
    ? BigInt(tx.blobVersionedHashes.length) * common.param('blobGasPerBlob')
    : 0n;
}

function firstLine(message: string): string {
  return (message.split('\n')[0] ?? message).replace(/ \(block number=.*$|-block number=.*$/, '');
}
