import { MerklePatriciaTrie } from '@ethereumjs/mpt';
import { RLP } from '@ethereumjs/rlp';
import { Caches, MerkleStateManager, type MerkleStateManagerOpts } from '@ethereumjs/statemanager';
import { type Account, type Address, bytesToUnprefixedHex, equalsBytes, unpadBytes } from '@ethereumjs/util';
import type { BlockWrite } from '../../../src/store/types.ts';

export type StateChanges = Pick<BlockWrite, 'accounts' | 'storage' | 'storageWipes'>;

/**
 * The state manager used while importing: a trie-backed MerkleStateManager (needed to check state
 * roots) that also remembers which accounts and slots each block wrote, so the block's final values
 * can go into the flat state history.
 */
export class RecordingStateManager extends MerkleStateManager {
  private touchedAccounts = new Map<string, Address>();
  private touchedSlots = new Map<string, { address: Address; slots: Map<string, Uint8Array> }>();
  private wipeCandidates = new Map<string, Address>();

  constructor(opts: MerkleStateManagerOpts) {
    super({ caches: new Caches(), ...opts });
  }

  override async putAccount(address: Address, account?: Account): Promise<void> {
    this.touchedAccounts.set(address.toString(), address);
    await super.putAccount(address, account);
  }

  override async deleteAccount(address: Address): Promise<void> {
    this.touchedAccounts.set(address.toString(), address);
    this.wipeCandidates.set(address.toString(), address);
    await super.deleteAccount(address);
  }

  override async clearStorage(address: Address): Promise<void> {
    this.wipeCandidates.set(address.toString(), address);
    await super.clearStorage(address);
  }

  // MerkleStateManager 10.1.3 writes storage through to the trie even with a storage cache
  // (`cache.put(...) ?? write` — put returns undefined). Writing only to the cache, which is flushed
  // when the state root is computed, makes SSTORE-heavy blocks several times faster.
  override async putStorage(address: Address, key: Uint8Array, value: Uint8Array): Promise<void> {
    const storageCache = this._caches?.storage;
    if (!storageCache) return super.putStorage(address, key, value);
    if (key.length !== 32) throw new Error('Storage key must be 32 bytes long');
    if ((await this.getAccount(address)) === undefined) {
      throw new Error('putStorage() called on non-existing account');
    }
    this.noteSlot(address, key);
    storageCache.put(address, key, RLP.encode(unpadBytes(value)));
  }

  private noteSlot(address: Address, key: Uint8Array): void {
    const id = address.toString();
    let entry = this.touchedSlots.get(id);
    if (!entry) {
      entry = { address, slots: new Map() };
      this.touchedSlots.set(id, entry);
    }
    entry.slots.set(bytesToUnprefixedHex(key), key);
  }

  /**
   * The final value of everything written since the last call, then forgets it. Call after the state
   * root was computed (so account storage roots are final).
   *
   * A `clearStorage`/`deleteAccount` may have been undone by a revert, so a wipe is only reported if
   * the account is gone or its final storage holds nothing but the slots this block wrote.
   */
  async takeChanges(): Promise<StateChanges> {
    const accounts: StateChanges['accounts'] = [];
    for (const address of this.touchedAccounts.values()) {
      const account = await this.getAccount(address);
      accounts.push({
        address: address.bytes,
        account: account
          ? { nonce: account.nonce, balance: account.balance, codeHash: account.codeHash }
          : null,
      });
    }
    const storage: StateChanges['storage'] = [];
    const finalSlots = new Map<string, Array<[Uint8Array, Uint8Array]>>();
    for (const [id, { address, slots }] of this.touchedSlots) {
      const values: Array<[Uint8Array, Uint8Array]> = [];
      for (const slot of slots.values()) {
        const value = await this.getStorage(address, slot);
        storage.push({ address: address.bytes, slot, value });
        values.push([slot, value]);
      }
      finalSlots.set(id, values);
    }
    const storageWipes: Uint8Array[] = [];
    for (const [id, address] of this.wipeCandidates) {
      const account = await this.getAccount(address);
      if (!account || equalsBytes(await storageRootOf(finalSlots.get(id) ?? []), account.storageRoot)) {
        storageWipes.push(address.bytes);
      }
    }
    this.touchedAccounts.clear();
    this.touchedSlots.clear();
    this.wipeCandidates.clear();
    return { accounts, storage, storageWipes };
  }

  /** Drops what a rejected block wrote from the record (the caller also resets the state root). */
  forgetChanges(): void {
    this.touchedAccounts.clear();
    this.touchedSlots.clear();
    this.wipeCandidates.clear();
  }
}

async function storageRootOf(slots: Array<[Uint8Array, Uint8Array]>): Promise<Uint8Array> {
  const trie = new MerklePatriciaTrie({ useKeyHashing: true });
  for (const [slot, value] of slots) if (value.length > 0) await trie.put(slot, RLP.encode(value));
  return trie.root();
}
