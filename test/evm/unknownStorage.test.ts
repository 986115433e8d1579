// A reader that cannot tell whether an account has storage (the flat state history keeps no
// storage roots: src/exec/evmEngine.ts's FlatStateReader) reports `hasStorage: null`. Its slots must
// still be read, and a creation onto it must not collide for storage it cannot know of (the
// ethereumjs path never enforced EIP-7610 for such accounts, and its answers stay as they were).

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { BlockEnv } from '../../src/evm/env.ts';
import { forkRules } from '../../src/evm/forks.ts';
import { createAddress } from '../../src/evm/interpreter.ts';
import { precompilesFor } from '../../src/evm/precompiles/index.ts';
import { type AccountRecord, EMPTY_CODE_HASH, type StateReader, WorldState } from '../../src/evm/state.ts';
import { applyTransaction, type Transaction } from '../../src/evm/transaction.ts';
import { keccak256 } from '../../src/primitives/keccak.ts';

const RULES = forkRules('Prague');
const PRECOMPILES = precompilesFor(RULES.precompiles);
const SENDER = 0x5e4de4n;
const READER = 0x4ead3en;
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
// RETURN(SLOAD(0)) as a 32-byte word.
const SLOAD_CODE = Buffer.from('60005460005260206000f3', 'hex');
const CREATED = createAddress(SENDER, 0n);

function reader(hasStorage: boolean | null): StateReader {
  return {
    account(address): AccountRecord | null {
      if (address === SENDER)
        return { nonce: 0n, balance: 10n ** 18n, codeHash: EMPTY_CODE_HASH, hasStorage: false };
      if (address === READER) return { nonce: 1n, balance: 0n, codeHash: keccak256(SLOAD_CODE), hasStorage };
      // Storage left at an address without code or nonce (EIP-7610's case).
      if (address === CREATED) return { nonce: 0n, balance: 0n, codeHash: EMPTY_CODE_HASH, hasStorage };
      return null;
    },
    code: (_hash, address) => (address === READER ? SLOAD_CODE : new Uint8Array(0)),
    storage: (address, slot) => (slot === 0n && (address === READER || address === CREATED) ? 42n : 0n),
  };
}

function tx(to: bigint | null, nonce: bigint): Transaction {
  return {
    type: 2,
    sender: SENDER,
    nonce,
    gasLimit: 200_000n,
    gasPrice: 0n,
    maxFeePerGas: 10n,
    maxPriorityFeePerGas: 1n,
    to,
    value: 0n,
    data: to === null ? Buffer.from('00', 'hex') : new Uint8Array(0),
    accessList: [],
    blobVersionedHashes: [],
    maxFeePerBlobGas: 0n,
    authorizationList: [],
  };
}

describe('an account whose storage the reader cannot vouch for (hasStorage: null)', () => {
  it('has its slots read from the reader', () => {
    const world = new WorldState(reader(null));
    const result = applyTransaction(world, BLOCK, RULES, PRECOMPILES, tx(READER, 0n));
    assert.equal(result.success, true);
    assert.equal(BigInt(`0x${Buffer.from(result.output).toString('hex')}`), 42n);
  });

  it('does not make a creation onto it collide, where known storage does (EIP-7610)', () => {
    const unknown = applyTransaction(new WorldState(reader(null)), BLOCK, RULES, PRECOMPILES, tx(null, 0n));
    assert.equal(unknown.success, true);
    assert.equal(unknown.createdAddress, CREATED);
    const known = applyTransaction(new WorldState(reader(true)), BLOCK, RULES, PRECOMPILES, tx(null, 0n));
    assert.equal(known.success, false);
    assert.equal(known.error, 'create collision');
  });
});
