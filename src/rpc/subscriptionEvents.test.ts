import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { subscriptionEventOf } from './subscriptionEvents.ts';

const HASH = `0x${'ab'.repeat(32)}`;

describe('subscriptionEventOf', () => {
  it('tells the three kinds apart by their shape', () => {
    assert.deepEqual(subscriptionEventOf(JSON.stringify(HASH)), { kind: 'newPendingTransactions' });
    assert.deepEqual(
      subscriptionEventOf(
        JSON.stringify({ hash: HASH, nonce: '0x0', from: HASH.slice(0, 42), blockHash: null }),
      ),
      { kind: 'newPendingTransactions' },
    );
    assert.deepEqual(
      subscriptionEventOf(
        JSON.stringify({ parentHash: HASH, miner: HASH.slice(0, 42), number: '0x1', nonce: '0x0' }),
      ),
      { kind: 'newHeads' },
    );
    const log = {
      address: HASH.slice(0, 42),
      topics: [],
      data: '0x',
      blockNumber: '0x1',
      blockHash: HASH,
      logIndex: '0x0',
    };
    assert.deepEqual(subscriptionEventOf(JSON.stringify(log)), { kind: 'logs', block: HASH });
  });
});
