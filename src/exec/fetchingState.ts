import type { EvmTracer } from '../evm/hooks.ts';
import {
  type AccountRecord,
  EMPTY_CODE_HASH,
  equalBytes,
  MissingState,
  type StateReader,
  type WorldState,
} from '../evm/state.ts';
import { addressBytes, bytesToBigint, wordBytes } from '../evm/words.ts';
import { bytesKey, toHex } from '../primitives/hex.ts';
import type { BlockRef, ChainStore, FetchedStateReads, SyncStateReads } from '../store/types.ts';
import { type BlockReads, FlatStateReader } from './evmEngine.ts';
import type { EvmFork } from './evmRules.ts';

// Upstream mode on the EVM of src/evm (issue 20): the EVM runs a transaction without awaiting, so a
// state that comes over the network is read from what is already held here (the upstream cache,
// filled ahead of the job by src/exec/prefetch.ts), and a read of something not held yet ends the
// run with the keys it needs (MissingState, src/evm/state.ts). The run leaves nothing behind; the
// keys are fetched in one batch, through the store's fetch (its single-flight, the request's budget
// and, in a worker, the ask of the main thread), and the transaction runs again.

const EMPTY = new Uint8Array(0);

/** Thrown where BLOCKHASH asks for a canonical hash not looked up yet (upstream mode). */
export class MissingBlockHash extends Error {
  constructor(readonly number: bigint) {
    super(`canonical hash of block ${number} not yet available`);
    this.name = 'MissingBlockHash';
  }
}

/** Reruns made for missing state, in this thread: the tests count them. */
export const fetchingStats = { reruns: 0, keys: 0 };

/**
 * The state after block `at` as the EVM reads it, from the upstream cache: what it does not hold
 * yet throws MissingState naming it. Values handed out once are kept, so one run sees one state
 * even if the cache drops the block meanwhile (a reorg). An account the cache holds as absent has
 * no storage: its slots are zero without a fetch.
 */
export class FetchingStateReader implements StateReader {
  private readonly accounts = new Map<bigint, AccountRecord | null>();
  private readonly slots = new Map<bigint, Map<bigint, bigint>>();
  private readonly codes = new Map<string, Uint8Array>();
  private readonly hashes = new Map<bigint, Uint8Array | null>();
  /** Keys fetched by this reader: asked for again, the cache failed to keep them. */
  private readonly fetched = new Set<string>();

  constructor(
    private readonly store: ChainStore,
    private readonly source: FetchedStateReads,
    private readonly at: BlockRef,
    /**
     * Accounts read one after the other whenever one is (the precompiles, which every transaction
     * from Berlin on warms): one missing names all those missing, for one round trip, not one each.
     */
    private readonly together: readonly bigint[] = [],
  ) {}

  account(address: bigint): AccountRecord | null {
    let record = this.accounts.get(address);
    if (record !== undefined) return record;
    const flat = this.source.accountAt(this.at.hash, addressBytes(address));
    if (flat === undefined) {
      if (!this.together.includes(address)) throw new MissingState([address], []);
      const missing = this.together.filter(
        (a) => !this.accounts.has(a) && this.source.accountAt(this.at.hash, addressBytes(a)) === undefined,
      );
      throw new MissingState(missing, []);
    }
    record = flat && { nonce: flat.nonce, balance: flat.balance, codeHash: flat.codeHash, hasStorage: null };
    this.accounts.set(address, record);
    return record;
  }

  code(codeHash: Uint8Array): Uint8Array {
    if (equalBytes(codeHash, EMPTY_CODE_HASH)) return EMPTY;
    const key = bytesKey(codeHash);
    let code = this.codes.get(key);
    if (code === undefined) {
      // Code is fetched with its account; a code the upstream did not give reads as none, as on the
      // ethereumjs path did (now the tests' oracle: test/support/ethereumjsOracle/overlayState.ts).
      code = this.source.code(codeHash) ?? EMPTY;
      this.codes.set(key, code);
    }
    return code;
  }

  storage(address: bigint, slot: bigint): bigint {
    if (this.accounts.get(address) === null) return 0n;
    let held = this.slots.get(address);
    const known = held?.get(slot);
    if (known !== undefined) return known;
    const value = this.source.storageAt(this.at.hash, addressBytes(address), wordBytes(slot));
    if (value === null) throw new MissingState([], [[address, slot]]);
    const word = value.length === 0 ? 0n : bytesToBigint(value);
    if (held === undefined) {
      held = new Map();
      this.slots.set(address, held);
    }
    held.set(slot, word);
    return word;
  }

  /** BLOCKHASH's canonical hashes, looked up through the store (as the ethereumjs path does). */
  canonicalHash(number: bigint): Uint8Array | null {
    const hash = this.hashes.get(number);
    if (hash === undefined) throw new MissingBlockHash(number);
    return hash;
  }

  /** Fetches what a run found missing, every key of it in one batch. */
  async fetch(missing: MissingState | MissingBlockHash): Promise<void> {
    fetchingStats.reruns++;
    if (missing instanceof MissingBlockHash) {
      this.hashes.set(missing.number, await this.store.getCanonicalHash(missing.number));
      return;
    }
    const byAddress = new Map<bigint, Uint8Array[]>();
    const named: string[] = [];
    for (const address of missing.accounts) {
      if (!byAddress.has(address)) byAddress.set(address, []);
      named.push(`${address}`);
    }
    for (const [address, slot] of missing.slots) {
      let slots = byAddress.get(address);
      if (slots === undefined) {
        slots = [];
        byAddress.set(address, slots);
      }
      slots.push(wordBytes(slot));
      named.push(`${address}:${slot}`);
    }
    for (const key of named) {
      if (this.fetched.has(key))
        throw new Error(`state fetched from the upstream is not in its cache at ${toHex(this.at.hash)}`);
      this.fetched.add(key);
    }
    fetchingStats.keys += named.length;
    await this.source.fetch(
      this.at.hash,
      [...byAddress].map(([address, slots]) => ({ address: addressBytes(address), slots })),
    );
  }

  /**
   * Reads, before a stateDiff is taken, every key taking it may read: the accounts the world
   * changed and the slots written (`written`: those the run wrote, which a wiped account's diff
   * lists). Throws one MissingState naming all that are missing; taking the diff consumes the
   * world's changes, so it must not stop midway.
   */
  prepareDiff(world: WorldState, written: ReadonlyMap<bigint, ReadonlySet<bigint>>): void {
    const accounts: bigint[] = [];
    const slots: Array<[bigint, bigint]> = [];
    const read = (address: bigint, slot: bigint) => {
      try {
        this.storage(address, slot);
      } catch (e) {
        if (!(e instanceof MissingState)) throw e;
        slots.push([address, slot]);
      }
    };
    for (const change of world.changes()) {
      try {
        this.account(change.address);
      } catch (e) {
        if (!(e instanceof MissingState)) throw e;
        accounts.push(change.address);
        continue;
      }
      for (const slot of change.slots.keys()) read(change.address, slot);
      if (!change.storageCleared) continue;
      for (const slot of written.get(change.address) ?? [])
        if (!change.slots.has(slot)) read(change.address, slot);
    }
    if (accounts.length > 0 || slots.length > 0) throw new MissingState(accounts, slots);
  }
}

/**
 * The slots a run writes, kept until its stateDiff is taken: a diff lists a wiped account's slots
 * written in the run, whose values before may not have been read (src/exec/tracing/evmAdapter.ts).
 */
export class WrittenSlots {
  readonly slots = new Map<bigint, Set<bigint>>();
  readonly tracer: EvmTracer = {
    storageWrite: (address, slot) => {
      let set = this.slots.get(address);
      if (set === undefined) {
        set = new Set();
        this.slots.set(address, set);
      }
      set.add(slot);
    },
  };

  clear(): void {
    this.slots.clear();
  }
}

/**
 * The state after block `at` for the EVM: the flat history where the store reads synchronously,
 * else the upstream cache (a FetchingStateReader); with it the canonical hashes BLOCKHASH reads.
 * A store that offers neither cannot be executed on (every store here offers one). `kept`: the flat reads are shared with later readers of the
 * block (src/exec/evmEngine.ts BlockReads).
 */
export function evmStateAt(
  store: ChainStore,
  at: BlockRef,
  fork: EvmFork,
  kept: BlockReads | null = null,
): {
  reader: StateReader;
  hashes: Pick<SyncStateReads, 'canonicalHash'>;
  fetching: FetchingStateReader | null;
} {
  if (store.syncReads) {
    return {
      reader: new FlatStateReader(store.syncReads, at.number, kept),
      hashes: store.syncReads,
      fetching: null,
    };
  }
  if (store.fetchedReads) {
    const precompiles = [...fork.precompiles.keys()].map(BigInt);
    const reader = new FetchingStateReader(store, store.fetchedReads, at, precompiles);
    return { reader, hashes: reader, fetching: reader };
  }
  throw new Error('the store offers no state reads the EVM can run on');
}

/**
 * Runs `attempt`, synchronous and on state that may be missing, until it completes: each time it
 * stops for state not held yet, `abandon` clears what it left outside the world (the world itself
 * is left as before by the EVM), the keys are fetched in one batch and it runs again. Without a
 * fetching reader, a plain call.
 */
export async function untilComplete<T>(
  fetching: FetchingStateReader | null,
  attempt: () => T,
  abandon?: () => void,
): Promise<T> {
  if (fetching === null) return attempt();
  for (;;) {
    try {
      return attempt();
    } catch (e) {
      if (!(e instanceof MissingState || e instanceof MissingBlockHash)) throw e;
      abandon?.();
      await fetching.fetch(e);
    }
  }
}
