// What can be checked of a store cheaply when it is opened, so that a damaged file ends in one clear
// line at start-up rather than in wrong answers later. LMDB itself checks its meta pages when the
// environment opens (see storeError); this checks the records of the head block, the ones every
// request and every new block build on.

import { RLP } from '@ethereumjs/rlp';
import { bytesToHex, equalsBytes, KECCAK256_RLP } from '@ethereumjs/util';
import { keccak256 } from '../../primitives/keccak.ts';
import { damagedStore, storeError } from '../errors.ts';
import type { ChainStore } from '../types.ts';

// Header field positions in the consensus encoding.
const HEADER_NUMBER = 8;

/** Throws a StoreUnusableError naming the damage when the head block's records do not agree. */
export async function checkStore(store: ChainStore, datadir: string): Promise<void> {
  try {
    await checkHead(store, datadir);
  } catch (error) {
    throw storeError(error, datadir);
  }
}

async function checkHead(store: ChainStore, datadir: string): Promise<void> {
  const damaged = (what: string) => damagedStore(datadir, what);
  const head = await store.getHead();
  const genesisRecord = await store.getMeta('genesis');
  if (head === null) return;
  if (genesisRecord === null) throw damaged('it holds blocks but no genesis record');
  try {
    JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(genesisRecord));
  } catch {
    throw damaged('its genesis record is not valid JSON');
  }
  const block = `head block ${head.number} (${bytesToHex(head.hash)})`;
  const header = await store.getHeader(head.hash);
  if (header === null) throw damaged(`the header of its ${block} is missing`);
  if (!equalsBytes(keccak256(header), head.hash))
    throw damaged(`the stored header of its ${block} does not hash to the block's hash`);
  const fields = decodeList(header);
  const number = fields?.[HEADER_NUMBER];
  if (!(number instanceof Uint8Array) || bytesToBigInt(number) !== head.number)
    throw damaged(`the stored header of its ${block} has another number`);
  const indexed = await store.getBlockNumber(head.hash);
  if (indexed !== head.number) throw damaged(`its ${block} is indexed as block ${indexed}`);
  const stateRoot = await store.getStateRoot(head.hash);
  if (stateRoot === null || stateRoot.length !== 32)
    throw damaged(`the state root of its ${block} is missing`);
  // Without the root node no state of the head can be read (the stored root differs from the
  // header's only on chains imported without state-root checks, so it is the one to look up).
  if (!equalsBytes(stateRoot, KECCAK256_RLP) && (await store.getTrieNode(stateRoot)) === null)
    throw damaged(`the state root of its ${block} names no stored trie node`);
  const body = await store.getBody(head.hash);
  const txs = body === null ? undefined : decodeList(body)?.[0];
  if (!Array.isArray(txs)) throw damaged(`the body of its ${block} is missing or not RLP`);
  const receipts = await store.getReceipts(head.hash);
  if (receipts === null || receipts.length !== txs.length)
    throw damaged(`the receipts of its ${block} are missing or do not match its transactions`);
  const json = await store.getBlockReceiptsJson(head.hash);
  let rendered: unknown;
  try {
    rendered = json === null ? null : JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(json));
  } catch {
    rendered = null;
  }
  if (!Array.isArray(rendered) || rendered.length !== txs.length)
    throw damaged(`the JSON receipts of its ${block} are missing or not valid JSON`);
}

function decodeList(bytes: Uint8Array): unknown[] | null {
  try {
    const decoded = RLP.decode(bytes);
    return Array.isArray(decoded) ? decoded : null;
  } catch {
    return null;
  }
}

function bytesToBigInt(bytes: Uint8Array): bigint {
  return bytes.length === 0 ? 0n : BigInt(bytesToHex(bytes));
}
