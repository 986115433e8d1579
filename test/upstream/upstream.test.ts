import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { asCall, serveTraceWorkload, type TraceWorkloadServers } from '../support/anvilTraces.ts';
import { runCli } from '../support/cli.ts';
import { type FaultProxy, startFaultProxy } from '../support/faultProxy.ts';
import { importConformanceChain, type RunningServer, startServer } from '../support/server.ts';
import { startUpstreamServer, type UpstreamServer } from '../support/upstream.ts';

/**
 * Upstream mode against real nodes. The trace workload is built on anvil (every transaction type,
 * constructors that call and create, reverts, self-destructs, precompiles, 7702) and also imported
 * into an ethtrace datadir; ethtrace in upstream mode then reads the same chain from anvil, through
 * a proxy that counts the round trips. Its answers must be the imported chain's, byte for byte.
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

describe('upstream mode over anvil', () => {
  let servers: TraceWorkloadServers;
  let proxy: FaultProxy;
  let upstream: UpstreamServer;
  let head: bigint;

  before(async () => {
    servers = await serveTraceWorkload();
    proxy = await startFaultProxy(servers.anvil.url);
    // The head is read once at start: the round trips counted below are the requests' own.
    upstream = await startUpstreamServer([proxy.url], { pollMs: 600_000 });
    await upstream.app.warm();
    await servers.server.app.warm();
    head = BigInt(await servers.anvil.rpc<string>('eth_blockNumber'));
  });
  after(async () => {
    await upstream?.close();
    await proxy?.close();
    await servers?.close();
  });

  it('serves the chain it reads: chain id, head, blocks and receipts as the imported chain does', async () => {
    assert.equal(await upstream.rpc('eth_chainId'), await servers.server.rpc('eth_chainId'));
    assert.equal(await upstream.rpc('eth_blockNumber'), hex(head));
    for (let n = 0n; n <= head; n++) {
      for (const [method, params] of [
        ['eth_getBlockByNumber', [hex(n), true]],
        ['eth_getBlockReceipts', [hex(n)]],
        ['eth_getBlockTransactionCountByNumber', [hex(n)]],
      ] as const) {
        assert.equal(
          await raw(upstream.url, method, [...params]),
          await raw(servers.server.url, method, [...params]),
          `${method} of block ${n}`,
        );
      }
    }
  });

  it('answers the replay methods of every block byte for byte as on the imported chain', async () => {
    for (const block of servers.workload.blocks) {
      const n = hex(block.number);
      for (const [method, params] of [
        ['trace_block', [n]],
        ['trace_replayBlockTransactions', [n, ['trace']]],
        ['trace_replayBlockTransactions', [n, ['trace', 'stateDiff']]],
        ['debug_traceBlockByNumber', [n, { tracer: 'callTracer', tracerConfig: { withLog: true } }]],
        ['debug_traceBlockByNumber', [n, { tracer: 'prestateTracer', tracerConfig: { diffMode: true } }]],
      ] as const) {
        assert.equal(
          await raw(upstream.url, method, [...params]),
          await raw(servers.server.url, method, [...params]),
          `${method} ${JSON.stringify(params)}`,
        );
      }
    }
  });

  it('answers trace_callMany of each block’s transactions on its parent byte for byte, cold in few round trips and warm in none', async () => {
    for (const block of servers.workload.blocks) {
      const txs = await Promise.all(
        block.txs.map((tx) =>
          servers.anvil.rpc<Record<string, unknown>>('eth_getTransactionByHash', [tx.hash]),
        ),
      );
      const calls = txs.map((tx) => [asCall(tx), ['trace', 'stateDiff']]);
      const params = [calls, hex(block.number - 1n)];
      const before = proxy.counters.requests;
      const cold = await raw(upstream.url, 'trace_callMany', params);
      const coldTrips = proxy.counters.requests - before;
      assert.equal(cold, await raw(servers.server.url, 'trace_callMany', params), `block ${block.number}`);
      // A round trip per account or slot (anvil --fork-url's way) would be dozens for these blocks.
      assert.ok(coldTrips <= 12, `block ${block.number}: ${coldTrips} round trips for ${calls.length} calls`);
      const warmBefore = proxy.counters.requests;
      assert.equal(await raw(upstream.url, 'trace_callMany', params), cold);
      assert.equal(
        proxy.counters.requests - warmBefore,
        0,
        `block ${block.number}: a warm request asks the upstream`,
      );
    }
  });

  it('reads state at the block asked for, and passes writes and log queries to the upstream', async () => {
    const [last] = servers.workload.blocks.slice(-1);
    assert.ok(last);
    const { contracts } = servers.workload;
    for (const address of Object.values(contracts)) {
      for (const method of ['eth_getBalance', 'eth_getTransactionCount', 'eth_getCode'] as const) {
        assert.equal(
          await raw(upstream.url, method, [address, hex(last.number)]),
          await raw(servers.server.url, method, [address, hex(last.number)]),
          `${method} ${address}`,
        );
      }
    }
    const logs = await upstream.rpc<unknown[]>('eth_getLogs', [{ fromBlock: '0x0', toBlock: hex(head) }]);
    assert.deepEqual(
      logs,
      await servers.anvil.rpc('eth_getLogs', [{ fromBlock: '0x0', toBlock: hex(head) }]),
    );
  });
});

describe('a second ethtrace as the upstream of a first', () => {
  // The conformance chain (Frontier through Osaka, imported with every state root checked): the
  // first ethtrace serves it, the second reads it through the first.
  let chain: { datadir: string; cleanup: () => void };
  let first: RunningServer;
  let upstream: UpstreamServer;
  before(async () => {
    chain = await importConformanceChain();
    first = await startServer(chain.datadir);
    upstream = await startUpstreamServer([first.url]);
    await upstream.app.warm();
  });
  after(async () => {
    await upstream?.close();
    await first?.close();
    chain?.cleanup();
  });

  it('learns the chain from debug_chainConfig and answers every fork’s blocks as the first does', async () => {
    const head = BigInt(await first.rpc<string>('eth_blockNumber'));
    for (let n = 1n; n <= head; n++) {
      for (const [method, params] of [
        ['eth_getBlockReceipts', [hex(n)]],
        ['trace_block', [hex(n)]],
        ['trace_replayBlockTransactions', [hex(n), ['trace', 'stateDiff']]],
      ] as const) {
        assert.equal(
          await raw(upstream.url, method, [...params]),
          await raw(first.url, method, [...params]),
          `${method} ${n}`,
        );
      }
    }
  });
});

describe('an upstream that fails or answers wrongly', () => {
  let servers: TraceWorkloadServers;
  let proxy: FaultProxy;
  let upstream: UpstreamServer;
  before(async () => {
    servers = await serveTraceWorkload();
    proxy = await startFaultProxy(servers.anvil.url);
    upstream = await startUpstreamServer([proxy.url], {
      upstream: { retries: 1, timeoutMs: 2_000, backoffMs: 50 },
    });
    await upstream.app.warm();
  });
  after(async () => {
    await upstream?.close();
    await proxy?.close();
    await servers?.close();
  });

  it('answers -32002 while the upstream is down, and serves again once it is back', async () => {
    const block = servers.workload.blocks[1];
    assert.ok(block);
    await proxy.stop();
    const down = JSON.parse(await raw(upstream.url, 'eth_getBlockReceipts', [block.hash]));
    assert.equal(down.error?.code, -32002, JSON.stringify(down));
    await proxy.restart();
    // The URL's cooldown ends within seconds; the request then succeeds.
    let answer: { result?: unknown; error?: { code: number } } = down;
    for (let i = 0; i < 40 && answer.error; i++) {
      await new Promise((resolve) => setTimeout(resolve, 250));
      answer = JSON.parse(await raw(upstream.url, 'eth_getBlockReceipts', [block.hash]));
    }
    assert.equal(
      JSON.stringify(answer.result),
      JSON.stringify(await servers.server.rpc('eth_getBlockReceipts', [block.hash])),
    );
  });

  it('refuses a tampered receipt with -32002 and does not keep it', async () => {
    const block = servers.workload.blocks[2];
    assert.ok(block);
    proxy.inject(
      {
        kind: 'rewrite',
        when: (request) => JSON.stringify(request).includes('eth_getBlockReceipts'),
        edit: (answer) => {
          const a = answer as { result: Array<Record<string, unknown>> };
          const first = a.result[0];
          if (first) first.status = first.status === '0x1' ? '0x0' : '0x1';
          return a;
        },
      },
      1,
    );
    const tampered = JSON.parse(await raw(upstream.url, 'eth_getBlockReceipts', [block.hash]));
    assert.equal(tampered.error?.code, -32002, JSON.stringify(tampered));
    assert.match(tampered.error.message, /receipts root/);
    // Asked again, the upstream answers truly, and so does this service (nothing wrong was kept).
    assert.equal(
      JSON.stringify(await upstream.rpc('eth_getBlockReceipts', [block.hash])),
      JSON.stringify(await servers.server.rpc('eth_getBlockReceipts', [block.hash])),
    );
  });

  it('refuses a tampered proof with -32002', async () => {
    const [last] = servers.workload.blocks.slice(-1);
    assert.ok(last);
    const address = Object.values(servers.workload.contracts)[0];
    proxy.inject(
      {
        kind: 'rewrite',
        when: (request) => JSON.stringify(request).includes('eth_getProof'),
        edit: (answer) => {
          const answers = Array.isArray(answer) ? answer : [answer];
          for (const a of answers as Array<{ result?: { balance?: string } }>) {
            if (a.result?.balance) a.result.balance = hex(BigInt(a.result.balance) + 1n);
          }
          return answer;
        },
      },
      1,
    );
    const tampered = JSON.parse(await raw(upstream.url, 'eth_getBalance', [address, hex(last.number)]));
    assert.equal(tampered.error?.code, -32002, JSON.stringify(tampered));
    assert.equal(
      await upstream.rpc('eth_getBalance', [address, hex(last.number)]),
      await servers.server.rpc('eth_getBalance', [address, hex(last.number)]),
    );
  });
});

describe('upstream mode refuses a datadir of another chain', () => {
  it('will not cache a chain in a datadir that holds an imported one', async () => {
    const servers = await serveTraceWorkload();
    try {
      const result = await runCli([
        'start',
        '--port',
        '0',
        '--no-auth',
        '--datadir',
        servers.datadir,
        '--upstream',
        servers.anvil.url,
      ]);
      assert.equal(result.code, 2, result.stderr);
      assert.match(
        result.stderr,
        /holds an imported chain, not an upstream's cache: give --upstream another --datadir/,
      );
    } finally {
      await servers.close();
    }
  });

  it('keeps using its cache for the same chain, and refuses it for another', async () => {
    const first = await serveTraceWorkload();
    const other = await startServer(first.datadir);
    const upstream = await startUpstreamServer([first.anvil.url]);
    const datadir = upstream.datadir;
    await upstream.rpc('eth_getBlockReceipts', ['0x1']);
    await upstream.app.close();
    await upstream.source.store.close();
    try {
      const again = await startUpstreamServer([first.anvil.url], { datadir });
      await again.app.close();
      await again.source.store.close();
      const second = await serveTraceWorkload();
      try {
        // Another anvil chain (other blocks, so another genesis hash? anvil's genesis is the same:
        // its chain id and genesis match, so only the blocks differ) — a chain id that differs is refused.
        await second.anvil.rpc('anvil_setChainId', [1337]);
        await assert.rejects(startUpstreamServer([second.anvil.url], { datadir }), /caches chain 31337/);
      } finally {
        await second.close();
      }
    } finally {
      await other.close();
      await first.close();
    }
  });
});
