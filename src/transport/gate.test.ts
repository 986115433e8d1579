import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { CallGate, CallInfo, Refusal } from '../rpc/envelope.ts';
import { combineGates } from './gate.ts';

const CALLS: CallInfo[] = [{ method: 'eth_chainId', params: [] }];
const REFUSAL: Refusal = { httpStatus: 429, error: { code: -32005, message: 'no' } };

describe('combineGates', () => {
  it('passes one deciding gate’s answer on as it comes (no promise for a synchronous one), and every outcome to all', () => {
    const heard: string[] = [];
    const deciding: CallGate = { admit: () => REFUSAL, answered: (c) => heard.push(`a ${c.method}`) };
    const listening: CallGate = { answered: (c) => heard.push(`b ${c.method}`) };
    const gate = combineGates(deciding, listening);
    assert.equal(gate?.admit?.(CALLS), REFUSAL);
    gate?.answered?.({ method: 'eth_call', params: [] }, null, 1);
    assert.deepEqual(heard, ['a eth_call', 'b eth_call']);
  });

  it('has no admit when no gate decides', () => {
    assert.equal(combineGates({ answered: () => {} }, { answered: () => {} })?.admit, undefined);
  });

  it('asks deciding gates in order, up to the first refusal', async () => {
    const asked: string[] = [];
    const ask = (name: string, answer: Refusal | null) => () => {
      asked.push(name);
      return answer;
    };
    const gate = combineGates(
      { admit: ask('first', null) },
      { answered: () => {} },
      { admit: async () => ask('second', REFUSAL)() },
      { admit: ask('third', null) },
    );
    assert.equal(await gate?.admit?.(CALLS), REFUSAL);
    assert.deepEqual(asked, ['first', 'second']);
  });
});
