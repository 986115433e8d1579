import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Hex, Log } from 'viem';
import { type Anvil, mineBlock, startAnvil } from '../support/anvil.ts';
import { asCall, serveTraceWorkload, type TraceWorkloadServers } from '../support/anvilTraces.ts';
import { runCli } from '../support/cli.ts';
import { LOG_STORE_INITCODE, signLogStoreCall } from '../support/contracts.ts';
import { devAccount } from '../support/devAccounts.ts';
import { type FaultProxy, startFaultProxy } from '../support/faultProxy.ts';
import { importConformanceChain, type RunningServer, startServer } from '../support/server.ts';
import { startUpstreamServer, type UpstreamServer } from '../support/upstream.ts';
import { eventually, rawSocket } from '../support/wsClient.ts';

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

  it('answers eth_simulateV1 of each block’s transactions on its parent as the imported chain does, in few round trips', async () => {
    for (const block of servers.workload.blocks) {
      const txs = await Promise.all(
        block.txs.map((tx) =>
          servers.anvil.rpc<Record<string, unknown>>('eth_getTransactionByHash', [tx.hash]),
        ),
      );
      const params = [
        { blockStateCalls: [{ calls: txs.map(asCall) }], traceTransfers: true },
        hex(block.number - 1n),
      ];
      const before = proxy.counters.requests;
      const cold = JSON.parse(await raw(upstream.url, 'eth_simulateV1', params));
      const coldTrips = proxy.counters.requests - before;
      const local = JSON.parse(await raw(servers.server.url, 'eth_simulateV1', params));
      assert.ok(Array.isArray(local.result), `block ${block.number}: ${JSON.stringify(local.error)}`);
      // Upstream mode has no state trie: its stateRoot is zero and the hashes built on it differ.
      const withoutRoots = (blocks: Array<Record<string, unknown>>) =>
        blocks.map(({ stateRoot: _r, hash: _h, calls, ...rest }) => ({
          ...rest,
          calls: (calls as Array<{ logs: Array<Record<string, unknown>> }>).map((c) => ({
            ...c,
            logs: c.logs.map(({ blockHash: _b, ...log }) => log),
          })),
        }));
      assert.deepEqual(withoutRoots(cold.result), withoutRoots(local.result), `block ${block.number}`);
      assert.equal(cold.result[0].stateRoot, `0x${'0'.repeat(64)}`);
      assert.ok(coldTrips <= 12, `block ${block.number}: ${coldTrips} round trips for ${txs.length} calls`);
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

describe('a reorg on the upstream', () => {
  // anvil's blocks are never final to this service here (finality 64 deep), so an evm_revert and new
  // blocks on anvil are a reorg of unfinal blocks, as a proof-of-stake chain has one at its head.
  let anvil: Anvil;
  let upstream: UpstreamServer;
  let logStore: Hex;
  const sender = devAccount(0);
  const signed = (nonce: number, value: bigint) =>
    signLogStoreCall(sender, anvil.genesis.config.chainId, logStore, nonce, value);

  before(async () => {
    anvil = await startAnvil();
    const deploy = await sender.signTransaction({
      chainId: anvil.genesis.config.chainId,
      type: 'eip1559',
      nonce: 0,
      data: LOG_STORE_INITCODE,
      gas: 300_000n,
      maxFeePerGas: 100_000_000_000n,
      maxPriorityFeePerGas: 1n,
    });
    const mined = await mineBlock(anvil, [deploy]);
    logStore = mined.receipts[0]?.contractAddress as Hex;
    upstream = await startUpstreamServer([anvil.url], { pollMs: 100 });
  });
  after(async () => {
    await upstream?.close();
    await anvil?.stop();
  });

  it('sends the removed logs, then the new branch’s, and serves the new branch’s blocks and receipts', async () => {
    const socket = await rawSocket(upstream.wsUrl);
    try {
      const logs = (await socket.call('eth_subscribe', ['logs', { address: logStore }])).result as string;
      const heads = (await socket.call('eth_subscribe', ['newHeads'])).result as string;
      const snapshot = await anvil.rpc<Hex>('evm_snapshot');
      const old1 = await mineBlock(anvil, [await signed(1, 11n)]);
      const old2 = await mineBlock(anvil, [await signed(2, 12n)]);
      const logsOf = () =>
        socket.notifications.filter((n) => n.subscription === logs).map((n) => n.result as Log);
      await eventually(() => logsOf().length === 2, 'the first branch’s logs');
      // Read (and cache) what the old branch holds.
      const oldReceipts = await upstream.rpc<Array<{ transactionHash: Hex }>>('eth_getBlockReceipts', [
        hex(old2.number),
      ]);
      assert.equal(oldReceipts[0]?.transactionHash, old2.receipts[0]?.transactionHash);

      await anvil.rpc('evm_revert', [snapshot]);
      const new1 = await mineBlock(anvil, [await signed(1, 21n)]);
      const new2 = await mineBlock(anvil, []);
      const new3 = await mineBlock(anvil, [await signed(2, 23n)]);
      assert.equal(new1.number, old1.number);
      assert.notEqual(new1.hash, old1.hash);
      await eventually(() => logsOf().length === 6, 'the removed logs and the new branch’s', 15_000);

      const seen = logsOf().map((l) => ({ block: l.blockHash, removed: l.removed, data: l.data }));
      const word = (v: bigint) => `0x${v.toString(16).padStart(64, '0')}`;
      assert.deepEqual(seen, [
        { block: old1.hash, removed: false, data: word(11n) },
        { block: old2.hash, removed: false, data: word(12n) },
        // Newest first, as geth sends them, each with removed: true.
        { block: old2.hash, removed: true, data: word(12n) },
        { block: old1.hash, removed: true, data: word(11n) },
        { block: new1.hash, removed: false, data: word(21n) },
        { block: new3.hash, removed: false, data: word(23n) },
      ]);
      const headHashes = socket.notifications
        .filter((n) => n.subscription === heads)
        .map((n) => (n.result as { hash: Hex }).hash);
      assert.deepEqual(headHashes.slice(-3), [new1.hash, new2.hash, new3.hash]);

      // Served from the new branch: blocks by number, receipts, the removed transaction.
      const block2 = await upstream.rpc<{ hash: Hex }>('eth_getBlockByNumber', [hex(old2.number), false]);
      assert.equal(block2.hash, new2.hash);
      assert.deepEqual(await upstream.rpc('eth_getBlockReceipts', [hex(old2.number)]), []);
      // anvil's receipts carry extra keys (blobGasPrice, a numeric blockTimestamp): compare the substance.
      const substance = (receipts: Array<Record<string, unknown>>) =>
        receipts.map(({ transactionHash, blockHash, status, logs }) => ({
          transactionHash,
          blockHash,
          status,
          logs,
        }));
      assert.deepEqual(
        substance(await upstream.rpc('eth_getBlockReceipts', [hex(new3.number)])),
        substance(new3.receipts as unknown as Array<Record<string, unknown>>),
      );
      const replaced = old2.receipts[0]?.transactionHash;
      assert.equal(
        await upstream.rpc('eth_getTransactionReceipt', [replaced]),
        await anvil.rpc('eth_getTransactionReceipt', [replaced]),
      );
      assert.equal(await upstream.rpc('eth_getStorageAt', [logStore, hex(7), 'latest']), word(23n));
    } finally {
      socket.close();
    }
  });
});

describe('the upstream head over its newHeads subscription', () => {
  it('sees a new block at once (no polling), and again after the subscription’s socket came back', async () => {
    const anvil = await startAnvil();
    const proxy = await startFaultProxy(anvil.url);
    // Polling every ten minutes: only the subscription can make the new blocks seen within the test.
    const upstream = await startUpstreamServer([proxy.wsUrl], { pollMs: 600_000 });
    const socket = await rawSocket(upstream.wsUrl);
    try {
      const heads = (await socket.call('eth_subscribe', ['newHeads'])).result as string;
      const seen = () =>
        socket.notifications
          .filter((n) => n.subscription === heads)
          .map((n) => (n.result as { hash: Hex }).hash);
      // Mines until a block is announced: a block mined while the subscription is down is not rung for.
      const mineUntilSeen = async (what: string) => {
        for (let tries = 0; tries < 20; tries++) {
          const block = await mineBlock(anvil, []);
          try {
            await eventually(() => seen().includes(block.hash), what, 1_500);
            return block;
          } catch {}
        }
        throw new Error(`${what}: no block announced`);
      };
      await mineUntilSeen('the first block over the subscription');
      // The upstream goes away and comes back: the subscription is made again (after its backoff).
      await proxy.stop();
      await proxy.restart();
      const second = await mineUntilSeen('a block after the upstream came back');
      assert.equal(await upstream.rpc('eth_blockNumber'), hex(second.number));
    } finally {
      socket.close();
      await upstream.close();
      await proxy.close();
      await anvil.stop();
    }
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
