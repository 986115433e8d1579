import type { Block, BlockHeader } from '@ethereumjs/block';
import { RLP } from '@ethereumjs/rlp';
import { quantityToHex, toHex } from '../primitives/hex.ts';
import { formatTransaction, type RpcTransaction, txPosition } from './transaction.ts';

type Hex = `0x${string}`;

/** geth's header object; the optional keys exist only from the fork that added the field. */
export interface RpcHeader {
  baseFeePerGas?: Hex;
  blobGasUsed?: Hex;
  difficulty: Hex;
  excessBlobGas?: Hex;
  extraData: Hex;
  gasLimit: Hex;
  gasUsed: Hex;
  hash: Hex;
  logsBloom: Hex;
  miner: Hex;
  mixHash: Hex;
  nonce: Hex;
  number: Hex;
  parentBeaconBlockRoot?: Hex;
  parentHash: Hex;
  receiptsRoot: Hex;
  requestsHash?: Hex;
  sha3Uncles: Hex;
  stateRoot: Hex;
  timestamp: Hex;
  transactionsRoot: Hex;
  withdrawalsRoot?: Hex;
}

export interface RpcWithdrawal {
  index: Hex;
  validatorIndex: Hex;
  address: Hex;
  amount: Hex;
}

export interface RpcBlock extends RpcHeader {
  size: Hex;
  transactions: Hex[] | RpcTransaction[];
  uncles: Hex[];
  withdrawals?: RpcWithdrawal[];
}

/**
 * A header as geth marshals it. geth builds a map, so its keys come out sorted; ours are written in
 * that order too, which keeps responses byte-comparable with geth's.
 */
export function formatHeader(header: BlockHeader): RpcHeader {
  return {
    ...optional('baseFeePerGas', header.baseFeePerGas, quantityToHex),
    ...optional('blobGasUsed', header.blobGasUsed, quantityToHex),
    difficulty: quantityToHex(header.difficulty),
    ...optional('excessBlobGas', header.excessBlobGas, quantityToHex),
    extraData: toHex(header.extraData),
    gasLimit: quantityToHex(header.gasLimit),
    gasUsed: quantityToHex(header.gasUsed),
    hash: toHex(header.hash()),
    logsBloom: toHex(header.logsBloom),
    miner: toHex(header.coinbase.bytes),
    mixHash: toHex(header.mixHash),
    nonce: toHex(header.nonce),
    number: quantityToHex(header.number),
    ...optional('parentBeaconBlockRoot', header.parentBeaconBlockRoot, toHex),
    parentHash: toHex(header.parentHash),
    receiptsRoot: toHex(header.receiptTrie),
    ...optional('requestsHash', header.requestsHash, toHex),
    sha3Uncles: toHex(header.uncleHash),
    stateRoot: toHex(header.stateRoot),
    timestamp: quantityToHex(header.timestamp),
    transactionsRoot: toHex(header.transactionsTrie),
    ...optional('withdrawalsRoot', header.withdrawalsRoot, toHex),
  };
}

/**
 * A block as geth's eth_getBlockBy* show it: the header fields plus `size` (the RLP length of the
 * block, which the caller knows from the stored bytes), transaction hashes or full objects, uncle
 * hashes, and `withdrawals` from Shanghai on. No `totalDifficulty`: geth dropped it after the merge and
 * the conformance fixtures do not carry it.
 */
export function formatBlock(block: Block, size: number, fullTransactions: boolean): RpcBlock {
  const { withdrawalsRoot, ...fields } = formatHeader(block.header);
  return {
    ...fields,
    size: quantityToHex(size),
    transactions: fullTransactions
      ? block.transactions.map((tx, index) => formatTransaction(tx, txPosition(block.header, index)))
      : block.transactions.map((tx) => toHex(tx.hash())),
    uncles: block.uncleHeaders.map((uncle) => toHex(uncle.hash())),
    ...(block.withdrawals && {
      withdrawals: block.withdrawals.map((w) => ({
        index: quantityToHex(w.index),
        validatorIndex: quantityToHex(w.validatorIndex),
        address: toHex(w.address.bytes),
        amount: quantityToHex(w.amount),
      })),
    }),
    ...(withdrawalsRoot && { withdrawalsRoot }),
  };
}

function optional<K extends string, T>(
  key: K,
  value: T | undefined,
  format: (value: T) => Hex,
): { [P in K]?: Hex } {
  return (value === undefined ? {} : { [key]: format(value) }) as { [P in K]?: Hex };
}

/**
 * An uncle as geth's eth_getUncleBy* show it: a block made of the uncle's header alone, so its
 * header fields, the RLP length of that header-only block as `size`, no `transactions` key and an
 * empty `uncles` list.
 */
export function formatUncle(header: BlockHeader): RpcHeader & { size: Hex; uncles: Hex[] } {
  const size = RLP.encode([header.raw(), [], []]).length;
  return { ...formatHeader(header), size: quantityToHex(size), uncles: [] };
}
