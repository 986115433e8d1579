import type { Address, Hex } from 'viem';

/**
 * The parts of anvil's JSON-RPC answers the test support reads. Typed by hand (not viem's
 * `RpcBlock`) because the export must see exactly the header fields anvil sends, including ones
 * newer than a client library's types (e.g. `requestsHash`).
 */

export interface RpcTransaction {
  hash: Hex;
  type: Hex;
  from: Address;
  to: Address | null;
}

export interface RpcWithdrawal {
  index: Hex;
  validatorIndex: Hex;
  address: Address;
  amount: Hex;
}

export interface RpcBlock<Tx = RpcTransaction> {
  hash: Hex;
  number: Hex;
  parentHash: Hex;
  timestamp: Hex;
  transactionsRoot: Hex;
  withdrawalsRoot?: Hex;
  uncles: Hex[];
  transactions: Tx[];
  withdrawals?: RpcWithdrawal[];
  [field: string]: unknown;
}

export interface RpcLog {
  address: Address;
  topics: Hex[];
  data: Hex;
}

export interface RpcReceipt {
  transactionHash: Hex;
  transactionIndex: Hex;
  blockHash: Hex;
  blockNumber: Hex;
  status: Hex;
  gasUsed: Hex;
  contractAddress: Address | null;
  logs: RpcLog[];
}
