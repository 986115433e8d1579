import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { creditsOf, creditTable, DEFAULT_CREDITS, EVENT_CREDITS } from './credits.ts';

describe('credits', () => {
  it("has Infura's published weights", () => {
    assert.equal(creditsOf('eth_chainId'), 5);
    assert.equal(creditsOf('eth_call'), 80);
    assert.equal(creditsOf('eth_getLogs'), 255);
    assert.equal(creditsOf('eth_estimateGas'), 300);
    assert.equal(creditsOf('eth_getBlockReceipts'), 1000);
    assert.equal(creditsOf('eth_blockNumber'), 80);
    assert.equal(creditsOf('eth_sendRawTransaction'), 80);
    assert.equal(creditsOf('eth_subscribe'), 5);
    assert.equal(creditsOf('eth_unsubscribe'), 10);
    assert.equal(creditsOf('eth_getProof'), 150);
    assert.equal(creditsOf('eth_getFilterChanges'), 140);
    assert.deepEqual(EVENT_CREDITS, { newHeads: 50, logs: 300, newPendingTransactions: 200 });
  });

  it('prices every trace_ method at 300 and every debug_trace method at 1000', () => {
    for (const m of ['trace_callMany', 'trace_replayBlockTransactions', 'trace_get', 'trace_rawTransaction'])
      assert.equal(creditsOf(m), 300, m);
    for (const m of ['debug_traceTransaction', 'debug_traceCall', 'debug_traceBlockByNumber'])
      assert.equal(creditsOf(m), 1000, m);
    assert.equal(creditsOf('debug_getRawBlock'), DEFAULT_CREDITS);
  });

  it('prices anything else at the default of 80, prototype names included', () => {
    assert.equal(DEFAULT_CREDITS, 80);
    for (const m of [
      'eth_sendTransaction',
      'anvil_mine',
      'no_such_method',
      'constructor',
      '__proto__',
      'toString',
    ])
      assert.equal(creditsOf(m), 80, m);
    assert.ok(creditTable().every(([, credits]) => Number.isInteger(credits) && credits > 0));
  });
});
