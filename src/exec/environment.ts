import { type Block, type BlockHeader, createBlock, paramsBlock } from '@ethereumjs/block';
import { type Common, Hardfork } from '@ethereumjs/common';
import { paramsTx } from '@ethereumjs/tx';
import type { BlockOverrides } from '../core/call.ts';
import { RequestFailed } from '../core/errors.ts';
import { bytesKey } from '../primitives/hex.ts';

// What a simulated call's environment is made of: one Common per fork with the block and
// transaction parameters in place, and the environment blocks of recent blocks.

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
 * Every transaction and block built on a Common copies it and re-merges its package's parameters
 * into the copy, which rebuilds the whole parameter cache: measured, that was a quarter of a
 * 200-call trace_callMany. This Common gets those parameters once, and an `updateParams` that does
 * nothing, as an own property so that the copies inherit it.
 */
export function simulationCommon(forkCommon: Common): Common {
  let common = simulationCommons.get(forkCommon);
  if (!common) {
    common = forkCommon.copy();
    // Common.copy() shares the parameter table (its `_params`, which updateParams writes into):
    // give the copy its own before changing it, or the chain's Common would change too.
    const internals = common as unknown as { _params: Record<string, unknown> };
    internals._params = structuredClone(internals._params);
    common.updateParams(paramsBlock);
    common.updateParams(SIMULATION_TX_PARAMS);
    Object.defineProperty(common, 'updateParams', { value: () => {}, enumerable: true, writable: false });
    simulationCommons.set(forkCommon, common);
  }
  return common;
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
    if (overrides.difficulty !== undefined) data.difficulty = overrides.difficulty;
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
