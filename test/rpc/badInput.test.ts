// Bad input answered -32602 with a clear message, never -32603 (issue 10, item 13): block numbers
// past 64 bits, params nested thousands deep, megabyte numbers, a malformed eth_subscribe filter;
// and ids echoed exactly as sent. Over HTTP, and the subscription over WebSocket, as clients send them.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import WebSocket from 'ws';
import { describeForLog } from '../../src/core/errors.ts';
import { conformanceServerForSuite } from '../support/server.ts';

type Answer = { jsonrpc: string; id: unknown; result?: unknown; error?: { code: number; message: string } };

const ZERO = '0x0000000000000000000000000000000000000000';
const CALL = { to: ZERO };
/** 2^64: one past the largest block number. */
const TOO_BIG = '18446744073709551616';

/** Every method that takes a block, with the block in its place. */
const WITH_BLOCK: Array<[string, (block: unknown) => unknown[]]> = [
  ['eth_getBalance', (b) => [ZERO, b]],
  ['eth_getCode', (b) => [ZERO, b]],
  ['eth_getTransactionCount', (b) => [ZERO, b]],
  ['eth_getStorageAt', (b) => [ZERO, '0x0', b]],
  ['eth_getStorageValues', (b) => [{ [ZERO]: [`0x${'00'.repeat(32)}`] }, b]],
  ['eth_getProof', (b) => [ZERO, [], b]],
  ['eth_call', (b) => [CALL, b]],
  ['eth_estimateGas', (b) => [CALL, b]],
  ['eth_createAccessList', (b) => [CALL, b]],
  ['eth_getBlockByNumber', (b) => [b, false]],
  ['eth_getBlockTransactionCountByNumber', (b) => [b]],
  ['eth_getTransactionByBlockNumberAndIndex', (b) => [b, '0x0']],
  ['eth_getBlockReceipts', (b) => [b]],
  ['eth_feeHistory', (b) => ['0x1', b, []]],
  ['eth_getLogs', (b) => [{ fromBlock: b }]],
  ['eth_newFilter', (b) => [{ toBlock: b }]],
  ['trace_block', (b) => [b]],
  ['trace_replayBlockTransactions', (b) => [b, ['trace']]],
  ['trace_call', (b) => [CALL, ['trace'], b]],
  ['trace_callMany', (b) => [[[CALL, ['trace']]], b]],
  ['trace_rawTransaction', (b) => ['0x00', ['trace'], b]],
  ['trace_filter', (b) => [{ fromBlock: b }]],
  ['debug_traceCall', (b) => [CALL, b]],
];

describe('bad input over HTTP and WebSocket', () => {
  const server = conformanceServerForSuite();

  const post = async (body: string): Promise<{ text: string; answer: Answer }> => {
    const res = await fetch(server().url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body,
    });
    assert.equal(res.status, 200);
    const text = await res.text();
    return { text, answer: JSON.parse(text) as Answer };
  };
  const call = async (method: string, params: unknown[]) =>
    (await post(JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }))).answer;

  it('answers a decimal block number of 2^64 or more with -32602, in every method and in {blockNumber}', async () => {
    for (const [method, params] of WITH_BLOCK) {
      for (const block of [TOO_BIG, { blockNumber: TOO_BIG }, `${'9'.repeat(30)}`]) {
        // debug_* reads no decimal string at all (geth's rule): only the object form reaches the check.
        if (method === 'debug_traceCall' && typeof block === 'string') continue;
        const answer = await call(method, params(block));
        const what = `${method} ${JSON.stringify(block)}`;
        assert.equal(answer.error?.code, -32602, `${what}: ${JSON.stringify(answer)}`);
        assert.match(answer.error?.message ?? '', /block number > 64 bits/, what);
      }
    }
    // The largest block number is still a block number: one this chain does not have.
    assert.deepEqual(await call('eth_getBlockByNumber', ['18446744073709551615', false]), {
      jsonrpc: '2.0',
      id: 1,
      result: null,
    });
  });

  it('answers params nested ten thousand deep with -32602', async () => {
    const deep = `${'['.repeat(10_000)}${']'.repeat(10_000)}`;
    for (const params of [`["${ZERO}",${deep}]`, `[{"to":"${ZERO}"},${deep}]`, deep]) {
      for (const method of ['eth_getBalance', 'trace_call', 'eth_call']) {
        const { answer } = await post(`{"jsonrpc":"2.0","id":1,"method":"${method}","params":${params}}`);
        assert.equal(answer.error?.code, -32602, `${method}: ${JSON.stringify(answer)}`);
        assert.match(answer.error?.message ?? '', /nested more than 100 levels deep/);
      }
    }
  });

  it('refuses megabyte numbers with -32602 and a short message', async () => {
    const digits = '1'.repeat(5_000_000);
    const cases: Array<[string, unknown[], RegExp]> = [
      ['eth_getBlockByNumber', [digits, false], /block number > 64 bits/],
      ['eth_getBalance', [ZERO, `0x${digits}`], /hex number > 64 bits/],
      ['eth_call', [{ to: ZERO, value: `0x${digits}` }, 'latest'], /hex number > 256 bits/],
      ['eth_getBlockByNumber', [`nonsense${digits}`, false], /invalid block number or tag/],
    ];
    for (const [method, params, message] of cases) {
      const { text, answer } = await post(JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }));
      assert.equal(answer.error?.code, -32602, `${method}: ${text.slice(0, 300)}`);
      assert.match(answer.error?.message ?? '', message);
      // The client's five megabytes do not come back.
      assert.ok(text.length < 1_000, `${method} answered ${text.length} characters`);
    }
    // 2^256 − 1 is still a quantity; 2^256 is not.
    const max = await call('eth_call', [{ to: ZERO, value: `0x${'f'.repeat(64)}` }, 'latest']);
    assert.notEqual(max.error?.code, -32602, JSON.stringify(max));
    const over = await call('eth_call', [{ to: ZERO, value: `0x1${'0'.repeat(64)}` }, 'latest']);
    assert.equal(over.error?.code, -32602);
    assert.match(over.error?.message ?? '', /hex number > 256 bits/);
  });

  it('logs an error in bounded length, whatever its message quotes', () => {
    const line = describeForLog(new Error(`bad value ${'7'.repeat(5_000_000)}`));
    assert.ok(line.length < 2_100, `${line.length} characters`);
    assert.match(line, /^Error: bad value 7+… \(\d+ chars\)$/);
  });

  it('echoes ids exactly as sent, in single requests and batches', async () => {
    const ids = ['1e400', '123456789012345678901234567890', '-0', '1.50', '1E+2', '7', '"a\\u0062c"'];
    for (const id of ids) {
      const { text } = await post(`{"jsonrpc":"2.0","id":${id},"method":"eth_chainId"}`);
      assert.ok(text.startsWith(`{"jsonrpc":"2.0","id":${id},"result":"0x`), text);
    }
    const batch = ids.map((id) => `{ "method" : "eth_chainId", "id" :${id} , "jsonrpc":"2.0"}`);
    // An element that is not an object, and an invalid one, keep their places.
    const { text } = await post(`[${batch.join(',')}, 5, {"jsonrpc":"2.0","id":99e999,"method":""}]`);
    const echoed = [...text.matchAll(/"id":([^,]+),/g)].map((m) => m[1]);
    assert.deepEqual(echoed, [...ids, 'null', '99e999']);
    // A repeated member counts once, the last, as JSON.parse reads it.
    const repeated = await post('{"jsonrpc":"2.0","id":1,"method":"eth_chainId","id":2e400}');
    assert.match(repeated.text, /^\{"jsonrpc":"2.0","id":2e400,"result"/);
  });

  it('answers eth_subscribe with a malformed filter with -32602 over WebSocket', async () => {
    const ws = new WebSocket(server().wsUrl);
    await new Promise((resolve, reject) => {
      ws.once('open', resolve);
      ws.once('error', reject);
    });
    const ask = (id: number, params: unknown[]) =>
      new Promise<Answer>((resolve) => {
        const onMessage = (m: WebSocket.RawData) => {
          const answer = JSON.parse(m.toString()) as Answer;
          if (answer.id !== id) return;
          ws.off('message', onMessage);
          resolve(answer);
        };
        ws.on('message', onMessage);
        ws.send(JSON.stringify({ jsonrpc: '2.0', id, method: 'eth_subscribe', params }));
      });
    try {
      const cases: Array<[unknown[], RegExp]> = [
        [['logs', { address: 5 }], /^invalid argument 1: invalid addresses in query$/],
        [['logs', { topics: 'x' }], /^invalid argument 1: invalid topic\(s\)$/],
        [['logs', 'not an object'], /^invalid argument 1: filter must be an object$/],
        [['logs', { fromBlock: TOO_BIG }], /^invalid argument 1: block number > 64 bits$/],
        [['newPendingTransactions', 'yes'], /^invalid argument 1: /],
      ];
      for (const [i, [params, message]] of cases.entries()) {
        const answer = await ask(i + 1, params);
        assert.equal(answer.error?.code, -32602, `${JSON.stringify(params)}: ${JSON.stringify(answer)}`);
        assert.match(answer.error?.message ?? '', message);
      }
      // The socket still serves a good subscription.
      const good = await ask(100, ['logs', { address: ZERO }]);
      assert.match(String(good.result), /^0x[0-9a-f]+$/);
    } finally {
      ws.close();
    }
  });

  // Call objects and the overrides that go with them (issue 10, item 13).
  const RICH = '0x14e46043e63d0e3cdcf2530519f4cfaf35058cb2';
  const transfer = { from: RICH, to: `0x${'11'.repeat(20)}`, value: '0x1' };
  /** Every method that takes a call object, with the call and a block in their places. */
  const WITH_CALL: Array<[string, (call: unknown, block: string) => unknown[]]> = [
    ['eth_call', (c, b) => [c, b]],
    ['eth_estimateGas', (c, b) => [c, b]],
    ['eth_createAccessList', (c, b) => [c, b]],
    ['trace_call', (c, b) => [c, ['trace'], b]],
    ['trace_callMany', (c, b) => [[[c, ['trace']]], b]],
    ['debug_traceCall', (c, b) => [c, b, {}]],
  ];
  /** Each method's way to pass block overrides, after a call and a block. */
  const WITH_ENV: Array<[string, (call: unknown, block: string, env: unknown) => unknown[]]> = [
    ['eth_call', (c, b, e) => [c, b, {}, e]],
    ['eth_estimateGas', (c, b, e) => [c, b, {}, e]],
    ['trace_call', (c, b, e) => [c, ['trace'], b, {}, e]],
    ['trace_callMany', (c, b, e) => [[[c, ['trace']]], b, { blockOverrides: e }]],
    ['debug_traceCall', (c, b, e) => [c, b, { blockOverrides: e }]],
  ];
  const TWO_TO_64 = '0x10000000000000000';

  it('answers a call whose gas, nonce or type is 2^64 or more with -32602 (geth: hexutil.Uint64)', async () => {
    const methods = [...WITH_CALL, ['eth_sendTransaction', (c: unknown) => [c]] as const];
    for (const [method, params] of methods) {
      for (const name of ['gas', 'nonce', 'type']) {
        for (const value of [TWO_TO_64, '0x10000000000000000007']) {
          const answer = await call(method, params({ ...transfer, [name]: value }, 'latest'));
          const what = `${method} ${name}=${value}: ${JSON.stringify(answer)}`;
          assert.equal(answer.error?.code, -32602, what);
          assert.match(answer.error?.message ?? '', new RegExp(`${name}: hex number > 64 bits`), what);
        }
      }
    }
    // 2^64 − 1 is still a nonce: the call runs.
    assert.equal(
      (await call('eth_call', [{ ...transfer, nonce: '0xffffffffffffffff' }, 'latest'])).result,
      '0x',
    );
  });

  it('runs a call with EIP-1559 fee fields on a block before London, as geth does', async () => {
    for (const [method, params] of WITH_CALL) {
      const answer = await call(
        method,
        params({ ...transfer, maxPriorityFeePerGas: '0x1', maxFeePerGas: '0x2' }, '0x10'),
      );
      assert.equal(answer.error, undefined, `${method}: ${JSON.stringify(answer)}`);
    }
  });

  it('takes block overrides that keep the block valid, and declines the others with -32000', async () => {
    for (const [method, params] of WITH_ENV) {
      // Before London a base fee changes nothing (geth's rules never read one), and as in geth a
      // block gas limit below the call's gas binds no call.
      for (const [block, env] of [
        ['0x10', { baseFeePerGas: '0x7' }],
        ['0x1c', { gasLimit: '0x2' }],
      ] as const) {
        const answer = await call(method, params(transfer, block, env));
        const what = `${method} at ${block} with ${JSON.stringify(env)}: ${JSON.stringify(answer)}`;
        assert.equal(answer.error, undefined, what);
      }
      // A number or time in another fork than the block's: well-formed, but declined, naming the fork.
      for (const [block, env] of [
        ['0x10', { number: '0x1e' }],
        ['0x10', { time: '0xffffffff' }],
        ['0x10', { number: '0x1e', time: '0xffffffff' }],
      ] as const) {
        const answer = await call(method, params(transfer, block, env));
        const what = `${method} at ${block} with ${JSON.stringify(env)}: ${JSON.stringify(answer)}`;
        assert.equal(answer.error?.code, -32000, what);
        assert.match(answer.error?.message ?? '', /^block overrides: .*fork/, what);
      }
    }
  });

  it("types every field of geth's trace config whichever tracer runs, before the block is looked up", async () => {
    const unknownBlock = `0x${'ab'.repeat(32)}`;
    const bad: Array<[Record<string, unknown>, RegExp]> = [
      [{ tracer: 5 }, /tracer: expected a tracer name/],
      [{ tracer: {} }, /tracer: expected a tracer name/],
      [{ tracer: 'callTracer', enableMemory: 1 }, /enableMemory: expected a boolean/],
      [{ tracer: 'noopTracer', enableReturnData: 'yes' }, /enableReturnData: expected a boolean/],
      [{ disableStack: 'true' }, /disableStack: expected a boolean/],
      [{ tracer: 'prestateTracer', limit: -1 }, /limit: expected a non-negative integer/],
      [{ limit: '8' }, /limit: expected a non-negative integer/],
      [{ tracer: '', tracerConfig: { onlyTopCall: 'true' } }, /tracerConfig.onlyTopCall: expected a boolean/],
      [{ tracer: 'callTracer', tracerConfig: { diffMode: 0 } }, /tracerConfig.diffMode: expected a boolean/],
    ];
    for (const [config, message] of bad) {
      for (const [method, params] of [
        ['debug_traceBlockByHash', [unknownBlock, config]],
        ['debug_traceTransaction', [unknownBlock, config]],
        ['debug_traceCall', [CALL, 'latest', config]],
      ] as const) {
        const answer = await call(method, [...params]);
        assert.equal(answer.error?.code, -32602, `${method} ${JSON.stringify(config)}`);
        assert.match(answer.error?.message ?? '', message);
      }
    }
    // Well-typed fields the chosen tracer does not read are taken, as geth takes them.
    const ok = await call('debug_traceCall', [
      CALL,
      'latest',
      { tracer: 'callTracer', enableMemory: true, limit: 3, tracerConfig: { diffMode: false } },
    ]);
    assert.equal(ok.error, undefined, JSON.stringify(ok.error));
  });

  it('refuses trace_callMany options whose overrides are not objects', async () => {
    for (const name of ['stateOverrides', 'blockOverrides']) {
      for (const value of [false, 0, '', true]) {
        const answer = await call('trace_callMany', [[[transfer, ['trace']]], 'latest', { [name]: value }]);
        const what = `${name}: ${JSON.stringify(value)}: ${JSON.stringify(answer)}`;
        assert.equal(answer.error?.code, -32602, what);
        assert.match(answer.error?.message ?? '', /must be an object/, what);
      }
    }
  });
});
