import { RLP } from '@ethereumjs/rlp';
import { bigIntToBytes } from '@ethereumjs/util';
import { keccak256 } from '../primitives/keccak.ts';

// A transaction's receipt in its consensus form: the status (or, before Byzantium, the state root),
// the cumulative gas, the logs' bloom and the logs, as the receipts trie and the JSON answers take it.

/** A log as RLP lists it: the emitting address, its topics and its data. */
export type ReceiptLog = [address: Uint8Array, topics: Uint8Array[], data: Uint8Array];

interface BaseTxReceipt {
  /** Gas used by this and every earlier transaction of the block. */
  cumulativeBlockGasUsed: bigint;
  /** The bloom of the receipt's logs (256 bytes). */
  bitvector: Uint8Array;
  logs: ReceiptLog[];
}

/** Before Byzantium: the state root after the transaction. */
export interface PreByzantiumTxReceipt extends BaseTxReceipt {
  stateRoot: Uint8Array;
}

/** From Byzantium on: whether the transaction succeeded. */
export interface PostByzantiumTxReceipt extends BaseTxReceipt {
  status: 0 | 1;
}

export type TxReceipt = PreByzantiumTxReceipt | PostByzantiumTxReceipt;

const BLOOM_BYTES = 256;

/** The 2048-bit bloom of logs: three bits per address and per topic, from their keccak hash. */
export class LogsBloom {
  readonly bitvector: Uint8Array;

  constructor(bitvector?: Uint8Array) {
    this.bitvector = bitvector ?? new Uint8Array(BLOOM_BYTES);
  }

  /** Sets the three bits of an address or topic. */
  add(item: Uint8Array): void {
    const h = keccak256(item);
    for (let i = 0; i < 6; i += 2) {
      const bit = (((h[i] as number) << 8) | (h[i + 1] as number)) & 2047;
      const at = BLOOM_BYTES - 1 - (bit >> 3);
      this.bitvector[at] = (this.bitvector[at] as number) | (1 << (bit & 7));
    }
  }

  /** Adds every bit of `other`. */
  or(other: Uint8Array): void {
    for (let i = 0; i < BLOOM_BYTES; i++)
      this.bitvector[i] = (this.bitvector[i] as number) | (other[i] as number);
  }
}

/** The receipt as the receipts trie holds it: EIP-2718 typed receipts are prefixed with their type. */
export function encodeTxReceipt(receipt: TxReceipt, txType: number): Uint8Array {
  const outcome =
    'stateRoot' in receipt ? receipt.stateRoot : receipt.status === 0 ? new Uint8Array(0) : Uint8Array.of(1);
  const body = RLP.encode([
    outcome,
    bigIntToBytes(receipt.cumulativeBlockGasUsed),
    receipt.bitvector,
    receipt.logs,
  ]);
  if (txType === 0) return body;
  const typed = new Uint8Array(body.length + 1);
  typed[0] = txType;
  typed.set(body, 1);
  return typed;
}
