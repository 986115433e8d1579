import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import WebSocket from 'ws';
import { collect, tempDir } from '../support/cli.ts';
import { serveDev } from '../support/devServer.ts';

/**
 * Graceful stop of a real `ethtrace start` under load: SIGTERM while heavy requests (EVM loops that
 * run for seconds, trace_callMany) are being answered. Every request the server had accepted gets a
 * complete, valid answer; a WebSocket client gets close code 1001; the process exits 0. A second
 * signal during the drain exits at once.
 */

const LOOPER = `0x${'aa'.repeat(20)}`;
// JUMPDEST PUSH1 0 JUMP: loops until the call's gas runs out (about 7M gas a second here).
const LOOP_CODE = '0x5b600056';

let nextId = 0;
function slowCall(gas: number) {
  return {
    jsonrpc: '2.0',
    id: ++nextId,
    method: 'eth_call',
    params: [{ to: LOOPER, gas: `0x${gas.toString(16)}` }, 'latest', { [LOOPER]: { code: LOOP_CODE } }],
  };
}
function slowTrace() {
  return {
    jsonrpc: '2.0',
    id: ++nextId,
    method: 'trace_callMany',
    params: [
      [
        [{ to: LOOPER, gas: '0x2dc6c0' }, ['trace']],
        [{ to: `0x${'bb'.repeat(20)}`, value: '0x1' }, ['trace', 'stateDiff']],
      ],
      'latest',
      { stateOverrides: { [LOOPER]: { code: LOOP_CODE } } },
    ],
  };
}
const cheap = (method: string) => ({ jsonrpc: '2.0', id: ++nextId, method, params: [] });

interface Outcome {
  id: number;
  ok: boolean;
  status?: number;
  body?: string;
  error?: string;
}

async function send(url: string, body: { id: number }): Promise<Outcome> {
  try {
    const res = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    return { id: body.id, ok: true, status: res.status, body: await res.text() };
  } catch (e) {
    return { id: body.id, ok: false, error: String((e as Error).cause ?? e) };
  }
}

/** Calls started so far, from the server's own metrics: the requests it has accepted and begun. */
async function callsStarted(base: string): Promise<number> {
  const text = await (await fetch(`${base}/metrics`)).text();
  let n = 0;
  for (const line of text.split('\n'))
    if (line.startsWith('ethtrace_rpc_calls_started_total{')) n += Number(line.split(' ')[1]);
  return n;
}

describe('ethtrace start stops gracefully', () => {
  const dirs: Array<{ cleanup: () => void }> = [];
  after(() => {
    for (const d of dirs) d.cleanup();
  });

  it('SIGTERM under load: every accepted request is answered whole, WebSockets get 1001, exit 0', async () => {
    const dir = tempDir('ethtrace-stop-');
    dirs.push(dir);
    // A deadline long enough that no request of this load times out on a busy machine.
    const server = await serveDev(dir.path, ['--shutdown-timeout', '60', '--exec-timeout', '60000']);
    const base = server.url.replace(/\/v3\/[^/]+$/, '');
    const ws = new WebSocket(server.wsUrl);
    await new Promise((resolve, reject) => ws.once('open', resolve).once('error', reject));
    const closed = new Promise<number>((resolve) => ws.once('close', (code) => resolve(code)));
    const wsAnswers: unknown[] = [];
    ws.on('message', (data) => wsAnswers.push(JSON.parse(data.toString())));
    const wsSlow = slowCall(5_000_000);

    const before = await callsStarted(base);
    const bodies = [
      ...Array.from({ length: 4 }, () => slowCall(8_000_000)),
      ...Array.from({ length: 4 }, () => slowTrace()),
      ...Array.from({ length: 24 }, (_, i) => cheap(i % 2 ? 'eth_chainId' : 'eth_blockNumber')),
    ];
    const outcomes = Promise.all(bodies.map((b) => send(server.url, b)));
    ws.send(JSON.stringify(wsSlow));
    // Signalled once the server has begun every request (they are accepted, not in a backlog):
    // the metrics count each call as it starts. The slow ones are still running then.
    const expected = before + bodies.length + 1;
    while ((await callsStarted(base)) < expected) await new Promise((r) => setTimeout(r, 20));
    const exited = collect(server.child);
    server.child.kill('SIGTERM');

    const results = await outcomes;
    for (const r of results) {
      assert.ok(r.ok, `request ${r.id} failed: ${r.error}`);
      assert.equal(r.status, 200, r.body);
      const answer = JSON.parse(r.body ?? '') as {
        jsonrpc: string;
        id: number;
        result?: unknown;
        error?: unknown;
      };
      assert.equal(answer.jsonrpc, '2.0');
      assert.equal(answer.id, r.id);
      assert.ok('result' in answer || 'error' in answer, r.body);
    }
    // The looping eth_calls run out of gas (their answer), the traces return their traces.
    const traced = results.filter((r) => r.body?.includes('"result":[{"output"'));
    assert.equal(traced.length, 4, 'every trace_callMany answered with its traces');
    assert.equal(await closed, 1001);
    assert.ok(
      wsAnswers.some((a) => (a as { id?: number }).id === wsSlow.id),
      'the WebSocket message under way was answered before the close',
    );
    const { code, signal, stdout } = await exited;
    assert.equal(signal, null);
    assert.equal(code, 0, stdout);
    assert.match(stdout, /stopping/);
  });

  it('a second signal during the drain exits at once (status 143 for SIGTERM)', async () => {
    const dir = tempDir('ethtrace-stop2-');
    dirs.push(dir);
    // A drain that would take minutes: a call of a billion gas with a long deadline.
    const server = await serveDev(dir.path, [
      '--shutdown-timeout',
      '600',
      '--exec-timeout',
      '600000',
      '--gas-cap',
      '1000000000',
    ]);
    const base = server.url.replace(/\/v3\/[^/]+$/, '');
    const before = await callsStarted(base);
    const pending = send(server.url, slowCall(1_000_000_000));
    while ((await callsStarted(base)) < before + 1) await new Promise((r) => setTimeout(r, 20));
    const exited = collect(server.child);
    let stdout = '';
    server.child.stdout?.on('data', (d) => {
      stdout += d;
    });
    server.child.kill('SIGTERM');
    while (!stdout.includes('stopping')) await new Promise((r) => setTimeout(r, 20));
    server.child.kill('SIGTERM');
    const { code, signal } = await exited;
    assert.equal(signal, null);
    assert.equal(code, 143);
    const cut = await pending;
    assert.equal(cut.ok, false, 'the request under way was cut, not answered');
  });
});
