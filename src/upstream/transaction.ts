import type { Common } from '@ethereumjs/common';
import {
  createAccessList2930Tx,
  createBlob4844Tx,
  createEOACode7702Tx,
  createFeeMarket1559Tx,
  createLegacyTx,
  TransactionType,
  type TypedTransaction,
} from '@ethereumjs/tx';
import { bigIntToUnpaddedBytes, type EOACode7702AuthorizationListBytes } from '@ethereumjs/util';
import { building, type Fields, sameBytes, show } from './answer.ts';

/**
 * One transaction of a full block answer, built from its RPC fields with ethereumjs' constructors
 * and checked: its canonical encoding hashes to the answer's `hash`. What ethereumjs'
 * `createTxFromRPC` (and so `createBlockFromRPC`, which also compares no hash) would get wrong or
 * let through is handled here: it reads only `v` (an answer may give a typed transaction's
 * `yParity` alone, or both, which must then agree), pads a short `to` to 20 bytes instead of
 * refusing it, prefers `data` to geth's `input`, ignores a legacy answer's `chainId`, and checks no
 * field's form.
 * The chain id of a typed transaction, and the one a legacy EIP-155 `v` encodes, must be the
 * chain's (ethereumjs refuses others); a legacy answer's `chainId`, when given, must be the one
 * its `v` encodes.
 */
export function txFromRpc(tx: Fields, common: Common, index: number): TypedTransaction {
  const { subject } = tx;
  const what = `transaction ${index}`;
  const type = tx.quantity('type', 8);
  const base = {
    nonce: tx.quantity('nonce', 64),
    gasLimit: tx.quantity('gas', 64),
    // null (or absent) for a contract creation.
    ...(tx.has('to') && { to: tx.data('to', 20) }),
    value: tx.quantity('value'),
    // geth's name is `input`; some nodes also (or only) give `data`.
    data: tx.has('data') && !tx.has('input') ? tx.data('data') : tx.data('input'),
    r: tx.quantity('r'),
    s: tx.quantity('s'),
  };
  const built = building(subject, what, (): TypedTransaction => {
    switch (Number(type)) {
      case TransactionType.Legacy: {
        const v = tx.quantity('v');
        const chainId = tx.optionalQuantity('chainId', 64);
        const signed = v >= 35n ? (v - 35n) / 2n : undefined;
        if (chainId !== undefined && signed !== undefined && chainId !== signed) {
          throw subject.mismatch(`${tx.path}.chainId`, chainId, 'the chain id its v encodes', signed);
        }
        return createLegacyTx({ ...base, gasPrice: tx.quantity('gasPrice'), v }, { common });
      }
      case TransactionType.AccessListEIP2930:
        return createAccessList2930Tx(
          { ...base, ...typed(tx), gasPrice: tx.quantity('gasPrice') },
          { common },
        );
      case TransactionType.FeeMarketEIP1559:
        return createFeeMarket1559Tx({ ...base, ...typed(tx), ...feeMarket(tx) }, { common });
      case TransactionType.BlobEIP4844:
        return createBlob4844Tx(
          {
            ...base,
            ...typed(tx),
            ...feeMarket(tx),
            maxFeePerBlobGas: tx.quantity('maxFeePerBlobGas'),
            blobVersionedHashes: tx.dataList('blobVersionedHashes', 32),
          },
          { common },
        );
      case TransactionType.EOACodeEIP7702:
        return createEOACode7702Tx(
          { ...base, ...typed(tx), ...feeMarket(tx), authorizationList: authorizations(tx) },
          { common },
        );
      default:
        throw subject.fail(`${tx.path}.type ${show(type)} is not a transaction type this service knows`);
    }
  });
  const hash = tx.data('hash', 32);
  const computed = built.hash();
  if (!sameBytes(computed, hash)) {
    throw subject.mismatch(`${what} hash of the transaction's fields`, computed, "the answer's hash", hash);
  }
  return built;
}

/** The fields every typed transaction has: chain id, access list and y parity as `v`. */
function typed(tx: Fields) {
  return {
    type: Number(tx.quantity('type', 8)),
    chainId: tx.quantity('chainId', 256),
    accessList: tx
      .objects('accessList')
      .map((entry) => [entry.data('address', 20), entry.dataList('storageKeys', 32)]) as Array<
      [Uint8Array, Uint8Array[]]
    >,
    v: yParity(tx),
  };
}

function feeMarket(tx: Fields) {
  return {
    maxFeePerGas: tx.quantity('maxFeePerGas'),
    maxPriorityFeePerGas: tx.quantity('maxPriorityFeePerGas'),
  };
}

/**
 * A typed signature's parity: `yParity`, or `v` (older answers give only `v`, which for typed
 * transactions is the parity); when both are given they must agree.
 */
function yParity(fields: Fields): bigint {
  const parity = fields.optionalQuantity('yParity', 8);
  const v = fields.optionalQuantity('v', 256);
  if (parity === undefined && v === undefined) throw fields.subject.fail(`${fields.path}.yParity is missing`);
  if (parity !== undefined && v !== undefined && parity !== v) {
    throw fields.subject.mismatch(`${fields.path}.yParity`, parity, 'its v', v);
  }
  const value = parity ?? v ?? 0n;
  if (value > 1n) throw fields.subject.fail(`${fields.path}.yParity is ${value}, not 0 or 1`);
  return value;
}

function authorizations(tx: Fields): EOACode7702AuthorizationListBytes {
  return tx
    .objects('authorizationList')
    .map((a) => [
      bigIntToUnpaddedBytes(a.quantity('chainId')),
      a.data('address', 20),
      bigIntToUnpaddedBytes(a.quantity('nonce', 64)),
      bigIntToUnpaddedBytes(yParity(a)),
      bigIntToUnpaddedBytes(a.quantity('r')),
      bigIntToUnpaddedBytes(a.quantity('s')),
    ]);
}
