import secp256k1 from 'secp256k1';
import type { BlockEnv } from '../evm/env.ts';
import { type ForkName, forkByName, forkRules, withBlobSchedule } from '../evm/forks.ts';
import { precompilesFor } from '../evm/precompiles/index.ts';
import { encodeBytes, encodeList } from '../evm/rlp.ts';
import { type AccountRecord, EMPTY_CODE_HASH, type StateReader, WorldState } from '../evm/state.ts';
import {
  type AccessListEntry,
  type Authorization,
  applyTransaction,
  InvalidTransaction,
  type Transaction,
} from '../evm/transaction.ts';
import { type AccountLeaf, EMPTY_TRIE_ROOT, stateRoot, storageRoot } from '../evm/trie.ts';
import { addressBytes, bytesToBigint, wordBytes } from '../evm/words.ts';
import { keccak256 } from '../primitives/keccak.ts';

/**
 * Filled state tests (ethereum/tests' GeneralStateTests format): for each test, fork and
 * transaction index, the transaction runs on the `pre` state in the test's `env`, and the post-state
 * root and logs hash are compared with the test's (or the transaction must be rejected when the test
 * names an exception). What `ethtrace statetest` runs (src/cli/statetest.ts).
 */

type Hex = string;

interface TestAccount {
  nonce: Hex;
  balance: Hex;
  code: Hex;
  storage: Record<Hex, Hex>;
}

interface TestTransaction {
  nonce: Hex;
  gasPrice?: Hex;
  maxFeePerGas?: Hex;
  maxPriorityFeePerGas?: Hex;
  maxFeePerBlobGas?: Hex;
  gasLimit: Hex[];
  to: Hex;
  value: Hex[];
  data: Hex[];
  accessLists?: Array<Array<{ address: Hex; storageKeys: Hex[] }> | null>;
  blobVersionedHashes?: Hex[];
  authorizationList?: Array<{
    chainId: Hex;
    address: Hex;
    nonce: Hex;
    v?: Hex;
    yParity?: Hex;
    r: Hex;
    s: Hex;
  }>;
  sender?: Hex;
  secretKey?: Hex;
}

interface PostEntry {
  hash: Hex;
  logs: Hex;
  indexes: { data: number; gas: number; value: number };
  expectException?: string;
}

interface StateTest {
  env: Record<string, Hex>;
  pre: Record<Hex, TestAccount>;
  transaction: TestTransaction;
  post: Record<string, PostEntry[]>;
  config?: {
    chainid?: Hex;
    blobSchedule?: Record<string, { target: Hex; max: Hex; baseFeeUpdateFraction: Hex }>;
  };
}

/** One case's outcome. */
export interface CaseResult {
  test: string;
  fork: string;
  /** Position in the fork's post list. */
  index: number;
  indexes: { data: number; gas: number; value: number };
  /** null when it passed, else what differed. */
  failure: string | null;
}

export interface RunOptions {
  /** Only this fork (a `post` key or another name of it). */
  fork?: ForkName;
  /** Only tests whose name matches. */
  run?: RegExp;
}

interface PreAccount {
  nonce: bigint;
  balance: bigint;
  code: Uint8Array;
  codeHash: Uint8Array;
  storage: Map<bigint, bigint>;
  /** Storage root, computed once per test when first needed. */
  storageRoot: Uint8Array | null;
}

/** The `pre` state as a StateReader. */
class PreState implements StateReader {
  constructor(readonly accounts: ReadonlyMap<bigint, PreAccount>) {}

  account(address: bigint): AccountRecord | null {
    const a = this.accounts.get(address);
    if (a === undefined) return null;
    return { nonce: a.nonce, balance: a.balance, codeHash: a.codeHash, hasStorage: a.storage.size > 0 };
  }

  code(_codeHash: Uint8Array, address: bigint): Uint8Array {
    return this.accounts.get(address)?.code ?? new Uint8Array(0);
  }

  storage(address: bigint, slot: bigint): bigint {
    return this.accounts.get(address)?.storage.get(slot) ?? 0n;
  }
}

function big(hex: Hex | undefined): bigint {
  if (hex === undefined || hex === '' || hex === '0x') return 0n;
  // ethereum/tests write numbers beyond 256 bits (to test their refusal) as "0x:bigint 0x…".
  return BigInt(hex.startsWith('0x:bigint ') ? hex.slice(10) : hex);
}

function bytes(hex: Hex | undefined): Uint8Array {
  if (hex === undefined) return new Uint8Array(0);
  const body = hex.startsWith('0x') ? hex.slice(2) : hex;
  return Uint8Array.from(Buffer.from(body, 'hex'));
}

function parsePre(pre: StateTest['pre']): Map<bigint, PreAccount> {
  const accounts = new Map<bigint, PreAccount>();
  for (const [address, a] of Object.entries(pre)) {
    const code = bytes(a.code);
    const storage = new Map<bigint, bigint>();
    for (const [slot, value] of Object.entries(a.storage)) {
      const v = big(value);
      if (v !== 0n) storage.set(big(slot), v);
    }
    accounts.set(big(address), {
      nonce: big(a.nonce),
      balance: big(a.balance),
      code,
      codeHash: code.length === 0 ? EMPTY_CODE_HASH : keccak256(code),
      storage,
      storageRoot: null,
    });
  }
  return accounts;
}

function blockEnv(env: StateTest['env'], chainId: bigint): BlockEnv {
  return {
    number: big(env.currentNumber),
    timestamp: big(env.currentTimestamp),
    coinbase: big(env.currentCoinbase),
    gasLimit: big(env.currentGasLimit),
    difficulty: big(env.currentDifficulty),
    prevRandao: big(env.currentRandom),
    baseFee: big(env.currentBaseFee),
    excessBlobGas: big(env.currentExcessBlobGas),
    chainId,
    // As geth's state tests: the hash of block n is keccak256 of n in decimal.
    blockHash: (n) => bytesToBigint(keccak256(new TextEncoder().encode(n.toString())), 0, 32),
  };
}

function senderOf(t: TestTransaction): bigint {
  if (t.sender) return big(t.sender);
  const key = bytes(t.secretKey);
  const publicKey = secp256k1.publicKeyCreate(key, false);
  return bytesToBigint(keccak256(publicKey.subarray(1)), 12, 20);
}

function transactionOf(t: TestTransaction, indexes: PostEntry['indexes'], sender: bigint): Transaction {
  const accessList = t.accessLists?.[indexes.data] ?? null;
  const type = t.authorizationList
    ? 4
    : t.blobVersionedHashes
      ? 3
      : t.maxFeePerGas !== undefined
        ? 2
        : accessList !== null
          ? 1
          : 0;
  const entries: AccessListEntry[] = (accessList ?? []).map((e) => ({
    address: big(e.address),
    storageKeys: e.storageKeys.map(big),
  }));
  const authorizations: Authorization[] = (t.authorizationList ?? []).map((a) => ({
    chainId: big(a.chainId),
    address: big(a.address),
    nonce: big(a.nonce),
    yParity: big(a.yParity ?? a.v),
    r: big(a.r),
    s: big(a.s),
  }));
  return {
    type,
    sender,
    nonce: big(t.nonce),
    gasLimit: big(t.gasLimit[indexes.gas]),
    gasPrice: big(t.gasPrice),
    maxFeePerGas: big(t.maxFeePerGas),
    maxPriorityFeePerGas: big(t.maxPriorityFeePerGas),
    to: t.to === '' || t.to === undefined ? null : big(t.to),
    value: big(t.value[indexes.value]),
    data: bytes(t.data[indexes.data]),
    accessList: entries,
    blobVersionedHashes: (t.blobVersionedHashes ?? []).map(big),
    maxFeePerBlobGas: big(t.maxFeePerBlobGas),
    authorizationList: authorizations,
  };
}

/** The state root after the run: `pre` with what the world changed. */
function postStateRoot(pre: ReadonlyMap<bigint, PreAccount>, world: WorldState): Uint8Array {
  const post = new Map<bigint, AccountLeaf>();
  for (const [address, a] of pre) {
    a.storageRoot ??= storageRoot(a.storage);
    post.set(address, {
      nonce: a.nonce,
      balance: a.balance,
      codeHash: a.codeHash,
      storageRoot: a.storageRoot,
    });
  }
  for (const change of world.takeChanges()) {
    if (change.account === null) {
      post.delete(change.address);
      continue;
    }
    const before = pre.get(change.address);
    let root: Uint8Array;
    if (change.slots.size === 0 && !change.storageCleared)
      root = before ? (before.storageRoot as Uint8Array) : EMPTY_TRIE_ROOT;
    else {
      const storage = new Map<bigint, bigint>(change.storageCleared || !before ? [] : before.storage);
      for (const [slot, value] of change.slots) {
        if (value === 0n) storage.delete(slot);
        else storage.set(slot, value);
      }
      root = storageRoot(storage);
    }
    post.set(change.address, {
      nonce: change.account.nonce,
      balance: change.account.balance,
      codeHash: change.account.codeHash,
      storageRoot: root,
    });
  }
  return stateRoot(post);
}

function logsHash(
  logs: ReadonlyArray<{ address: bigint; topics: readonly bigint[]; data: Uint8Array }>,
): Uint8Array {
  const items = logs.map((log) =>
    encodeList([
      encodeBytes(addressBytes(log.address)),
      encodeList(log.topics.map((t) => encodeBytes(wordBytes(t)))),
      encodeBytes(log.data),
    ]),
  );
  return keccak256(encodeList(items));
}

function hex(b: Uint8Array): string {
  return `0x${Buffer.from(b).toString('hex')}`;
}

/** Runs every case of the tests in one parsed file. */
export function runStateTests(file: Record<string, StateTest>, options: RunOptions = {}): CaseResult[] {
  const results: CaseResult[] = [];
  for (const [name, test] of Object.entries(file)) {
    if (options.run && !options.run.test(name)) continue;
    const pre = parsePre(test.pre);
    const chainId = test.config?.chainid === undefined ? 1n : big(test.config.chainid);
    const block = blockEnv(test.env, chainId);
    const sender = senderOf(test.transaction);
    for (const [forkKey, entries] of Object.entries(test.post)) {
      const fork = forkByName(forkKey);
      if (options.fork && fork !== options.fork) continue;
      entries.forEach((entry, index) => {
        const base = { test: name, fork: forkKey, index, indexes: entry.indexes };
        if (fork === null) {
          results.push({ ...base, failure: `unknown fork ${forkKey}` });
          return;
        }
        let rules = forkRules(fork);
        const schedule = test.config?.blobSchedule?.[forkKey];
        if (schedule) {
          rules = withBlobSchedule(rules, {
            target: Number(big(schedule.target)),
            max: Number(big(schedule.max)),
            baseFeeUpdateFraction: big(schedule.baseFeeUpdateFraction),
          });
        }
        results.push({ ...base, failure: runCase(pre, block, rules, test.transaction, entry, sender) });
      });
    }
  }
  return results;
}

function runCase(
  pre: ReadonlyMap<bigint, PreAccount>,
  block: BlockEnv,
  rules: ReturnType<typeof forkRules>,
  t: TestTransaction,
  entry: PostEntry,
  sender: bigint,
): string | null {
  const world = new WorldState(new PreState(pre));
  const tx = transactionOf(t, entry.indexes, sender);
  let logs = keccak256(encodeList([]));
  try {
    const result = applyTransaction(world, block, rules, precompilesFor(rules.precompiles), tx);
    logs = logsHash(result.logs);
    if (entry.expectException) return `expected ${entry.expectException}, the transaction was accepted`;
  } catch (e) {
    if (!(e instanceof InvalidTransaction)) throw e;
    if (!entry.expectException) return `unexpected ${e.code}: ${e.message}`;
  }
  const root = hex(postStateRoot(pre, world));
  if (root !== entry.hash.toLowerCase()) return `state root ${root}, expected ${entry.hash}`;
  const logsHex = hex(logs);
  if (logsHex !== entry.logs.toLowerCase()) return `logs hash ${logsHex}, expected ${entry.logs}`;
  return null;
}
