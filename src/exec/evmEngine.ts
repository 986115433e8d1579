import type { Block, BlockHeader } from '@ethereumjs/block';
import type { Common } from '@ethereumjs/common';
import type { TypedTransaction } from '@ethereumjs/tx';
import { bytesToBigInt } from '@ethereumjs/util';
import type { ChainReader } from '../chain/reader.ts';
import type { BlockEnv } from '../evm/env.ts';
import { type AccountRecord, EMPTY_CODE_HASH, equalBytes, type StateReader } from '../evm/state.ts';
import type { Transaction } from '../evm/transaction.ts';
import { addressBytes, bytesToBigint, wordBytes } from '../evm/words.ts';
import { bytesKey } from '../primitives/hex.ts';
import { StoreInconsistentError } from '../store/errors.ts';
import type { SyncStateReads } from '../store/types.ts';
import { type EvmFork, EvmForks } from './evmRules.ts';

// What the execution paths need to run on the EVM of src/evm: which engine runs them, a synchronous
// reader of the flat state, the fork's rules, and blocks and transactions in the EVM's terms.

/** The EVM an execution path runs on: src/evm (`evm`) or @ethereumjs/vm (`ethereumjs`). */
export type Engine = 'evm' | 'ethereumjs';

let engine: Engine | null = null;

/**
 * The engine the paths that have moved to src/evm run on, read once per process (and so per worker
 * thread, which inherits the environment) from ETHTRACE_EVM. The differential tests
 * (test/exec/evmEngine.test.ts) run both side by side on the same chains.
 */
export function defaultEngine(): Engine {
  if (engine === null) engine = process.env.ETHTRACE_EVM === 'ethereumjs' ? 'ethereumjs' : 'evm';
  return engine;
}

/** A chain's forks as the EVM's rules, one table per chain spec. */
const forksBySpec = new WeakMap<object, EvmForks>();

/** The EVM's rules for a block of this chain; null for a fork src/evm has no row for (the DAO fork's). */
export function evmFork(chain: ChainReader, common: Common): EvmFork | null {
  let forks = forksBySpec.get(chain.spec);
  if (!forks) {
    forks = new EvmForks(chain.spec);
    forksBySpec.set(chain.spec, forks);
  }
  try {
    return forks.of(common);
  } catch {
    return null;
  }
}

const EMPTY = new Uint8Array(0);

/**
 * The state after block `number`, read synchronously from the flat history. The history keeps no
 * storage roots, so whether an account has storage is unknown (see AccountRecord.hasStorage): its
 * slots are read, and EIP-7610 is not enforced for it, as the ethereumjs path never did.
 */
export class FlatStateReader implements StateReader {
  private readonly codes = new Map<string, Uint8Array>();

  constructor(
    private readonly reads: SyncStateReads,
    private readonly number: bigint,
  ) {}

  account(address: bigint): AccountRecord | null {
    const flat = this.reads.accountAt(addressBytes(address), this.number);
    if (flat === null) return null;
    return { nonce: flat.nonce, balance: flat.balance, codeHash: flat.codeHash, hasStorage: null };
  }

  code(codeHash: Uint8Array): Uint8Array {
    if (equalBytes(codeHash, EMPTY_CODE_HASH)) return EMPTY;
    const key = bytesKey(codeHash);
    let code = this.codes.get(key);
    if (code === undefined) {
      code = this.reads.code(codeHash) ?? EMPTY;
      this.codes.set(key, code);
    }
    return code;
  }

  storage(address: bigint, slot: bigint): bigint {
    const value = this.reads.storageAt(addressBytes(address), wordBytes(slot), this.number);
    return value.length === 0 ? 0n : bytesToBigint(value);
  }
}

/** The block environment of `header` as its opcodes read it; BLOCKHASH from the canonical chain. */
export function blockEnv(
  header: BlockHeader,
  chainId: bigint,
  reads: Pick<SyncStateReads, 'canonicalHash'>,
): BlockEnv {
  return {
    number: header.number,
    timestamp: header.timestamp,
    coinbase: bytesToBigint(header.coinbase.bytes),
    gasLimit: header.gasLimit,
    difficulty: header.difficulty,
    prevRandao: bytesToBigint(header.mixHash),
    baseFee: header.baseFeePerGas ?? 0n,
    excessBlobGas: header.excessBlobGas ?? 0n,
    chainId,
    blockHash: (number) => {
      // Only canonical blocks already stored are asked for (the 256 before the one running); a hash
      // the store lacks means a damaged store, and answering zero would compute a wrong result.
      const hash = reads.canonicalHash(number);
      if (hash === null)
        throw new StoreInconsistentError(`BLOCKHASH: canonical block ${number} is missing from the store`);
      return bytesToBigint(hash);
    },
  };
}

/** ethereumjs gives most fields as bytes, blob hashes as hex strings. */
function big(value: Uint8Array | string): bigint {
  return typeof value === 'string' ? BigInt(value) : bytesToBigInt(value);
}

/** A decoded transaction in the EVM's terms (its sender recovered, once per decoded block). */
export function evmTransaction(tx: TypedTransaction): Transaction {
  const t = tx as TypedTransaction & {
    gasPrice?: bigint;
    maxFeePerGas?: bigint;
    maxPriorityFeePerGas?: bigint;
    accessList?: Array<[Uint8Array, Uint8Array[]]>;
    blobVersionedHashes?: Array<Uint8Array | string>;
    maxFeePerBlobGas?: bigint;
    authorizationList?: Uint8Array[][];
  };
  return {
    type: tx.type,
    sender: bytesToBigint(tx.getSenderAddress().bytes),
    nonce: tx.nonce,
    gasLimit: tx.gasLimit,
    gasPrice: t.gasPrice ?? 0n,
    maxFeePerGas: t.maxFeePerGas ?? 0n,
    maxPriorityFeePerGas: t.maxPriorityFeePerGas ?? 0n,
    to: tx.to ? bytesToBigint(tx.to.bytes) : null,
    value: tx.value,
    data: tx.data,
    accessList: (t.accessList ?? []).map(([address, keys]) => ({
      address: big(address),
      storageKeys: keys.map(big),
    })),
    blobVersionedHashes: (t.blobVersionedHashes ?? []).map(big),
    maxFeePerBlobGas: t.maxFeePerBlobGas ?? 0n,
    authorizationList: (t.authorizationList ?? []).map((a) => {
      const [chainId, address, nonce, yParity, r, s] = a as [
        Uint8Array,
        Uint8Array,
        Uint8Array,
        Uint8Array,
        Uint8Array,
        Uint8Array,
      ];
      return {
        chainId: big(chainId),
        address: big(address),
        nonce: big(nonce),
        yParity: big(yParity),
        r: big(r),
        s: big(s),
      };
    }),
  };
}

/** The transactions of a block in the EVM's terms. */
export function evmTransactions(block: Block): Transaction[] {
  return block.transactions.map(evmTransaction);
}
