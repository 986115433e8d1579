import type { BlockHeader } from '@ethereumjs/block';
import { TransactionType, type TypedTransaction } from '@ethereumjs/tx';
import { bytesToBigInt } from '@ethereumjs/util';
import { effectiveGasPrice } from '../primitives/fees.ts';
import { quantityToHex, toHex } from '../primitives/hex.ts';

type Hex = `0x${string}`;

/** Where a mined transaction sits; what the wire object needs from its block. */
export interface TxPosition {
  blockHash: Uint8Array;
  blockNumber: bigint;
  blockTimestamp: bigint;
  index: number;
  /** The block's base fee, for the effective gas price of fee-market transactions. */
  baseFee: bigint | undefined;
}

export function txPosition(header: BlockHeader, index: number): TxPosition {
  return {
    blockHash: header.hash(),
    blockNumber: header.number,
    blockTimestamp: header.timestamp,
    index,
    baseFee: header.baseFeePerGas,
  };
}

export interface RpcAccessListEntry {
  address: Hex;
  storageKeys: Hex[];
}

export interface RpcAuthorization {
  chainId: Hex;
  address: Hex;
  nonce: Hex;
  yParity: Hex;
  r: Hex;
  s: Hex;
}

/** geth's RPCTransaction: optional keys are the ones it omits for some transaction types. */
export interface RpcTransaction {
  blockHash: Hex | null;
  blockNumber: Hex | null;
  blockTimestamp: Hex | null;
  from: Hex;
  gas: Hex;
  gasPrice: Hex;
  maxFeePerGas?: Hex;
  maxPriorityFeePerGas?: Hex;
  maxFeePerBlobGas?: Hex;
  hash: Hex;
  input: Hex;
  nonce: Hex;
  to: Hex | null;
  transactionIndex: Hex | null;
  value: Hex;
  type: Hex;
  accessList?: RpcAccessListEntry[];
  chainId?: Hex;
  blobVersionedHashes?: Hex[];
  authorizationList?: RpcAuthorization[];
  v: Hex;
  r: Hex;
  s: Hex;
  yParity?: Hex;
}

/**
 * A transaction as geth's eth_getTransactionBy* and full blocks show it, keys in geth's order.
 * `at` is null for a transaction not in a block: the block fields are then null and a fee-market
 * transaction's gasPrice is its fee cap, as geth reports pending transactions.
 */
export function formatTransaction(tx: TypedTransaction, at: TxPosition | null): RpcTransaction {
  const v = tx.v ?? 0n;
  const typed = tx.type !== TransactionType.Legacy;
  return {
    blockHash: at && toHex(at.blockHash),
    blockNumber: at && quantityToHex(at.blockNumber),
    blockTimestamp: at && quantityToHex(at.blockTimestamp),
    from: toHex(tx.getSenderAddress().bytes),
    gas: quantityToHex(tx.gasLimit),
    gasPrice: quantityToHex(gasPrice(tx, at)),
    ...('maxFeePerGas' in tx && {
      maxFeePerGas: quantityToHex(tx.maxFeePerGas),
      maxPriorityFeePerGas: quantityToHex(tx.maxPriorityFeePerGas),
    }),
    ...('maxFeePerBlobGas' in tx && { maxFeePerBlobGas: quantityToHex(tx.maxFeePerBlobGas) }),
    hash: toHex(tx.hash()),
    input: toHex(tx.data),
    nonce: quantityToHex(tx.nonce),
    to: tx.to ? toHex(tx.to.bytes) : null,
    transactionIndex: at && quantityToHex(at.index),
    value: quantityToHex(tx.value),
    type: quantityToHex(tx.type),
    ...typedFields(tx, v),
    v: quantityToHex(v),
    r: quantityToHex(tx.r ?? 0n),
    s: quantityToHex(tx.s ?? 0n),
    ...(typed && { yParity: quantityToHex(v) }),
  };
}

type TypedFields = Pick<
  RpcTransaction,
  'accessList' | 'chainId' | 'blobVersionedHashes' | 'authorizationList'
>;

function typedFields(tx: TypedTransaction, v: bigint): TypedFields {
  if (tx.type === TransactionType.Legacy) {
    const chainId = legacyChainId(v);
    return chainId === undefined ? {} : { chainId: quantityToHex(chainId) };
  }
  if (!('accessList' in tx)) return {};
  return {
    // Present even when empty: geth omits only a missing list, and typed transactions always have one.
    accessList: tx.accessList.map(([address, keys]) => ({
      address: toHex(address),
      storageKeys: keys.map(toHex),
    })),
    chainId: quantityToHex(tx.chainId),
    ...('blobVersionedHashes' in tx &&
      tx.blobVersionedHashes.length > 0 && {
        blobVersionedHashes: tx.blobVersionedHashes.map((h) => h.toLowerCase() as Hex),
      }),
    ...('authorizationList' in tx &&
      tx.authorizationList.length > 0 && {
        authorizationList: tx.authorizationList.map(([chainId, address, nonce, yParity, r, s]) => ({
          chainId: quantityToHex(bytesToBigInt(chainId)),
          address: toHex(address),
          nonce: quantityToHex(bytesToBigInt(nonce)),
          yParity: quantityToHex(bytesToBigInt(yParity)),
          r: quantityToHex(bytesToBigInt(r)),
          s: quantityToHex(bytesToBigInt(s)),
        })),
      }),
  };
}

/** What the sender paid per gas once mined; a pending fee-market transaction shows its fee cap. */
function gasPrice(tx: TypedTransaction, at: TxPosition | null): bigint {
  if ('maxFeePerGas' in tx && (!at || at.baseFee === undefined)) return tx.maxFeePerGas;
  return effectiveGasPrice(tx, at?.baseFee);
}

/**
 * The chain id an EIP-155 signature commits to (v = chainId·2 + 35 or 36); undefined for the
 * pre-EIP-155 v of 27 or 28, where geth leaves chainId out.
 */
function legacyChainId(v: bigint): bigint | undefined {
  if (v < 35n) return undefined;
  const id = (v - 35n) / 2n;
  return id === 0n ? undefined : id;
}
