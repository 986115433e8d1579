import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { LimitOverrides } from '../../src/config/limits.ts';
import { asCall, serveTraceWorkload, type TraceWorkloadServers } from '../support/anvilTraces.ts';
import { type RunningServer, startServer } from '../support/server.ts';

// Speculative parallel execution against every category of the differential workload (creations
// and collisions, nested calls, self-destructs, transient storage, EIP-7702 delegations, …): a
// server that speculates on every request of two calls or more must answer exactly as the suite's
// own server, which then runs them serially (its requests are below the default thresholds).

// The whole workload as one traced request (vmTrace of every transaction, tens of MB) is far past
// the default answer bound and deadline; an operator serving such requests raises both
// (--max-response-mb, --exec-timeout), and so do both servers here.
const HEAVY_REQUESTS: LimitOverrides = {
  requests: { maxResponseBytes: 512 * 1024 * 1024 },
  pool: { deadlineMs: 60_000 },
};

describe('parallel speculation over the whole trace workload', () => {
  let servers: TraceWorkloadServers;
  let parallel: RunningServer;
  before(async () => {
    servers = await serveTraceWorkload(HEAVY_REQUESTS);
    parallel = await startServer(servers.datadir, {
      limits: {
        ...HEAVY_REQUESTS,
        calls: { parallelMinCalls: 2 },
        replay: { parallelMinTxs: 2 },
        pool: { deadlineMs: 60_000, workers: 4 },
      },
    });
    await parallel.app.warm();
  });
  after(async () => {
    await parallel?.close();
    await servers?.close();
  });

  async function transactions(number: bigint): Promise<Array<Record<string, unknown>>> {
    const block = await servers.anvil.rpc<{ transactions: Array<Record<string, unknown>> }>(
      'eth_getBlockByNumber',
      [`0x${number.toString(16)}`, true],
    );
    return block.transactions;
  }

  it('trace_callMany of each block on its parent, and of the whole workload at once', async () => {
    const stats = parallel.app.services.trace.parallelStats;
    const everything: unknown[] = [];
    const first = servers.workload.blocks[0]?.number ?? 1n;
    for (const block of servers.workload.blocks) {
      const calls = (await transactions(block.number)).map((tx) => [
        asCall(tx),
        ['trace', 'stateDiff', 'vmTrace'],
      ]);
      everything.push(...calls);
      const params = [calls, `0x${(block.number - 1n).toString(16)}`];
      assert.deepEqual(
        await parallel.rpc('trace_callMany', params),
        await servers.server.rpc('trace_callMany', params),
        `block ${block.number}`,
      );
    }
    const params = [everything, `0x${(first - 1n).toString(16)}`];
    assert.deepEqual(
      await parallel.rpc('trace_callMany', params),
      await servers.server.rpc('trace_callMany', params),
    );
    assert.ok(stats.speculated > 0, 'some requests were speculated');
    assert.ok(stats.fellBack < stats.speculated, 'some speculations were kept');
  });

  it('trace_replayBlockTransactions of each block', async () => {
    const stats = parallel.app.services.replay.parallelStats;
    for (const block of servers.workload.blocks) {
      const params = [`0x${block.number.toString(16)}`, ['trace', 'vmTrace']];
      assert.deepEqual(
        await parallel.rpc('trace_replayBlockTransactions', params),
        await servers.server.rpc('trace_replayBlockTransactions', params),
        `block ${block.number}`,
      );
    }
    assert.ok(stats.speculated > 0, 'some blocks were replayed in parts');
  });
});
