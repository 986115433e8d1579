import type { Common } from '@ethereumjs/common';
import { RLP } from '@ethereumjs/rlp';
import {
  createBlob4844TxFromSerializedNetworkWrapper,
  createMinimal4844TxFromNetworkWrapper,
  createTxFromRLP,
  TransactionType,
  type TypedTransaction,
} from '@ethereumjs/tx';

/**
 * A signed transaction as a client sends it (an EIP-2718 envelope): a blob transaction either bare
 * or, as eth_sendRawTransaction and bundles carry it, with its blobs (the network form, whose blobs
 * are checked against their commitments and then dropped). Throws ethereumjs's error for one that
 * does not decode.
 */
export function decodeSignedTransaction(raw: Uint8Array, common: Common): TypedTransaction {
  if (raw[0] === TransactionType.BlobEIP4844) {
    const values = RLP.decode(raw.subarray(1));
    if (Array.isArray(values) && Array.isArray(values[0]))
      return createMinimal4844TxFromNetworkWrapper(
        createBlob4844TxFromSerializedNetworkWrapper(raw, { common }),
        { common },
      );
  }
  return createTxFromRLP(raw, { common });
}
