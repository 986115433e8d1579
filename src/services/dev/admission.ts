import type { BlockHeader } from '@ethereumjs/block';
import type { Common } from '@ethereumjs/common';
import { RLP } from '@ethereumjs/rlp';
import {
  createBlob4844TxFromSerializedNetworkWrapper,
  createMinimal4844TxFromNetworkWrapper,
  createTxFromRLP,
  TransactionType,
  type TypedTransaction,
} from '@ethereumjs/tx';
import { type Address, equalsBytes, KECCAK256_NULL } from '@ethereumjs/util';
import { DomainError, RequestFailed, TransactionRejected } from '../../core/errors.ts';
import type { HeadStateView } from '../../ingest/engines.ts';
import { BLOB_GAS_PER_BLOB } from '../../primitives/fees.ts';

/** The chain a transaction is checked against: the head's state and header, the next block's rules. */
export interface Head {
  state: HeadStateView;
  header: BlockHeader | null;
  common: Common;
}

/** A signed transaction as sent (eth_sendRawTransaction), decoded with the next block's rules. */
export function decodeSent(raw: Uint8Array, common: Common): TypedTransaction {
  try {
    return raw[0] === TransactionType.BlobEIP4844
      ? blobTransaction(raw, common)
      : createTxFromRLP(raw, { common });
  } catch (e) {
    if (e instanceof DomainError) throw e;
    throw new RequestFailed(`invalid transaction: ${firstLine((e as Error).message)}`);
  }
}

/**
 * The checks a node makes before accepting a transaction into its pool, each with a message that
 * says what to fix; answers the sender.
 */
export async function admit(tx: TypedTransaction, head: Head): Promise<Address> {
  const { common, header, state } = head;
  if (tx.supports(155) || tx.type > 0) {
    const chainId = 'chainId' in tx ? (tx.chainId as bigint) : common.chainId();
    if (chainId !== common.chainId()) {
      throw new RequestFailed(
        `invalid chain id: transaction has ${chainId}, this chain is ${common.chainId()}`,
      );
    }
  }
  let sender: Address;
  try {
    sender = tx.getSenderAddress();
  } catch (e) {
    throw new RequestFailed(`invalid sender: ${firstLine((e as Error).message)}`);
  }
  const account = await state.getAccount(sender);
  // EIP-3607: an account with code cannot send (a 7702 delegation excepted). Refused here, as geth's
  // pool does, since the block it would be mined into could not include it.
  if (account && !equalsBytes(account.codeHash, KECCAK256_NULL)) {
    const code = await state.getCode(sender);
    if (!(code.length === 23 && code[0] === 0xef && code[1] === 0x01 && code[2] === 0x00))
      throw new RequestFailed(`sender not an eoa: ${sender} has code`);
  }
  const nonce = account?.nonce ?? 0n;
  if (tx.nonce < nonce) throw new RequestFailed(`nonce too low: next nonce ${nonce}, tx nonce ${tx.nonce}`);
  if (header && tx.gasLimit > header.gasLimit) {
    throw new RequestFailed(
      `exceeds block gas limit: gas ${tx.gasLimit}, block gas limit ${header.gasLimit}`,
    );
  }
  const intrinsic = tx.getIntrinsicGas();
  if (tx.gasLimit < intrinsic)
    throw new RequestFailed(`intrinsic gas too low: gas ${tx.gasLimit}, minimum needed ${intrinsic}`);
  const baseFee = header?.baseFeePerGas !== undefined ? header.calcNextBaseFee() : 0n;
  const feeCap = 'maxFeePerGas' in tx ? tx.maxFeePerGas : tx.gasPrice;
  if (feeCap < baseFee) {
    throw new RequestFailed(
      `max fee per gas less than block base fee: maxFeePerGas ${feeCap}, baseFee ${baseFee}`,
    );
  }
  let blobCost = 0n;
  if ('maxFeePerBlobGas' in tx && header) {
    const blobFee = header.calcNextBlobGasPrice(common);
    if (tx.maxFeePerBlobGas < blobFee) {
      throw new RequestFailed(
        `max fee per blob gas less than block blob gas fee: maxFeePerBlobGas ${tx.maxFeePerBlobGas}, blobBaseFee ${blobFee}`,
      );
    }
    blobCost = BigInt(tx.blobVersionedHashes.length) * BLOB_GAS_PER_BLOB * tx.maxFeePerBlobGas;
  }
  const cost = tx.gasLimit * feeCap + tx.value + blobCost;
  const balance = account?.balance ?? 0n;
  if (balance < cost) {
    throw new TransactionRejected(
      `insufficient funds for gas * price + value: balance ${balance}, tx cost ${cost}`,
    );
  }
  return sender;
}

/**
 * A blob transaction as sent: the network form with its blobs, commitments and proofs, which are
 * checked (commitments against the versioned hashes, proofs by KZG) and then left out, as blocks
 * carry the transaction alone. Both proof forms are taken: EIP-4844 blob proofs (what viem and most
 * tools send today) and EIP-7594 cell proofs. A blob transaction without its blobs is refused.
 */
function blobTransaction(raw: Uint8Array, common: Common): TypedTransaction {
  const values = RLP.decode(raw.subarray(1));
  if (!Array.isArray(values) || !Array.isArray(values[0])) {
    throw new RequestFailed(
      'invalid transaction: a blob transaction must be sent with its blobs (network form)',
    );
  }
  const wrapped = createBlob4844TxFromSerializedNetworkWrapper(raw, { common });
  return createMinimal4844TxFromNetworkWrapper(wrapped, { common });
}

export function firstLine(message: string): string {
  return message.split('\n')[0] ?? message;
}
