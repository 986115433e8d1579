import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { importConformanceChain, type RunningServer, startServer } from '../support/server.ts';

// The conformance chain's funded sender and a fresh recipient.
const SENDER = '0x7435ed30a8b4aeb0877cef0c6e8cffe834eb865f';
const FRESH = '0xd46e8dd67c5d32be8058bb8eb970870f07244567';
const COUNTER = '0x00000000000000000000000000000000c0ffee01';
const REVERTER = '0x00000000000000000000000000000000c0ffee02';
// slot0 += 1; return slot0  —  PUSH1 0 SLOAD PUSH1 1 ADD DUP1 PUSH1 0 SSTORE PUSH1 0 MSTORE PUSH1 32 PUSH1 0 RETURN
const COUNTER_CODE = '0x600054600101806000556000526020' + '6000f3';
// REVERT with 4 bytes of data: PUSH4 0xdeadbeef PUSH1 0 MSTORE PUSH1 4 PUSH1 28 REVERT
const REVERTER_CODE = '0x63deadbeef6000526004601cfd';
const OVERRIDES = {
  stateOverrides: { [COUNTER]: { code: COUNTER_CODE }, [REVERTER]: { code: REVERTER_CODE } },
};
const WORD = (n: number) => `0x${n.toString(16).padStart(64, '0')}`;

type Entry = {
  type: string;
  action: Record<string, string>;
  result: Record<string, string> | null;
  error?: string;
  subtraces: number;
  traceAddress: number[];
};
type AccountDiff = { balance: unknown; nonce: unknown; code: unknown; storage: Record<string, unknown> };
type Change = { '*': { from: string; to: string } };
const change = (delta: unknown) => (delta as Change)['*'];
type Result = {
  output: string;
  stateDiff: Record<string, AccountDiff> | null;
  trace: Entry[];
  vmTrace: unknown;
};

describe('trace_callMany and trace_call', () => {
  let chain: { datadir: string; cleanup: () => void };
  let server: RunningServer;
  let small: RunningServer;
  before(async () => {
    chain = await importConformanceChain();
    server = await startServer(chain.datadir);
    small = await startServer(chain.datadir, {
      limits: { calls: { maxCalls: 2 } },
    });
  });
  after(async () => {
    await server?.close();
    await small?.close();
    chain?.cleanup();
  });

  const callMany = (params: unknown[]) => server.rpc<Result[]>('trace_callMany', params);
  const errorOf = async (promise: Promise<unknown>) => {
    try {
      await promise;
    } catch (e) {
      return e as Error & { code: number };
    }
    assert.fail('expected a JSON-RPC error');
  };

  it('answers the seed example: two transfers with ["trace"] on latest', async () => {
    const results = await callMany([
      [
        [{ from: SENDER, to: FRESH, value: '0x1' }, ['trace']],
        [{ from: SENDER, to: FRESH, value: '0x2' }, ['trace']],
      ],
      'latest',
    ]);
    assert.equal(results.length, 2);
    for (const [i, r] of results.entries()) {
      assert.deepEqual(Object.keys(r).sort(), ['output', 'stateDiff', 'trace', 'vmTrace']);
      assert.equal(r.output, '0x');
      assert.equal(r.stateDiff, null);
      assert.equal(r.vmTrace, null);
      assert.equal(r.trace.length, 1);
      const [entry] = r.trace;
      assert.ok(entry);
      assert.equal(entry.type, 'call');
      assert.equal(entry.subtraces, 0);
      assert.deepEqual(entry.traceAddress, []);
      assert.equal(entry.action.callType, 'call');
      assert.equal(entry.action.value, `0x${(i + 1).toString(16)}`);
      assert.deepEqual(entry.result, { gasUsed: '0x0', output: '0x' });
      // No gas given: the gas cap minus the 21,000 intrinsic gas.
      assert.equal(entry.action.gas, `0x${(50_000_000 - 21_000).toString(16)}`);
    }
  });

  it('returns only output when trace types are omitted, null or empty', async () => {
    const results = await callMany([
      [
        [{ from: SENDER, to: COUNTER }],
        [{ from: SENDER, to: COUNTER }, null],
        [{ from: SENDER, to: COUNTER }, []],
      ],
      'latest',
      OVERRIDES,
    ]);
    assert.deepEqual(
      results.map((r) => r.output),
      [WORD(1), WORD(2), WORD(3)],
    );
    for (const r of results)
      assert.deepEqual(
        { ...r, output: undefined },
        { output: undefined, stateDiff: null, trace: [], vmTrace: null },
      );
  });

  it('chains calls on one state and gives each stateDiff relative to the state before it', async () => {
    const [first, second] = await callMany([
      [
        [{ from: SENDER, to: COUNTER }, ['stateDiff']],
        [{ from: SENDER, to: COUNTER }, ['stateDiff']],
      ],
      'latest',
      OVERRIDES,
    ]);
    assert.ok(first && second);
    assert.equal(first.output, WORD(1));
    assert.equal(second.output, WORD(2));
    assert.deepEqual(first.stateDiff?.[COUNTER]?.storage, {
      [WORD(0)]: { '*': { from: WORD(0), to: WORD(1) } },
    });
    assert.deepEqual(second.stateDiff?.[COUNTER]?.storage, {
      [WORD(0)]: { '*': { from: WORD(1), to: WORD(2) } },
    });
    const nonce0 = change(first.stateDiff?.[SENDER]?.nonce);
    const nonce1 = change(second.stateDiff?.[SENDER]?.nonce);
    assert.equal(nonce1.from, nonce0.to);
    // Pure simulation: no fee is debited, so the sender's balance does not move on a zero-value call.
    assert.equal(first.stateDiff?.[SENDER]?.balance, '=');
  });

  it('keeps a reverted call in its slot with its trace error, and its nonce increment', async () => {
    const [reverted, next] = await callMany([
      [
        [{ from: SENDER, to: REVERTER }, ['trace', 'stateDiff']],
        [{ from: SENDER, to: FRESH, value: '0x5' }, ['stateDiff']],
      ],
      'latest',
      OVERRIDES,
    ]);
    assert.ok(reverted && next);
    assert.equal(reverted.output, '0xdeadbeef');
    assert.equal(reverted.trace[0]?.error, 'Reverted');
    assert.equal(reverted.trace[0]?.result?.output, '0xdeadbeef');
    assert.equal(
      change(next.stateDiff?.[SENDER]?.nonce).from,
      change(reverted.stateDiff?.[SENDER]?.nonce).to,
    );
    assert.deepEqual(next.stateDiff?.[FRESH]?.balance, { '+': '0x5' });
  });

  it('fails the top frame for a value the sender cannot afford, moving only its nonce', async () => {
    const poor = '0x00000000000000000000000000000000000000aa';
    const [r] = await callMany([
      [[{ from: poor, to: FRESH, value: '0x1' }, ['trace', 'stateDiff']]],
      'latest',
    ]);
    assert.ok(r);
    assert.equal(r.trace[0]?.error, 'Insufficient balance for transfer');
    assert.equal(r.trace[0]?.result, null);
    assert.deepEqual(Object.keys(r.stateDiff ?? {}), [poor]);
    assert.deepEqual(r.stateDiff?.[poor]?.nonce, { '+': '0x1' });
  });

  it('works at every kind of block, the genesis included', async () => {
    const head = await server.store.getHead();
    assert.ok(head);
    const genesisHash = await server.store.getCanonicalHash(0n);
    assert.ok(genesisHash);
    for (const block of [
      'earliest',
      '0x0',
      `0x${Buffer.from(genesisHash).toString('hex')}`,
      { blockNumber: '0x1' },
      '0x10',
      'pending',
    ]) {
      const [r] = await callMany([[[{ from: SENDER, to: COUNTER }, ['trace']]], block, OVERRIDES]);
      assert.equal(r?.output, WORD(1), JSON.stringify(block));
    }
    const past = await errorOf(
      callMany([[[{ from: SENDER, to: FRESH }]], `0x${(head.number + 1n).toString(16)}`]),
    );
    assert.equal(past.code, -32000);
  });

  it('rejects malformed requests with -32602 naming the call and the problem', async () => {
    const cases: Array<[unknown[], RegExp]> = [
      [[[[{ from: SENDER, to: FRESH }, ['trace', 'bogus']]]], /call 0: unrecognized trace type: bogus/],
      [
        [[[{ from: SENDER, to: FRESH, gasPrice: '0x1', maxFeePerGas: '0x2' }]]],
        /call 0: both gasPrice and \(maxFeePerGas/,
      ],
      [
        [[[{ from: SENDER, to: FRESH }], [{ to: FRESH, data: '0x01', input: '0x02' }]]],
        /call 1: both "data" and "input"/,
      ],
      [[[{ from: SENDER }]], /call 0: expected \[call\] or \[call, traceTypes\]/],
      [[{ not: 'a list' }], /expected an array of \[call, traceTypes\]/],
      [[[[{ from: '0x1234', to: FRESH }]]], /call 0: from: /],
    ];
    for (const [params, message] of cases) {
      const e = await errorOf(callMany(params));
      assert.equal(e.code, -32602, String(params));
      assert.match(e.message, message);
    }
    const same = await callMany([
      [[{ from: SENDER, to: COUNTER, data: '0x01', input: '0x01' }]],
      'latest',
      OVERRIDES,
    ]);
    assert.equal(same[0]?.output, WORD(1));
  });

  it('fails the whole request with -32000 naming the call when validation fails', async () => {
    const low = await errorOf(
      callMany([
        [
          [{ from: SENDER, to: FRESH }, ['trace']],
          [{ from: SENDER, to: FRESH, gas: '0x5208', data: '0x01' }, ['trace']],
        ],
      ]),
    );
    assert.equal(low.code, -32000);
    // Calldata costs 16 gas per non-zero byte, and EIP-7623 sets a floor of 10 per token (4 per byte).
    assert.match(low.message, /^call 1: intrinsic gas too low: have 21000, want 21040$/);
    const cheap = await errorOf(callMany([[[{ from: SENDER, to: FRESH, maxFeePerGas: '0x1' }]], 'latest']));
    assert.equal(cheap.code, -32000);
    assert.match(cheap.message, /^call 0: max fee per gas less than block base fee/);
  });

  it('refuses more calls than the configured limit', async () => {
    const three = [
      [{ from: SENDER, to: FRESH }],
      [{ from: SENDER, to: FRESH }],
      [{ from: SENDER, to: FRESH }],
    ];
    const e = await errorOf(small.rpc('trace_callMany', [three]));
    assert.equal(e.code, -32602);
    assert.match(e.message, /too many calls \(3\), at most 2/);
    assert.equal((await small.rpc<Result[]>('trace_callMany', [three.slice(0, 2)])).length, 2);
  });

  it('serves trace_call with overrides, and trace_rawTransaction of a real transaction', async () => {
    const r = await server.rpc<Result>('trace_call', [
      { from: SENDER, to: COUNTER },
      ['trace'],
      'latest',
      OVERRIDES.stateOverrides,
    ]);
    assert.equal(r.output, WORD(1));
    assert.equal(r.trace[0]?.action.to, COUNTER);
    const withEnv = await server.rpc<Result>('trace_call', [
      { from: SENDER, to: COUNTER },
      ['trace'],
      'latest',
      { [COUNTER]: { code: '0x4360005260206000f3' } }, // NUMBER PUSH1 0 MSTORE PUSH1 32 PUSH1 0 RETURN
      { number: '0x1234' },
    ]);
    assert.equal(withEnv.output, WORD(0x1234));

    // A block's first transaction, traced on its parent, succeeds exactly as its receipt says.
    const block = await server.rpc<{ transactions: string[] }>('eth_getBlockByNumber', ['0x2', false]);
    const txHash = block.transactions[0] as string;
    const raw = await server.rpc<string>('eth_getRawTransactionByHash', [txHash]);
    const receipt = await server.rpc<{ status?: string; root?: string }>('eth_getTransactionReceipt', [
      txHash,
    ]);
    const traced = await server.rpc<Result>('trace_rawTransaction', [raw, ['trace'], '0x1']);
    assert.equal(traced.trace[0]?.error === undefined, receipt.status !== '0x0');
    const bad = await errorOf(server.rpc('trace_rawTransaction', ['0x1234', ['trace']]));
    assert.equal(bad.code, -32602);
  });
});
