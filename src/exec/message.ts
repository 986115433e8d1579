import { toChecksumAddress } from '@ethereumjs/util';
import type { CallRequest } from '../core/call.ts';
import { toHex } from '../primitives/hex.ts';
import { CallValidationError } from './callValidation.ts';

/**
 * Whose rules a simulated call follows. `geth` (eth_call, eth_estimateGas, eth_createAccessList,
 * debug_traceCall): a message, not a transaction — `type` plays no part, one EIP-1559 field given
 * means the other is 0, geth's fee checks in geth's words, and the sender pays for its gas. `parity`
 * (trace_call, trace_callMany, trace_rawTransaction): Reth's pure simulation, the call's own type,
 * nothing charged (docs/tracing.md).
 */
export type Dialect = 'geth' | 'parity';

const ZERO_ADDRESS = new Uint8Array(20);

/** The gas a call runs with: what it names, at most the cap; the cap when it names none. */
export function clampGas(gas: bigint | undefined, cap: bigint): bigint {
  return gas === undefined || gas > cap ? cap : gas;
}

/**
 * The one place a call request becomes the message the EVM runs, for every method that simulates
 * calls. Before London (no base fee) only `gasPrice` counts, as geth's ToMessage has it: EIP-1559
 * fee fields play no part, where a fork without EIP-1559 could not even build the transaction.
 */
export function callMessage(
  call: CallRequest,
  baseFee: bigint | undefined,
  gasCap: bigint,
  dialect: Dialect,
): CallRequest & { gas: bigint } {
  const { maxFeePerGas, maxPriorityFeePerGas, type, ...rest } = call;
  const out: CallRequest = rest;
  if (dialect === 'parity' && type !== undefined) out.type = type;
  if (baseFee !== undefined && (maxFeePerGas !== undefined || maxPriorityFeePerGas !== undefined)) {
    if (dialect === 'geth' && out.gasPrice === undefined) {
      out.maxFeePerGas = maxFeePerGas ?? 0n;
      out.maxPriorityFeePerGas = maxPriorityFeePerGas ?? 0n;
    } else {
      if (maxFeePerGas !== undefined) out.maxFeePerGas = maxFeePerGas;
      if (maxPriorityFeePerGas !== undefined) out.maxPriorityFeePerGas = maxPriorityFeePerGas;
    }
  }
  return { ...out, gas: clampGas(call.gas, gasCap) };
}

/**
 * geth's fee checks (core/state_transition.go preCheck), worded as geth words them, for the geth
 * dialect; they run before the transaction is built, so its own checks never speak first. A call
 * with no price at all skips them.
 */
export function checkGethFees(call: CallRequest, baseFee: bigint | undefined): void {
  if (baseFee === undefined) return;
  const feeCap = call.maxFeePerGas ?? call.gasPrice ?? 0n;
  const tip = call.maxPriorityFeePerGas ?? call.gasPrice ?? 0n;
  if (feeCap === 0n && tip === 0n) return;
  const from = toChecksumAddress(toHex(call.from ?? ZERO_ADDRESS));
  if (feeCap < tip) {
    throw new CallValidationError(
      0,
      `max priority fee per gas higher than max fee per gas: address ${from}, maxPriorityFeePerGas: ${tip}, maxFeePerGas: ${feeCap}`,
    );
  }
  // A price of 0 (fee cap 0) runs with a zero base fee, so only a non-zero cap can fall short.
  if (feeCap !== 0n && feeCap < baseFee) {
    throw new CallValidationError(
      0,
      `max fee per gas less than block base fee: address ${from}, maxFeePerGas: ${feeCap}, baseFee: ${baseFee}`,
    );
  }
}
