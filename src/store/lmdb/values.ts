// Binary values of the LMDB store. Layouts are fixed-width where they can be so that reads are
// offset arithmetic, never a parse.

import { bigIntToUnpaddedBytes, bytesToBigInt } from '@ethereumjs/util';
import type { FlatAccount, TxLocation } from '../types.ts';
import { sliceChecksum } from './checksum.ts';
import { readUint64, writeUint64 } from './keys.ts';

const HASH_LENGTH = 32;
const U32 = 4;

/**
 * A view that is a plain Uint8Array: lmdb-js hands out Buffers, whose `slice` shares memory instead
 * of copying, a trap for callers that expect Uint8Array semantics.
 */
export function plainBytes(bytes: Uint8Array): Uint8Array {
  return new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

// Account history value: nonce (8, BE) ‖ codeHash (32) ‖ balance (minimal BE). A deleted account is
// the empty value, so "no account at N" is as cheap to answer as any other version.
const NONCE_LENGTH = 8;
const BALANCE_OFFSET = NONCE_LENGTH + HASH_LENGTH;

export function encodeAccount(account: FlatAccount | null): Uint8Array {
  if (account === null) return new Uint8Array(0);
  if (account.codeHash.length !== HASH_LENGTH) throw new RangeError('code hash must be 32 bytes');
  const balance = bigIntToUnpaddedBytes(account.balance);
  const value = new Uint8Array(BALANCE_OFFSET + balance.length);
  writeUint64(value, 0, account.nonce); // EIP-2681 bounds the nonce to 64 bits
  value.set(account.codeHash, NONCE_LENGTH);
  value.set(balance, BALANCE_OFFSET);
  return value;
}

export function decodeAccount(value: Uint8Array): FlatAccount | null {
  if (value.length === 0) return null;
  return {
    nonce: readUint64(value),
    codeHash: plainBytes(value.subarray(NONCE_LENGTH, BALANCE_OFFSET)),
    balance: bytesToBigInt(value.subarray(BALANCE_OFFSET)),
  };
}

/** Storage values are kept minimal so that zero has exactly one form, the empty value. */
export function minimalValue(value: Uint8Array): Uint8Array {
  let start = 0;
  while (start < value.length && value[start] === 0) start++;
  return value.subarray(start);
}

// Transaction index value: blockHash (32) ‖ blockNumber (8, BE) ‖ index (4, BE).
export function encodeTxLocation(blockHash: Uint8Array, blockNumber: bigint, index: number): Uint8Array {
  const value = new Uint8Array(HASH_LENGTH + 8 + U32);
  value.set(blockHash);
  writeUint64(value, HASH_LENGTH, blockNumber);
  dataView(value).setUint32(HASH_LENGTH + 8, index);
  return value;
}

export function decodeTxLocation(value: Uint8Array): TxLocation {
  return {
    blockHash: plainBytes(value.subarray(0, HASH_LENGTH)),
    blockNumber: readUint64(value, HASH_LENGTH),
    index: dataView(value).getUint32(HASH_LENGTH + 8),
  };
}

// Consensus receipts value: count (4) ‖ length of each receipt (4 each) ‖ the receipts back to back.
export function encodeReceipts(receipts: Uint8Array[]): Uint8Array {
  const header = U32 * (1 + receipts.length);
  let size = header;
  for (const receipt of receipts) size += receipt.length;
  const value = new Uint8Array(size);
  const view = dataView(value);
  view.setUint32(0, receipts.length);
  let offset = header;
  receipts.forEach((receipt, i) => {
    view.setUint32(U32 * (1 + i), receipt.length);
    value.set(receipt, offset);
    offset += receipt.length;
  });
  return value;
}

export function decodeReceipts(value: Uint8Array): Uint8Array[] {
  const view = dataView(value);
  const count = view.getUint32(0);
  const receipts: Uint8Array[] = [];
  let offset = U32 * (1 + count);
  for (let i = 0; i < count; i++) {
    const length = view.getUint32(U32 * (1 + i));
    receipts.push(plainBytes(value.subarray(offset, offset + length)));
    offset += length;
  }
  return receipts;
}

/**
 * A block's receipts as the JSON array text served as is, plus the boundaries (u32 each, BE): count
 * + 1 UTF-8 byte offsets, where each receipt starts and then where one after the last would start,
 * followed by the CRC-32 of each receipt's bytes. Receipt i ends one byte (its ',' or the closing ']')
 * before boundary i + 1, so it is a byte range of the text, and one receipt is served (and checked
 * against its own checksum) without reading the rest of a big block's text.
 */
export interface RenderedReceipts {
  text: Uint8Array;
  boundaries: Uint8Array;
}

export function renderReceiptsJson(receipts: string[]): RenderedReceipts {
  const count = receipts.length;
  const boundaries = new Uint8Array(U32 * (2 * count + 1));
  const view = dataView(boundaries);
  // Each receipt is UTF-8 encoded once; its encoded length gives the boundaries for free.
  const parts: Uint8Array[] = [OPEN_BRACKET];
  let offset = 1; // past '['
  receipts.forEach((receipt, i) => {
    view.setUint32(U32 * i, offset);
    const encoded = Buffer.from(receipt, 'utf8');
    view.setUint32(U32 * (count + 1 + i), sliceChecksum(encoded));
    parts.push(encoded, i === count - 1 ? CLOSE_BRACKET : COMMA);
    offset += encoded.length + 1; // the receipt and its ',' or ']'
  });
  if (count === 0) parts.push(CLOSE_BRACKET);
  view.setUint32(U32 * count, offset);
  return { text: Buffer.concat(parts), boundaries };
}

const OPEN_BRACKET = Buffer.from('[');
const CLOSE_BRACKET = Buffer.from(']');
const COMMA = Buffer.from(',');

/**
 * The byte range [start, end) of receipt `index` in the text and the checksum of those bytes, or
 * null when there is no such receipt.
 */
export function receiptByteRange(
  boundaries: Uint8Array,
  index: number,
): { start: number; end: number; checksum: number } | null {
  const count = (boundaries.length / U32 - 1) / 2;
  if (!Number.isInteger(index) || index < 0 || index >= count) return null;
  const view = dataView(boundaries);
  return {
    start: view.getUint32(U32 * index),
    end: view.getUint32(U32 * (index + 1)) - 1,
    checksum: view.getUint32(U32 * (count + 1 + index)),
  };
}

function dataView(bytes: Uint8Array): DataView {
  return new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

/** What one block wrote, kept so that the block can be removed again (`unwindTo`). */
export interface BlockChanges {
  txHashes: Uint8Array[];
  accounts: Uint8Array[];
  wipes: Uint8Array[];
  /** [address, 32-byte slot] */
  slots: Array<[Uint8Array, Uint8Array]>;
}

/** Four big-endian u32 counts, then the fixed-size entries: hashes, addresses, wipes, address ‖ slot. */
export function encodeBlockChanges(changes: BlockChanges): Uint8Array {
  const sizes = [32, 20, 20, 52];
  const lists: Uint8Array[][] = [
    changes.txHashes,
    changes.accounts,
    changes.wipes,
    changes.slots.map(([address, slot]) => {
      const entry = new Uint8Array(52);
      entry.set(address);
      entry.set(slot, 52 - slot.length);
      return entry;
    }),
  ];
  const out = new Uint8Array(16 + lists.reduce((n, list, i) => n + list.length * (sizes[i] as number), 0));
  const view = new DataView(out.buffer);
  let offset = 16;
  lists.forEach((list, i) => {
    view.setUint32(i * 4, list.length);
    for (const entry of list) {
      out.set(entry, offset);
      offset += sizes[i] as number;
    }
  });
  return out;
}

export function decodeBlockChanges(value: Uint8Array): BlockChanges {
  const view = new DataView(value.buffer, value.byteOffset, value.byteLength);
  const sizes = [32, 20, 20, 52];
  let offset = 16;
  const lists = sizes.map((size, i) => {
    const count = view.getUint32(i * 4);
    const list: Uint8Array[] = [];
    for (let k = 0; k < count; k++, offset += size)
      list.push(plainBytes(value.subarray(offset, offset + size)));
    return list;
  });
  const [txHashes = [], accounts = [], wipes = [], slots = []] = lists;
  return { txHashes, accounts, wipes, slots: slots.map((e) => [e.subarray(0, 20), e.subarray(20)]) };
}
