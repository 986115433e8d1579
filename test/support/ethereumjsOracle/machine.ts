import { paramsBlock } from '@ethereumjs/block';
import type { Common, StateManagerInterface } from '@ethereumjs/common';
import { type EVM, paramsEVM } from '@ethereumjs/evm';
import { paramsTx } from '@ethereumjs/tx';
import type { Account, Address } from '@ethereumjs/util';
import { createVM, paramsVM, type VM } from '@ethereumjs/vm';
import { canonicalBlockHashes } from '../../../src/chain/blockHashes.ts';
import type { ChainReader } from '../../../src/chain/reader.ts';
import { TraceHooks } from './hooks.ts';
import { OverlayStateManager } from './overlayState.ts';
import { notePrecompileFailures } from './precompileFailure.ts';

// The oracle's ethereumjs VMs, as the service made them before src/evm replaced it: one Common per
// fork with every package's parameters in place, one reusable VM per fork whose state manager
// forwards to the request's overlay. Stock ethereumjs: the run-time speed-ups the service patched
// into its interpreter (jump analysis cached, fixed-gas ops stepped without a promise, MSTORE
// without spreads; docs/performance.md) and into Common's EIP and fork checks are deleted, and every differential test answers the same without them. What stays patched is what
// the answers need: the trace hooks (hooks.ts, geth/evmPatch.ts), which see what ethereumjs's events
// do not tell, and the precompile failures noted for geth's words (precompileFailure.ts).

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

export {
  blockEnvironment,
  cachedEnvironment,
  environmentBlock,
  setBlobBaseFee,
} from '../../../src/exec/environment.ts';
