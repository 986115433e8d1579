import type { Block } from '@ethereumjs/block';
import { TransactionType, type TypedTransaction } from '@ethereumjs/tx';
import { createContractAddress } from '@ethereumjs/util';
import { BLOB_GAS_PER_BLOB, effectiveGasPrice } from '../primitives/fees.ts';
import { quantityToHex, toHex } from '../primitives/hex.ts';
import { encodeTxReceipt, type TxReceipt } from './txReceipt.ts';

export interface RenderedReceipts {
  /** Consensus encodings, as they go into the receipts trie. */
  encoded: Uint8Array[];
  /** The JSON text of each receipt in the geth/Erigon shape served by eth_getBlockReceipts. */
  json: string[];
}

const quantity = (n: bigint | number) => `"${quantityToHex(n)}"`;
const data = (b: Uint8Array) => `"${toHex(b)}"`;

/**
 * Renders a block's receipts once, at import, so serving them later is a lookup and a write.
 * Shape: `root` before Byzantium and `status` after, blob fields only on type-3
 * receipts, `contractAddress` for every creation (also failed ones, as geth does), block-wide
 * `logIndex`, and `blockTimestamp` on logs.
 */
export function renderReceipts(
  block: Block,
  receipts: TxReceipt[],
  /** The consensus encodings when the caller has them already (the EVM's block execution). */
  encodings?: readonly Uint8Array[],
): RenderedReceipts {
  const header = block.header;
  const blockHash = data(block.hash());
  const blockNumber = quantity(header.number);
  const blockTimestamp = quantity(header.timestamp);
  const blobGasPrice = header.excessBlobGas !== undefined ? header.getBlobGasPrice() : undefined;
  const encoded: Uint8Array[] = [];
  const json: string[] = [];
  let previousCumulative = 0n;
  let logIndex = 0;
  block.transactions.forEach((tx, i) => {
    const receipt = receipts[i];
    if (!receipt) throw new Error(`no receipt for transaction ${i} of block ${header.number}`);
    encoded.push(encodings?.[i] ?? encodeTxReceipt(receipt, tx.type));
    const from = tx.getSenderAddress();
    const transactionHash = data(tx.hash());
    const transactionIndex = quantity(i);
    const logs = receipt.logs.map(([address, topics, logData]) => {
      const text =
        `{"address":${data(address)},"topics":[${topics.map(data).join(',')}],"data":${data(logData)},` +
        `"blockNumber":${blockNumber},"transactionHash":${transactionHash},"transactionIndex":${transactionIndex},` +
        `"blockHash":${blockHash},"blockTimestamp":${blockTimestamp},"logIndex":${quantity(logIndex)},"removed":false}`;
      logIndex++;
      return text;
    });
    const outcome =
      'stateRoot' in receipt ? `"root":${data(receipt.stateRoot)}` : `"status":${quantity(receipt.status)}`;
    const creation = tx.to === undefined;
    const contractAddress = creation ? data(createContractAddress(from, tx.nonce).bytes) : 'null';
    const blobFields =
      tx.type === TransactionType.BlobEIP4844 && blobGasPrice !== undefined
        ? `,"blobGasUsed":${quantity(BigInt(blobCount(tx)) * BLOB_GAS_PER_BLOB)},"blobGasPrice":${quantity(blobGasPrice)}`
        : '';
    json.push(
      `{"blockHash":${blockHash},"blockNumber":${blockNumber},"contractAddress":${contractAddress},` +
        `"cumulativeGasUsed":${quantity(receipt.cumulativeBlockGasUsed)},` +
        `"effectiveGasPrice":${quantity(effectiveGasPrice(tx, header.baseFeePerGas))},"from":${data(from.bytes)},` +
        `"gasUsed":${quantity(receipt.cumulativeBlockGasUsed - previousCumulative)},"logs":[${logs.join(',')}],` +
        `"logsBloom":${data(receipt.bitvector)},${outcome},"to":${creation ? 'null' : data(tx.to.bytes)},` +
        `"transactionHash":${transactionHash},"transactionIndex":${transactionIndex},"type":${quantity(tx.type)}${blobFields}}`,
    );
    previousCumulative = receipt.cumulativeBlockGasUsed;
  });
  return { encoded, json };
}

function blobCount(tx: TypedTransaction): number {
  return 'blobVersionedHashes' in tx ? tx.blobVersionedHashes.length : 0;
}
