import type { Block } from '@ethereumjs/block';
import type { TypedTransaction } from '@ethereumjs/tx';
import { bytesToBigInt } from '@ethereumjs/util';
import { applyBlock, type BlockInput, encodeReceipt, logsBloom, requestsHash } from '../evm/block.ts';
import { encodeBigint, encodeBytes, encodeList } from '../evm/rlp.ts';
import {
  type AccountChange,
  type AccountRecord,
  EMPTY_CODE_HASH,
  type StateReader,
  WorldState,
} from '../evm/state.ts';
import { nibbles, StateTrie, storedRoot, type TrieNode } from '../evm/stateTrie.ts';
import type { Transaction } from '../evm/transaction.ts';
import { EMPTY_TRIE_ROOT, orderedTrieRoot } from '../evm/trie.ts';
import { addressBytes, wordBytes } from '../evm/words.ts';
import type { EvmFork } from '../exec/evmRules.ts';
import { keccak256 } from '../primitives/keccak.ts';
import type { BlockWrite } from '../store/types.ts';
import type { TxReceipt } from '../wire/txReceipt.ts';

/** What the head state reads from the store without awaiting (LMDB's reads are synchronous). */
export interface SyncRecords {
  trieNode(hash: Uint8Array): Uint8Array | null;
  code(codeHash: Uint8Array): Uint8Array | null;
}

/** A block's state as the store takes it. */
export type StateWrite = Pick<BlockWrite, 'trieNodes' | 'code' | 'accounts' | 'storage' | 'storageWipes'>;

/** What executing a block gave, for the header checks (src/ingest/verify.ts) and the store. */
export interface ExecutedBlock {
  stateRoot: Uint8Array;
  gasUsed: bigint;
  receiptsRoot: Uint8Array;
  logsBloom: Uint8Array;
  requestsHash?: Uint8Array;
  /** In the shape src/wire/receipts.ts renders. */
  receipts: TxReceipt[];
  /** Their consensus encodings, when the engine made them. */
  encodedReceipts?: Uint8Array[];
}

interface HeadAccount {
  record: AccountRecord | null;
  storageRoot: Uint8Array;
}

/** Accounts kept read between blocks before the head state forgets what it read and starts again. */
const ACCOUNTS_KEPT = 200_000;
/** Trie nodes read before the same. */
const NODES_KEPT = 1_000_000;

/**
 * The state after the head block, as the EVM of src/evm reads it (a StateReader) and as a block's
 * changes (WorldState.takeChanges) turn it into the next block's: the state trie and the storage
 * tries over the store's nodes (src/evm/stateTrie.ts), the accounts and slots read kept between
 * blocks. A block applied is pending until `commit` (it was stored) or `discard` (it was refused).
 */
export class HeadState implements StateReader {
  private readonly trie: StateTrie;
  private root: TrieNode | null;
  /** The root of the last block stored: what `discard` goes back to. */
  private storedStateRoot: Uint8Array;
  /** Storage tries by address (an address absent here is read from its account). */
  private storageTries = new Map<bigint, TrieNode | null>();
  private accounts = new Map<bigint, HeadAccount>();
  private slots = new Map<bigint, Map<bigint, bigint>>();
  private readonly codes = new Map<string, Uint8Array>();
  /** Changes applied since the last commit, in order (a block's, or a dev chain's own writes). */
  private pending: AccountChange[] = [];
  private pendingCode: Array<[Uint8Array, Uint8Array]> = [];
  private pendingTries = new Set<bigint>();

  constructor(
    private readonly records: SyncRecords,
    stateRoot: Uint8Array,
  ) {
    this.trie = new StateTrie({ trieNode: (hash) => records.trieNode(hash) });
    this.root = storedRoot(stateRoot);
    this.storedStateRoot = stateRoot;
  }

  // ---------------------------------------------------------------- StateReader

  account(address: bigint): AccountRecord | null {
    return this.headAccount(address).record;
  }

  code(codeHash: Uint8Array, address: bigint): Uint8Array {
    const key = Buffer.from(codeHash).toString('hex');
    let code = this.codes.get(key);
    if (code === undefined) {
      const stored = this.records.code(codeHash);
      if (stored === null)
        throw new Error(`the store is missing the code ${key} of account ${address.toString(16)}`);
      code = stored;
      this.codes.set(key, code);
    }
    return code;
  }

  storage(address: bigint, slot: bigint): bigint {
    let slots = this.slots.get(address);
    if (slots === undefined) {
      slots = new Map();
      this.slots.set(address, slots);
    }
    let value = slots.get(slot);
    if (value === undefined) {
      const stored = this.trie.get(this.storageTrie(address), nibbles(keccak256(wordBytes(slot))));
      value = stored === null ? 0n : bytesToBigInt(decodeValue(stored));
      slots.set(slot, value);
    }
    return value;
  }

  // ---------------------------------------------------------------- blocks

  /** The state root after `changes` on the current state (pre-Byzantium receipts); nothing is kept. */
  rootAfter(changes: readonly AccountChange[]): Uint8Array {
    return this.trie.rootHash(this.applied(changes).root);
  }

  /** Applies changes to the current state (stored at the next commit); the new state root. */
  apply(changes: AccountChange[]): Uint8Array {
    const applied = this.applied(changes);
    for (const change of changes) {
      const a = change.account;
      const before = this.accounts.get(change.address)?.record ?? null;
      if (a !== null && a.code.length > 0 && (before === null || !sameBytes(before.codeHash, a.codeHash))) {
        this.pendingCode.push([a.codeHash, a.code]);
        this.codes.set(Buffer.from(a.codeHash).toString('hex'), a.code);
      }
      if (a === null || change.storageCleared) this.slots.delete(change.address);
      if (change.slots.size === 0) continue;
      let slots = this.slots.get(change.address);
      if (slots === undefined) {
        slots = new Map();
        this.slots.set(change.address, slots);
      }
      for (const [slot, value] of change.slots) slots.set(slot, value);
    }
    for (const [address, trie] of applied.storageTries) {
      this.storageTries.set(address, trie);
      this.pendingTries.add(address);
    }
    for (const [address, account] of applied.accounts) this.accounts.set(address, account);
    this.root = applied.root;
    this.pending.push(...changes);
    return this.trie.rootHash(this.root);
  }

  /** What was applied since the last commit, as the store takes it; it is now the stored state. */
  commit(): StateWrite {
    const trieNodes: Array<[Uint8Array, Uint8Array]> = [];
    for (const address of this.pendingTries)
      this.trie.newNodes(this.storageTries.get(address) ?? null, trieNodes);
    this.trie.newNodes(this.root, trieNodes);
    const write = { trieNodes, code: this.pendingCode, ...flatChanges(this.pending) };
    this.pending = [];
    this.pendingCode = [];
    this.pendingTries = new Set();
    this.storedStateRoot = this.trie.rootHash(this.root);
    return write;
  }

  /** Drops what was applied since the last commit. */
  discard(): void {
    if (this.pending.length === 0) return;
    this.reset(this.storedStateRoot);
  }

  /** Moves to another stored root (a rewind), forgetting what was read. */
  reset(stateRoot: Uint8Array): void {
    this.pending = [];
    this.pendingCode = [];
    this.pendingTries = new Set();
    this.root = storedRoot(stateRoot);
    this.storedStateRoot = stateRoot;
    this.forget();
  }

  /**
   * Forgets what was read once it grows past its bounds; only when the blocks committed are in the
   * store (their nodes and code are read from it again).
   */
  trim(): void {
    if (this.accounts.size < ACCOUNTS_KEPT && this.trie.nodesRead < NODES_KEPT) return;
    this.root = storedRoot(this.storedStateRoot);
    this.forget();
  }

  private forget(): void {
    this.storageTries = new Map();
    this.accounts = new Map();
    this.slots = new Map();
    this.codes.clear();
    this.trie.nodesRead = 0;
  }

  private headAccount(address: bigint): HeadAccount {
    let account = this.accounts.get(address);
    if (account === undefined) {
      const leaf = this.trie.get(this.root, nibbles(keccak256(addressBytes(address))));
      account = leaf === null ? { record: null, storageRoot: EMPTY_TRIE_ROOT } : decodeAccount(leaf);
      this.accounts.set(address, account);
    }
    return account;
  }

  private storageTrie(address: bigint): TrieNode | null {
    let trie = this.storageTries.get(address);
    if (trie === undefined) {
      trie = storedRoot(this.headAccount(address).storageRoot);
      this.storageTries.set(address, trie);
    }
    return trie;
  }

  private applied(changes: readonly AccountChange[]): {
    root: TrieNode | null;
    storageTries: Map<bigint, TrieNode | null>;
    accounts: Map<bigint, HeadAccount>;
  } {
    let root = this.root;
    const storageTries = new Map<bigint, TrieNode | null>();
    const accounts = new Map<bigint, HeadAccount>();
    for (const change of changes) {
      const key = nibbles(keccak256(addressBytes(change.address)));
      const a = change.account;
      if (a === null) {
        root = this.trie.delete(root, key);
        storageTries.set(change.address, null);
        accounts.set(change.address, { record: null, storageRoot: EMPTY_TRIE_ROOT });
        continue;
      }
      let storage = change.storageCleared
        ? null
        : storageTries.has(change.address)
          ? (storageTries.get(change.address) ?? null)
          : this.storageTrie(change.address);
      for (const [slot, value] of change.slots) {
        const slotKey = nibbles(keccak256(wordBytes(slot)));
        storage =
          value === 0n
            ? this.trie.delete(storage, slotKey)
            : this.trie.put(storage, slotKey, encodeBigint(value));
      }
      const storageRoot = this.trie.rootHash(storage);
      if (change.storageCleared || change.slots.size > 0) storageTries.set(change.address, storage);
      root = this.trie.put(
        root,
        key,
        encodeList([
          encodeBigint(a.nonce),
          encodeBigint(a.balance),
          encodeBytes(storageRoot),
          encodeBytes(a.codeHash),
        ]),
      );
      accounts.set(change.address, {
        record: {
          nonce: a.nonce,
          balance: a.balance,
          codeHash: a.codeHash,
          hasStorage: !sameBytes(storageRoot, EMPTY_TRIE_ROOT),
        },
        storageRoot,
      });
    }
    return { root, storageTries, accounts };
  }
}

/**
 * Changes applied one after another as the flat history takes them: each account's and slot's last
 * value, and the wipes (a slot written before a later wipe of its account is gone with it).
 */
function flatChanges(
  changes: readonly AccountChange[],
): Pick<StateWrite, 'accounts' | 'storage' | 'storageWipes'> {
  const merged = new Map<bigint, AccountChange>();
  for (const change of changes) {
    const earlier = merged.get(change.address);
    if (earlier === undefined) {
      merged.set(change.address, { ...change, slots: new Map(change.slots) });
      continue;
    }
    earlier.account = change.account;
    if (change.storageCleared) {
      earlier.storageCleared = true;
      earlier.slots = new Map(change.slots);
    } else for (const [slot, value] of change.slots) earlier.slots.set(slot, value);
  }
  const accounts: StateWrite['accounts'] = [];
  const storage: StateWrite['storage'] = [];
  const storageWipes: Uint8Array[] = [];
  for (const change of merged.values()) {
    const address = addressBytes(change.address);
    const a = change.account;
    accounts.push({
      address,
      account: a === null ? null : { nonce: a.nonce, balance: a.balance, codeHash: a.codeHash },
    });
    if (change.storageCleared) storageWipes.push(address);
    for (const [slot, value] of change.slots)
      storage.push({ address, slot: wordBytes(slot), value: bigintBytes(value) });
  }
  return { accounts, storage, storageWipes };
}

/** Runs `block` on the head state with the EVM of src/evm; its state is left pending on `head`. */
export function executeBlock(
  head: HeadState,
  fork: EvmFork,
  block: Block,
  options: { depositContract: bigint; blockHash: (number: bigint) => bigint; daoFork?: boolean },
): ExecutedBlock {
  const { rules, precompiles } = fork;
  const world = new WorldState(head);
  const result = applyBlock(world, rules, precompiles, blockInput(block, fork.chainId, options.blockHash), {
    depositContract: options.depositContract,
    // As import and the miner did on ethereumjs (its runBlock's generate mode): dev nodes' chains,
    // this one's own among them, have no EIP-7002/7251 contracts.
    requestContractsOptional: true,
    daoFork: options.daoFork === true,
    ...(rules.receiptStatus ? {} : { stateRoot: () => head.rootAfter(world.changes()) }),
  });
  const stateRoot = head.apply(world.takeChanges());
  const receipts: TxReceipt[] = [];
  const encoded: Uint8Array[] = [];
  const bloom = new Uint8Array(256);
  for (const receipt of result.receipts) {
    encoded.push(encodeReceipt(receipt));
    const bitvector = logsBloom(receipt.logs);
    for (let i = 0; i < 256; i++) bloom[i] = (bloom[i] as number) | (bitvector[i] as number);
    const logs = receipt.logs.map(
      (log) =>
        [addressBytes(log.address), log.topics.map(wordBytes), log.data] as [
          Uint8Array,
          Uint8Array[],
          Uint8Array,
        ],
    );
    const base = { cumulativeBlockGasUsed: receipt.cumulativeGasUsed, bitvector, logs };
    receipts.push(
      receipt.postState !== null
        ? { ...base, stateRoot: receipt.postState }
        : { ...base, status: receipt.success ? 1 : 0 },
    );
  }
  return {
    stateRoot,
    gasUsed: result.gasUsed,
    receiptsRoot: orderedTrieRoot(encoded),
    logsBloom: bloom,
    ...(result.requests !== null ? { requestsHash: requestsHash(result.requests) } : {}),
    receipts,
    encodedReceipts: encoded,
  };
}

/** The genesis alloc as the changes that make it from an empty state. */
export function allocChanges(
  alloc: ReadonlyArray<{
    address: Uint8Array;
    nonce: bigint;
    balance: bigint;
    code: Uint8Array;
    storage: ReadonlyArray<readonly [Uint8Array, Uint8Array]>;
  }>,
): AccountChange[] {
  return alloc.map((a) => {
    const slots = new Map<bigint, bigint>();
    for (const [slot, value] of a.storage) slots.set(bytesToBigInt(slot), bytesToBigInt(value));
    return {
      address: bytesToBigInt(a.address),
      account: {
        nonce: a.nonce,
        balance: a.balance,
        codeHash: a.code.length === 0 ? EMPTY_CODE_HASH : keccak256(a.code),
        code: a.code,
      },
      storageCleared: false,
      slots,
    };
  });
}

/** An ethereumjs block as the EVM's block input. */
export function blockInput(block: Block, chainId: bigint, blockHash: (number: bigint) => bigint): BlockInput {
  const h = block.header;
  return {
    env: {
      number: h.number,
      timestamp: h.timestamp,
      coinbase: bytesToBigInt(h.coinbase.bytes),
      gasLimit: h.gasLimit,
      difficulty: h.difficulty,
      prevRandao: bytesToBigInt(h.mixHash),
      baseFee: h.baseFeePerGas ?? 0n,
      excessBlobGas: h.excessBlobGas ?? 0n,
      chainId,
      blockHash,
    },
    parentHash: bytesToBigInt(h.parentHash),
    parentBeaconBlockRoot: h.parentBeaconBlockRoot ? bytesToBigInt(h.parentBeaconBlockRoot) : null,
    transactions: block.transactions.map(transactionOf),
    ommers: block.uncleHeaders.map((u) => ({ coinbase: bytesToBigInt(u.coinbase.bytes), number: u.number })),
    withdrawals: block.withdrawals
      ? block.withdrawals.map((w) => ({
          index: w.index,
          validatorIndex: w.validatorIndex,
          address: bytesToBigInt(w.address.bytes),
          amount: w.amount,
        }))
      : null,
  };
}

/** ethereumjs gives some fields as bytes, others (blob hashes) as hex strings. */
function big(value: Uint8Array | string): bigint {
  return typeof value === 'string' ? BigInt(value) : bytesToBigInt(value);
}

/** An ethereumjs transaction (its signature checked when it was decoded) as the EVM's. */
export function transactionOf(tx: TypedTransaction): Transaction {
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
    // The public key is recovered once (ethereumjs keeps it); its address hashed with our keccak,
    // several times faster than ethereumjs's.
    sender: bytesToBigInt(keccak256(tx.getSenderPublicKey()).subarray(12)),
    nonce: tx.nonce,
    gasLimit: tx.gasLimit,
    gasPrice: t.gasPrice ?? 0n,
    maxFeePerGas: t.maxFeePerGas ?? 0n,
    maxPriorityFeePerGas: t.maxPriorityFeePerGas ?? 0n,
    to: tx.to ? bytesToBigInt(tx.to.bytes) : null,
    value: tx.value,
    data: tx.data,
    accessList: (t.accessList ?? []).map(([address, keys]) => ({
      address: bytesToBigInt(address),
      storageKeys: keys.map((key) => bytesToBigInt(key)),
    })),
    blobVersionedHashes: (t.blobVersionedHashes ?? []).map(big),
    maxFeePerBlobGas: t.maxFeePerBlobGas ?? 0n,
    authorizationList: (t.authorizationList ?? []).map((a) => ({
      chainId: bytesToBigInt(a[0] as Uint8Array),
      address: bytesToBigInt(a[1] as Uint8Array),
      nonce: bytesToBigInt(a[2] as Uint8Array),
      yParity: bytesToBigInt(a[3] as Uint8Array),
      r: bytesToBigInt(a[4] as Uint8Array),
      s: bytesToBigInt(a[5] as Uint8Array),
    })),
  };
}

function decodeAccount(leaf: Uint8Array): HeadAccount {
  const [nonce, balance, storageRoot, codeHash] = decodeList(leaf);
  return {
    record: {
      nonce: bytesToBigInt(nonce as Uint8Array),
      balance: bytesToBigInt(balance as Uint8Array),
      codeHash: codeHash as Uint8Array,
      hasStorage: !sameBytes(storageRoot as Uint8Array, EMPTY_TRIE_ROOT),
    },
    storageRoot: storageRoot as Uint8Array,
  };
}

/** A flat RLP list of byte strings (an account leaf). */
function decodeList(bytes: Uint8Array): Uint8Array[] {
  const out: Uint8Array[] = [];
  let at = listPayloadStart(bytes);
  while (at < bytes.length) {
    const [start, end] = itemBounds(bytes, at);
    out.push(bytes.subarray(start, end));
    at = end;
  }
  return out;
}

function listPayloadStart(bytes: Uint8Array): number {
  const b = bytes[0] as number;
  if (b < 0xc0) throw new Error('an account leaf that is not a list');
  return b <= 0xf7 ? 1 : 1 + (b - 0xf7);
}

/** Where a byte string's content starts and ends. */
function itemBounds(bytes: Uint8Array, at: number): [number, number] {
  const b = bytes[at] as number;
  if (b < 0x80) return [at, at + 1];
  if (b <= 0xb7) return [at + 1, at + 1 + b - 0x80];
  if (b < 0xc0) {
    const n = b - 0xb7;
    let length = 0;
    for (let i = 0; i < n; i++) length = length * 256 + (bytes[at + 1 + i] as number);
    return [at + 1 + n, at + 1 + n + length];
  }
  throw new Error('a nested list in an account leaf');
}

/** A storage leaf's value: the RLP of its minimal bytes. */
function decodeValue(leaf: Uint8Array): Uint8Array {
  const [start, end] = itemBounds(leaf, 0);
  return leaf.subarray(start, end);
}

function bigintBytes(value: bigint): Uint8Array {
  if (value === 0n) return new Uint8Array(0);
  const hex = value.toString(16);
  return Buffer.from(hex.length % 2 === 0 ? hex : `0${hex}`, 'hex');
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}
