import type { AccountFields, StateManagerInterface } from '@ethereumjs/common';
import { OriginalStorageCache } from '@ethereumjs/statemanager';
import {
  Account,
  type Address,
  bytesToUnprefixedHex,
  equalsBytes,
  KECCAK256_NULL,
  KECCAK256_RLP,
  unpadBytes,
} from '@ethereumjs/util';
import { type AccountChange, type AccountView, accessKeys } from '../../../src/exec/stateAccess.ts';
import { keccak256 } from '../../../src/primitives/keccak.ts';
import type { BlockRef, ChainStore, FlatAccount } from '../../../src/store/types.ts';

export type { AccountChange, AccountView };

/** Where the state under the overlay comes from: the flat history as of one block. */
export interface StateSource {
  account(address: Uint8Array): Promise<FlatAccount | null>;
  storage(address: Uint8Array, slot: Uint8Array): Promise<Uint8Array>;
  code(codeHash: Uint8Array): Promise<Uint8Array>;
}

/** The state after block `block`, one range lookup per account or slot in the flat history. */
export function stateAtBlock(store: ChainStore, block: BlockRef): StateSource {
  return {
    account: (address) => store.getAccountAt(address, block.number, block.hash),
    storage: (address, slot) => store.getStorageAt(address, slot, block.number, block.hash),
    code: async (codeHash) => (await store.getCode(codeHash)) ?? new Uint8Array(),
  };
}

/** Value of a key before the first write the journal holds for it: not yet in the overlay. */
const FROM_BASE = Symbol('from base');
type Prior<T> = T | typeof FROM_BASE;

type JournalEntry =
  | { kind: 'account'; key: string; address: Address; prior: Prior<Account | null> }
  | { kind: 'storage'; key: string; address: Address; slot: Uint8Array; prior: Prior<Uint8Array> }
  | {
      kind: 'clear';
      key: string;
      address: Address;
      wasCleared: boolean;
      slots: Map<string, Uint8Array> | undefined;
    };

/**
 * An EVM state manager over the state of one block: reads fall through to the flat history (cached
 * per request), writes stay in memory. A journal of prior values makes checkpoint/revert O(writes)
 * and lets `changesSince` give each call's stateDiff without comparing whole states. Calls of a
 * trace_callMany share one overlay, so each sees what the previous ones left.
 *
 * Flat history has no storage roots: accounts read from it report the empty storage root, which only
 * matters for the EIP-7610 "collision with an account that has storage but no code or nonce" rule.
 */
export class OverlayStateManager implements StateManagerInterface {
  readonly originalStorageCache: OriginalStorageCache;
  private readonly baseAccounts = new Map<string, Account | null>();
  private readonly baseStorage = new Map<string, Uint8Array>();
  private readonly codeByHash = new Map<string, Uint8Array>();
  private readonly accounts = new Map<string, Account | null>();
  private readonly storage = new Map<string, Map<string, Uint8Array>>();
  /** Accounts whose storage was wiped here: base slots read as zero. */
  private readonly cleared = new Set<string>();
  private readonly journal: JournalEntry[] = [];
  private readonly checkpoints: number[] = [];
  /** Keys read since `takeReads`, while recording (see `accessKeys`); null when not recording. */
  private reads: Set<string> | null = null;

  constructor(private readonly source: StateSource) {
    this.originalStorageCache = new OriginalStorageCache(this.getStorage.bind(this));
  }

  /** A position in the journal; `changesSince(mark)` reports what was written after it. */
  mark(): number {
    return this.journal.length;
  }

  /** Starts noting every account and slot read, for `takeReads`. */
  recordReads(): void {
    this.reads = new Set();
  }

  /**
   * While set, reads of this account are not noted: a replay's fee payments to the coinbase read it
   * outside the EVM, and every transaction makes them (see services/parallelCalls.ts).
   */
  unnotedAccount: string | null = null;

  /** The keys (`accessKeys`) read since recording started or since the last take. */
  takeReads(): string[] {
    const reads = this.reads;
    if (reads === null) return [];
    this.reads = new Set();
    return [...reads];
  }

  /**
   * The keys whose value differs from what it was at `mark`: accounts (nonce, balance, code), slots,
   * and the storage wipes. A write that left its value as it was is not reported: whoever reads the
   * key later sees the same value either way.
   */
  changedKeysSince(mark: number): string[] {
    const accountsThen = new Map<string, Prior<Account | null>>();
    const slotsThen = new Map<string, Prior<Uint8Array>>();
    const wiped = new Set<string>();
    for (let i = mark; i < this.journal.length; i++) {
      const entry = this.journal[i] as JournalEntry;
      if (entry.kind === 'account') {
        if (!accountsThen.has(entry.key)) accountsThen.set(entry.key, entry.prior);
      } else if (entry.kind === 'clear') {
        wiped.add(entry.key);
      } else {
        const key = accessKeys.slot(bytesToUnprefixedHex(entry.address.bytes), entry.key);
        if (!slotsThen.has(key)) slotsThen.set(key, entry.prior);
      }
    }
    const changed: string[] = [];
    for (const [key, prior] of accountsThen) {
      const then = prior === FROM_BASE ? this.baseAccounts.get(key) : prior;
      // A base account never loaded cannot be compared: count it as changed.
      if (then === undefined || !sameAccount(then, this.accounts.get(key) ?? null)) changed.push(key);
    }
    for (const owner of wiped) changed.push(accessKeys.wipe(owner));
    for (const [key, prior] of slotsThen) {
      const owner = key.slice(0, 40);
      if (wiped.has(owner)) {
        changed.push(key);
        continue;
      }
      const then =
        prior !== FROM_BASE ? prior : this.cleared.has(owner) ? new Uint8Array() : this.baseStorage.get(key);
      const now = this.storage.get(owner)?.get(key.slice(41));
      if (then === undefined || now === undefined || !equalsBytes(then, now)) changed.push(key);
    }
    return changed;
  }

  async getAccount(address: Address): Promise<Account | undefined> {
    const key = bytesToUnprefixedHex(address.bytes);
    if (key !== this.unnotedAccount) this.reads?.add(key);
    const account = this.accounts.has(key) ? this.accounts.get(key) : await this.baseAccount(key, address);
    // The EVM mutates the accounts it reads before writing them back: hand out copies.
    return account ? copyAccount(account) : undefined;
  }

  async putAccount(address: Address, account?: Account): Promise<void> {
    const key = bytesToUnprefixedHex(address.bytes);
    this.journal.push({ kind: 'account', key, address, prior: this.overlayAccount(key) });
    this.accounts.set(key, account ? copyAccount(account) : null);
  }

  async deleteAccount(address: Address): Promise<void> {
    await this.putAccount(address, undefined);
    await this.clearStorage(address);
  }

  async modifyAccountFields(address: Address, fields: AccountFields): Promise<void> {
    const account = (await this.getAccount(address)) ?? new Account();
    if (fields.nonce !== undefined) account.nonce = fields.nonce;
    if (fields.balance !== undefined) account.balance = fields.balance;
    if (fields.codeHash !== undefined) account.codeHash = fields.codeHash;
    if (fields.storageRoot !== undefined) account.storageRoot = fields.storageRoot;
    await this.putAccount(address, account);
  }

  async putCode(address: Address, code: Uint8Array): Promise<void> {
    const codeHash = keccak256(code);
    this.codeByHash.set(bytesToUnprefixedHex(codeHash), code);
    await this.modifyAccountFields(address, { codeHash });
  }

  async getCode(address: Address): Promise<Uint8Array> {
    const account = await this.getAccount(address);
    return account ? this.codeOf(account.codeHash) : new Uint8Array();
  }

  async getCodeSize(address: Address): Promise<number> {
    return (await this.getCode(address)).length;
  }

  async getStorage(address: Address, slot: Uint8Array): Promise<Uint8Array> {
    const key = bytesToUnprefixedHex(address.bytes);
    const slotKey = bytesToUnprefixedHex(slot);
    this.reads?.add(accessKeys.slot(key, slotKey));
    const written = this.storage.get(key)?.get(slotKey);
    if (written !== undefined) return written;
    if (this.cleared.has(key)) return new Uint8Array();
    return this.baseSlot(key, slotKey, address, slot);
  }

  async putStorage(address: Address, slot: Uint8Array, value: Uint8Array): Promise<void> {
    const key = bytesToUnprefixedHex(address.bytes);
    const slotKey = bytesToUnprefixedHex(slot);
    let slots = this.storage.get(key);
    if (!slots) {
      slots = new Map();
      this.storage.set(key, slots);
    }
    const prior = slots.get(slotKey);
    this.journal.push({ kind: 'storage', key: slotKey, address, slot, prior: prior ?? FROM_BASE });
    slots.set(slotKey, unpadBytes(value));
  }

  async clearStorage(address: Address): Promise<void> {
    const key = bytesToUnprefixedHex(address.bytes);
    this.journal.push({
      kind: 'clear',
      key,
      address,
      wasCleared: this.cleared.has(key),
      slots: this.storage.get(key),
    });
    this.storage.delete(key);
    this.cleared.add(key);
  }

  async checkpoint(): Promise<void> {
    this.checkpoints.push(this.journal.length);
  }

  async commit(): Promise<void> {
    this.checkpoints.pop();
  }

  async revert(): Promise<void> {
    const mark = this.checkpoints.pop() ?? 0;
    while (this.journal.length > mark) this.undo(this.journal.pop() as JournalEntry);
  }

  private undo(entry: JournalEntry): void {
    switch (entry.kind) {
      case 'account':
        if (entry.prior === FROM_BASE) this.accounts.delete(entry.key);
        else this.accounts.set(entry.key, entry.prior);
        return;
      case 'storage': {
        const owner = bytesToUnprefixedHex(entry.address.bytes);
        const slots = this.storage.get(owner);
        if (entry.prior === FROM_BASE) slots?.delete(entry.key);
        else slots?.set(entry.key, entry.prior);
        return;
      }
      case 'clear':
        if (!entry.wasCleared) this.cleared.delete(entry.key);
        if (entry.slots) this.storage.set(entry.key, entry.slots);
        return;
    }
  }

  /**
   * Every account written after `mark` with its value then and now, and the slots written with
   * theirs. The first journal entry after the mark that touches a key tells its value at the mark.
   * Unchanged values are included; the stateDiff builder drops them.
   */
  async changesSince(mark: number): Promise<AccountChange[]> {
    type SlotAtMark = { slot: Uint8Array; value: Uint8Array | 'base' | 'zero' };
    type Touched = {
      address: Address;
      account?: Prior<Account | null>;
      firstClear?: Extract<JournalEntry, { kind: 'clear' }>;
      slots: Map<string, SlotAtMark>;
    };
    const touched = new Map<string, Touched>();
    for (let i = mark; i < this.journal.length; i++) {
      const entry = this.journal[i] as JournalEntry;
      const owner = bytesToUnprefixedHex(entry.address.bytes);
      let t = touched.get(owner);
      if (!t) {
        t = { address: entry.address, slots: new Map() };
        touched.set(owner, t);
      }
      if (entry.kind === 'account') {
        if (t.account === undefined) t.account = entry.prior;
      } else if (entry.kind === 'clear') {
        if (!t.firstClear) {
          t.firstClear = entry;
          // The clear zeroed every slot the overlay held (overrides, earlier calls); one not written
          // since the mark held then what it held when cleared. Slots only in the flat history
          // cannot be listed, and are not reported.
          for (const [slotKey, value] of entry.slots ?? []) {
            if (!t.slots.has(slotKey)) t.slots.set(slotKey, { slot: Buffer.from(slotKey, 'hex'), value });
          }
        }
      } else if (!t.slots.has(entry.key)) {
        t.slots.set(entry.key, {
          slot: entry.slot,
          value: this.slotAtMark(owner, mark, t.firstClear, entry),
        });
      }
    }
    const changes: AccountChange[] = [];
    for (const [owner, t] of touched) {
      const now = this.accounts.has(owner)
        ? (this.accounts.get(owner) ?? null)
        : await this.baseAccount(owner, t.address);
      const then =
        t.account === undefined
          ? now
          : t.account === FROM_BASE
            ? await this.baseAccount(owner, t.address)
            : t.account;
      const storage = new Map<string, { slot: Uint8Array; before: Uint8Array; after: Uint8Array }>();
      for (const [slotKey, { slot, value }] of t.slots) {
        const before =
          value === 'zero'
            ? new Uint8Array()
            : value === 'base'
              ? await this.baseSlot(owner, slotKey, t.address, slot)
              : value;
        storage.set(slotKey, { slot, before, after: await this.getStorage(t.address, slot) });
      }
      changes.push({
        address: t.address.bytes,
        before: then ? await this.view(then) : null,
        after: now ? await this.view(now) : null,
        storage,
      });
    }
    return changes;
  }

  /** A slot's value at the mark, from the first entry after the mark that could have changed it. */
  private slotAtMark(
    owner: string,
    mark: number,
    firstClear: Extract<JournalEntry, { kind: 'clear' }> | undefined,
    write: Extract<JournalEntry, { kind: 'storage' }>,
  ): Uint8Array | 'base' | 'zero' {
    if (firstClear) {
      const held = firstClear.slots?.get(write.key);
      return held ?? (firstClear.wasCleared ? 'zero' : 'base');
    }
    if (write.prior !== FROM_BASE) return write.prior;
    return this.wasClearedAt(owner, mark) ? 'zero' : 'base';
  }

  private wasClearedAt(owner: string, mark: number): boolean {
    for (let i = mark; i < this.journal.length; i++) {
      const entry = this.journal[i] as JournalEntry;
      if (entry.kind === 'clear' && entry.key === owner) return entry.wasCleared;
    }
    return this.cleared.has(owner);
  }

  private async view(account: Account): Promise<AccountView> {
    return { nonce: account.nonce, balance: account.balance, code: await this.codeOf(account.codeHash) };
  }

  private overlayAccount(key: string): Prior<Account | null> {
    return this.accounts.has(key) ? (this.accounts.get(key) ?? null) : FROM_BASE;
  }

  private async baseAccount(key: string, address: Address): Promise<Account | null> {
    if (this.baseAccounts.has(key)) return this.baseAccounts.get(key) ?? null;
    const flat = await this.source.account(address.bytes);
    const account = flat ? new Account(flat.nonce, flat.balance, KECCAK256_RLP, flat.codeHash) : null;
    this.baseAccounts.set(key, account);
    return account;
  }

  private async baseSlot(
    owner: string,
    slotKey: string,
    address: Address,
    slot: Uint8Array,
  ): Promise<Uint8Array> {
    const key = accessKeys.slot(owner, slotKey);
    let value = this.baseStorage.get(key);
    if (value === undefined) {
      value = await this.source.storage(address.bytes, slot);
      this.baseStorage.set(key, value);
    }
    return value;
  }

  private async codeOf(codeHash: Uint8Array): Promise<Uint8Array> {
    if (codeHash.every((b, i) => b === KECCAK256_NULL[i])) return new Uint8Array();
    const key = bytesToUnprefixedHex(codeHash);
    let code = this.codeByHash.get(key);
    if (!code) {
      code = await this.source.code(codeHash);
      this.codeByHash.set(key, code);
    }
    return code;
  }

  async flush(): Promise<void> {}

  clearCaches(): void {}

  // The overlay is never copied: one request owns one overlay, and nothing here computes roots.
  shallowCopy(): StateManagerInterface {
    throw new Error('OverlayStateManager cannot be copied');
  }

  async getStateRoot(): Promise<Uint8Array> {
    // Pre-Byzantium receipts want a root per transaction; tracing never reads them.
    return new Uint8Array(32);
  }

  async setStateRoot(): Promise<void> {
    throw new Error('OverlayStateManager serves one block; it has no state roots');
  }

  async hasStateRoot(): Promise<boolean> {
    return false;
  }
}

function sameAccount(a: Account | null, b: Account | null): boolean {
  if (a === null || b === null) return a === b;
  return a.nonce === b.nonce && a.balance === b.balance && equalsBytes(a.codeHash, b.codeHash);
}

/** A field copy: the EVM reads accounts very often, and the constructor re-validates every field. */
function copyAccount(a: Account): Account {
  return Object.assign(Object.create(Account.prototype) as Account, a);
}
