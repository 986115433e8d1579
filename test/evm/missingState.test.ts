// Upstream mode's contract with the EVM (src/evm/state.ts): a StateReader that does not hold a value
// yet throws MissingState; the run is abandoned with nothing of it left in the WorldState, and once
// the keys are fetched the same transaction runs again on the same world to the same end as on a
// reader that had everything from the start.

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { BlockEnv } from '../../src/evm/env.ts';
import { forkRules } from '../../src/evm/forks.ts';
import { precompilesFor } from '../../src/evm/precompiles/index.ts';
import {
  type AccountRecord,
  EMPTY_CODE_HASH,
  MissingState,
  type StateReader,
  WorldState,
} from '../../src/evm/state.ts';
import { applyTransaction, type Transaction } from '../../src/evm/transaction.ts';
import { keccak256 } from '../../src/primitives/keccak.ts';

const RULES = forkRules('Prague');
const PRECOMPILES = precompilesFor(RULES.precompiles);
const SENDER = 0x5e4de4n;
const TOKEN = 0x70c3e4n;
const OTHER = 0x07e4n;
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
// SSTORE(0, SLOAD(0) + 1); SSTORE(1, SLOAD(1) * 2); CALL(OTHER) with 1 wei; STATICCALL(identity),
// whose price depends on the precompiles being warm; then LOG0 of slot 1.
const CODE = Buffer.from(
  '600054600101600055' +
    '600154600202600155' +
    '6000600060006000600161' +
    OTHER.toString(16).padStart(4, '0') +
    '5af150' +
    '600060006000600060045afa50' +
    '60015460005260206000a000',
  'hex',
);

interface Full {
  accounts: Map<bigint, { nonce: bigint; balance: bigint; code: Uint8Array }>;
  storage: Map<bigint, Map<bigint, bigint>>;
}

const FULL: Full = {
  accounts: new Map([
    [SENDER, { nonce: 3n, balance: 10n ** 18n, code: new Uint8Array(0) }],
    [TOKEN, { nonce: 1n, balance: 5n, code: Uint8Array.from(CODE) }],
    [OTHER, { nonce: 0n, balance: 0n, code: new Uint8Array(0) }],
  ]),
  storage: new Map([
    [
      TOKEN,
      new Map([
        [0n, 41n],
        [1n, 21n],
      ]),
    ],
  ]),
};

/** A reader over FULL that holds only what has been "fetched"; the rest throws MissingState. */
class PartialReader implements StateReader {
  readonly accounts = new Set<bigint>();
  readonly slots = new Set<string>();
  misses = 0;

  account(address: bigint): AccountRecord | null {
    if (!this.accounts.has(address)) {
      this.misses++;
      throw new MissingState([address], []);
    }
    const a = FULL.accounts.get(address);
    if (!a) return null;
    return {
      nonce: a.nonce,
      balance: a.balance,
      codeHash: a.code.length === 0 ? EMPTY_CODE_HASH : keccak256(a.code),
      hasStorage: FULL.storage.has(address),
    };
  }
  code(_hash: Uint8Array, address: bigint): Uint8Array {
    return FULL.accounts.get(address)?.code ?? new Uint8Array(0);
  }
  storage(address: bigint, slot: bigint): bigint {
    if (!this.slots.has(`${address}:${slot}`)) {
      this.misses++;
      throw new MissingState([], [[address, slot]]);
    }
    return FULL.storage.get(address)?.get(slot) ?? 0n;
  }
}

function fullReader(): PartialReader {
  const r = new PartialReader();
  for (const a of [SENDER, TOKEN, OTHER, BLOCK.coinbase]) r.accounts.add(a);
  for (const a of PRECOMPILES.keys()) r.accounts.add(BigInt(a));
  r.slots.add(`${TOKEN}:0`).add(`${TOKEN}:1`);
  return r;
}

const TX: Transaction = {
  type: 2,
  sender: SENDER,
  nonce: 3n,
  gasLimit: 200_000n,
  gasPrice: 0n,
  maxFeePerGas: 20n,
  maxPriorityFeePerGas: 2n,
  to: TOKEN,
  value: 0n,
  data: new Uint8Array(0),
  accessList: [],
  blobVersionedHashes: [],
  maxFeePerBlobGas: 0n,
  authorizationList: [],
};

describe('MissingState: a run abandoned midway leaves nothing behind', () => {
  it('reruns after each fetch to the result a complete reader gives', () => {
    const reference = new WorldState(fullReader());
    const expected = applyTransaction(reference, BLOCK, RULES, PRECOMPILES, TX);
    assert.equal(expected.success, true, String(expected.error));
    const expectedChanges = reference.takeChanges();

    const reader = new PartialReader();
    const world = new WorldState(reader);
    let runs = 0;
    let result: ReturnType<typeof applyTransaction> | null = null;
    while (result === null) {
      runs++;
      assert.ok(runs < 40, 'too many reruns');
      try {
        result = applyTransaction(world, BLOCK, RULES, PRECOMPILES, TX);
      } catch (e) {
        if (!(e instanceof MissingState)) throw e;
        // Nothing of the abandoned run is in the world: no change, no log, no refund.
        assert.deepEqual(world.changes(), []);
        assert.equal(world.logs.length, 0);
        assert.equal(world.refund, 0);
        for (const a of e.accounts) reader.accounts.add(a);
        for (const [a, s] of e.slots) reader.slots.add(`${a}:${s}`);
      }
    }
    // The sender, the callee, the coinbase, two slots, the other account, the precompiles: each a miss.
    assert.ok(runs > 5, `${runs} runs`);
    assert.equal(reader.misses, runs - 1);
    assert.deepEqual(result, expected);
    assert.deepEqual(world.takeChanges(), expectedChanges);
  });
});
