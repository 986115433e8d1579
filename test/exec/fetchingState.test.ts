// Upstream mode's reruns (src/exec/fetchingState.ts) leave no trace in a stateDiff: a transaction
// stopped midway for state not fetched yet, and run again, must diff exactly as one that had all its
// state from the start. The case that needs care is a pre-Cancun self-destruct of a contract whose
// storage the transaction wrote first: its diff lists the slots written (src/exec/tracing/evmAdapter.ts
// StateDiffRecorder), which the stopped run's open frames must not swallow.

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { BlockEnv } from '../../src/evm/env.ts';
import { forkRules } from '../../src/evm/forks.ts';
import { precompilesFor } from '../../src/evm/precompiles/index.ts';
import { type AccountRecord, EMPTY_CODE_HASH, type StateReader, WorldState } from '../../src/evm/state.ts';
import { applyTransaction, type Transaction } from '../../src/evm/transaction.ts';
import { bytesToBigint, wordBytes } from '../../src/evm/words.ts';
import { FetchingStateReader, untilComplete, WrittenSlots } from '../../src/exec/fetchingState.ts';
import { allEvmTracers, StateDiffRecorder } from '../../src/exec/tracing/evmAdapter.ts';
import { buildStateDiff } from '../../src/exec/tracing/stateDiff.ts';
import { bytesKey } from '../../src/primitives/hex.ts';
import { keccak256 } from '../../src/primitives/keccak.ts';
import type { ChainStore, FetchedStateReads, FlatAccount } from '../../src/store/types.ts';
import { asm } from '../support/asm.ts';

const RULES = forkRules('Shanghai');
const PRECOMPILES = precompilesFor(RULES.precompiles);
const SENDER = 0x5e4de4n;
const CONTRACT = 0xc047n;
const FAR = 0xfa4n;
const HEIR = 0x4e14n;
const BLOCK: BlockEnv = {
  number: 10n,
  timestamp: 1000n,
  coinbase: 0xc0ffeen,
  gasLimit: 30_000_000n,
  difficulty: 0n,
  prevRandao: 0n,
  baseFee: 7n,
  excessBlobGas: 0n,
  chainId: 1n,
  blockHash: () => 0n,
};
// Writes slot 2, reads FAR's balance (not fetched yet on the first run), self-destructs to HEIR.
const CODE = Buffer.from(
  asm(
    `PUSH 7 PUSH 2 SSTORE PUSH 0x${FAR.toString(16)} BALANCE POP PUSH 0x${HEIR.toString(16)} SELFDESTRUCT`,
  ).slice(2),
  'hex',
);
const ACCOUNTS = new Map<bigint, { nonce: bigint; balance: bigint; code: Uint8Array }>([
  [SENDER, { nonce: 0n, balance: 10n ** 18n, code: new Uint8Array(0) }],
  [CONTRACT, { nonce: 1n, balance: 9n, code: CODE }],
  [FAR, { nonce: 0n, balance: 1n, code: new Uint8Array(0) }],
]);
const STORAGE = new Map<bigint, Map<bigint, bigint>>([
  [
    CONTRACT,
    new Map([
      [1n, 5n],
      [2n, 3n],
    ]),
  ],
]);
const TX: Transaction = {
  type: 2,
  sender: SENDER,
  nonce: 0n,
  gasLimit: 200_000n,
  gasPrice: 0n,
  maxFeePerGas: 20n,
  maxPriorityFeePerGas: 2n,
  to: CONTRACT,
  value: 0n,
  data: new Uint8Array(0),
  accessList: [],
  blobVersionedHashes: [],
  maxFeePerBlobGas: 0n,
  authorizationList: [],
};

function flat(address: bigint): FlatAccount | null {
  const a = ACCOUNTS.get(address);
  return a
    ? { nonce: a.nonce, balance: a.balance, codeHash: a.code.length ? keccak256(a.code) : EMPTY_CODE_HASH }
    : null;
}

/** All the state, from the start. */
const complete: StateReader = {
  account: (address): AccountRecord | null => {
    const a = flat(address);
    return a && { ...a, hasStorage: null };
  },
  code: (_hash, address) => ACCOUNTS.get(address)?.code ?? new Uint8Array(0),
  storage: (address, slot) => STORAGE.get(address)?.get(slot) ?? 0n,
};

/** The upstream cache: what it holds is what the reruns fetched; each fetch "reads the upstream". */
function upstreamCache(): FetchedStateReads & { fetches: number } {
  const accounts = new Map<bigint, FlatAccount | null>();
  const slots = new Map<string, bigint>();
  const codes = new Map<string, Uint8Array>();
  return {
    fetches: 0,
    accountAt: (_hash, address) => accounts.get(bytesToBigint(address)),
    storageAt: (_hash, address, slot) => {
      const value = slots.get(`${bytesToBigint(address)}:${bytesToBigint(slot)}`);
      return value === undefined ? null : value === 0n ? new Uint8Array(0) : wordBytes(value);
    },
    code: (hash) => codes.get(bytesKey(hash)) ?? null,
    async fetch(_hash, keys) {
      this.fetches++;
      for (const { address, slots: wanted } of keys) {
        const a = bytesToBigint(address);
        accounts.set(a, flat(a));
        const code = ACCOUNTS.get(a)?.code;
        if (code?.length) codes.set(bytesKey(keccak256(code)), code);
        for (const s of wanted)
          slots.set(`${a}:${bytesToBigint(s)}`, STORAGE.get(a)?.get(bytesToBigint(s)) ?? 0n);
      }
    },
  };
}

/** The transaction's stateDiff, as src/exec/evmReplay.ts takes it. */
async function stateDiff(reader: StateReader, fetching: FetchingStateReader | null): Promise<string> {
  const world = new WorldState(reader);
  const diffs = new StateDiffRecorder(world, reader);
  const written = fetching ? new WrittenSlots() : null;
  const result = await untilComplete(
    fetching,
    () =>
      applyTransaction(
        world,
        BLOCK,
        RULES,
        PRECOMPILES,
        TX,
        allEvmTracers([diffs.tracer, written?.tracer ?? null]),
      ),
    () => {
      diffs.abandon();
      written?.clear();
    },
  );
  assert.equal(result.success, true);
  if (fetching && written) await untilComplete(fetching, () => fetching.prepareDiff(world, written.slots));
  return JSON.stringify(buildStateDiff(diffs.changes()), (_k, v) =>
    typeof v === 'bigint' ? `0x${v.toString(16)}` : v instanceof Uint8Array ? bytesKey(v) : v,
  );
}

describe('a transaction run again for missing state diffs as one that had it all', () => {
  it('lists the slots a self-destructed contract wrote before the run stopped', async () => {
    const expected = await stateDiff(complete, null);
    assert.match(expected, /"0x0{63}2"/, 'the diff lists slot 2');
    const cache = upstreamCache();
    const fetching = new FetchingStateReader({} as ChainStore, cache, {
      number: 9n,
      hash: new Uint8Array(32),
    });
    assert.equal(await stateDiff(fetching, fetching), expected);
    // The sender, the contract, the coinbase, slot 2, FAR, HEIR; each stopped a run.
    assert.ok(cache.fetches >= 5, `${cache.fetches} fetches`);
  });
});
