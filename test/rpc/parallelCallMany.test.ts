import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { asm, deployCode } from '../support/asm.ts';
import { importConformanceChain, type RunningServer, startServer } from '../support/server.ts';

// A long trace_callMany may run speculatively in parallel (src/services/parallelCalls.ts). Whatever
// the calls do to each other, the answer must be the serial one: each case runs on a server that
// speculates and on one that never does, and the two answers must be identical.

const SENDERS = ['0x1000', '0x2000', '0x3000', '0x4000'].map((s) => `0x${s.slice(2).padStart(40, '0')}`);
// Stores CALLVALUE+1 under the caller and logs it: calls of different senders touch different slots.
const PER_SENDER = '0x00000000000000000000000000000000000000aa';
const PER_SENDER_CODE = asm('CALLVALUE PUSH1 1 ADD DUP1 CALLER SSTORE PUSH0 MSTORE PUSH1 32 PUSH0 LOG0 STOP');
// Increments slot 0: every call depends on the one before it, whoever sends it.
const COUNTER = '0x00000000000000000000000000000000000000bb';
const COUNTER_CODE = asm('PUSH0 SLOAD PUSH1 1 ADD PUSH0 SSTORE STOP');
const ALL = ['trace', 'stateDiff', 'vmTrace'];
const funded = Object.fromEntries(SENDERS.map((s) => [s, { balance: '0xde0b6b3a7640000' }]));
const overrides = {
  stateOverrides: {
    ...funded,
    [PER_SENDER]: { code: PER_SENDER_CODE },
    [COUNTER]: { code: COUNTER_CODE },
  },
};

function calls(count: number, make: (i: number) => Record<string, unknown>): unknown[] {
  return Array.from({ length: count }, (_, i) => [make(i), ALL]);
}

describe('trace_callMany run in parallel answers exactly as run serially', () => {
  let chain: { datadir: string; cleanup: () => void };
  let parallel: RunningServer;
  let serial: RunningServer;
  before(async () => {
    chain = await importConformanceChain();
    parallel = await startServer(chain.datadir, {
      limits: { calls: { parallelMinCalls: 2 }, pool: { workers: 4 } },
    });
    serial = await startServer(chain.datadir, {
      limits: { calls: { parallelMinCalls: Number.POSITIVE_INFINITY } },
    });
    await parallel.app.warm();
  });
  after(async () => {
    await parallel?.close();
    await serial?.close();
    chain?.cleanup();
  });

  async function both(params: unknown[]): Promise<{ ours: unknown; speculated: number; fellBack: number }> {
    const stats = parallel.app.services.trace.parallelStats;
    const before = { ...stats };
    const [ours, reference] = await Promise.all([
      parallel.rpc('trace_callMany', params),
      serial.rpc('trace_callMany', params),
    ]);
    assert.deepEqual(ours, reference);
    return {
      ours,
      speculated: stats.speculated - before.speculated,
      fellBack: stats.fellBack - before.fellBack,
    };
  }

  it('independent senders: the parts are used as they are', async () => {
    const run = await both([
      calls(40, (i) => ({ from: SENDERS[i % 4], to: PER_SENDER })),
      'latest',
      overrides,
    ]);
    assert.deepEqual([run.speculated, run.fellBack], [1, 0]);
    assert.equal((run.ours as unknown[]).length, 40);
  });

  it('contract creations by several senders: addresses come from each sender’s own nonce', async () => {
    const run = await both([
      calls(24, (i) => ({ from: SENDERS[i % 3], data: deployCode(PER_SENDER_CODE) })),
      'latest',
      overrides,
    ]);
    assert.deepEqual([run.speculated, run.fellBack], [1, 0]);
  });

  it('a shared counter: every call depends on another sender’s, so it runs serially', async () => {
    const run = await both([calls(20, (i) => ({ from: SENDERS[i % 4], to: COUNTER })), 'latest', overrides]);
    assert.deepEqual([run.speculated, run.fellBack], [1, 1]);
    const last = (run.ours as Array<{ stateDiff: Record<string, { storage: Record<string, unknown> }> }>)[19];
    const slot0 = `0x${'0'.repeat(64)}`;
    assert.deepEqual(last?.stateDiff[COUNTER]?.storage[slot0], {
      '*': {
        from: `0x${(19).toString(16).padStart(64, '0')}`,
        to: `0x${(20).toString(16).padStart(64, '0')}`,
      },
    });
  });

  it('value sent to a sender of another part, which then spends it', async () => {
    const poor = `0x${'5'.repeat(40)}`;
    const list = calls(20, (i) => ({ from: SENDERS[i % 4], to: PER_SENDER }));
    list[0] = [{ from: SENDERS[0], to: poor, value: '0x2386f26fc10000' }, ALL];
    list.push([{ from: poor, to: PER_SENDER, value: '0x38d7ea4c68000' }, ALL]);
    for (let i = 0; i < 20; i++) list.push([{ from: SENDERS[1 + (i % 3)], to: PER_SENDER }, ALL]);
    const run = await both([list, 'latest', overrides]);
    assert.deepEqual([run.speculated, run.fellBack], [1, 1]);
    const spend = (run.ours as Array<{ trace: Array<{ error?: string }> }>)[20];
    assert.equal(spend?.trace[0]?.error, undefined, 'the poor sender could pay: it was sent the value first');
  });

  it('a call that fails validation fails the request as it does serially, naming the call', async () => {
    const list = calls(30, (i) => ({ from: SENDERS[i % 4], to: PER_SENDER }));
    list[17] = [{ from: SENDERS[1], to: PER_SENDER, gas: '0x100' }, ALL];
    const params = [list, 'latest', overrides];
    const [ours, reference] = await Promise.all([
      parallel.rpc('trace_callMany', params).then(
        () => null,
        (e: Error) => e.message,
      ),
      serial.rpc('trace_callMany', params).then(
        () => null,
        (e: Error) => e.message,
      ),
    ]);
    assert.ok(reference?.includes('call 17'), reference ?? 'the serial run was expected to fail');
    assert.equal(ours, reference);
  });
});
