import assert from 'node:assert/strict';
import { after, afterEach, before, beforeEach, describe, it } from 'node:test';
import { asCall, serveTraceWorkload, type TraceWorkloadServers } from '../support/anvilTraces.ts';
import { type FaultProxy, startFaultProxy } from '../support/faultProxy.ts';
import { startUpstreamServer, type UpstreamServer } from '../support/upstream.ts';

/**
 * eth_callMany, debug_traceCallMany and eth_callBundle in upstream mode: the trace workload mined on
 * anvil, read through a proxy that counts round trips, answered as the imported chain answers, with
 * the state read ahead in a few batches (src/exec/prefetch.ts) rather than one round trip per
 * account or slot, and a warm request asking the upstream nothing.
 */

const hex = (n: bigint | number) => `0x${n.toString(16)}`;

/** The raw answer body of one request, with id 1 (so two servers' bodies compare as bytes). */
async function raw(url: string, method: string, params: unknown[]): Promise<string> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
  });
  return res.text();
}

// Measured with the read-ahead: 3 to 8 round trips for these blocks; without it (one per account or
// slot the run reaches) 12 to 15 already for the first blocks.
const MAX_COLD_TRIPS = 8;

describe('bundle simulation in upstream mode over anvil', () => {
  let servers: TraceWorkloadServers;
  let proxy: FaultProxy;
  let upstream: UpstreamServer;

  before(async () => {
    servers = await serveTraceWorkload();
    proxy = await startFaultProxy(servers.anvil.url);
    await servers.server.app.warm();
  });
  // Each test reads the chain cold: a server of its own, with nothing cached by another's requests.
  beforeEach(async () => {
    upstream = await startUpstreamServer([proxy.url], { pollMs: 600_000 });
    await upstream.app.warm();
  });
  afterEach(async () => {
    await upstream?.close();
  });
  after(async () => {
    await proxy?.close();
    await servers?.close();
  });

  /** `method` answered as the imported chain answers it, cold in few round trips, warm in none. */
  async function sameInFewTrips(method: string, params: unknown[], what: string): Promise<string> {
    const before = proxy.counters.requests;
    const cold = await raw(upstream.url, method, params);
    const trips = proxy.counters.requests - before;
    assert.equal(cold, await raw(servers.server.url, method, params), what);
    assert.ok(trips <= MAX_COLD_TRIPS, `${what}: ${trips} round trips`);
    const warm = proxy.counters.requests;
    assert.equal(await raw(upstream.url, method, params), cold, what);
    assert.equal(proxy.counters.requests - warm, 0, `${what}: a warm request asks the upstream`);
    return cold;
  }

  const txsOf = (block: TraceWorkloadServers['workload']['blocks'][number]) =>
    Promise.all(
      block.txs.map((tx) =>
        servers.anvil.rpc<Record<string, unknown>>('eth_getTransactionByHash', [tx.hash]),
      ),
    );

  it("eth_callMany: each block's transactions as calls on its parent, in two bundles", async () => {
    for (const block of servers.workload.blocks) {
      const calls = (await txsOf(block)).map(asCall);
      const half = Math.ceil(calls.length / 2);
      const params = [
        [{ transactions: calls.slice(0, half) }, { transactions: calls.slice(half) }],
        { blockNumber: hex(block.number - 1n) },
      ];
      const answer = JSON.parse(await sameInFewTrips('eth_callMany', params, `block ${block.number}`));
      assert.equal(answer.result?.flat().length, calls.length, JSON.stringify(answer));
    }
  });

  it('debug_traceCallMany: the last transaction of each block traced after the ones before it', async () => {
    for (const block of servers.workload.blocks) {
      const txs = await txsOf(block);
      const last = txs.at(-1);
      if (!last || txs.length < 2) continue;
      const params = [
        [{ transactions: [asCall(last)] }],
        { blockNumber: hex(block.number), transactionIndex: txs.length - 1 },
        { tracer: 'callTracer', tracerConfig: { withLog: true } },
      ];
      const answer = JSON.parse(await sameInFewTrips('debug_traceCallMany', params, `block ${block.number}`));
      assert.ok(Array.isArray(answer.result?.[0]), JSON.stringify(answer));
    }
  });

  it("eth_callBundle: each block's signed transactions again on its parent's state", async () => {
    for (const block of servers.workload.blocks) {
      const txs = await Promise.all(
        block.txs.map((tx) => servers.anvil.rpc<string>('eth_getRawTransactionByHash', [tx.hash])),
      );
      const params = [{ txs, blockNumber: hex(block.number), stateBlockNumber: hex(block.number - 1n) }];
      const answer = JSON.parse(await sameInFewTrips('eth_callBundle', params, `block ${block.number}`));
      assert.equal(answer.result?.results?.length, txs.length, JSON.stringify(answer).slice(0, 400));
    }
  });
});
