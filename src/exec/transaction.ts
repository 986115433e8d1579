import type { Common } from '@ethereumjs/common';
import { createTx, type TypedTransaction } from '@ethereumjs/tx';
import { type Address, bigIntToUnpaddedBytes } from '@ethereumjs/util';
import type { CallRequest } from '../core/call.ts';
import { toHex } from '../primitives/hex.ts';
import { CallValidationError } from './callValidation.ts';
import { NO_EXTRA_PARAMS } from './environment.ts';

// A simulated call as the transaction ethereumjs runs: its type, its price, its gas floor.

/**
 * The unsigned transaction a call runs as, of the type the call names (or the newest its fields
 * need), signed by nobody: its sender is whoever the request says.
 */
export function callTransaction(
  call: CallRequest,
  at: { caller: Address; nonce: bigint; gasLimit: bigint; price: bigint; index: number },
  common: Common,
  baseFee: bigint | undefined,
): TypedTransaction {
  const { caller, nonce, gasLimit, price, index } = at;
  const base = {
    nonce,
    gasLimit,
    to: call.to ?? undefined,
    value: call.value ?? 0n,
    data: call.data ?? new Uint8Array(),
    chainId: common.chainId(),
  };
  const accessList = (call.accessList ?? []).map((e) => ({
    address: toHex(e.address),
    storageKeys: e.storageKeys.map((k) => toHex(k)),
  }));
  const type = txType(call);
  const fees =
    type >= 2
      ? {
          maxFeePerGas: call.maxFeePerGas ?? price,
          maxPriorityFeePerGas: call.maxPriorityFeePerGas ?? (price === 0n ? 0n : price - (baseFee ?? 0n)),
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
      params: NO_EXTRA_PARAMS,
    });
  } catch (e) {
    throw new CallValidationError(index, firstLine((e as Error).message));
  }
  // The call is unsigned: its sender is whoever the request says. Frozen afterwards as ethereumjs
  // freezes its own: only a frozen transaction caches its data gas, which is otherwise summed
  // byte by byte in bigints on each of the several times a call asks for it.
  Object.defineProperty(tx, 'getSenderAddress', { value: () => caller });
  Object.freeze(tx);
  return tx;
}

/**
 * The price per gas the call pays. Legacy `gasPrice`, or the EIP-1559 pair: min(maxFee, base + tip).
 * A non-zero cap below the base fee is an error; no price at all means 0.
 */
export function effectivePrice(call: CallRequest, baseFee: bigint | undefined, index: number): bigint {
  const base = baseFee ?? 0n;
  if (call.gasPrice !== undefined) {
    if (call.gasPrice !== 0n && call.gasPrice < base) {
      throw new CallValidationError(
        index,
        `gas price less than block base fee: gasPrice ${call.gasPrice}, baseFee ${base}`,
      );
    }
    return call.gasPrice;
  }
  if (call.maxFeePerGas === undefined && call.maxPriorityFeePerGas === undefined) return 0n;
  const tip = call.maxPriorityFeePerGas ?? 0n;
  const cap = call.maxFeePerGas ?? base + tip;
  if (cap !== 0n && cap < base) {
    throw new CallValidationError(
      index,
      `max fee per gas less than block base fee: maxFeePerGas ${cap}, baseFee ${base}`,
    );
  }
  if (tip > cap) {
    throw new CallValidationError(
      index,
      `max priority fee per gas higher than max fee per gas: ${tip} > ${cap}`,
    );
  }
  return cap === 0n ? 0n : base + tip < cap ? base + tip : cap;
}

/** The type a call's transaction has: the one it names, or the newest its fields need. */
export function txType(call: CallRequest): number {
  if (call.type !== undefined) return call.type;
  if (call.authorizationList !== undefined) return 4;
  if (call.blobVersionedHashes !== undefined) return 3;
  if (call.maxFeePerGas !== undefined || call.maxPriorityFeePerGas !== undefined) return 2;
  if (call.accessList !== undefined) return 1;
  return 0;
}

/** EIP-7623: a transaction pays at least 10 gas per calldata token beyond the base cost. */
export function floorGas(tx: TypedTransaction): bigint {
  const common = tx.common;
  if (!common.isActivatedEIP(7623)) return 0n;
  // Counted in a number: a bigint sum allocates on every byte.
  const data = tx.data;
  let tokens = 0;
  for (let i = 0; i < data.length; i++) tokens += data[i] === 0 ? 1 : 4;
  return common.param('txGas') + BigInt(tokens) * common.param('totalCostFloorPerToken');
}

export function bigMax(a: bigint, b: bigint): bigint {
  return a > b ? a : b;
}

export function blobGas(tx: TypedTransaction, common: Common): bigint {
  return 'blobVersionedHashes' in tx
    ? BigInt(tx.blobVersionedHashes.length) * common.param('blobGasPerBlob')
    : 0n;
}

export function firstLine(message: string): string {
  return (message.split('\n')[0] ?? message).replace(/ \(block number=.*$|-block number=.*$/, '');
}
