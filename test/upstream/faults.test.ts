import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type Anvil, startAnvil } from '../support/anvil.ts';
import { runCli, tempDir } from '../support/cli.ts';
import { type FaultProxy, startFaultProxy } from '../support/faultProxy.ts';
import { startUpstreamServer, type UpstreamServer } from '../support/upstream.ts';
import { type BigBlock, buildBigBlock } from '../support/workload.ts';

/**
 * Upstream mode when the upstream hangs, answers late or drops the connection (a proxy in front of
 * anvil makes it do so): how long a client waits, and what it is told. Timings are asserted only as
 * generous bounds, as the budget for upstream reads (--upstream-budget-ms, 15 s by default) is
 * what is under test.
 */

const DEFAULT_BUDGET_MS = 15_000;
/** What a loaded machine may add to a bound (start-up of a worker, a slow event loop). */
const SLACK_MS = 3_000;

const hex = (n: bigint | number) => `0x${n.toString(16)}`;
const literal = (s: string): string => s.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');

interface Answer {
  result?: unknown;
  error?: { code: number; message: string };
}

async function call(url: string, method: string, params: unknown[]): Promise<{ answer: Answer; ms: number }> {
  const started = performance.now();
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
  });
  const answer = (await res.json()) as Answer;
  return { answer, ms: performance.now() - started };
}

describe('upstream mode against an upstream that hangs, answers late or drops', () => {
  let anvil: Anvil;
  let big: BigBlock;
  const opened: Array<{ close(): Promise<void> }> = [];

  before(async () => {
    anvil = await startAnvil();
    // A contract with storage (the LogStore) and blocks to ask for; none of it cached by anyone yet.
    big = await buildBigBlock(anvil, { txs: 20 });
  });
  after(async () => {
    for (const o of opened.reverse()) await o.close();
    await anvil?.stop();
  });

  async function serve(
    proxies: FaultProxy[],
    upstream: Parameters<typeof startUpstreamServer>[1] = {},
  ): Promise<UpstreamServer> {
    const server = await startUpstreamServer(
      proxies.map((p) => p.url),
      { pollMs: 600_000, ...upstream },
    );
    opened.push(server);
    await server.app.warm();
    return server;
  }

  async function proxy(): Promise<FaultProxy> {
    const p = await startFaultProxy(anvil.url);
    opened.push(p);
    return p;
  }

  it('answers -32002 naming the URL within the budget when the upstream hangs, on the defaults', async () => {
    const p = await proxy();
    const server = await serve([p]);
    p.inject({ kind: 'hang' }, Number.POSITIVE_INFINITY);
    const { answer, ms } = await call(server.url, 'eth_getBlockReceipts', [hex(big.number)]);
    assert.equal(answer.error?.code, -32002, JSON.stringify(answer));
    assert.match(
      answer.error?.message ?? '',
      new RegExp(
        `^upstream ${literal(p.url)} unavailable: no answer within \\d+ ms \\(\\d attempts; out of the request's budget for upstream reads, --upstream-budget-ms ${DEFAULT_BUDGET_MS}\\)$`,
      ),
    );
    assert.ok(ms < DEFAULT_BUDGET_MS + SLACK_MS, `answered after ${Math.round(ms)} ms`);
    // The retry was made inside the budget: a second attempt reached the upstream.
    assert.ok(p.counters.requests >= 2, `${p.counters.requests} attempts`);
  });

  it('names every URL that did not answer, and serves again once one does', async () => {
    const [a, b] = [await proxy(), await proxy()];
    const server = await serve([a, b], { upstream: { budgetMs: 3_000, timeoutMs: 1_000 } });
    for (const p of [a, b]) p.inject({ kind: 'hang' }, Number.POSITIVE_INFINITY);
    const { answer, ms } = await call(server.url, 'eth_getBlockByNumber', [hex(big.number - 1n), false]);
    assert.equal(answer.error?.code, -32002, JSON.stringify(answer));
    for (const p of [a, b])
      assert.match(answer.error?.message ?? '', new RegExp(`${literal(p.url)}: no answer within \\d+ ms`));
    assert.match(answer.error?.message ?? '', /--upstream-budget-ms 3000\)$/);
    assert.ok(ms < 3_000 + SLACK_MS, `answered after ${Math.round(ms)} ms`);
    a.clear();
    b.clear();
    const again = await call(server.url, 'eth_getBlockByNumber', [hex(big.number - 1n), false]);
    assert.equal(
      (again.answer.result as { number?: string } | undefined)?.number,
      hex(big.number - 1n),
      JSON.stringify(again.answer),
    );
  });

  it('retries a dropped connection and a late answer within the budget, and answers', async () => {
    const p = await proxy();
    const server = await serve([p], { upstream: { budgetMs: 6_000, timeoutMs: 2_000, backoffMs: 50 } });
    p.resetCounters();
    p.inject({ kind: 'drop' });
    p.inject({ kind: 'delay', ms: 4_000 });
    // A block nobody read yet: one call to the upstream.
    const params = [hex(big.number - 1n), false];
    const { answer, ms } = await call(server.url, 'eth_getBlockByNumber', params);
    const block = answer.result as { hash?: string } | undefined;
    assert.equal(block?.hash, (await anvil.rpc<{ hash: string }>('eth_getBlockByNumber', params)).hash);
    assert.equal(p.counters.requests, 3, 'dropped, too late, answered');
    assert.ok(ms < 6_000 + SLACK_MS, `answered after ${Math.round(ms)} ms`);
  });

  it('does not count the wait for the upstream against the execution deadline', async () => {
    const DELAY_MS = 2_500;
    const p = await proxy();
    // Without the upstream's pre-state, the worker reads each account and slot when it reaches it:
    // each read a round trip that the proxy makes take 2.5 s, together past the 5 s deadline.
    p.inject(
      {
        kind: 'rewrite',
        when: (request) => JSON.stringify(request).includes('debug_traceCall'),
        edit: (answer) =>
          Array.isArray(answer)
            ? answer.map((a: { id: unknown }) => ({ jsonrpc: '2.0', id: a.id, result: {} }))
            : { jsonrpc: '2.0', id: (answer as { id: unknown }).id, result: {} },
      },
      Number.POSITIVE_INFINITY,
    );
    const server = await serve([p], { upstream: { budgetMs: 60_000 } });
    p.delayMs = DELAY_MS;
    const [tx] = big.receipts;
    assert.ok(tx);
    const request = await anvil.rpc<Record<string, string>>('eth_getTransactionByHash', [tx.transactionHash]);
    const callParams = [
      { from: request.from, to: request.to, input: request.input, gas: request.gas },
      hex(big.number - 1n),
    ];
    p.resetCounters();
    const { answer } = await call(server.url, 'eth_call', callParams);
    assert.equal(answer.result, await anvil.rpc('eth_call', callParams), JSON.stringify(answer));
    // The worker's reads, one after the other: more than the deadline's worth of waiting.
    const reads = new Set(p.calls.filter((c) => c.method === 'eth_getProof').map((c) => c.request)).size;
    assert.ok(reads * DELAY_MS > 5_000, `${reads} reads: not past the deadline, so no test`);
  });
});

describe('ethtrace start against an upstream that never answers', () => {
  it('refuses within the budget, with one line and status 2', async () => {
    const p = await startFaultProxy('http://127.0.0.1:9');
    p.inject({ kind: 'hang' }, Number.POSITIVE_INFINITY);
    const dir = tempDir('ethtrace-upstream-hang-');
    try {
      const result = await runCli([
        'start',
        '--port',
        '0',
        '--no-auth',
        '--datadir',
        dir.path,
        '--upstream',
        p.url,
      ]);
      // From its first request to the upstream: loading the program is not the budget's to bound.
      const ms = performance.now() - (p.arrivals[0] ?? Number.NaN);
      assert.equal(result.code, 2, result.stderr);
      assert.equal(result.stdout, '');
      const lines = result.stderr.trimEnd().split('\n');
      assert.equal(lines.length, 1, result.stderr);
      assert.match(
        lines[0] ?? '',
        new RegExp(
          `^ethtrace start: the upstream cannot be read: upstream ${literal(p.url)} unavailable: no answer within \\d+ ms \\(\\d attempts; out of the request's budget for upstream reads, --upstream-budget-ms ${DEFAULT_BUDGET_MS}\\)$`,
        ),
      );
      assert.ok(ms < DEFAULT_BUDGET_MS + SLACK_MS, `refused ${Math.round(ms)} ms after its first request`);
    } finally {
      await p.close();
      dir.cleanup();
    }
  });
});
