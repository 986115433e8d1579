import type { TypedTransaction } from '@ethereumjs/tx';

/** EIP-4844's gas per blob, unchanged by every fork since (blob counts changed, not blob size). */
export const BLOB_GAS_PER_BLOB = 131072n;

/** What the sender paid per gas: the legacy price, or base fee plus the tip the fee cap allows. */
export function effectiveGasPrice(tx: TypedTransaction, baseFee: bigint | undefined): bigint {
  if ('maxFeePerGas' in tx) {
    const base = baseFee ?? 0n;
    const tip =
      tx.maxPriorityFeePerGas < tx.maxFeePerGas - base ? tx.maxPriorityFeePerGas : tx.maxFeePerGas - base;
    return base + tip;
  }
  return tx.gasPrice;
}
