import { postJson } from '../lib/http.ts';

/**
 * What the generated requests are made from: the chain as the OLD server serves it (blocks with
 * their transactions, receipts, raw transactions, touched accounts and storage slots). The same
 * requests then go to both servers, so if the new one serves a different chain every answer that
 * depends on it differs.
 */

export type Hex = `0x${string}`;

export interface RpcTx {
  hash: Hex;
  blockNumber: Hex;
  blockHash: Hex;
  transactionIndex: Hex;
  from: Hex;
  to: Hex | null;
  gas: Hex;
  value: Hex;
  input: Hex;
  nonce: Hex;
  type: Hex;
  gasPrice?: Hex;
  maxFeePerGas?: Hex;
  maxPriorityFeePerGas?: Hex;
  maxFeePerBlobGas?: Hex;
  accessList?: unknown[];
  authorizationList?: unknown[];
  blobVersionedHashes?: Hex[];
  [field: string]: unknown;
}

export interface RpcLog {
  address: Hex;
  topics: Hex[];
}

export interface RpcReceipt {
  transactionHash: Hex;
  contractAddress: Hex | null;
  logs: RpcLog[];
}

export interface BlockInfo {
  number: number;
  hash: Hex;
  timestamp: bigint;
  miner: Hex;
  txs: RpcTx[];
  receipts: RpcReceipt[];
}

export interface ChainContext {
  head: number;
  blocks: BlockInfo[];
  /** tx hash → raw signed transaction. */
  raw: Map<Hex, Hex>;
  /** Accounts the chain touched, in the order first seen (senders, recipients, contracts, diffs). */
  addresses: Hex[];
  /** Storage slots seen written or read per account (from stateDiff replays). */
  slots: Map<Hex, Hex[]>;
  /** eth_accounts: the dev chain's signers; empty on an imported chain. */
  signers: Hex[];
}

let nextId = 1;

export async function rpc<T>(url: URL, method: string, params: unknown[] = []): Promise<T> {
  const body = JSON.stringify({ jsonrpc: '2.0', id: nextId++, method, params });
  const answer = await postJson(url, body, 120_000);
  if (answer.failure !== undefined) throw new Error(`${method}: ${answer.failure}`);
  const parsed = JSON.parse(answer.body) as { result?: T; error?: { message: string } };
  if (parsed.error !== undefined) throw new Error(`${method}: ${parsed.error.message}`);
  return parsed.result as T;
}

const hex = (n: number | bigint): Hex => `0x${n.toString(16)}`;

export async function readContext(url: URL): Promise<ChainContext> {
  const head = Number(await rpc<Hex>(url, 'eth_blockNumber'));
  const blocks: BlockInfo[] = [];
  const raw = new Map<Hex, Hex>();
  const seen = new Set<Hex>();
  const addresses: Hex[] = [];
  const slots = new Map<Hex, Hex[]>();
  const add = (a: Hex | null | undefined): void => {
    if (!a) return;
    const lower = a.toLowerCase() as Hex;
    if (seen.has(lower)) return;
    seen.add(lower);
    addresses.push(lower);
  };
  const addSlot = (a: Hex, slot: Hex): void => {
    const lower = a.toLowerCase() as Hex;
    const list = slots.get(lower) ?? [];
    if (!list.includes(slot)) list.push(slot);
    slots.set(lower, list);
  };
  for (let n = 0; n <= head; n++) {
    const block = await rpc<{
      hash: Hex;
      timestamp: Hex;
      miner: Hex;
      transactions: RpcTx[];
    }>(url, 'eth_getBlockByNumber', [hex(n), true]);
    const receipts = await rpc<RpcReceipt[]>(url, 'eth_getBlockReceipts', [hex(n)]);
    for (const tx of block.transactions) {
      add(tx.from);
      add(tx.to);
      raw.set(tx.hash, await rpc<Hex>(url, 'eth_getRawTransactionByHash', [tx.hash]));
    }
    for (const r of receipts) {
      add(r.contractAddress);
      for (const log of r.logs) add(log.address);
    }
    if (block.transactions.length > 0) {
      const replays = await rpc<Array<{ stateDiff?: Record<Hex, { storage?: Record<Hex, unknown> }> }>>(
        url,
        'trace_replayBlockTransactions',
        [hex(n), ['stateDiff']],
      );
      for (const replay of replays) {
        for (const [account, diff] of Object.entries(replay.stateDiff ?? {})) {
          add(account as Hex);
          for (const slot of Object.keys(diff.storage ?? {})) addSlot(account as Hex, slot as Hex);
        }
      }
    }
    blocks.push({
      number: n,
      hash: block.hash,
      timestamp: BigInt(block.timestamp),
      miner: block.miner,
      txs: block.transactions,
      receipts,
    });
  }
  const signers = await rpc<Hex[]>(url, 'eth_accounts');
  for (const s of signers) add(s);
  return { head, blocks, raw, addresses, slots, signers };
}
