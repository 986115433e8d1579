// Deterministic block writes for the store tests. Hashes are not real keccak hashes, only distinct
// and reproducible: a child process rebuilding block n gets exactly the bytes the parent expects.

import assert from 'node:assert/strict';
import type { BlockWrite, ChainStore, FlatAccount } from '../../src/store/types.ts';

export const EMPTY_CODE_HASH = hexBytes('c5d2460186f7233c927e7db2dcc703c0e500b653ca82273b7bfad8045d85a470');

/** 32 distinct bytes for (tag, number, index). */
export function fakeHash(tag: number, number: bigint, index = 0): Uint8Array {
  const hash = new Uint8Array(32);
  const view = new DataView(hash.buffer);
  hash[0] = tag;
  view.setUint32(20, index);
  view.setBigUint64(24, number);
  return hash;
}

export function blockHash(number: bigint): Uint8Array {
  return fakeHash(0xb0, number);
}

/** 19 bytes of `prefix` then `last`: neighbouring addresses differ only in their last byte. */
export function address(last: number, prefix = 0x11): Uint8Array {
  const bytes = new Uint8Array(20).fill(prefix);
  bytes[19] = last;
  return bytes;
}

/** A 32-byte slot key whose last byte is `last`, the rest `fill`. */
export function slot(last: number, fill = 0): Uint8Array {
  const bytes = new Uint8Array(32).fill(fill);
  bytes[31] = last;
  return bytes;
}

export function account(nonce: bigint, balance: bigint, codeHash = EMPTY_CODE_HASH): FlatAccount {
  return { nonce, balance, codeHash };
}

/** A block with no transactions and no state changes, plus whatever `parts` adds. */
export function block(number: bigint, parts: Partial<BlockWrite> = {}): BlockWrite {
  return {
    number,
    hash: blockHash(number),
    header: ascii(`header ${number}`),
    body: ascii(`body ${number}`),
    stateRoot: fakeHash(0x5a, number),
    txHashes: [],
    receipts: [],
    receiptsJson: [],
    trieNodes: [],
    code: [],
    accounts: [],
    storageWipes: [],
    storage: [],
    ...parts,
  };
}

/** Transactions with their consensus and JSON receipts; the JSON holds ',' '[' ']' inside strings. */
export function transactions(
  number: bigint,
  count: number,
): Pick<BlockWrite, 'txHashes' | 'receipts' | 'receiptsJson'> {
  const indexes = Array.from({ length: count }, (_, i) => i);
  return {
    txHashes: indexes.map((i) => txHash(number, i)),
    receipts: indexes.map((i) => ascii(`receipt ${number}/${i}`.repeat(i + 1))),
    receiptsJson: indexes.map((i) =>
      JSON.stringify({
        blockNumber: `0x${number.toString(16)}`,
        transactionIndex: `0x${i.toString(16)}`,
        logs: [{ data: `0x${'ab'.repeat(i)}`, topics: ['[x,y]'] }],
        status: '0x1',
      }),
    ),
  };
}

export function txHash(number: bigint, index: number): Uint8Array {
  return fakeHash(0x7c, number, index);
}

// The chain the crash test writes and verifies: every block carries every kind of record, and its
// state changes are a function of the block number, so any block's expected contents are known.
const CHAIN_TXS = 40;
const CHAIN_ACCOUNTS = Array.from({ length: 8 }, (_, i) => address(i, 0x22));
const CHAIN_SLOTS = Array.from({ length: 16 }, (_, i) => slot(i));

export function chainBlock(number: bigint): BlockWrite {
  return block(number, {
    ...transactions(number, CHAIN_TXS),
    trieNodes: Array.from({ length: CHAIN_TXS }, (_, i) => [
      fakeHash(0x70, number, i),
      ascii(`node ${number}/${i}`),
    ]),
    code: [[fakeHash(0xc0, number), ascii(`code ${number}`)]],
    accounts: CHAIN_ACCOUNTS.map((a) => ({ address: a, account: account(number, number * 1000n) })),
    storage: CHAIN_SLOTS.map((s) => ({ address: address(0, 0x22), slot: s, value: bigEndian(number + 1n) })),
  });
}

/** Fails unless every record of `chainBlock(number)` is in the store. */
export async function assertChainBlock(store: ChainStore, number: bigint): Promise<void> {
  const expected = chainBlock(number);
  const { hash } = expected;
  assert.deepEqual(await store.getCanonicalHash(number), hash, `canonical ${number}`);
  assert.equal(await store.getBlockNumber(hash), number);
  assert.deepEqual(await store.getHeader(hash), expected.header);
  assert.deepEqual(await store.getBody(hash), expected.body);
  assert.deepEqual(await store.getStateRoot(hash), expected.stateRoot);
  assert.deepEqual(await store.getReceipts(hash), expected.receipts);
  assert.equal(textOf(await store.getBlockReceiptsJson(hash)), `[${expected.receiptsJson.join(',')}]`);
  const lastTx = CHAIN_TXS - 1;
  assert.deepEqual(await store.getTxLocation(txHash(number, lastTx)), {
    blockHash: hash,
    blockNumber: number,
    index: lastTx,
  });
  for (const [nodeHash, node] of expected.trieNodes)
    assert.deepEqual(await store.getTrieNode(nodeHash), node);
  for (const [codeHash, code] of expected.code) assert.deepEqual(await store.getCode(codeHash), code);
  for (const { address: a, account: acc } of expected.accounts) {
    assert.deepEqual(await store.getAccountAt(a, number), acc);
  }
  for (const { address: a, slot: s, value } of expected.storage) {
    assert.deepEqual(await store.getStorageAt(a, s, number), value);
  }
}

/** Fails if any record of `chainBlock(number)` is in the store. */
export async function assertNoChainBlock(store: ChainStore, number: bigint): Promise<void> {
  const expected = chainBlock(number);
  assert.equal(await store.getCanonicalHash(number), null);
  assert.equal(await store.getBlockNumber(expected.hash), null);
  assert.equal(await store.getHeader(expected.hash), null);
  assert.equal(await store.getReceipts(expected.hash), null);
  assert.equal(textOf(await store.getBlockReceiptsJson(expected.hash)), null);
  assert.equal(await store.getTxLocation(txHash(number, 0)), null);
  for (const [nodeHash] of expected.trieNodes) assert.equal(await store.getTrieNode(nodeHash), null);
  for (const [codeHash] of expected.code) assert.equal(await store.getCode(codeHash), null);
  for (const { address: a, account: acc } of expected.accounts) {
    assert.notDeepEqual(await store.getAccountAt(a, number), acc);
  }
  for (const { address: a, slot: s, value } of expected.storage) {
    assert.notDeepEqual(await store.getStorageAt(a, s, number), value);
  }
}

/** Minimal big-endian bytes of a non-negative integer (zero is empty). */
export function bigEndian(value: bigint): Uint8Array {
  if (value === 0n) return new Uint8Array(0);
  const hex = value.toString(16);
  return hexBytes(hex.length % 2 === 0 ? hex : `0${hex}`);
}

export function ascii(text: string): Uint8Array {
  return new TextEncoder().encode(text);
}

function hexBytes(hex: string): Uint8Array {
  return Uint8Array.from(Buffer.from(hex, 'hex'));
}

/** Receipts JSON is stored and served as UTF-8 bytes; the suite compares it as text. */
export function textOf(bytes: Uint8Array | null): string | null {
  return bytes === null ? null : new TextDecoder().decode(bytes);
}
