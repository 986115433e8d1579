// Execution limits for heavy answers (issue 10, item 11): a bounded answer size (-32008, Reth's
// code), a deadline that stays a deadline, and batches that share one budget so that a thousand
// heavy calls keep neither eth_chainId nor another client's trace waiting behind them.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import WebSocket from 'ws';
import { DEFAULT_LIMITS } from '../../src/config/limits.ts';
import { importConformanceChain, type RunningServer, startServer } from '../support/server.ts';

type Answer = {
  jsonrpc: string;
  id: unknown;
  result?: unknown;
  error?: { code: number; message: string };
};

// The conformance chain's funded sender.
const SENDER = '0x7435ed30a8b4aeb0877cef0c6e8cffe834eb865f';
// Initcode that loops until its gas runs out: JUMPDEST PUSH1 0 JUMP.
const ENDLESS = '0x5b600056';
const GAS_CAP = `0x${DEFAULT_LIMITS.calls.gasCap.toString(16)}`;
// Initcode that calls 0x…0200 with no value until its gas runs out (not 0x…0100: from Osaka that
// is the P256VERIFY precompile, whose calls traces leave out): JUMPDEST PUSH0×5 PUSH2 0x0200 GAS
// CALL POP PUSH1 0 JUMP.
const CALL_LOOP = '0x5b5f5f5f5f5f6102005af150600056';
/** Initcode that counts `n` down to zero: seven ops an iteration. */
const countdown = (n: number) => `0x61${n.toString(16).padStart(4, '0')}5b600190038060035700`;

const traceCall = (data: string, types: string[], gas?: string) => ({
  method: 'trace_call',
  params: [{ from: SENDER, data, ...(gas ? { gas } : {}) }, types, 'latest'],
});

describe('answer size, deadline and batch limits', () => {
  let chain: { datadir: string; cleanup: () => void };
  /** Default limits. */
  let server: RunningServer;
  /** A 1 s deadline and no practical size bound, so a long trace runs into its deadline. */
  let slow: RunningServer;
  /** Answers of at most 4 KiB, so that bounds are reached at once. */
  let small: RunningServer;
  before(async () => {
    chain = await importConformanceChain();
    server = await startServer(chain.datadir);
    slow = await startServer(chain.datadir, {
      limits: { requests: { maxResponseBytes: 1024 * 1024 * 1024 }, pool: { workers: 1, deadlineMs: 1_000 } },
    });
    small = await startServer(chain.datadir, {
      limits: { requests: { maxResponseBytes: 4096 }, pool: { workers: 1 } },
    });
    // Worker starts are not what the deadlines below are about. One server at a time: starts
    // compete for the same cores.
    for (const s of [server, slow, small]) await s.app.warm();
  });
  after(async () => {
    await server?.close();
    await slow?.close();
    await small?.close();
    chain?.cleanup();
  });

  const post = async (target: RunningServer, body: unknown): Promise<Answer> => {
    const res = await fetch(target.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    assert.equal(res.status, 200);
    return (await res.json()) as Answer;
  };
  const one = (target: RunningServer, request: { method: string; params: unknown[] }, id: unknown = 1) =>
    post(target, { jsonrpc: '2.0', id, ...request });

  it('answers the vmTrace of an endless loop with -32008, not a timeout or hundreds of megabytes', async () => {
    // A small bound, so that the tracer reaches it long before the deadline on any machine; the
    // default (32 MiB) stops the same loop after about 300,000 ops.
    const answer = await one(small, traceCall(ENDLESS, ['vmTrace'], GAS_CAP));
    assert.equal(answer.error?.code, -32008, JSON.stringify(answer).slice(0, 300));
    assert.match(answer.error?.message ?? '', /^response too large: the answer would exceed 4096 bytes/);
    // The struct logger of debug_traceCall stops the same way.
    const logs = await one(small, {
      method: 'debug_traceCall',
      params: [{ from: SENDER, data: ENDLESS, gas: GAS_CAP }, 'latest'],
    });
    assert.equal(logs.error?.code, -32008, JSON.stringify(logs).slice(0, 300));
    // And so do Parity traces of a loop of calls (to an empty account, so that each one is shown).
    const calls = await one(small, traceCall(CALL_LOOP, ['trace'], GAS_CAP));
    assert.equal(calls.error?.code, -32008, JSON.stringify(calls).slice(0, 300));
    // The worker that stopped is fine: a short loop is traced in full.
    const short = await one(small, traceCall(countdown(1), ['vmTrace']));
    const ops = (short.result as { vmTrace: { ops: unknown[] } }).vmTrace.ops;
    assert.equal(ops.length, 1 + 7 + 1);
  });

  it('refuses a rendered answer over the bound, and the answers of a batch past it', async () => {
    const head = Number(await small.rpc<string>('eth_blockNumber'));
    let refused = 0;
    for (let n = 1; n <= head && refused === 0; n++) {
      const answer = await one(small, {
        method: 'trace_replayBlockTransactions',
        params: [`0x${n.toString(16)}`, ['trace', 'stateDiff']],
      });
      if (answer.error) {
        assert.equal(answer.error.code, -32008, JSON.stringify(answer));
        refused++;
      }
    }
    assert.equal(refused, 1, 'some block of the conformance chain has more than 4 KiB of traces');

    const batch = Array.from({ length: 8 }, (_, i) => ({
      jsonrpc: '2.0',
      id: i,
      method: 'eth_getBlockByNumber',
      params: [`0x${(head - i).toString(16)}`, false],
    }));
    const res = await fetch(small.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(batch),
    });
    const text = await res.text();
    const answers = JSON.parse(text) as Answer[];
    assert.deepEqual(
      answers.map((a) => a.id),
      batch.map((r) => r.id),
    );
    const served = answers.filter((a) => a.result !== undefined);
    const tooLarge = answers.filter((a) => a.error?.code === -32008);
    assert.equal(served.length + tooLarge.length, batch.length);
    assert.ok(
      served.length > 0 && tooLarge.length > 0,
      `${served.length} served, ${tooLarge.length} refused`,
    );
    const servedBytes = served.reduce((n, a) => n + JSON.stringify(a).length, 0);
    assert.ok(servedBytes <= 4096, `${servedBytes} bytes of answers`);
  });

  it('answers a job that runs past its deadline with the timeout, eth_chainId first', async () => {
    const order: string[] = [];
    const started = performance.now();
    const heavy = one(slow, traceCall(ENDLESS, ['vmTrace'], GAS_CAP)).then((a) => {
      order.push('heavy');
      return a;
    });
    const chainId = one(slow, { method: 'eth_chainId', params: [] }).then((a) => {
      order.push('eth_chainId');
      return a;
    });
    const [heavyAnswer, chainIdAnswer] = await Promise.all([heavy, chainId]);
    const elapsed = performance.now() - started;
    assert.equal(chainIdAnswer.result, `0x${slow.app.services.chain.chainId.toString(16)}`);
    assert.deepEqual(heavyAnswer.error, { code: -32000, message: 'execution timeout' });
    assert.deepEqual(order, ['eth_chainId', 'heavy']);
    // Generous: the deadline is 1 s; before the bound, such a trace ran for many seconds past it.
    assert.ok(elapsed < 15_000, `answered after ${Math.round(elapsed)} ms`);
  });

  it('keeps a 1,000-call heavy batch from holding eth_chainId or another client’s trace behind it', async () => {
    const ws = new WebSocket(server.wsUrl);
    await new Promise((resolve, reject) => {
      ws.once('open', resolve);
      ws.once('error', reject);
    });
    const arrivals: Array<Answer | Answer[]> = [];
    const done = new Promise<void>((resolve) => {
      ws.on('message', (m) => {
        arrivals.push(JSON.parse(m.toString()) as Answer | Answer[]);
        if (arrivals.length === 3) resolve();
      });
    });
    try {
      const batch = Array.from({ length: 1000 }, (_, i) => ({
        jsonrpc: '2.0',
        id: i,
        ...traceCall(countdown(5000), ['trace']),
      }));
      // One socket, so the server takes them in this order: the batch's calls are all started
      // before the other two arrive.
      ws.send(JSON.stringify(batch));
      ws.send(JSON.stringify({ jsonrpc: '2.0', id: 'other', ...traceCall(countdown(10), ['trace']) }));
      ws.send(JSON.stringify({ jsonrpc: '2.0', id: 'chainId', method: 'eth_chainId' }));
      await done;
    } finally {
      ws.close();
    }
    const [first, second, last] = arrivals;
    assert.deepEqual(
      [first, second].map((a) => (a as Answer).id).sort(),
      ['chainId', 'other'],
      'eth_chainId and the other trace answered before the batch',
    );
    const other = [first, second].find((a) => (a as Answer).id === 'other') as Answer;
    assert.equal(other.error, undefined, JSON.stringify(other));
    assert.ok(Array.isArray(last) && last.length === 1000);
    // Every call of the batch ran or ran out of the batch's time; none was refused for a full queue.
    for (const answer of last) {
      if (answer.error) assert.deepEqual(answer.error, { code: -32000, message: 'execution timeout' });
    }
  });
});
