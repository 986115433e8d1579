import type { BlockHeader } from '@ethereumjs/block';
import type { Common } from '@ethereumjs/common';
import type { TypedTransaction } from '@ethereumjs/tx';
import { bytesToBigInt } from '@ethereumjs/util';
import type { ChainReader } from '../chain/reader.ts';
import { RequestFailed } from '../core/errors.ts';
import type { BlockEnv } from '../evm/env.ts';
import { type AccountRecord, EMPTY_CODE_HASH, equalBytes, type StateReader } from '../evm/state.ts';
import type { Transaction } from '../evm/transaction.ts';
import { addressBytes, bytesToBigint, wordBytes } from '../evm/words.ts';
import { bytesKey } from '../primitives/hex.ts';
import { StoreInconsistentError } from '../store/errors.ts';
import type { SyncStateReads } from '../store/types.ts';
import { type EvmFork, EvmForks } from './evmRules.ts';

// What the execution paths need to run on the EVM of src/evm: a synchronous reader of the flat
// state, the fork's rules, and blocks and transactions in the EVM's terms.

/** A chain's forks as the EVM's rules, one table per chain spec. */
const forksBySpec = new WeakMap<object, EvmForks>();

/**
 * The EVM's rules for a block of this chain. Every fork a chain spec can name has a row; one
 * without is refused (RequestFailed), as nothing else here could run it.
 */
export function evmFork(chain: ChainReader, common: Common): EvmFork {
  let forks = forksBySpec.get(chain.spec);
  if (!forks) {
    forks = new EvmForks(chain.spec);
    forksBySpec.set(chain.spec, forks);
  }
  try {
    return forks.of(common);
  } catch (e) {
    throw new RequestFailed(e instanceof Error ? e.message : String(e));
  }
}

const EMPTY = new Uint8Array(0);

/**
 * What the calls on one block read from the flat history, kept for the next call on that block.
 * A node answers a stream of eth_calls on the head from memory (geth's state caches, anvil's whole
 * state); here one flat-history read is an LMDB range lookup, and a token call reads several.
 * Kept per store (two stores in one process, a test's, never share) and keyed by block hash, whose
 * post-state never changes: a block rewound or reorged away has another hash in its place. A request
 * that reads a block while a reorg replaces it may mix the two, as it may without the cache (the
 * history is read by number).
 */
export class BlockReads {
  readonly accounts = new Map<bigint, AccountRecord | null>();
  readonly slots = new Map<bigint, Map<bigint, bigint>>();
  entries = 0;

  /** Per store, its recent blocks, least recently used first. */
  private static byStore = new WeakMap<object, Map<string, BlockReads>>();
  private static readonly BLOCKS = 4;
  /** Entries per block, at about 200 bytes each. */
  static readonly MAX_ENTRIES = 100_000;

  /** Forgets every block's reads (bench/callJob.ts measures calls on a cold cache with it). */
  static clear(): void {
    BlockReads.byStore = new WeakMap();
  }

  /** The reads kept for block `hash` of `store` (made empty if none), now its most recently used. */
  static of(store: object, hash: Uint8Array): BlockReads {
    let recent = BlockReads.byStore.get(store);
    if (recent === undefined) {
      recent = new Map();
      BlockReads.byStore.set(store, recent);
    }
    const key = bytesKey(hash);
    let reads = recent.get(key);
    if (reads !== undefined) recent.delete(key);
    else reads = new BlockReads();
    recent.set(key, reads);
    if (recent.size > BlockReads.BLOCKS) {
      const oldest = recent.keys().next().value;
      if (oldest !== undefined) recent.delete(oldest);
    }
    return reads;
  }
}

/** Code by hash, per store's reads: a damaged store must not be served another's code. */
const codesByStore = new WeakMap<SyncStateReads, { codes: Map<string, Uint8Array>; bytes: number }>();
const MAX_CODE_BYTES = 32 * 1024 * 1024;

/**
 * The state after block `number`, read synchronously from the flat history. The history keeps no
 * storage roots, so whether an account has storage is unknown (see AccountRecord.hasStorage): its
 * slots are read, and EIP-7610 is not enforced for it (nor did the ethereumjs path this replaced). `kept`
 * shares what is read with later readers of the same block (BlockReads).
 */
export class FlatStateReader implements StateReader {
  constructor(
    private readonly reads: SyncStateReads,
    private readonly number: bigint,
    private readonly kept: BlockReads | null = null,
  ) {}

  account(address: bigint): AccountRecord | null {
    const kept = this.kept;
    if (kept !== null) {
      const record = kept.accounts.get(address);
      if (record !== undefined) return record;
    }
    const flat = this.reads.accountAt(addressBytes(address), this.number);
    const record: AccountRecord | null =
      flat === null
        ? null
        : { nonce: flat.nonce, balance: flat.balance, codeHash: flat.codeHash, hasStorage: null };
    if (kept !== null && kept.entries < BlockReads.MAX_ENTRIES) {
      kept.accounts.set(address, record);
      kept.entries++;
    }
    return record;
  }

  code(codeHash: Uint8Array): Uint8Array {
    if (equalBytes(codeHash, EMPTY_CODE_HASH)) return EMPTY;
    let kept = codesByStore.get(this.reads);
    if (kept === undefined) {
      kept = { codes: new Map(), bytes: 0 };
      codesByStore.set(this.reads, kept);
    }
    const key = bytesKey(codeHash);
    let code = kept.codes.get(key);
    if (code === undefined) {
      code = this.reads.code(codeHash) ?? EMPTY;
      if (kept.bytes + code.length > MAX_CODE_BYTES) {
        kept.codes.clear();
        kept.bytes = 0;
      }
      kept.codes.set(key, code);
      kept.bytes += code.length;
    }
    return code;
  }

  storage(address: bigint, slot: bigint): bigint {
    const kept = this.kept;
    let slots: Map<bigint, bigint> | undefined;
    if (kept !== null) {
      slots = kept.slots.get(address);
      const value = slots?.get(slot);
      if (value !== undefined) return value;
    }
    const stored = this.reads.storageAt(addressBytes(address), wordBytes(slot), this.number);
    const value = stored.length === 0 ? 0n : bytesToBigint(stored);
    if (kept !== null && kept.entries < BlockReads.MAX_ENTRIES) {
      if (slots === undefined) {
        slots = new Map();
        kept.slots.set(address, slots);
      }
      slots.set(slot, value);
      kept.entries++;
    }
    return value;
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
