import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { CallGate, CallInfo, Refusal } from '../rpc/envelope.ts';
import { combineGates } from './gate.ts';

const calls: CallInfo[] = [
  { method: 'eth_call', params: [] },
  { method: 'eth_chainId', params: [] },
];
const REFUSAL: Refusal = {
  httpStatus: 429,
  error: { code: -32005, message: 'project ID request rate exceeded' },
};

/** A gate that records what it hears, refusing with `refusal` (synchronously or not). */
function recorder(refusal: Refusal | null = null, async = false) {
  const heard: string[] = [];
  const gate: CallGate = {
    admit: (c) => {
      heard.push(`admit ${c.length}`);
      return async ? Promise.resolve(refusal) : refusal;
    },
    answered: (call, code) => heard.push(`${call.method} ${code}`),
    limited: (limit) => heard.push(`limited ${limit}`),
  };
  return { gate, heard };
}

describe('combineGates', () => {
  for (const async of [false, true]) {
    it(`tells the other gates of a refused body's calls, with the refusal's code (${async ? 'async' : 'sync'} refusal)`, async () => {
      const observer = recorder();
      const access = recorder(REFUSAL, async);
      const after = recorder();
      const combined = combineGates(observer.gate, access.gate, after.gate);
      assert.ok(combined?.admit);
      assert.equal(await combined.admit(calls), REFUSAL);
      assert.deepEqual(observer.heard, ['admit 2', 'eth_call -32005', 'eth_chainId -32005']);
      // The refusing gate counted the refusal itself; the gate after it was never asked.
      assert.deepEqual(access.heard, ['admit 2']);
      assert.deepEqual(after.heard, ['eth_call -32005', 'eth_chainId -32005']);
    });
  }

  it('admits synchronously when every gate does, and passes outcomes and limits to all', () => {
    const a = recorder();
    const b = recorder();
    const combined = combineGates(a.gate, null, b.gate, undefined);
    assert.equal(combined?.admit?.(calls), null);
    combined?.answered?.({ method: 'eth_call', params: [] }, null, 1);
    combined?.limited?.('batch_size');
    for (const r of [a, b]) assert.deepEqual(r.heard, ['admit 2', 'eth_call null', 'limited batch_size']);
  });
});
