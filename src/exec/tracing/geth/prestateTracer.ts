import { bigIntToBytes, equalsBytes, setLengthLeft } from '@ethereumjs/util';
import type { ForkRules } from '../../../evm/forks.ts';
import type { EvmTracer } from '../../../evm/hooks.ts';
import { Op } from '../../../evm/opcodes.ts';
import type { WorldState } from '../../../evm/state.ts';
import { addressBytes, bytesToBigint } from '../../../evm/words.ts';
import { bigintWord, quantityToHex, toHex, wordHex } from '../../../primitives/hex.ts';
import { type AccountState, type StateReader, settled, type TxContext } from './types.ts';

interface Looked {
  address: Uint8Array;
  account: Promise<AccountState>;
  /** The account as read (synchronously). */
  now?: AccountState;
  storage: Map<string, { slot: Uint8Array; value: Promise<Uint8Array> }>;
}

interface AccountJson {
  balance?: string;
  code?: string;
  nonce?: number;
  storage?: Record<string, string>;
}

const { SLOAD, SSTORE, BALANCE, EXTCODESIZE, EXTCODECOPY, EXTCODEHASH, SELFDESTRUCT } = Op;
const CALL_OPS = new Set<number>([Op.CALL, Op.CALLCODE, Op.DELEGATECALL, Op.STATICCALL]);
const ADDRESS_OPS = new Set<number>([BALANCE, EXTCODESIZE, EXTCODECOPY, EXTCODEHASH, SELFDESTRUCT]);
/** EIP-7702's delegation designator: the whole code of a delegated account is `0xef0100 ‖ address`. */
const DELEGATION_PREFIX = [0xef, 0x01, 0x00];
const DELEGATION_LENGTH = 23;

/**
 * geth's prestateTracer: every account the transaction touches (sender, recipient, coinbase, the
 * addresses its ops name, the contracts it creates) as it was when first touched, with the storage
 * slots it read or wrote. `diffMode` gives `{pre, post}` of what changed instead. Accounts are read
 * when geth reads them (see StateReader): at the start of the transaction, and as each op runs.
 *
 * From Prague on, the delegate of an EIP-7702 account is listed too, where geth looks it up: the
 * recipient's delegate as the transaction starts (before its own authorizations apply, so a
 * transaction that delegates or re-delegates its recipient lists the delegate it had, not the new
 * one), and the delegate of the account each CALL-family op names, as it is at that op.
 */
export class PrestateTracer {
  private readonly pre = new Map<string, Looked>();
  private readonly created = new Set<string>();
  private readonly deleted = new Set<string>();
  private reader: StateReader | null = null;
  private delegations = false;
  /** Reads an account as it is now. */
  private now: ((address: Uint8Array) => AccountState) | null = null;
  private post: Map<
    string,
    { account: Promise<AccountState>; storage: Map<string, Promise<Uint8Array>> }
  > | null = null;

  constructor(
    private readonly tx: TxContext,
    private readonly config: { diffMode: boolean; disableCode: boolean; disableStorage: boolean },
  ) {}

  /** geth's OnTxStart, before the sender pays for gas. */
  private start(): void {
    if (this.tx.creation) this.created.add(toHex(this.tx.to));
    this.lookupAccount(this.tx.from);
    this.lookupAccount(this.tx.to);
    this.lookupAccount(this.tx.coinbase);
    for (const authority of this.tx.authorities) this.lookupAccount(authority);
  }

  /**
   * The EVM's hooks that make geth's lookups, reading `world` as each happens. Called as the
   * transaction starts; `finish` ends it.
   */
  evmTracer(world: WorldState, rules: ForkRules): EvmTracer {
    const read = (address: Uint8Array): AccountState => {
      const account = world.account(bytesToBigint(address));
      return {
        balance: account.balance,
        nonce: account.nonce,
        code: account.exists ? account.code(world.reader) : new Uint8Array(),
      };
    };
    this.now = read;
    this.reader = {
      account: (address) => Promise.resolve(read(address)),
      storage: (address, slot) =>
        Promise.resolve(
          bigintWord(world.storage(world.account(bytesToBigint(address)), bytesToBigint(slot))),
        ),
    };
    this.delegations = rules.delegation;
    this.start();
    // The account the last CALL-family op names, for its delegate once the op has paid (callCost).
    let callee: Uint8Array | null = null;
    return {
      frameStart: (start) => {
        if (start.depth === 0) {
          // geth reads the recipient's delegate at the start of the transaction, from its code then
          // (read by `start`).
          const recipient = this.pre.get(toHex(this.tx.to))?.now;
          const target = recipient && delegationTarget(recipient.code);
          if (this.delegations && !this.tx.creation && target) this.lookupAccount(target);
          return;
        }
        if (start.kind !== 'create' && start.kind !== 'create2') return;
        const address = addressBytes(start.to);
        this.created.add(toHex(address));
        this.lookupAccount(address);
      },
      step: {
        step: (view) => {
          const op = view.opcode;
          const sp = view.sp;
          callee = null;
          if (sp === 0) return;
          const top = view.stack[sp - 1] as bigint;
          if (op === SLOAD || op === SSTORE) {
            this.lookupStorage(addressBytes(view.address), top);
          } else if (ADDRESS_OPS.has(op)) {
            this.lookupAccount(addressOf(top));
            if (op === SELFDESTRUCT) this.deleted.add(toHex(addressBytes(view.address)));
          } else if (CALL_OPS.has(op) && sp >= 5) {
            callee = addressOf(view.stack[sp - 2] as bigint);
            this.lookupAccount(callee);
          }
        },
        callCost: () => {
          if (!this.delegations || callee === null) return;
          const target = delegationTarget(read(callee).code);
          callee = null;
          if (target) this.lookupAccount(target);
        },
      },
    };
  }

  /** Right after the transaction: geth's OnTxEnd. */
  finish(): void {
    this.readPost();
  }

  /** geth's OnTxEnd: the state after the transaction, read now, before the next one changes it. */
  private readPost(): void {
    if (this.config.diffMode && this.reader) {
      const reader = this.reader;
      this.post = new Map();
      for (const [key, looked] of this.pre) {
        const storage = new Map<string, Promise<Uint8Array>>();
        for (const [slotKey, { slot }] of looked.storage)
          storage.set(slotKey, settled(reader.storage(looked.address, slot)));
        this.post.set(key, { account: settled(reader.account(looked.address)), storage });
      }
    }
  }

  private lookupAccount(address: Uint8Array): void {
    const key = toHex(address);
    if (this.pre.has(key) || !this.reader) return;
    if (this.now) {
      const now = this.now(address);
      this.pre.set(key, { address, account: Promise.resolve(now), now, storage: new Map() });
      return;
    }
    this.pre.set(key, { address, account: settled(this.reader.account(address)), storage: new Map() });
  }

  private lookupStorage(address: Uint8Array, slot: bigint): void {
    if (this.config.disableStorage || !this.reader) return;
    const key = toHex(address);
    let looked = this.pre.get(key);
    if (!looked) {
      this.lookupAccount(address);
      looked = this.pre.get(key);
    }
    const slotKey = wordHex(slot);
    if (!looked || looked.storage.has(slotKey)) return;
    const bytes = bigintWord(slot);
    looked.storage.set(slotKey, { slot: bytes, value: settled(this.reader.storage(address, bytes)) });
  }

  async result(): Promise<unknown> {
    const pre = new Map<string, { state: AccountState; storage: Map<string, Uint8Array>; empty: boolean }>();
    for (const [key, looked] of this.pre) {
      const state = await looked.account;
      const storage = new Map<string, Uint8Array>();
      for (const [slotKey, { value }] of looked.storage) storage.set(slotKey, await value);
      const empty = state.nonce === 0n && state.balance === 0n && state.code.length === 0;
      pre.set(key, { state, storage, empty });
    }
    const out: Record<string, AccountJson> = {};
    const post: Record<string, AccountJson> = {};
    for (const key of [...pre.keys()].sort()) {
      const p = pre.get(key);
      if (!p) continue;
      // A contract the transaction created was nothing before it (unless something was there).
      const createdHere = this.created.has(key) && p.empty;
      if (!this.config.diffMode) {
        if (!createdHere) out[key] = this.accountJson(p.state, p.storage);
        continue;
      }
      if (this.deleted.has(key)) {
        if (!createdHere) out[key] = this.accountJson(p.state, p.storage);
        continue;
      }
      const after = await this.postOf(key);
      if (!after) continue;
      const changed: AccountJson = {};
      let modified = false;
      if (after.state.balance !== p.state.balance) {
        changed.balance = quantityToHex(after.state.balance);
        modified = true;
      }
      if (after.state.nonce !== p.state.nonce) {
        changed.nonce = Number(after.state.nonce);
        modified = true;
      }
      if (!this.config.disableCode && !equalsBytes(after.state.code, p.state.code)) {
        // Cleared code (an EIP-7702 delegation revoked) is `0x`, as geth prints it.
        changed.code = toHex(after.state.code);
        modified = true;
      }
      const preStorage = new Map<string, Uint8Array>();
      const postStorage: Record<string, string> = {};
      for (const [slotKey, before] of p.storage) {
        const now = after.storage.get(slotKey) ?? new Uint8Array();
        if (isZero(before) && isZero(now)) continue;
        if (equalsBytes(stripped(before), stripped(now))) continue;
        modified = true;
        if (!isZero(before)) preStorage.set(slotKey, before);
        if (!isZero(now)) postStorage[slotKey] = wordHex(now);
      }
      if (!modified) continue;
      if (!createdHere) out[key] = this.accountJson(p.state, preStorage);
      if (Object.keys(postStorage).length > 0) changed.storage = postStorage;
      post[key] = changed;
    }
    return this.config.diffMode ? { post, pre: out } : out;
  }

  private async postOf(
    key: string,
  ): Promise<{ state: AccountState; storage: Map<string, Uint8Array> } | null> {
    const entry = this.post?.get(key);
    if (!entry) return null;
    const storage = new Map<string, Uint8Array>();
    for (const [slotKey, value] of entry.storage) storage.set(slotKey, await value);
    return { state: await entry.account, storage };
  }

  private accountJson(state: AccountState, storage: Map<string, Uint8Array>): AccountJson {
    const json: AccountJson = { balance: quantityToHex(state.balance) };
    if (!this.config.disableCode && state.code.length > 0) json.code = toHex(state.code);
    if (state.nonce > 0n) json.nonce = Number(state.nonce);
    if (!this.config.disableStorage) {
      const slots: Record<string, string> = {};
      for (const slotKey of [...storage.keys()].sort()) {
        slots[slotKey] = wordHex(storage.get(slotKey) ?? new Uint8Array());
      }
      if (Object.keys(slots).length > 0) json.storage = slots;
    }
    return json;
  }
}

/** The delegate an EIP-7702 designator names (geth's ParseDelegation), or null for any other code. */
function delegationTarget(code: Uint8Array): Uint8Array | null {
  if (code.length !== DELEGATION_LENGTH) return null;
  if (DELEGATION_PREFIX.some((b, i) => code[i] !== b)) return null;
  return code.slice(DELEGATION_PREFIX.length);
}

function addressOf(value: bigint): Uint8Array {
  return setLengthLeft(bigIntToBytes(value & ((1n << 160n) - 1n)), 20);
}

function isZero(bytes: Uint8Array): boolean {
  return bytes.every((b) => b === 0);
}

function stripped(bytes: Uint8Array): Uint8Array {
  let i = 0;
  while (i < bytes.length && bytes[i] === 0) i++;
  return bytes.subarray(i);
}
