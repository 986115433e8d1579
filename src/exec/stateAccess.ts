// What an execution changed (for stateDiff) and the names of what it read and changed (for
// speculation: src/exec/speculation.ts).

/** What one account looked like before and after a stretch of execution, for stateDiff. */
export interface AccountChange {
  address: Uint8Array;
  before: AccountView | null;
  after: AccountView | null;
  /** Slots written, hex slot → [before, after] (minimal bytes, empty = zero). */
  storage: Map<string, { slot: Uint8Array; before: Uint8Array; after: Uint8Array }>;
}

export interface AccountView {
  nonce: bigint;
  balance: bigint;
  code: Uint8Array;
}

/**
 * Names for the pieces of state an execution reads and changes, compared across executions: an
 * account is its unprefixed hex address, a slot `address:slot`, and a storage wipe `address!` (a
 * read of any of the account's slots depends on it).
 */
export const accessKeys = {
  slot: (owner: string, slotKey: string): string => `${owner}:${slotKey}`,
  wipe: (owner: string): string => `${owner}!`,
  /** The wipe key a slot key depends on. */
  wipeOf: (slotKey: string): string => `${slotKey.slice(0, 40)}!`,
};
