import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { LimitOverrides } from '../../src/config/limits.ts';
import { type Anvil, startAnvil } from '../support/anvil.ts';
import { tempDir } from '../support/cli.ts';
import { importFromAnvil } from '../support/exportChain.ts';
import { type FaultProxy, type ReceivedCall, startFaultProxy } from '../support/faultProxy.ts';
import { type RunningServer, startServer } from '../support/server.ts';
import { startUpstreamServer, type UpstreamServer } from '../support/upstream.ts';
import { type BigBlock, buildBigBlock } from '../support/workload.ts';

/**
 * Upstream mode on a busy block: 200 transactions from ten senders, built on anvil
 * (test/support/workload.ts) and imported into a datadir as well. ethtrace in upstream mode reads it
 * from anvil through a proxy that records every call it is asked; its answers must be the imported
 * chain's, byte for byte, on a fresh datadir (cold) and with the default settings.
 */

const hex = (n: bigint | number) => `0x${n.toString(16)}`;
// The system contracts a Prague block's processing reads before its transactions (EIP-4788, EIP-2935).
const BEACON_ROOTS = '0x000f3df6d732807ef1319fb7b8bb8522d0beac02';
const HISTORY_STORAGE = '0x0000f90827f1c53a10cb7a02335b175320002935';

/** The raw answer body of one request, with id 1 (so two servers' bodies compare as bytes). */
async function raw(url: string, method: string, params: unknown[]): Promise<string> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
  });
  return res.text();
}

/** The calls asked for more than once, as `method params ×n`. */
function askedTwice(calls: readonly ReceivedCall[]): string[] {
  const times = new Map<string, number>();
  for (const { method, params } of calls) {
    const key = `${method} ${JSON.stringify(params)}`;
    times.set(key, (times.get(key) ?? 0) + 1);
  }
  return [...times].filter(([, n]) => n > 1).map(([key, n]) => `${key.slice(0, 160)} ×${n}`);
}

describe('upstream mode: a 200-transaction block, cold', () => {
  let anvil: Anvil;
  let big: BigBlock;
  let imported: RunningServer;
  const work = tempDir('ethtrace-upstream-big-');
  const opened: Array<{ close(): Promise<void> }> = [];

  before(async () => {
    anvil = await startAnvil();
    big = await buildBigBlock(anvil, { txs: 200 });
    const { datadir } = await importFromAnvil(anvil, work.path);
    // The reference: its answers are compared, not its speed (on a loaded machine a replay of 200
    // transactions may take longer than the default deadline).
    imported = await startServer(datadir, { keys: null, limits: { pool: { deadlineMs: 120_000 } } });
  });
  after(async () => {
    for (const o of opened.reverse()) await o.close();
    await imported?.close();
    await anvil?.stop();
    work.cleanup();
  });

  /**
   * ethtrace in upstream mode on a fresh datadir, through a proxy of its own, on the default
   * settings (but `limits`).
   */
  async function fresh(
    opts: { delayMs?: number; limits?: LimitOverrides } = {},
  ): Promise<{ proxy: FaultProxy; upstream: UpstreamServer }> {
    const proxy = await startFaultProxy(anvil.url, { delayMs: opts.delayMs ?? 0 });
    opened.push(proxy);
    // The head is read once at start (no polling): the calls recorded after are the requests' own.
    const upstream = await startUpstreamServer([proxy.url], {
      pollMs: 600_000,
      ...(opts.limits ? { limits: opts.limits } : {}),
    });
    opened.push(upstream);
    await upstream.app.warm();
    proxy.resetCounters();
    return { proxy, upstream };
  }

  it('answers trace_replayBlockTransactions as the imported chain does, each read made once, the system contracts in the read-ahead', async () => {
    const { proxy, upstream } = await fresh();
    const startTrips = upstream.roundTrips();
    const params = [hex(big.number), ['trace']];
    const cold = await raw(upstream.url, 'trace_replayBlockTransactions', params);
    assert.equal(cold, await raw(imported.url, 'trace_replayBlockTransactions', params));

    assert.deepEqual(askedTwice(proxy.calls), [], 'calls asked for twice');
    const methods = new Set(proxy.calls.map((c) => c.method));
    assert.ok(!methods.has('debug_traceBlockByHash'), 'the slow block trace was not asked for');
    // Every account and slot read in one request of proofs: the EIP-4788 and EIP-2935 contracts,
    // which no transaction's trace names, with the others rather than one round trip each after.
    const proofRequests = new Set(
      proxy.calls.filter((c) => c.method === 'eth_getProof').map((c) => c.request),
    );
    assert.equal(proofRequests.size, 1, `${proofRequests.size} requests carried eth_getProof`);
    const proved = proxy.calls
      .filter((c) => c.method === 'eth_getProof')
      .map((c) => String((c.params as unknown[])[0]).toLowerCase());
    assert.ok(proved.includes(BEACON_ROOTS) && proved.includes(HISTORY_STORAGE), proved.join(' '));
    // At most: the block (it is the head here, read at start), its receipts (to split the replay by
    // sender), the pre-states (200 calls: two requests of 100), the parent's header, the proofs.
    const trips = proxy.counters.requests;
    assert.ok(trips <= 6, `${trips} round trips: ${[...methods].join(', ')}`);
    assert.equal(upstream.roundTrips() - startTrips, trips, 'the main thread made every round trip');
    // Warm: no round trip at all.
    assert.equal(await raw(upstream.url, 'trace_replayBlockTransactions', params), cold);
    assert.equal(proxy.counters.requests, trips);
  });

  it('makes one upstream read per call when many requests for the block arrive at once', async () => {
    // A provider's latency, so the requests below overlap on the upstream; six block replays queued
    // on the default workers take longer than the default deadline (which counts time in the queue).
    const { proxy, upstream } = await fresh({ delayMs: 100, limits: { pool: { deadlineMs: 120_000 } } });
    const n = hex(big.number);
    const asked: Array<[string, unknown[]]> = [
      ['trace_replayBlockTransactions', [n, ['trace']]],
      ['trace_replayBlockTransactions', [n, ['trace']]],
      ['trace_replayBlockTransactions', [n, ['trace', 'stateDiff']]],
      ['trace_block', [n]],
      ['debug_traceBlockByNumber', [n, { tracer: 'callTracer' }]],
      ['debug_traceBlockByNumber', [n, { tracer: 'prestateTracer' }]],
      ['eth_getBlockReceipts', [n]],
      ['eth_getBlockReceipts', [n]],
      ['eth_getBlockByNumber', [n, true]],
    ];
    const answers = await Promise.all(asked.map(([method, params]) => raw(upstream.url, method, params)));
    for (const [i, [method, params]] of asked.entries())
      assert.equal(
        answers[i],
        await raw(imported.url, method, params),
        `${method} ${JSON.stringify(params)}`,
      );
    assert.deepEqual(askedTwice(proxy.calls), [], 'calls asked for twice');
    assert.ok(
      !proxy.calls.some((c) => c.method === 'debug_traceBlockByHash'),
      'the slow block trace was not asked for',
    );
  });
});
