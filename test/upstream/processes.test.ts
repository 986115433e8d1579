import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type Anvil, startAnvil } from '../support/anvil.ts';
import { tempDir } from '../support/cli.ts';
import { type CliServer, serveCli, stopDev } from '../support/devServer.ts';
import { type FaultProxy, startFaultProxy } from '../support/faultProxy.ts';
import { type BigBlock, buildBigBlock } from '../support/workload.ts';

/**
 * `ethtrace start --upstream URL --processes 2`: two API processes, each with its workers, serve
 * one upstream's chain through one datadir. The primary owns the one upstream client: requests
 * arriving at both processes at once read each call from the upstream once.
 */

const hex = (n: bigint | number) => `0x${n.toString(16)}`;

/** One request on a connection of its own, so that the connections spread over the API processes. */
async function raw(url: string, method: string, params: unknown[]): Promise<string> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', connection: 'close' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
  });
  return res.text();
}

describe('ethtrace start --upstream --processes 2', () => {
  let anvil: Anvil;
  let big: BigBlock;
  let proxy: FaultProxy;
  let server: CliServer | undefined;
  const dir = tempDir('ethtrace-upstream-processes-');

  before(async () => {
    anvil = await startAnvil();
    big = await buildBigBlock(anvil, { txs: 40 });
    // A provider's latency, so that what both processes ask overlaps on the upstream.
    proxy = await startFaultProxy(anvil.url, { delayMs: 200 });
    server = await serveCli([
      '--no-auth',
      '--datadir',
      dir.path,
      '--upstream',
      proxy.url,
      '--upstream-poll-ms',
      '600000',
      '--processes',
      '2',
      // A loaded machine's replays queued behind each other are not what this test is about.
      '--exec-timeout',
      '120000',
    ]);
  });
  after(async () => {
    if (server) await stopDev(server.child);
    await proxy?.close();
    await anvil?.stop();
    dir.cleanup();
  });

  it('serves, and reads each call from the upstream once for both processes', async () => {
    assert.match(server?.output ?? '', /ethtrace serving upstream chain \d+ .* in 2 processes/);
    proxy.resetCounters();
    const n = hex(big.number);
    const asked: Array<[string, unknown[]]> = [];
    for (let i = 0; i < 4; i++)
      asked.push(
        ['eth_getBlockReceipts', [n]],
        ['trace_replayBlockTransactions', [n, ['trace']]],
        ['eth_getBlockByNumber', [hex(big.number - 1n), true]],
      );
    const answers = await Promise.all(
      asked.map(([method, params]) => raw(server?.url ?? '', method, params)),
    );
    for (const [i, [method]] of asked.entries()) {
      assert.doesNotMatch(answers[i] ?? '', /"error"/, `${method}: ${answers[i]?.slice(0, 300)}`);
      // Each method's answers are the same whichever process gave them.
      assert.equal(answers[i], answers[i % 3], method);
    }
    const receipts = JSON.parse(answers[0] ?? '{}').result as Array<{ transactionHash: string }>;
    assert.deepEqual(
      receipts.map((r) => r.transactionHash),
      big.receipts.map((r) => r.transactionHash),
    );
    const times = new Map<string, number>();
    for (const { method, params } of proxy.calls) {
      const key = `${method} ${JSON.stringify(params)}`;
      times.set(key, (times.get(key) ?? 0) + 1);
    }
    const twice = [...times].filter(([, k]) => k > 1).map(([key, k]) => `${key.slice(0, 160)} ×${k}`);
    assert.deepEqual(twice, [], 'calls asked of the upstream more than once');
    assert.ok(proxy.counters.requests > 0, 'the requests read the upstream');
  });
});
