import { encodeBigint, encodeBytes, encodedLength, encodeList } from '../../evm/rlp.ts';
import type { Transaction } from '../../evm/transaction.ts';
import { addressBytes, wordBytes } from '../../evm/words.ts';
import { quantityToHex, toHex } from '../../primitives/hex.ts';

type Hex = `0x${string}`;

const ZERO = new Uint8Array(0);

/**
 * A simulated call as the transaction geth puts in its simulated block: unsigned (v, r and s zero),
 * so its hash is that of these bytes.
 */
export function encodeSimulatedTransaction(tx: Transaction, chainId: bigint): Uint8Array {
  const to = tx.to === null ? encodeBytes(ZERO) : encodeBytes(addressBytes(tx.to));
  const accessList = encodeList(
    tx.accessList.map((e) =>
      encodeList([
        encodeBytes(addressBytes(e.address)),
        encodeList(e.storageKeys.map((k) => encodeBytes(wordBytes(k)))),
      ]),
    ),
  );
  const signature = [encodeBigint(0n), encodeBigint(0n), encodeBigint(0n)];
  const common = [encodeBigint(tx.gasLimit), to, encodeBigint(tx.value), encodeBytes(tx.data)];
  if (tx.type === 0)
    return encodeList([encodeBigint(tx.nonce), encodeBigint(tx.gasPrice), ...common, ...signature]);
  const head = [encodeBigint(chainId), encodeBigint(tx.nonce)];
  const fees =
    tx.type === 1
      ? [encodeBigint(tx.gasPrice)]
      : [encodeBigint(tx.maxPriorityFeePerGas), encodeBigint(tx.maxFeePerGas)];
  const tail: Uint8Array[] = [accessList];
  if (tx.type === 3)
    tail.push(
      encodeBigint(tx.maxFeePerBlobGas),
      encodeList(tx.blobVersionedHashes.map((h) => encodeBytes(wordBytes(h)))),
    );
  if (tx.type === 4)
    tail.push(
      encodeList(
        tx.authorizationList.map((a) =>
          encodeList([
            encodeBigint(a.chainId),
            encodeBytes(addressBytes(a.address)),
            encodeBigint(a.nonce),
            encodeBigint(a.yParity),
            encodeBigint(a.r),
            encodeBigint(a.s),
          ]),
        ),
      ),
    );
  const body = encodeList([...head, ...fees, ...common, ...tail, ...signature]);
  const typed = new Uint8Array(body.length + 1);
  typed[0] = tx.type;
  typed.set(body, 1);
  return typed;
}

/** A simulated block's header fields; the optional ones exist from the fork that added them. */
export interface SimulatedHeader {
  parentHash: Uint8Array;
  uncleHash: Uint8Array;
  coinbase: bigint;
  stateRoot: Uint8Array;
  transactionsRoot: Uint8Array;
  receiptsRoot: Uint8Array;
  logsBloom: Uint8Array;
  difficulty: bigint;
  number: bigint;
  gasLimit: bigint;
  gasUsed: bigint;
  timestamp: bigint;
  mixHash: Uint8Array;
  baseFee: bigint | null;
  withdrawalsRoot: Uint8Array | null;
  blobGasUsed: bigint | null;
  excessBlobGas: bigint | null;
  parentBeaconBlockRoot: Uint8Array | null;
  requestsHash: Uint8Array | null;
}

/** The header's RLP, fields in the yellow paper's order and each later fork's appended. */
export function encodeHeader(h: SimulatedHeader): Uint8Array {
  const fields = [
    encodeBytes(h.parentHash),
    encodeBytes(h.uncleHash),
    encodeBytes(addressBytes(h.coinbase)),
    encodeBytes(h.stateRoot),
    encodeBytes(h.transactionsRoot),
    encodeBytes(h.receiptsRoot),
    encodeBytes(h.logsBloom),
    encodeBigint(h.difficulty),
    encodeBigint(h.number),
    encodeBigint(h.gasLimit),
    encodeBigint(h.gasUsed),
    encodeBigint(h.timestamp),
    encodeBytes(ZERO),
    encodeBytes(h.mixHash),
    encodeBytes(new Uint8Array(8)),
  ];
  if (h.baseFee !== null) fields.push(encodeBigint(h.baseFee));
  if (h.withdrawalsRoot !== null) fields.push(encodeBytes(h.withdrawalsRoot));
  if (h.blobGasUsed !== null) fields.push(encodeBigint(h.blobGasUsed));
  if (h.excessBlobGas !== null) fields.push(encodeBigint(h.excessBlobGas));
  if (h.parentBeaconBlockRoot !== null) fields.push(encodeBytes(h.parentBeaconBlockRoot));
  if (h.requestsHash !== null) fields.push(encodeBytes(h.requestsHash));
  return encodeList(fields);
}

/**
 * The RLP length of the whole block (geth's `size`): header, transactions, no uncles, and the
 * encoded withdrawals from Shanghai on (null before).
 */
export function blockSize(
  header: Uint8Array,
  transactions: readonly Uint8Array[],
  withdrawals: readonly Uint8Array[] | null,
): number {
  // Counted, not encoded: encoding it cost ~175 µs a block in allocations alone.
  let txs = 0;
  for (const t of transactions)
    txs +=
      (t[0] as number) >= 0xc0 || (t.length === 1 && (t[0] as number) < 0x80)
        ? t.length
        : encodedLength(t.length);
  let total = header.length + encodedLength(txs) + encodedLength(0);
  if (withdrawals !== null) total += encodedLength(withdrawals.reduce((n, w) => n + w.length, 0));
  return encodedLength(total);
}

/** A header as geth's RPCMarshalHeader gives it. */
export function headerJson(h: SimulatedHeader, hash: Uint8Array): Record<string, unknown> {
  return {
    ...(h.baseFee !== null && { baseFeePerGas: quantityToHex(h.baseFee) }),
    ...(h.blobGasUsed !== null && { blobGasUsed: quantityToHex(h.blobGasUsed) }),
    difficulty: quantityToHex(h.difficulty),
    ...(h.excessBlobGas !== null && { excessBlobGas: quantityToHex(h.excessBlobGas) }),
    extraData: '0x',
    gasLimit: quantityToHex(h.gasLimit),
    gasUsed: quantityToHex(h.gasUsed),
    hash: toHex(hash),
    logsBloom: toHex(h.logsBloom),
    miner: toHex(addressBytes(h.coinbase)),
    mixHash: toHex(h.mixHash),
    nonce: '0x0000000000000000',
    number: quantityToHex(h.number),
    ...(h.parentBeaconBlockRoot !== null && { parentBeaconBlockRoot: toHex(h.parentBeaconBlockRoot) }),
    parentHash: toHex(h.parentHash),
    receiptsRoot: toHex(h.receiptsRoot),
    ...(h.requestsHash !== null && { requestsHash: toHex(h.requestsHash) }),
    sha3Uncles: toHex(h.uncleHash),
    stateRoot: toHex(h.stateRoot),
    timestamp: quantityToHex(h.timestamp),
    transactionsRoot: toHex(h.transactionsRoot),
    ...(h.withdrawalsRoot !== null && { withdrawalsRoot: toHex(h.withdrawalsRoot) }),
  };
}

/** A simulated transaction as geth's RPCTransaction shows it in its block (returnFullTransactions). */
export function transactionJson(
  tx: Transaction,
  hash: Uint8Array,
  chainId: bigint,
  at: { blockHash: Uint8Array; number: bigint; timestamp: bigint; index: number; baseFee: bigint | null },
): Record<string, unknown> {
  const typed = tx.type !== 0;
  let gasPrice = tx.gasPrice;
  if (tx.type >= 2) {
    const base = at.baseFee ?? 0n;
    const price = base + tx.maxPriorityFeePerGas;
    gasPrice = price < tx.maxFeePerGas ? price : tx.maxFeePerGas;
  }
  const out: Record<string, Hex | null | unknown[]> = {
    blockHash: toHex(at.blockHash),
    blockNumber: quantityToHex(at.number),
    blockTimestamp: quantityToHex(at.timestamp),
    from: toHex(addressBytes(tx.sender)),
    gas: quantityToHex(tx.gasLimit),
    gasPrice: quantityToHex(gasPrice),
  };
  if (tx.type >= 2) {
    out.maxFeePerGas = quantityToHex(tx.maxFeePerGas);
    out.maxPriorityFeePerGas = quantityToHex(tx.maxPriorityFeePerGas);
  }
  if (tx.type === 3) out.maxFeePerBlobGas = quantityToHex(tx.maxFeePerBlobGas);
  Object.assign(out, {
    hash: toHex(hash),
    input: toHex(tx.data),
    nonce: quantityToHex(tx.nonce),
    to: tx.to === null ? null : toHex(addressBytes(tx.to)),
    transactionIndex: quantityToHex(at.index),
    value: quantityToHex(tx.value),
    type: quantityToHex(tx.type),
  });
  if (typed) {
    out.accessList = tx.accessList.map((e) => ({
      address: toHex(addressBytes(e.address)),
      storageKeys: e.storageKeys.map((k) => toHex(wordBytes(k))),
    }));
    out.chainId = quantityToHex(chainId);
  }
  if (tx.type === 3) out.blobVersionedHashes = tx.blobVersionedHashes.map((h) => toHex(wordBytes(h)));
  if (tx.type === 4)
    out.authorizationList = tx.authorizationList.map((a) => ({
      chainId: quantityToHex(a.chainId),
      address: toHex(addressBytes(a.address)),
      nonce: quantityToHex(a.nonce),
      yParity: quantityToHex(a.yParity),
      r: quantityToHex(a.r),
      s: quantityToHex(a.s),
    }));
  Object.assign(out, { v: '0x0', r: '0x0', s: '0x0' });
  if (typed) out.yParity = '0x0';
  return out;
}
