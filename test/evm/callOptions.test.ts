// A simulated call's departures from a mined transaction (src/evm/transaction.ts TransactionOptions):
// `call` lifts the block's gas limit, EIP-7825's cap and EIP-3607; `fees: false` buys no gas, refunds
// none and pays the coinbase nothing, touching it only as a zero payment would.

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { BlockEnv } from '../../src/evm/env.ts';
import { forkRules } from '../../src/evm/forks.ts';
import { precompilesFor } from '../../src/evm/precompiles/index.ts';
import { type AccountRecord, type StateReader, WorldState } from '../../src/evm/state.ts';
import { applyTransaction, InvalidTransaction, type Transaction } from '../../src/evm/transaction.ts';
import { keccak256 } from '../../src/primitives/keccak.ts';

const RULES = forkRules('Osaka');
const PRECOMPILES = precompilesFor(RULES.precompiles);
const SENDER = 0x5e4de4n;
const TARGET = 0x7a46e7n;
const COINBASE = 0xc0ffeen;
const BLOCK: BlockEnv = {
  number: 10n,
  timestamp: 1000n,
  coinbase: COINBASE,
  gasLimit: 30_000_000n,
  difficulty: 0n,
  prevRandao: 0n,
  baseFee: 7n,
  excessBlobGas: 0n,
  chainId: 1n,
  blockHash: () => 0n,
};
// SSTORE(0, 1), then clears it (a refund), STOP.
const CODE = Buffer.from('600160005560006000555b00', 'hex');
// The sender has code (a contract, as calls "from" multisigs are simulated).
const SENDER_CODE = Buffer.from('00', 'hex');

const reader: StateReader = {
  account(address): AccountRecord | null {
    if (address === SENDER)
      return { nonce: 4n, balance: 10n ** 18n, codeHash: keccak256(SENDER_CODE), hasStorage: false };
    if (address === TARGET) return { nonce: 1n, balance: 0n, codeHash: keccak256(CODE), hasStorage: false };
    return null;
  },
  code: (_hash, address) =>
    address === TARGET ? CODE : address === SENDER ? SENDER_CODE : new Uint8Array(0),
  storage: () => 0n,
};

const TX: Transaction = {
  type: 2,
  sender: SENDER,
  nonce: 4n,
  gasLimit: 40_000_000n,
  gasPrice: 0n,
  maxFeePerGas: 20n,
  maxPriorityFeePerGas: 2n,
  to: TARGET,
  value: 5n,
  data: new Uint8Array(0),
  accessList: [],
  blobVersionedHashes: [],
  maxFeePerBlobGas: 0n,
  authorizationList: [],
};

describe('applyTransaction options for simulated calls', () => {
  it('refuses a transaction over the block gas limit, over the EIP-7825 cap, or from a contract', () => {
    assert.throws(
      () => applyTransaction(new WorldState(reader), BLOCK, RULES, PRECOMPILES, TX),
      (e) => e instanceof InvalidTransaction,
    );
  });

  it('runs it as a call, charging gas and paying the coinbase its tip', () => {
    const world = new WorldState(reader);
    const result = applyTransaction(world, BLOCK, RULES, PRECOMPILES, TX, null, { call: true });
    assert.equal(result.success, true);
    assert.ok(result.refund > 0n);
    assert.equal(result.gasUsedBeforeRefund, result.gasUsed + result.refund);
    assert.equal(world.account(SENDER).balance, 10n ** 18n - 5n - result.gasUsed * 9n);
    assert.equal(world.account(COINBASE).balance, result.gasUsed * 2n);
    assert.equal(world.account(SENDER).nonce, 5n);
  });

  it('without fees moves only the value and the nonce', () => {
    const world = new WorldState(reader);
    const result = applyTransaction(world, BLOCK, RULES, PRECOMPILES, TX, null, { call: true, fees: false });
    assert.equal(result.success, true);
    assert.equal(world.account(SENDER).balance, 10n ** 18n - 5n);
    assert.equal(world.account(SENDER).nonce, 5n);
    assert.equal(world.account(TARGET).balance, 5n);
    assert.equal(world.account(COINBASE).exists, false);
  });
});
