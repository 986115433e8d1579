import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { CONFORMANCE } from '../support/cli.ts';
import type { RunningServer } from '../support/server.ts';

/**
 * What the client tests ask about, picked from the chain the server imported rather than written
 * down: the genesis file (balances, code and storage at block 0), the forkchoice head the fixtures
 * name, and the receipts of every block as the server serves them raw. Expected values are then
 * the server's own raw JSON-RPC answers and the chain's internal consistency (a receipt's logs are
 * what eth_getLogs finds, a transaction's block lists its hash, ...), never literals.
 */

export type Hex = `0x${string}`;

export interface RawLog {
  address: Hex;
  topics: Hex[];
  data: Hex;
  blockNumber: Hex;
  blockHash: Hex;
  transactionHash: Hex;
  transactionIndex: Hex;
  logIndex: Hex;
  removed: boolean;
}

export interface RawReceipt {
  transactionHash: Hex;
  transactionIndex: Hex;
  blockHash: Hex;
  blockNumber: Hex;
  from: Hex;
  to: Hex | null;
  contractAddress: Hex | null;
  status?: Hex;
  type: Hex;
  logs: RawLog[];
  [field: string]: unknown;
}

interface GenesisAccount {
  balance: Hex;
  nonce?: Hex;
  code?: Hex;
  storage?: Record<Hex, Hex>;
}

export interface ChainFacts {
  head: { number: bigint; hash: Hex };
  /**
   * The block with the most kinds of transaction (blob and EIP-7702 ones included on this chain),
   * then the most logs: what a client's parsers are most likely to trip on.
   */
  busy: { number: bigint; hash: Hex; receipts: RawReceipt[] };
  /** The block whose receipts are the largest JSON (tens of MB on this chain: huge log data). */
  large: { number: bigint; hash: Hex; bytes: number; receipts: number };
  /** A transaction of the busy block that emitted logs. */
  loggingTx: RawReceipt;
  /** Every log of the chain, from the receipts, in chain order. */
  allLogs: RawLog[];
  /** Address and first topic of a log (the busy block's, if one has topics): eth_getLogs filters. */
  logAddress: Hex;
  logTopic: Hex;
  /** A successful contract creation, with the block it happened in. */
  creation: { receipt: RawReceipt; block: bigint; contract: Hex };
  /** A sender whose balance and nonce changed in block `block` (> 0). */
  sender: { address: Hex; block: bigint; receipt: RawReceipt };
  genesis: {
    /** An account with storage at genesis, one of its slots and the value. */
    storage: { address: Hex; slot: Hex; value: Hex };
    /** An account with code at genesis. */
    code: { address: Hex; code: Hex };
    /** A funded account and its balance and nonce at genesis. */
    funded: { address: Hex; balance: Hex; nonce: Hex };
  };
}

function first<T>(items: readonly T[], what: string): T {
  const item = items[0];
  if (item === undefined) throw new Error(`the conformance chain has no ${what}`);
  return item;
}

export async function chainFacts(server: RunningServer): Promise<ChainFacts> {
  const genesisFile = JSON.parse(readFileSync(join(CONFORMANCE, 'genesis.json'), 'utf8')) as {
    alloc: Record<string, GenesisAccount>;
  };
  const fcu = JSON.parse(readFileSync(join(CONFORMANCE, 'headfcu.json'), 'utf8')) as {
    params: [{ headBlockHash: Hex }];
  };
  const headHash = fcu.params[0].headBlockHash;
  const blocks: Array<{ number: bigint; receipts: RawReceipt[] }> = [];
  // Up to the first number the server does not know: that is how a client finds the head, too.
  for (let n = 0n; ; n++) {
    const receipts = await server.rpc<RawReceipt[] | null>('eth_getBlockReceipts', [`0x${n.toString(16)}`]);
    if (receipts === null) break;
    blocks.push({ number: n, receipts });
  }
  const headNumber = BigInt(blocks.length - 1);
  const withTxs = blocks.filter((b) => b.receipts.length > 0);
  const logCount = (b: { receipts: RawReceipt[] }) => b.receipts.reduce((s, r) => s + r.logs.length, 0);
  const kinds = (b: { receipts: RawReceipt[] }) => new Set(b.receipts.map((r) => r.type)).size;
  const busiest = withTxs
    .filter((b) => logCount(b) > 0)
    .sort((a, b) => kinds(b) - kinds(a) || logCount(b) - logCount(a) || Number(a.number - b.number));
  const busy = first(busiest, 'block with logs');
  const sizes = withTxs.map((b) => ({ b, bytes: JSON.stringify(b.receipts).length }));
  const large = first(
    sizes.sort((x, y) => y.bytes - x.bytes),
    'block with transactions',
  );
  const busyHash = first(busy.receipts, 'receipt in the busy block').blockHash;
  const loggingTx = first(
    busy.receipts.filter((r) => r.logs.length > 0),
    'logging transaction',
  );
  const allLogs = blocks.flatMap((b) => b.receipts.flatMap((r) => r.logs));
  const topical = (logs: RawLog[]) => logs.filter((l) => l.topics.length > 0);
  const firstLog = first(
    [...topical(busy.receipts.flatMap((r) => r.logs)), ...topical(allLogs)],
    'log with a topic',
  );
  const receipts = blocks.flatMap((b) => b.receipts.map((receipt) => ({ block: b.number, receipt })));
  const creation = first(
    receipts.filter(({ receipt }) => receipt.contractAddress !== null && receipt.status === '0x1'),
    'contract creation',
  );
  // The chain's last transaction is its sender's last in that block: the nonce after the block is
  // the transaction's + 1, and the balance before the block differs from the one after (fees).
  const senderTx = first(receipts.filter(({ block }) => block > 0n).reverse(), 'transaction after genesis');
  const alloc = Object.entries(genesisFile.alloc).map(([address, a]) => ({
    address: (address.startsWith('0x') ? address : `0x${address}`).toLowerCase() as Hex,
    ...a,
  }));
  const withStorage = first(
    alloc.filter((a) => Object.keys(a.storage ?? {}).length > 0),
    'genesis account with storage',
  );
  const [slot, value] = first(Object.entries(withStorage.storage ?? {}), 'genesis storage slot');
  const withCode = first(
    alloc.filter((a) => a.code !== undefined && a.code !== '0x'),
    'genesis account with code',
  );
  const funded = first(
    alloc.filter((a) => a.code === undefined && BigInt(a.balance) > 0n),
    'funded genesis account',
  );
  return {
    head: { number: headNumber, hash: headHash },
    busy: { number: busy.number, hash: busyHash, receipts: busy.receipts },
    large: {
      number: large.b.number,
      hash: first(large.b.receipts, 'receipt').blockHash,
      bytes: large.bytes,
      receipts: large.b.receipts.length,
    },
    loggingTx,
    allLogs,
    logAddress: firstLog.address,
    logTopic: first(firstLog.topics, 'log topic'),
    creation: {
      receipt: creation.receipt,
      block: creation.block,
      contract: creation.receipt.contractAddress as Hex,
    },
    sender: { address: senderTx.receipt.from, block: senderTx.block, receipt: senderTx.receipt },
    genesis: {
      storage: { address: withStorage.address, slot: slot as Hex, value: value as Hex },
      code: { address: withCode.address, code: withCode.code as Hex },
      funded: { address: funded.address, balance: funded.balance, nonce: funded.nonce ?? '0x0' },
    },
  };
}

/** Hex quantity as a bigint; the tests compare numbers, not spellings. */
export const big = (q: string | number | bigint): bigint => BigInt(q);

/** A 32-byte word, as getStorageAt answers, for a genesis storage value written in short form. */
export function word(value: Hex): Hex {
  return `0x${BigInt(value).toString(16).padStart(64, '0')}`;
}
