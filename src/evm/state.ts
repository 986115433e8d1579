import { keccak256 } from '../primitives/keccak.ts';
import { type Code, codeOf } from './code.ts';

/** keccak256 of no bytes: the code hash of an account without code. */
export const EMPTY_CODE_HASH = keccak256(new Uint8Array(0));
const EMPTY_CODE = new Uint8Array(0);

/** An account as the state it runs on holds it. */
export interface AccountRecord {
  nonce: bigint;
  balance: bigint;
  codeHash: Uint8Array;
  /**
   * The account has storage (its storage root is not the empty trie's); null when the reader cannot
   * tell (a flat state history keeps no storage roots): its slots are then read from the reader, and
   * a creation onto the account does not count its storage as a collision (EIP-7610 unenforced).
   */
  hasStorage: boolean | null;
}

/**
 * What the EVM reads its state through, synchronously. A source that does not hold a value yet
 * (upstream mode) throws a MissingState naming what it needs; the EVM lets it pass through and the
 * caller discards the run (nothing has been written anywhere but the run's own WorldState), fetches
 * the keys and runs the transaction again.
 */
export interface StateReader {
  account(address: bigint): AccountRecord | null;
  code(codeHash: Uint8Array, address: bigint): Uint8Array;
  storage(address: bigint, slot: bigint): bigint;
}

/** Thrown by a StateReader for state it does not hold yet; carries every key it knows it needs. */
export class MissingState extends Error {
  constructor(
    readonly accounts: readonly bigint[],
    readonly slots: ReadonlyArray<readonly [address: bigint, slot: bigint]>,
  ) {
    super(`state not yet available: ${accounts.length} accounts, ${slots.length} slots`);
    this.name = 'MissingState';
  }
}

/** An account as one run sees it: read once from the StateReader, then changed in place. */
export class Account {
  nonce = 0n;
  balance = 0n;
  codeHash: Uint8Array = EMPTY_CODE_HASH;
  /** null until read (codeHash says whether there is any). */
  private codeBytes: Uint8Array | null = EMPTY_CODE;
  private codeless = true;
  private analysed: Code | null = null;
  /** In the state (pre-EIP-161 forks tell an empty account from an absent one). */
  exists = false;
  /** Storage as of the start of the current transaction (read, or written by earlier ones). */
  readonly committed = new Map<bigint, bigint>();
  /** Slots written by the current transaction. */
  readonly current = new Map<bigint, bigint>();
  /** The reader's storage of this address no longer applies (destroyed, or created anew). */
  storageCleared = false;
  /** The reader holds storage for it (or may: see `storageKnown`). */
  readerHasStorage = false;
  /** Warm in every transaction (a precompile, WorldState.warmAlways): what `warm` is reset to. */
  alwaysWarm = false;
  /** The reader could say whether it has storage (AccountRecord.hasStorage not null). */
  storageKnown = true;
  // Per transaction, reset by WorldState.endTransaction.
  warm = false;
  warmSlots: Set<bigint> | null = null;
  transient: Map<bigint, bigint> | null = null;
  createdInTx = false;
  selfDestructed = false;
  // Since the last takeChanges (a block, or a state test).
  changed = false;
  /** Deleted (its storage with it) since the last takeChanges. */
  wiped = false;
  changedSlots: Set<bigint> | null = null;

  constructor(readonly address: bigint) {}

  get hasCode(): boolean {
    return !this.codeless;
  }

  /** EIP-161: no nonce, no balance, no code. */
  isEmpty(): boolean {
    return this.nonce === 0n && this.balance === 0n && !this.hasCode;
  }

  /** Code, balance, nonce or storage: a CREATE here collides (EIP-684, EIP-7610). */
  collides(): boolean {
    if (this.nonce !== 0n || this.hasCode) return true;
    if (!this.storageKnown) return false;
    if (this.readerHasStorage && !this.storageCleared) return true;
    for (const v of this.committed.values()) if (v !== 0n) return true;
    return false;
  }

  code(reader: StateReader): Uint8Array {
    if (this.codeBytes === null) this.codeBytes = reader.code(this.codeHash, this.address);
    return this.codeBytes;
  }

  /** The code analysed for jumps, shared by every account with this code hash. */
  analysedCode(reader: StateReader): Code {
    if (this.analysed === null) this.analysed = codeOf(this.code(reader), this.codeHash);
    return this.analysed;
  }

  setCodeBytes(code: Uint8Array, hash: Uint8Array): void {
    this.codeBytes = code;
    this.codeHash = hash;
    this.codeless = code.length === 0;
    this.analysed = null;
  }

  /** Loaded from the reader's record (or its absence). */
  load(record: AccountRecord | null): void {
    if (record === null) return;
    this.exists = true;
    this.nonce = record.nonce;
    this.balance = record.balance;
    this.codeHash = record.codeHash;
    this.codeless = equalBytes(record.codeHash, EMPTY_CODE_HASH);
    this.codeBytes = this.codeless ? EMPTY_CODE : null;
    this.readerHasStorage = record.hasStorage !== false;
    this.storageKnown = record.hasStorage !== null;
  }
}

export function equalBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

// Journal entry kinds.
const BALANCE = 0;
const NONCE = 1;
const CODE = 2;
const STORAGE = 3;
const TOUCH = 4;
const CREATE = 5;
const SELF_DESTRUCT = 6;
const WARM_ACCOUNT = 7;
const WARM_SLOT = 8;
const TRANSIENT = 9;
const REFUND = 10;
const LOG = 11;

interface Entry {
  kind: number;
  account: Account;
  slot: bigint;
  prev: bigint | undefined;
  prevCode: Uint8Array | null;
  prevHash: Uint8Array | null;
  flags: number;
}

/** A log as the EVM emits it. */
export interface Log {
  address: bigint;
  topics: bigint[];
  data: Uint8Array;
}

/** What a block or state test changed, per account (WorldState.takeChanges). */
export interface AccountChange {
  address: bigint;
  /** null: the account is gone (self-destructed, or an empty account deleted). */
  account: { nonce: bigint; balance: bigint; codeHash: Uint8Array; code: Uint8Array } | null;
  /** Its storage was wiped before the slots below were written. */
  storageCleared: boolean;
  /** Slots written, with their new values (0: deleted). */
  slots: Map<bigint, bigint>;
}

const RIPEMD = 3n;

/** Told of every account and slot the run reads (a prestate tracer keeps the first of each). */
export interface ReadObserver {
  accountRead?(address: bigint): void;
  storageRead?(address: bigint, slot: bigint): void;
}

/**
 * The state one run sees: accounts and slots read through a StateReader and cached, changed in
 * place, with a journal so that a failing frame reverts what it did. It also keeps what lives for
 * one transaction: warm accounts and slots (EIP-2929), transient storage (EIP-1153), accounts
 * created (EIP-6780) or self-destructed, the refund counter and the logs.
 */
export class WorldState {
  private readonly accounts = new Map<bigint, Account>();
  private readonly journal: Entry[] = [];
  /** Accounts with per-transaction flags to clear. */
  private readonly txAccounts: Account[] = [];
  refund = 0;
  readonly logs: Log[] = [];
  /** geth's consensus quirk: a touch of RIPEMD-160 survives a revert (mainnet block 2675119). */
  private ripemdTouched: Account | null = null;

  /** Set while a tracer that wants reads listens (one null check per read otherwise). */
  observer: ReadObserver | null = null;

  constructor(readonly reader: StateReader) {}

  account(address: bigint): Account {
    this.observer?.accountRead?.(address);
    let account = this.accounts.get(address);
    if (account === undefined) {
      account = new Account(address);
      account.load(this.reader.account(address));
      if (this.alwaysWarmAddresses?.has(address)) {
        account.warm = true;
        account.alwaysWarm = true;
      }
      this.accounts.set(address, account);
    }
    return account;
  }

  /** The account if it has been read in this run (no read of the reader). */
  cached(address: bigint): Account | undefined {
    return this.accounts.get(address);
  }

  /**
   * Whether the account is warm, without reading it: a precompile is warm before anything loads it
   * (warmAlways marks only the accounts already read).
   */
  isWarm(address: bigint): boolean {
    return this.accounts.get(address)?.warm ?? this.alwaysWarmAddresses?.has(address) ?? false;
  }

  // ---------------------------------------------------------------- journal

  checkpoint(): number {
    return this.journal.length;
  }

  private record(kind: number, account: Account, slot: bigint, prev: bigint | undefined): void {
    this.journal.push({ kind, account, slot, prev, prevCode: null, prevHash: null, flags: 0 });
  }

  revert(checkpoint: number): void {
    const journal = this.journal;
    for (let i = journal.length - 1; i >= checkpoint; i--) {
      const e = journal[i] as Entry;
      const a = e.account;
      switch (e.kind) {
        case BALANCE:
          a.balance = e.prev as bigint;
          break;
        case NONCE:
          a.nonce = e.prev as bigint;
          break;
        case CODE:
          a.setCodeBytes(e.prevCode as Uint8Array, e.prevHash as Uint8Array);
          break;
        case STORAGE:
          if (e.prev === undefined) a.current.delete(e.slot);
          else a.current.set(e.slot, e.prev);
          break;
        case TOUCH:
          break;
        case CREATE:
          a.exists = (e.flags & 1) !== 0;
          a.storageCleared = (e.flags & 2) !== 0;
          a.createdInTx = (e.flags & 4) !== 0;
          break;
        case SELF_DESTRUCT:
          a.selfDestructed = false;
          break;
        case WARM_ACCOUNT:
          a.warm = false;
          break;
        case WARM_SLOT:
          a.warmSlots?.delete(e.slot);
          break;
        case TRANSIENT:
          if (e.prev === undefined) a.transient?.delete(e.slot);
          else a.transient?.set(e.slot, e.prev);
          break;
        case REFUND:
          this.refund = Number(e.prev);
          break;
        case LOG:
          this.logs.pop();
          break;
      }
    }
    journal.length = checkpoint;
  }

  // ---------------------------------------------------------------- accounts

  setBalance(account: Account, balance: bigint): void {
    this.record(BALANCE, account, 0n, account.balance);
    account.balance = balance;
    if (!account.exists) this.bringIntoExistence(account);
  }

  addBalance(account: Account, amount: bigint): void {
    if (amount === 0n) {
      // geth's AddBalance makes the account even for nothing: before EIP-161 it stays (a coinbase
      // paid a zero fee, a beneficiary of an empty self-destruct); after it, touched and empty, it
      // is deleted at the end of the transaction.
      if (!account.exists) this.bringIntoExistence(account);
      if (account.isEmpty()) this.touch(account);
      return;
    }
    this.setBalance(account, account.balance + amount);
  }

  subBalance(account: Account, amount: bigint): void {
    if (amount === 0n) return;
    this.setBalance(account, account.balance - amount);
  }

  setNonce(account: Account, nonce: bigint): void {
    this.record(NONCE, account, 0n, account.nonce);
    account.nonce = nonce;
    if (!account.exists) this.bringIntoExistence(account);
  }

  setCode(account: Account, code: Uint8Array, hash: Uint8Array = keccak256(code)): void {
    this.journal.push({
      kind: CODE,
      account,
      slot: 0n,
      prev: undefined,
      prevCode: account.code(this.reader),
      prevHash: account.codeHash,
      flags: 0,
    });
    account.setCodeBytes(code, hash);
    if (!account.exists) this.bringIntoExistence(account);
  }

  touch(account: Account): void {
    this.record(TOUCH, account, 0n, undefined);
    if (account.address === RIPEMD) this.ripemdTouched = account;
  }

  private createFlags(account: Account): number {
    return (account.exists ? 1 : 0) | (account.storageCleared ? 2 : 0) | (account.createdInTx ? 4 : 0);
  }

  /** An absent account written to (a balance, a nonce, code) now exists. */
  private bringIntoExistence(account: Account): void {
    this.journal.push({
      kind: CREATE,
      account,
      slot: 0n,
      prev: undefined,
      prevCode: null,
      prevHash: null,
      flags: this.createFlags(account),
    });
    account.exists = true;
  }

  /** geth's CreateAccount: an absent account called with value (or any call before EIP-161). */
  createAccount(account: Account): void {
    this.bringIntoExistence(account);
  }

  /** A contract is created here (CREATE, CREATE2, a creating transaction): EIP-6780's "new". */
  createContract(account: Account): void {
    this.journal.push({
      kind: CREATE,
      account,
      slot: 0n,
      prev: undefined,
      prevCode: null,
      prevHash: null,
      flags: this.createFlags(account),
    });
    if (!account.createdInTx) this.txAccounts.push(account);
    account.exists = true;
    account.createdInTx = true;
    account.storageCleared = true;
  }

  selfDestruct(account: Account): void {
    if (account.selfDestructed) return;
    this.record(SELF_DESTRUCT, account, 0n, undefined);
    if (!account.createdInTx) this.txAccounts.push(account);
    account.selfDestructed = true;
  }

  // ---------------------------------------------------------------- storage

  /** The slot's value now. */
  storage(account: Account, slot: bigint): bigint {
    this.observer?.storageRead?.(account.address, slot);
    const written = account.current.get(slot);
    if (written !== undefined) return written;
    return this.committedStorage(account, slot);
  }

  /** The slot's value at the start of the transaction (EIP-2200's "original"). */
  committedStorage(account: Account, slot: bigint): bigint {
    let value = account.committed.get(slot);
    if (value === undefined) {
      value =
        account.storageCleared || !account.readerHasStorage ? 0n : this.reader.storage(account.address, slot);
      account.committed.set(slot, value);
    }
    return value;
  }

  /**
   * Empties the account's storage between transactions, outside the journal (a call's state
   * override that gives an account's whole storage); its changes say the storage was wiped.
   */
  clearStorage(account: Account): void {
    account.storageCleared = true;
    account.committed.clear();
    account.current.clear();
    account.changed = true;
    account.wiped = true;
    account.changedSlots = null;
  }

  setStorage(account: Account, slot: bigint, value: bigint): void {
    this.record(STORAGE, account, slot, account.current.get(slot));
    account.current.set(slot, value);
  }

  transientStorage(account: Account, slot: bigint): bigint {
    return account.transient?.get(slot) ?? 0n;
  }

  setTransientStorage(account: Account, slot: bigint, value: bigint): void {
    let map = account.transient;
    if (map === null) {
      map = new Map();
      account.transient = map;
      this.txAccounts.push(account);
    }
    this.record(TRANSIENT, account, slot, map.get(slot));
    map.set(slot, value);
  }

  // ---------------------------------------------------------------- access sets (EIP-2929)

  private readonly alwaysWarm = new WeakSet<readonly bigint[]>();
  private alwaysWarmAddresses: Set<bigint> | null = null;

  /**
   * Accounts warm in every transaction (the precompiles): marked once for this world, outside the
   * journal and the per-transaction reset, instead of being warmed anew by each transaction. An
   * account not read yet is marked when it is (`account`): reading all eighteen of Osaka's
   * precompiles from the store for every eth_call cost more than the call's own execution.
   */
  warmAlways(addresses: readonly bigint[]): void {
    if (this.alwaysWarm.has(addresses)) return;
    const always = this.alwaysWarmAddresses ?? new Set<bigint>();
    for (const address of addresses) {
      always.add(address);
      const account = this.accounts.get(address);
      if (account !== undefined) {
        account.warm = true;
        account.alwaysWarm = true;
      }
    }
    this.alwaysWarmAddresses = always;
    this.alwaysWarm.add(addresses);
  }

  /** Warms the account; true if it was cold. */
  warmAccount(account: Account): boolean {
    if (account.warm) return false;
    account.warm = true;
    this.txAccounts.push(account);
    this.record(WARM_ACCOUNT, account, 0n, undefined);
    return true;
  }

  /** Warms the slot; true if it was cold. */
  warmSlot(account: Account, slot: bigint): boolean {
    let set = account.warmSlots;
    if (set === null) {
      set = new Set();
      account.warmSlots = set;
      this.txAccounts.push(account);
    } else if (set.has(slot)) return false;
    set.add(slot);
    this.record(WARM_SLOT, account, slot, undefined);
    return true;
  }

  // ---------------------------------------------------------------- refunds and logs

  addRefund(gas: number): void {
    this.record(REFUND, this.refundAccount, 0n, BigInt(this.refund));
    this.refund += gas;
  }

  subRefund(gas: number): void {
    this.record(REFUND, this.refundAccount, 0n, BigInt(this.refund));
    this.refund -= gas;
  }

  private readonly refundAccount = new Account(-1n);

  addLog(log: Log): void {
    this.logs.push(log);
    this.record(LOG, this.refundAccount, 0n, undefined);
  }

  // ---------------------------------------------------------------- transactions

  /**
   * Ends a transaction: deletes self-destructed accounts and, under EIP-161, the empty accounts it
   * changed or touched; commits its writes; forgets what lives for one transaction.
   */
  endTransaction(deleteEmpty: boolean): void {
    const dirty = new Set<Account>();
    // As geth's journal: access lists, transient storage, refunds and logs dirty no account.
    for (const e of this.journal) if (e.kind <= SELF_DESTRUCT) dirty.add(e.account);
    if (this.ripemdTouched) dirty.add(this.ripemdTouched);
    for (const account of dirty) {
      if (account.selfDestructed || (deleteEmpty && account.exists && account.isEmpty())) {
        this.deleteAccount(account);
        continue;
      }
      this.commitAccount(account);
    }
    for (const account of this.txAccounts) {
      // A precompile is here when the transaction warmed one of its slots (an access list may).
      account.warm = account.alwaysWarm;
      account.warmSlots = null;
      account.transient = null;
      account.createdInTx = false;
      account.selfDestructed = false;
    }
    this.txAccounts.length = 0;
    this.journal.length = 0;
    this.refund = 0;
    this.logs.length = 0;
    this.ripemdTouched = null;
  }

  /** Drops what the transaction under way did (a run abandoned midway, e.g. by MissingState). */
  abortTransaction(): void {
    this.revert(0);
    for (const account of this.txAccounts) {
      // A precompile is here when the transaction warmed one of its slots (an access list may).
      account.warm = account.alwaysWarm;
      account.warmSlots = null;
      account.transient = null;
      account.createdInTx = false;
      account.selfDestructed = false;
    }
    this.txAccounts.length = 0;
    this.refund = 0;
    this.logs.length = 0;
    this.ripemdTouched = null;
  }

  private commitAccount(account: Account): void {
    account.changed = true;
    if (account.current.size === 0) return;
    let slots = account.changedSlots;
    if (slots === null) {
      slots = new Set();
      account.changedSlots = slots;
    }
    for (const [slot, value] of account.current) {
      account.committed.set(slot, value);
      slots.add(slot);
    }
    account.current.clear();
  }

  private deleteAccount(account: Account): void {
    account.changed = true;
    account.wiped = true;
    account.exists = false;
    account.nonce = 0n;
    account.balance = 0n;
    account.setCodeBytes(EMPTY_CODE, EMPTY_CODE_HASH);
    account.storageCleared = true;
    account.committed.clear();
    account.current.clear();
    account.changedSlots = null;
  }

  /** What changed since the last takeChanges, account by account, forgetting it (the cache stays). */
  takeChanges(): AccountChange[] {
    return this.changes(true);
  }

  /** What changed since the last takeChanges, without forgetting it. */
  changes(forget = false): AccountChange[] {
    const out: AccountChange[] = [];
    for (const account of this.accounts.values()) {
      if (!account.changed) continue;
      const slots = new Map<bigint, bigint>();
      for (const slot of account.changedSlots ?? []) slots.set(slot, account.committed.get(slot) ?? 0n);
      out.push({
        address: account.address,
        account: account.exists
          ? {
              nonce: account.nonce,
              balance: account.balance,
              codeHash: account.codeHash,
              code: account.code(this.reader),
            }
          : null,
        storageCleared: account.wiped,
        slots,
      });
      if (!forget) continue;
      account.changed = false;
      account.wiped = false;
      account.changedSlots = null;
    }
    return out;
  }
}
