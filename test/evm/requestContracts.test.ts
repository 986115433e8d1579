// EIP-7002/7251's system contracts missing from a Prague chain: geth refuses the block, dev nodes'
// chains (our dev miner's among them) are made without them, so import and the miner ask applyBlock
// to make no request for a contract without code instead.

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { applyBlock, InvalidBlock } from '../../src/evm/block.ts';
import { forkRules } from '../../src/evm/forks.ts';
import { precompilesFor } from '../../src/evm/precompiles/index.ts';
import { WorldState } from '../../src/evm/state.ts';

const empty = { account: () => null, code: () => new Uint8Array(0), storage: () => 0n };

function emptyBlock() {
  return {
    env: {
      number: 1n,
      timestamp: 12n,
      coinbase: 0xc0n,
      gasLimit: 30_000_000n,
      difficulty: 0n,
      prevRandao: 0n,
      baseFee: 7n,
      excessBlobGas: 0n,
      chainId: 1n,
      blockHash: () => 0n,
    },
    parentHash: 1n,
    parentBeaconBlockRoot: 2n,
    transactions: [],
    ommers: [],
    withdrawals: [],
  };
}

describe('applyBlock without the request contracts', () => {
  const rules = forkRules('Prague');
  const precompiles = precompilesFor(rules.precompiles);

  it('is an invalid block by default', () => {
    assert.throws(
      () => applyBlock(new WorldState(empty), rules, precompiles, emptyBlock()),
      (e) =>
        e instanceof InvalidBlock && /00000961ef480eb55e80d19ad83579a64c007002 has no code/.test(e.message),
    );
  });

  it('makes no request and changes no state when they are optional', () => {
    const world = new WorldState(empty);
    const result = applyBlock(world, rules, precompiles, emptyBlock(), { requestContractsOptional: true });
    assert.deepEqual(result.requests, []);
    assert.deepEqual(world.takeChanges(), []);
  });
});
