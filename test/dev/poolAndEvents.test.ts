import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import {
  createPublicClient,
  createTestClient,
  createWalletClient,
  type Hex,
  http,
  type Log,
  parseEther,
  publicActions,
  webSocket,
} from 'viem';
import { LOG_STORE_INITCODE, logStoreCalldata } from '../support/contracts.ts';
import { devAccount } from '../support/devAccounts.ts';
import { devChainForSuite } from '../support/devServer.ts';
import { rpc, rpcFailure } from '../support/rpcClient.ts';
import { eventually, rawSocket } from '../support/wsClient.ts';

const FIRST = devAccount(0);
const SECOND = devAccount(1);
const THIRD = devAccount(2);
const PROBE = '0x00000000000000000000000000000000000b0b0e';

/** Code that returns BALANCE(address) as one word. */
function balanceProbe(address: string): Hex {
  return `0x73${address.slice(2).toLowerCase()}3160005260206000f3`;
}

describe('dev chain: the pending pool, subscriptions and filters (automine)', () => {
  const dev = devChainForSuite('ethtrace-dev-events-');
  let logStore: Hex;
  before(async () => {
    const wallet = createWalletClient({ account: FIRST, transport: http(dev().url) }).extend(publicActions);
    const hash = await wallet.sendTransaction({ data: LOG_STORE_INITCODE, chain: null });
    logStore = (await wallet.waitForTransactionReceipt({ hash })).contractAddress as Hex;
  });

  it('holds a transaction with a future nonce until the gap is filled, then mines both', async () => {
    const client = createPublicClient({ transport: http(dev().url) });
    const nonce = await client.getTransactionCount({ address: SECOND.address, blockTag: 'latest' });
    const sign = (n: number, fee = 10_000_000_000n) =>
      SECOND.signTransaction({
        chainId: 31337,
        type: 'eip1559',
        nonce: n,
        to: THIRD.address,
        value: 1n,
        gas: 21000n,
        maxFeePerGas: fee,
        maxPriorityFeePerGas: 1_000_000_000n,
      });
    const head = await client.getBlockNumber({ cacheTime: 0 });
    const later = await rpc<Hex>(dev().url, 'eth_sendRawTransaction', [await sign(nonce + 1)]);
    assert.deepEqual(await rpc(dev().url, 'txpool_status'), { pending: '0x0', queued: '0x1' });
    const content = await rpc<{ queued: Record<string, Record<string, { hash: string }>> }>(
      dev().url,
      'txpool_content',
    );
    assert.equal(content.queued[SECOND.address.toLowerCase()]?.[String(nonce + 1)]?.hash, later);
    const pooled = await rpc<{ blockHash: null; hash: string }>(dev().url, 'eth_getTransactionByHash', [
      later,
    ]);
    assert.equal(pooled.hash, later);
    assert.equal(pooled.blockHash, null);
    // Nothing fills the gap yet, so the pending count is still the mined one.
    assert.equal(await client.getTransactionCount({ address: SECOND.address, blockTag: 'pending' }), nonce);
    // Same nonce at the same price: not a replacement.
    const underpriced = await rpcFailure(dev().url, 'eth_sendRawTransaction', [await sign(nonce + 1)]);
    assert.equal(underpriced.message, 'replacement transaction underpriced');

    const first = await rpc<Hex>(dev().url, 'eth_sendRawTransaction', [await sign(nonce)]);
    const [a, b] = await Promise.all([
      client.waitForTransactionReceipt({ hash: first }),
      client.waitForTransactionReceipt({ hash: later }),
    ]);
    assert.equal(a.blockNumber, head + 1n);
    assert.equal(b.blockNumber, head + 2n, 'each transaction in a block of its own');
    assert.deepEqual(await rpc(dev().url, 'txpool_status'), { pending: '0x0', queued: '0x0' });
    assert.equal(
      await client.getTransactionCount({ address: SECOND.address, blockTag: 'pending' }),
      nonce + 2,
    );
  });

  it('sends newHeads, logs and newPendingTransactions over WebSocket to viem', async () => {
    const ws = createPublicClient({ transport: webSocket(dev().wsUrl) });
    const heads: bigint[] = [];
    const logs: Log[] = [];
    const pending: Hex[] = [];
    const unwatch = [
      ws.watchBlocks({ onBlock: (b) => heads.push(b.number) }),
      ws.watchEvent({ address: logStore, onLogs: (l) => logs.push(...l) }),
      ws.watchPendingTransactions({ onTransactions: (h) => pending.push(...h) }),
    ];
    try {
      // Give the subscriptions time to be made before anything is sent.
      await new Promise((r) => setTimeout(r, 300));
      const wallet = createWalletClient({
        account: FIRST,
        transport: http(dev().url),
      }).extend(publicActions);
      const hash = await wallet.sendTransaction({
        to: logStore,
        data: logStoreCalldata({ key: 7n, value: 9n, logs: 3 }),
        chain: null,
      });
      const receipt = await wallet.waitForTransactionReceipt({ hash });
      await eventually(() => logs.length === 3 && heads.includes(receipt.blockNumber), 'notifications');
      assert.ok(pending.includes(hash));
      assert.deepEqual(
        logs.map((l) => [l.transactionHash, l.blockNumber, l.logIndex]),
        receipt.logs.map((l) => [l.transactionHash, l.blockNumber, l.logIndex]),
      );
    } finally {
      for (const stop of unwatch) stop();
      await ws.transport.getRpcClient().then((c) => c.close());
    }
  });

  it('answers eth_subscribe as geth does: ids, notification shape, filters, unsubscribe', async () => {
    const socket = await rawSocket(dev().wsUrl);
    try {
      const other = `0x${'ab'.repeat(20)}`;
      const heads = (await socket.call('eth_subscribe', ['newHeads'])).result as string;
      const mine = (await socket.call('eth_subscribe', ['logs', { address: logStore }])).result as string;
      const none = (await socket.call('eth_subscribe', ['logs', { address: other }])).result as string;
      const full = (await socket.call('eth_subscribe', ['newPendingTransactions', true])).result as string;
      assert.match(heads, /^0x[0-9a-f]{32}$/);
      const unknown = await socket.call('eth_subscribe', ['syncingg']);
      assert.deepEqual(unknown.error, {
        code: -32601,
        message: 'no "syncingg" subscription in eth namespace',
      });
      const sent = await rpc<string>(dev().url, 'eth_sendTransaction', [
        { from: FIRST.address, to: logStore, data: logStoreCalldata({ key: 8n, value: 1n, logs: 1 }) },
      ]);
      const block = await rpc<{ hash: string; number: string }>(dev().url, 'eth_getBlockByNumber', [
        'latest',
        false,
      ]);
      await eventually(() => socket.notifications.some((n) => n.subscription === mine), 'the log');
      const head = socket.notifications.find((n) => n.subscription === heads)?.result as Record<
        string,
        string
      >;
      assert.equal(head.hash, block.hash);
      assert.equal(head.number, block.number);
      assert.equal('transactions' in head, false, 'a header, not a block');
      assert.equal(socket.notifications.filter((n) => n.subscription === none).length, 0);
      const pendingTx = socket.notifications.find((n) => n.subscription === full)?.result as Record<
        string,
        unknown
      >;
      assert.deepEqual(
        [pendingTx.hash, pendingTx.blockHash, pendingTx.to],
        [sent, null, logStore.toLowerCase()],
      );
      assert.equal((await socket.call('eth_unsubscribe', [heads])).result, true);
      assert.equal((await socket.call('eth_unsubscribe', [heads])).result, false);
      const seen = socket.notifications.length;
      await rpc(dev().url, 'evm_mine');
      await new Promise((r) => setTimeout(r, 300));
      assert.equal(
        socket.notifications.slice(seen).filter((n) => n.subscription === heads).length,
        0,
        'nothing after eth_unsubscribe',
      );
    } finally {
      socket.close();
    }
    assert.deepEqual(await rpcFailure(dev().url, 'eth_subscribe', ['newHeads']), {
      code: -32601,
      message: 'notifications not supported',
    });
  });

  it('serves the polling filters over HTTP, with viem', async () => {
    const client = createPublicClient({ transport: http(dev().url) });
    const blocks = await client.createBlockFilter();
    const events = await client.createEventFilter({ address: logStore, fromBlock: 0n });
    const pendingFilter = await client.createPendingTransactionFilter();
    const hash = await rpc<Hex>(dev().url, 'eth_sendTransaction', [
      { from: FIRST.address, to: logStore, data: logStoreCalldata({ key: 9n, value: 2n, logs: 2 }) },
    ]);
    await rpc(dev().url, 'evm_mine');
    const receipt = await client.waitForTransactionReceipt({ hash });
    const newBlocks = await client.getFilterChanges({ filter: blocks });
    assert.equal(newBlocks.length, 2);
    assert.equal(newBlocks[0], receipt.blockHash);
    assert.deepEqual(await client.getFilterChanges({ filter: blocks }), [], 'changes are given once');
    const changed = await client.getFilterChanges({ filter: events });
    assert.deepEqual(
      changed.map((l) => l.logIndex),
      receipt.logs.map((l) => l.logIndex),
    );
    assert.deepEqual(await client.getFilterChanges({ filter: pendingFilter }), [hash]);
    const all = await client.getFilterLogs({ filter: events });
    assert.ok(all.length >= receipt.logs.length);
    assert.ok(await client.uninstallFilter({ filter: blocks }));
    assert.deepEqual(await rpcFailure(dev().url, 'eth_getFilterChanges', [blocks.id]), {
      code: -32000,
      message: 'filter not found',
    });
    assert.equal(await rpc(dev().url, 'eth_uninstallFilter', [blocks.id]), false);
  });
});

describe('dev chain: evm_snapshot and evm_revert', () => {
  const dev = devChainForSuite('ethtrace-dev-snapshot-');

  it('removes the blocks mined since the snapshot, with their receipts and state, for viem’s test client', async () => {
    const client = createPublicClient({ transport: http(dev().url) });
    const test = createTestClient({ mode: 'anvil', transport: http(dev().url) });
    const wallet = createWalletClient({ account: FIRST, transport: http(dev().url) }).extend(publicActions);
    const warmup = await wallet.sendTransaction({ to: THIRD.address, value: 5n, chain: null });
    await wallet.waitForTransactionReceipt({ hash: warmup });
    const head = await client.getBlock();
    const balance = await client.getBalance({ address: THIRD.address });
    const blockFilter = await client.createBlockFilter();

    const id = await test.snapshot();
    assert.match(id, /^0x[0-9a-f]+$/);
    const gone = await wallet.sendTransaction({ to: THIRD.address, value: parseEther('3'), chain: null });
    await wallet.waitForTransactionReceipt({ hash: gone });
    await test.mine({ blocks: 2, interval: 60 });
    assert.equal(await client.getBlockNumber({ cacheTime: 0 }), head.number + 3n);
    // eth_call keeps what it reads per block (src/exec/evmEngine.ts BlockReads) in every worker:
    // each reads the balance at block head + 1 here, and again once that block is replaced below.
    const balanceAt = async (number: bigint) =>
      BigInt(
        await rpc<Hex>(dev().url, 'eth_call', [
          { to: PROBE, data: '0x' },
          `0x${number.toString(16)}`,
          { [PROBE]: { code: balanceProbe(THIRD.address) } },
        ]),
      );
    for (let i = 0; i < 6; i++) assert.equal(await balanceAt(head.number + 1n), balance + parseEther('3'));
    const [b2, b3] = await Promise.all([
      client.getBlock({ blockNumber: head.number + 2n }),
      client.getBlock({ blockNumber: head.number + 3n }),
    ]);
    assert.equal(b3.timestamp - b2.timestamp, 60n, 'anvil_mine spaces its blocks by the interval');

    await test.revert({ id });
    assert.equal(await client.getBlockNumber({ cacheTime: 0 }), head.number);
    assert.equal((await client.getBlock()).hash, head.hash);
    assert.equal(await client.getBalance({ address: THIRD.address }), balance);
    assert.equal(await rpc(dev().url, 'eth_getTransactionReceipt', [gone]), null);
    assert.equal(await rpc(dev().url, 'eth_getTransactionByHash', [gone]), null);
    assert.equal(
      await rpc(dev().url, 'eth_getBlockByNumber', [`0x${(head.number + 1n).toString(16)}`, false]),
      null,
    );
    assert.equal(await rpc(dev().url, 'evm_revert', [id]), false, 'a snapshot is used up by its revert');
    assert.equal(await rpc(dev().url, 'evm_revert', ['0x99']), false);

    // The chain goes on from the snapshot: the nonce is reused, and filters see the new blocks.
    await client.getFilterChanges({ filter: blockFilter });
    const again = await wallet.sendTransaction({ to: THIRD.address, value: 7n, chain: null });
    const receipt = await wallet.waitForTransactionReceipt({ hash: again });
    assert.equal(receipt.blockNumber, head.number + 1n);
    for (let i = 0; i < 6; i++) assert.equal(await balanceAt(head.number + 1n), balance + 7n);
    assert.deepEqual(await client.getFilterChanges({ filter: blockFilter }), [receipt.blockHash]);
    const receipts = await rpc<Array<{ transactionHash: string }>>(dev().url, 'eth_getBlockReceipts', [
      'latest',
    ]);
    assert.deepEqual(
      receipts.map((r) => r.transactionHash),
      [again],
    );
    const traces = await rpc<Array<{ trace: Array<{ action: { value: string } }> }>>(
      dev().url,
      'trace_callMany',
      [[[{ from: FIRST.address, to: THIRD.address, value: '0x1' }, ['trace']]], 'latest'],
    );
    assert.equal(traces[0]?.trace[0]?.action.value, '0x1');

    // evm_mine takes the block's timestamp (Hardhat), or anvil's {timestamp, blocks}.
    const when = (await client.getBlock()).timestamp + 500n;
    await rpc(dev().url, 'evm_mine', [Number(when)]);
    assert.equal((await client.getBlock()).timestamp, when);
    await rpc(dev().url, 'evm_mine', [{ timestamp: Number(when + 100n), blocks: 2 }]);
    assert.equal((await client.getBlock({ blockNumber: receipt.blockNumber + 2n })).timestamp, when + 100n);
    assert.equal(await client.getBlockNumber({ cacheTime: 0 }), receipt.blockNumber + 3n);
  });
});

describe('dev chain with --block-time', () => {
  const dev = devChainForSuite('ethtrace-dev-interval-', ['--block-time', '1']);

  it('pools transactions and mines what is ready once per interval, empty blocks included', async () => {
    const client = createPublicClient({ transport: http(dev().url) });
    const nonce = await client.getTransactionCount({ address: FIRST.address });
    const signed = await Promise.all(
      [0, 1].map((i) =>
        FIRST.signTransaction({
          chainId: 31337,
          type: 'eip1559',
          nonce: nonce + i,
          to: SECOND.address,
          value: parseEther(String(i + 1)),
          gas: 21000n,
          maxFeePerGas: 10_000_000_000n,
          maxPriorityFeePerGas: 1_000_000_000n,
        }),
      ),
    );
    // One batch: its requests are taken in together, so no block tick can fall between them.
    const batch = [
      ...signed.map((tx) => ['eth_sendRawTransaction', [tx]]),
      ['txpool_status', []],
      ['eth_getTransactionCount', [FIRST.address, 'pending']],
    ].map(([method, params], id) => ({ jsonrpc: '2.0', id, method, params }));
    const res = await fetch(dev().url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(batch),
    });
    const answers = (await res.json()) as Array<{ id: number; result: unknown }>;
    const [one, two, status, count] = answers.sort((x, y) => x.id - y.id).map((a) => a.result);
    assert.deepEqual(status, { pending: '0x2', queued: '0x0' });
    assert.equal(count, `0x${(nonce + 2).toString(16)}`);
    const [a, b] = await Promise.all([
      client.waitForTransactionReceipt({ hash: one as Hex, pollingInterval: 100 }),
      client.waitForTransactionReceipt({ hash: two as Hex, pollingInterval: 100 }),
    ]);
    assert.equal(a.blockNumber, b.blockNumber, 'both in the block of the next tick');
    const at = await client.getBlockNumber({ cacheTime: 0 });
    await eventually(async () => (await client.getBlockNumber({ cacheTime: 0 })) >= at + 2n, 'empty blocks');
    const block = await client.getBlock({ blockNumber: at + 1n });
    assert.equal(block.transactions.length, 0);
  });
});
