import { type Block, type BlockHeader, createBlock, paramsBlock } from '@ethereumjs/block';
import { type Common, Hardfork, type StateManagerInterface } from '@ethereumjs/common';
import { type EVM, paramsEVM } from '@ethereumjs/evm';
import { paramsTx } from '@ethereumjs/tx';
import type { Account, Address } from '@ethereumjs/util';
import { createVM, paramsVM, type VM } from '@ethereumjs/vm';
import { canonicalBlockHashes } from '../chain/blockHashes.ts';
import type { ChainReader } from '../chain/reader.ts';
import type { BlockOverrides } from '../core/call.ts';
import { RequestFailed } from '../core/errors.ts';
import { bytesKey } from '../primitives/hex.ts';
import { fastOpcodes, patchInterpreter } from './evmSpeedups.ts';
import { OverlayStateManager } from './overlayState.ts';
import { notePrecompileFailures } from './precompileFailure.ts';
import { TraceHooks } from './tracing/hooks.ts';

// What makes simulation cheap to set up: one Common per fork with every package's parameters in
// place, one reusable VM per fork whose state manager forwards to the request's overlay, and the
// environment blocks of recent blocks.

// The EIP-7825 cap (2^24 gas per transaction) does not bind simulated calls: Reth lifts it for
// calls as well, and the configured gas cap is the limit there.
const UNCAPPED_TX_GAS = Number.MAX_SAFE_INTEGER;

// Transactions copy their Common and re-apply their package's parameters to it. The simulation
// Common already holds those parameters (with the cap lifted), so transactions get an empty set:
// re-merging the full set costs more than the rest of a small call.
const SIMULATION_TX_PARAMS = {
  ...paramsTx,
  7825: { ...paramsTx[7825], maxTransactionGasLimit: UNCAPPED_TX_GAS },
};
export const NO_EXTRA_PARAMS = {};

const simulationCommons = new WeakMap<Common, Common>();

/**
 * The fork's rules with the per-transaction gas cap lifted (see UNCAPPED_TX_GAS), made once per fork.
 * Every transaction, block and VM built on a Common copies it and re-merges its package's parameters
 * into the copy, which rebuilds the whole parameter cache: measured, that was a quarter of a
 * 200-call trace_callMany. This Common gets all of those parameters once, and an `updateParams` that
 * does nothing, as an own property so that the copies inherit it.
 */
export function simulationCommon(forkCommon: Common): Common {
  let common = simulationCommons.get(forkCommon);
  if (!common) {
    common = forkCommon.copy();
    // Common.copy() shares the parameter table: give the copy its own before changing it.
    const internals = common as unknown as { _params: Record<string, unknown> };
    internals._params = structuredClone(internals._params);
    common.updateParams(paramsBlock);
    common.updateParams(paramsEVM);
    common.updateParams(paramsVM);
    common.updateParams(SIMULATION_TX_PARAMS);
    Object.defineProperty(common, 'updateParams', { value: () => {}, enumerable: true, writable: false });
    // The fork never changes on this Common, so the EVM's per-opcode fork and EIP checks (a list
    // scan each) can be answered from a set and a memo.
    const eips = new Set((common as unknown as { _activatedEIPsCache: number[] })._activatedEIPsCache);
    const gteHardfork = common.gteHardfork.bind(common);
    const forks = new Map<string, boolean>();
    Object.defineProperty(common, 'isActivatedEIP', {
      // The set is the original's whole answer: its list holds the fork's EIPs and the extra ones.
      value: (eip: number) => eips.has(eip),
      enumerable: true,
    });
    Object.defineProperty(common, 'gteHardfork', {
      value: (fork: string) => {
        let answer = forks.get(fork);
        if (answer === undefined) {
          answer = gteHardfork(fork);
          forks.set(fork, answer);
        }
        return answer;
      },
      enumerable: true,
    });
    simulationCommons.set(forkCommon, common);
  }
  return common;
}

/**
 * An EVM with its trace hooks, kept per fork and reused: making a VM costs more than a small call.
 * Its state manager forwards to the overlay of the request that holds it; a machine serves one
 * request at a time, and a request that finds it busy gets a fresh one.
 */
export interface Machine {
  vm: VM;
  hooks: TraceHooks;
  state: ForwardingState;
  busy: boolean;
}

const idleMachines = new WeakMap<Common, Machine>();

export async function acquireMachine(
  common: Common,
  chain: ChainReader,
  overlay: OverlayStateManager,
): Promise<Machine> {
  let machine = idleMachines.get(common);
  if (!machine || machine.busy) {
    const state = new ForwardingState(overlay);
    const vm = await createVM({
      common,
      stateManager: state as unknown as StateManagerInterface,
      blockchain: canonicalBlockHashes(chain.store),
    });
    await patchInterpreter();
    fastOpcodes(vm.evm as EVM);
    notePrecompileFailures(vm.evm as EVM);
    machine = { vm, hooks: new TraceHooks(vm.evm as EVM), state, busy: false };
    if (!idleMachines.has(common)) idleMachines.set(common, machine);
  }
  machine.state.target = overlay;
  machine.busy = true;
  return machine;
}

export function releaseMachine(machine: Machine): void {
  machine.busy = false;
  // An idle machine must not keep the request's overlay (its caches and journal) alive: freed now,
  // it dies young, instead of being promoted and left for a full collection.
  machine.state.target = DETACHED;
}

/** What an idle machine's state points at: no state, and any use of it is a bug. */
const DETACHED = new OverlayStateManager({
  account: () => Promise.reject(new Error('state used after its machine was released')),
  storage: () => Promise.reject(new Error('state used after its machine was released')),
  code: () => Promise.reject(new Error('state used after its machine was released')),
});

/** The state manager a reused VM holds: every call goes to the current request's overlay. */
class ForwardingState {
  constructor(public target: OverlayStateManager) {}
  get originalStorageCache() {
    return this.target.originalStorageCache;
  }
  getAccount = (a: Address) => this.target.getAccount(a);
  putAccount = (a: Address, account?: Account) => this.target.putAccount(a, account);
  deleteAccount = (a: Address) => this.target.deleteAccount(a);
  modifyAccountFields = (a: Address, f: Parameters<OverlayStateManager['modifyAccountFields']>[1]) =>
    this.target.modifyAccountFields(a, f);
  putCode = (a: Address, code: Uint8Array) => this.target.putCode(a, code);
  getCode = (a: Address) => this.target.getCode(a);
  getCodeSize = (a: Address) => this.target.getCodeSize(a);
  getStorage = (a: Address, k: Uint8Array) => this.target.getStorage(a, k);
  putStorage = (a: Address, k: Uint8Array, v: Uint8Array) => this.target.putStorage(a, k, v);
  clearStorage = (a: Address) => this.target.clearStorage(a);
  checkpoint = () => this.target.checkpoint();
  commit = () => this.target.commit();
  revert = () => this.target.revert();
  flush = () => this.target.flush();
  getStateRoot = () => this.target.getStateRoot();
  setStateRoot = () => this.target.setStateRoot();
  hasStateRoot = () => this.target.hasStateRoot();
  clearCaches = () => this.target.clearCaches();
  shallowCopy = () => this.target.shallowCopy();
}

// Environment blocks of recent blocks: rebuilding a Block from its header on each request is costly.
const ENVIRONMENT_CACHE_SIZE = 64;
const environments = new Map<string, Block>();

export function cachedEnvironment(header: BlockHeader, common: Common): Block {
  const key = bytesKey(header.hash());
  let block = environments.get(key);
  if (!block || block.common !== common) {
    block = blockEnvironment(header, common, undefined);
    environments.set(key, block);
    if (environments.size > ENVIRONMENT_CACHE_SIZE)
      environments.delete(environments.keys().next().value as string);
  }
  return block;
}

export function blockEnvironment(
  header: BlockHeader,
  common: Common,
  overrides: BlockOverrides | undefined,
): Block {
  const data: Record<string, unknown> = { ...header.toJSON() };
  if (overrides) {
    if (overrides.number !== undefined) data.number = overrides.number;
    if (overrides.time !== undefined) data.timestamp = overrides.time;
    if (overrides.gasLimit !== undefined) {
      data.gasLimit = overrides.gasLimit;
      // The gas the real block used says nothing about the simulated one, and a header may not use
      // more than its limit. As in geth, the limit binds no call (GASLIMIT reads it).
      data.gasUsed = 0n;
    }
    if (overrides.feeRecipient !== undefined) data.coinbase = overrides.feeRecipient;
    if (overrides.prevRandao !== undefined) data.mixHash = overrides.prevRandao;
    if (overrides.baseFeePerGas !== undefined) data.baseFeePerGas = overrides.baseFeePerGas;
  }
  let block: Block;
  try {
    block = environmentBlock(data, common);
  } catch (e) {
    // Whatever else ethereumjs refuses in a header is an override that describes no valid block:
    // well-formed parameters the server cannot simulate (RequestFailed).
    throw new RequestFailed(`block overrides: ${e instanceof Error ? e.message : String(e)}`);
  }
  if (overrides?.blobBaseFee !== undefined && block.header.excessBlobGas !== undefined)
    setBlobBaseFee(block, overrides.blobBaseFee);
  return block;
}

/**
 * A block over header fields that a call's environment may hold but a header may not: ethereumjs
 * refuses a London block whose base fee is not EIP-1559's initial one, while geth zeroes the base fee
 * for calls that name no fee and an override may set any. Such a block is built with the initial
 * base fee and given the call's afterwards. Unfrozen: a blob base fee override replaces the header's
 * getBlobGasPrice.
 */
export function environmentBlock(data: Record<string, unknown>, common: Common): Block {
  if (!common.isActivatedEIP(1559) && data.baseFeePerGas !== undefined) {
    // Before London a block has no base fee: geth's rules then never read one, so a base fee (an
    // override, or the zero given to calls that name no fee) changes nothing and is dropped.
    const { baseFeePerGas: _, ...rest } = data;
    data = rest;
  }
  const baseFee = data.baseFeePerGas as bigint | string | undefined;
  const london = common.hardforkBlock(Hardfork.London);
  const pinned =
    baseFee !== undefined &&
    london !== null &&
    london !== 0n &&
    BigInt(data.number as bigint | string) === london &&
    BigInt(baseFee) !== common.param('initialBaseFee');
  const header = pinned ? { ...data, baseFeePerGas: common.param('initialBaseFee') } : data;
  const block = createBlock({ header }, { common, skipConsensusFormatValidation: true, freeze: false });
  if (pinned) Object.defineProperty(block.header, 'baseFeePerGas', { value: BigInt(baseFee) });
  return block;
}

/**
 * The blob base fee is derived from the header's excess blob gas and has a floor of 1 wei, so an
 * override (or geth's zero for calls without a blob fee cap) replaces the one method that both
 * runTx and BLOBBASEFEE read it through.
 */
export function setBlobBaseFee(block: Block, fee: bigint): void {
  Object.defineProperty(block.header, 'getBlobGasPrice', { value: () => fee });
}
