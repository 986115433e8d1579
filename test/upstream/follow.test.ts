import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { RLP } from '@ethereumjs/rlp';
import { bigIntToUnpaddedBytes, hexToBytes } from '@ethereumjs/util';
import { type Hex, keccak256, type Log } from 'viem';
import { type Anvil, mineBlock, startAnvil } from '../support/anvil.ts';
import { serveTraceWorkload, type TraceWorkloadServers } from '../support/anvilTraces.ts';
import { CONFORMANCE, collect, runCli, tempDir } from '../support/cli.ts';
import { LOG_STORE_INITCODE, signLogStoreCall } from '../support/contracts.ts';
import { devAccount } from '../support/devAccounts.ts';
import { serveCli, serveDev, stopDev } from '../support/devServer.ts';
import { HEADER_FIELDS } from '../support/exportChain.ts';
import { type Fault, type FaultProxy, startFaultProxy } from '../support/faultProxy.ts';
import { type FollowServer, startFollowServer } from '../support/follow.ts';
import { buildGenesis } from '../support/genesis.ts';
import { importConformanceChain, type RunningServer, startServer } from '../support/server.ts';
import { startUpstreamServer } from '../support/upstream.ts';
import { eventually, rawSocket } from '../support/wsClient.ts';

/**
 * `ethtrace start --upstream URL --follow --genesis FILE` against real nodes: a second ethtrace
 * serving the conformance chain (Frontier to Osaka, uncles, withdrawals) followed with every state
 * root checked, and anvil (the trace workload, blocks mined while following, a reorg by
 * evm_snapshot / evm_revert) followed without state-root checks. A followed chain must answer byte
 * for byte as the same chain imported does.
 */

const GENESIS = join(CONFORMANCE, 'genesis.json');
const CONFORMANCE_HEAD = 54n;
const hex = (n: bigint | number) => `0x${n.toString(16)}`;
const word = (v: bigint) => `0x${v.toString(16).padStart(64, '0')}`;

/** The raw answer body of one request, with id 1 (so two servers' bodies compare as bytes). */
async function raw(url: string, method: string, params: unknown[]): Promise<string> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
  });
  return res.text();
}

/** Blocks `from`..`to` answer the same bytes on both servers: block, receipts, traces. */
async function assertSameBlocks(ours: string, theirs: string, from: bigint, to: bigint): Promise<void> {
  for (let n = from; n <= to; n++) {
    for (const [method, params] of [
      ['eth_getBlockByNumber', [hex(n), true]],
      ['eth_getBlockReceipts', [hex(n)]],
      ['trace_block', [hex(n)]],
      ['debug_traceBlockByNumber', [hex(n), { tracer: 'callTracer', tracerConfig: { withLog: true } }]],
    ] as const) {
      const mine = await raw(ours, method, [...params]);
      assert.equal(JSON.parse(mine).error, undefined, `${method} ${n}: ${mine.slice(0, 300)}`);
      assert.equal(mine, await raw(theirs, method, [...params]), `${method} of block ${n}`);
    }
  }
}

/** keccak of a block answer's header fields, as the chain hashes them. */
function headerHash(block: Record<string, unknown>): Hex {
  const fields: Uint8Array[] = [];
  for (const [name, kind] of HEADER_FIELDS) {
    const value = block[name];
    if (typeof value !== 'string') break;
    fields.push(kind === 'quantity' ? bigIntToUnpaddedBytes(BigInt(value)) : hexToBytes(value as Hex));
  }
  return keccak256(RLP.encode(fields));
}

/**
 * The first answer holding full block `number` (eth_getBlockByNumber with transactions) is changed by
 * `change`; with `rehash` its hash (and its transactions' blockHash) are made to fit the change, so
 * only executing the block can tell.
 */
function tamperBlock(
  number: bigint,
  change: (block: Record<string, unknown>) => void,
  rehash: boolean,
): Fault {
  const asksFor = (call: unknown) => {
    const c = call as { method?: unknown; params?: unknown[] };
    return c.method === 'eth_getBlockByNumber' && c.params?.[0] === hex(number) && c.params?.[1] === true;
  };
  return {
    kind: 'rewrite',
    when: (request) => (Array.isArray(request) ? request : [request]).some(asksFor),
    edit: (answer) => {
      for (const a of (Array.isArray(answer) ? answer : [answer]) as Array<{
        result?: Record<string, unknown>;
      }>) {
        const block = a.result;
        if (!block || block.number !== hex(number)) continue;
        change(block);
        if (rehash) {
          block.hash = headerHash(block);
          for (const tx of block.transactions as Array<Record<string, unknown>>) tx.blockHash = block.hash;
        }
      }
      return answer;
    },
  };
}

describe('following the conformance chain from a second ethtrace, every state root checked', () => {
  let chain: { datadir: string; cleanup: () => void };
  let first: RunningServer;
  let proxy: FaultProxy;
  before(async () => {
    chain = await importConformanceChain();
    first = await startServer(chain.datadir, { keys: null });
    await first.app.warm();
    proxy = await startFaultProxy(first.url);
  });
  after(async () => {
    await proxy?.close();
    await first?.close();
    chain?.cleanup();
  });

  it('follows every block (uncles, withdrawals, every fork) and answers as the imported chain, byte for byte', async () => {
    // Small batches, so that most are fetched while the one before executes.
    const follower = await startFollowServer([first.url], { genesis: GENESIS, batchBlocks: 5 });
    try {
      const head = await first.rpc<{ hash: string }>('eth_getBlockByNumber', [hex(CONFORMANCE_HEAD), false]);
      await follower.reaches(CONFORMANCE_HEAD, head.hash);
      await follower.logged(/following: in step with the upstream at block 54 /);
      assert.equal(await follower.rpc('eth_blockNumber'), hex(CONFORMANCE_HEAD));
      await follower.app.warm();
      await assertSameBlocks(follower.url, first.url, 0n, CONFORMANCE_HEAD);
      assert.equal(follower.follower.status().error, null);
    } finally {
      await follower.close();
    }
  });

  it('eth_syncing tells the catch-up as geth does (hex quantities) while it lasts, and false once in step', async () => {
    // Every upstream answer late and one block a batch: the catch-up lasts seconds, long enough to ask.
    proxy.delayMs = 100;
    const follower = await startFollowServer([proxy.url], { genesis: GENESIS, batchBlocks: 1 });
    try {
      type Progress = { startingBlock: string; currentBlock: string; highestBlock: string };
      const seen: Progress[] = [];
      await eventually(
        async () => {
          const answer = await follower.rpc<false | Progress>('eth_syncing');
          if (answer !== false) seen.push(answer);
          const [first, last] = [seen[0], seen.at(-1)];
          return (
            first !== undefined &&
            last !== undefined &&
            BigInt(last.currentBlock) > BigInt(first.currentBlock)
          );
        },
        'eth_syncing to show the catch-up moving on',
        30_000,
      );
      for (const progress of seen) {
        assert.deepEqual(Object.keys(progress), ['startingBlock', 'currentBlock', 'highestBlock']);
        assert.equal(progress.startingBlock, '0x0');
        assert.equal(progress.highestBlock, hex(CONFORMANCE_HEAD));
        assert.match(progress.currentBlock, /^0x(0|[1-9a-f][0-9a-f]*)$/);
        assert.ok(BigInt(progress.currentBlock) <= CONFORMANCE_HEAD, progress.currentBlock);
      }
      proxy.delayMs = 0;
      await follower.reaches(CONFORMANCE_HEAD);
      await follower.logged(/following: in step with the upstream at block 54 /);
      assert.equal(await follower.rpc('eth_syncing'), false);
    } finally {
      proxy.delayMs = 0;
      await follower.close();
    }
  });

  it('refuses a tampered block and leaves the store as it was; follows on once the upstream is honest', async () => {
    const dir = tempDir('ethtrace-follow-');
    try {
      // Block 20 with another state root, its hash made to fit: only execution shows it is wrong.
      proxy.inject(
        tamperBlock(20n, (b) => (b.stateRoot = `0x${'11'.repeat(32)}`), true),
        1,
      );
      const one = await startFollowServer([proxy.url], { genesis: GENESIS, datadir: dir.path });
      try {
        await one.logged(/following stopped: /);
        const stopped = one.lines.find((l) => l.startsWith('following stopped: ')) ?? '';
        assert.match(
          stopped,
          /^following stopped: upstream block 20: block 20 \(0x[0-9a-f]{64}\) failed the state root check: header has 0x1{64}, expected 0x[0-9a-f]{64}; the store keeps blocks up to 19 /,
        );
        assert.ok(one.follower.status().error);
        // The blocks before it were stored and are served; nothing of block 20 was kept.
        assert.equal(await one.rpc('eth_blockNumber'), hex(19));
        assert.equal(await one.rpc('eth_getBlockByNumber', [hex(20), false]), null);
        const tx20 = await first.rpc<{ transactions: string[] }>('eth_getBlockByNumber', [hex(20), false]);
        assert.equal(await one.rpc('eth_getTransactionByHash', [tx20.transactions[0]]), null);
        await assertSameBlocks(one.url, first.url, 18n, 19n);
      } finally {
        await one.close({ keep: true });
      }

      // Block 30 with a header field changed and its hash not: refused before anything is executed.
      proxy.inject(
        tamperBlock(30n, (b) => (b.gasUsed = hex(BigInt(b.gasUsed as string) + 1n)), false),
        1,
      );
      const two = await startFollowServer([proxy.url], { genesis: GENESIS, datadir: dir.path });
      try {
        await two.logged(/following stopped: /);
        assert.match(
          two.lines.find((l) => l.startsWith('following stopped: ')) ?? '',
          /^following stopped: upstream answer failed verification: block 30 \(0x[0-9a-f]{64}\) hash of the header's fields 0x[0-9a-f]{64} is not the answer's hash 0x[0-9a-f]{64}; the store keeps blocks up to 19 /,
        );
        assert.equal(await two.rpc('eth_blockNumber'), hex(19));
      } finally {
        await two.close({ keep: true });
      }

      // The upstream honest again: the same datadir follows on to the head, every block as imported.
      const three = await startFollowServer([proxy.url], { genesis: GENESIS, datadir: dir.path });
      try {
        await three.reaches(CONFORMANCE_HEAD);
        await three.app.warm();
        await assertSameBlocks(three.url, first.url, 17n, 32n);
      } finally {
        await three.close({ keep: true });
      }
    } finally {
      proxy.clear();
      dir.cleanup();
    }
  });
});

describe('following anvil, state roots not compared', () => {
  let servers: TraceWorkloadServers;
  let proxy: FaultProxy;
  let follower: FollowServer;
  const sender = devAccount(1);
  let nonce = 0;
  const transfer = async () =>
    sender.signTransaction({
      chainId: servers.anvil.genesis.config.chainId,
      type: 'eip1559',
      nonce: nonce++,
      to: '0x000000000000000000000000000000000000f011',
      value: 1n,
      gas: 21_000n,
      maxFeePerGas: 100_000_000_000n,
      maxPriorityFeePerGas: 1n,
    });

  before(async () => {
    servers = await serveTraceWorkload();
    proxy = await startFaultProxy(servers.anvil.url);
    follower = await startFollowServer([proxy.url], {
      genesis: servers.anvil.genesisPath,
      verifyStateRoot: false,
      upstream: { retries: 1, backoffMs: 50, timeoutMs: 2_000 },
    });
    nonce = Number(await servers.anvil.rpc<string>('eth_getTransactionCount', [sender.address, 'latest']));
  });
  after(async () => {
    await follower?.close();
    await proxy?.close();
    await servers?.close();
  });

  it('follows the workload chain and answers as the imported chain, byte for byte', async () => {
    const head = BigInt(await servers.anvil.rpc<string>('eth_blockNumber'));
    await follower.reaches(head);
    await follower.app.warm();
    await servers.server.app.warm();
    await assertSameBlocks(follower.url, servers.server.url, 0n, head);
  });

  it('follows blocks mined while following: eth_blockNumber and newHeads', async () => {
    const socket = await rawSocket(follower.wsUrl);
    try {
      const heads = (await socket.call('eth_subscribe', ['newHeads'])).result as string;
      const a = await mineBlock(servers.anvil, [await transfer()]);
      const b = await mineBlock(servers.anvil, [await transfer(), await transfer()]);
      await follower.reaches(b.number, b.hash);
      assert.equal(await follower.rpc('eth_blockNumber'), hex(b.number));
      await eventually(
        () => socket.notifications.filter((n) => n.subscription === heads).length >= 2,
        'two newHeads',
      );
      const hashes = socket.notifications
        .filter((n) => n.subscription === heads)
        .map((n) => (n.result as { hash: string }).hash);
      assert.deepEqual(hashes, [a.hash, b.hash]);
      await follower.logged(new RegExp(`^following: blocks? .*; head ${b.number} \\(${b.hash}\\)$`));
      const receipts = await follower.rpc<Array<{ transactionHash: string }>>('eth_getBlockReceipts', [
        b.hash,
      ]);
      assert.deepEqual(
        receipts.map((r) => r.transactionHash),
        b.receipts.map((r) => r.transactionHash),
      );
    } finally {
      socket.close();
    }
  });

  it('over a ws:// upstream, follows a new block at once on its newHeads (no polling)', async () => {
    const datadir = tempDir('ethtrace-follow-ws-');
    // Polling every ten minutes, after the first look: only the subscription can bring the new block.
    const ws = await startFollowServer([proxy.wsUrl], {
      genesis: servers.anvil.genesisPath,
      verifyStateRoot: false,
      pollMs: 600_000,
      datadir: datadir.path,
    });
    try {
      await ws.reaches(BigInt(await servers.anvil.rpc<string>('eth_blockNumber')));
      await ws.logged(/newHeads subscription on/);
      const block = await mineBlock(servers.anvil, [await transfer()]);
      await ws.reaches(block.number, block.hash);
    } finally {
      await ws.close();
      datadir.cleanup();
    }
  });

  it('keeps serving while the upstream is down, and catches up once it is back', async () => {
    // In step with anvil first: a block the follower was still importing would land after the
    // proxy stops and move the head this test expects to stay put.
    const head = await servers.anvil.rpc<{ number: string; hash: string }>('eth_getBlockByNumber', [
      'latest',
      false,
    ]);
    await follower.reaches(BigInt(head.number), head.hash);
    const before = await follower.rpc<string>('eth_blockNumber');
    await proxy.stop();
    await follower.logged(
      /^following: the upstream cannot be read \(trying again, logged once until it answers\): /,
    );
    const mined = await mineBlock(servers.anvil, [await transfer()]);
    assert.equal(await follower.rpc('eth_blockNumber'), before);
    const downLines = follower.lines.filter((l) =>
      l.startsWith('following: the upstream cannot be read'),
    ).length;
    await proxy.restart();
    await follower.reaches(mined.number, mined.hash);
    await follower.logged(/^following: the upstream answers again$/);
    assert.equal(downLines, 1, 'the outage is logged once');
    assert.equal(follower.follower.status().error, null);
  });
});

describe('a reorg on anvil, followed', () => {
  let anvil: Anvil;
  let follower: FollowServer;
  /** A second follower that follows no reorg deeper than one block. */
  let shallow: FollowServer;
  /** A third, reading anvil through a proxy that will alter the new branch's first block. */
  let misled: FollowServer;
  let proxy: FaultProxy;
  let logStore: Hex;
  const sender = devAccount(0);
  const signed = (nonce: number, value: bigint) =>
    signLogStoreCall(sender, anvil.genesis.config.chainId, logStore, nonce, value);

  const work = tempDir('ethtrace-follow-reorg-');
  before(async () => {
    // anvil mines the blocks after an evm_revert with the base fee its removed blocks led to, not
    // the one EIP-1559 gives from their parent, and a follower refuses such a block (the base fee
    // check). A chain with a zero base fee, which blocks of little gas keep at zero, has no such
    // difference.
    const genesisPath = join(work.path, 'genesis.json');
    writeFileSync(genesisPath, JSON.stringify({ ...buildGenesis(), baseFeePerGas: '0x0' }));
    anvil = await startAnvil({ genesisPath });
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
    const options = { genesis: anvil.genesisPath, verifyStateRoot: false };
    follower = await startFollowServer([anvil.url], options);
    shallow = await startFollowServer([anvil.url], { ...options, maxReorgDepth: 1 });
    proxy = await startFaultProxy(anvil.url);
    misled = await startFollowServer([proxy.url], options);
    for (const f of [follower, shallow, misled]) await f.reaches(1n, mined.hash);
  });
  after(async () => {
    await follower?.close();
    await shallow?.close();
    await misled?.close();
    await proxy?.close();
    await anvil?.stop();
    work.cleanup();
  });

  it('unwinds to the common block and follows the new branch: removed logs, blocks, receipts, caches', async () => {
    const socket = await rawSocket(follower.wsUrl);
    try {
      const logs = (await socket.call('eth_subscribe', ['logs', { address: logStore }])).result as string;
      const heads = (await socket.call('eth_subscribe', ['newHeads'])).result as string;
      const logsOf = () =>
        socket.notifications.filter((n) => n.subscription === logs).map((n) => n.result as Log);
      const snapshot = await anvil.rpc<Hex>('evm_snapshot');
      const old1 = await mineBlock(anvil, [await signed(1, 11n)]);
      const old2 = await mineBlock(anvil, [await signed(2, 12n)]);
      for (const f of [follower, shallow, misled]) await f.reaches(old2.number, old2.hash);
      // The next time block 2 is fetched whole, it is the new branch's: its gas used is altered
      // (and its hash made to fit), which only executing it shows.
      proxy.inject(
        tamperBlock(old1.number, (b) => (b.gasUsed = hex(BigInt(b.gasUsed as string) + 1n)), true),
        1,
      );
      await eventually(() => logsOf().length === 2, 'the first branch’s logs');
      // Cached answers of the old branch's block, which must not outlive it.
      const oldTrace = await follower.rpc<unknown[]>('trace_block', [hex(old2.number)]);
      assert.equal(oldTrace.length, 1);
      assert.equal((await follower.rpc<unknown[]>('eth_getBlockReceipts', [hex(old2.number)])).length, 1);

      // The new branch is shorter at first: one block where the old one had two.
      await anvil.rpc('evm_revert', [snapshot]);
      const new1 = await mineBlock(anvil, [await signed(1, 21n)]);
      assert.equal(new1.number, old1.number);
      await follower.reaches(new1.number, new1.hash);
      await follower.logged(
        new RegExp(
          `^following: reorg on the upstream: blocks ${old1.number}–${old2.number} of ours are not on its chain; unwinding to the common block ${old1.number - 1n} `,
        ),
      );
      assert.equal(await follower.rpc('eth_getBlockByNumber', [hex(old2.number), false]), null);
      const new2 = await mineBlock(anvil, []);
      const new3 = await mineBlock(anvil, [await signed(2, 23n)]);
      await follower.reaches(new3.number, new3.hash);
      await eventually(() => logsOf().length === 6, 'the removed logs and the new branch’s');

      const seen = logsOf().map((l) => ({ block: l.blockHash, removed: l.removed, data: l.data }));
      assert.deepEqual(seen, [
        { block: old1.hash, removed: false, data: word(11n) },
        { block: old2.hash, removed: false, data: word(12n) },
        // Newest first, as geth sends them, each with removed: true.
        { block: old2.hash, removed: true, data: word(12n) },
        { block: old1.hash, removed: true, data: word(11n) },
        { block: new1.hash, removed: false, data: word(21n) },
        { block: new3.hash, removed: false, data: word(23n) },
      ]);
      await eventually(
        () => socket.notifications.filter((n) => n.subscription === heads).length >= 5,
        'the heads of both branches',
      );
      const headHashes = socket.notifications
        .filter((n) => n.subscription === heads)
        .map((n) => (n.result as { hash: Hex }).hash);
      assert.deepEqual(headHashes.slice(-3), [new1.hash, new2.hash, new3.hash]);

      // Served from the new branch, by number: blocks, receipts, traces; the removed transaction is gone.
      const block2 = await follower.rpc<{ hash: Hex }>('eth_getBlockByNumber', [hex(old2.number), false]);
      assert.equal(block2.hash, new2.hash);
      assert.deepEqual(await follower.rpc('eth_getBlockReceipts', [hex(old2.number)]), []);
      assert.deepEqual(await follower.rpc('trace_block', [hex(old2.number)]), []);
      assert.equal(await follower.rpc('trace_block', [old2.hash]), null);
      const removedTx = old2.receipts[0]?.transactionHash;
      assert.equal(await follower.rpc('eth_getTransactionReceipt', [removedTx]), null);
      assert.equal(await follower.rpc('eth_getTransactionByHash', [removedTx]), null);
      const receipts = await follower.rpc<Array<{ transactionHash: Hex; status: string }>>(
        'eth_getBlockReceipts',
        [hex(new3.number)],
      );
      assert.deepEqual(
        receipts.map((r) => [r.transactionHash, r.status]),
        new3.receipts.map((r) => [r.transactionHash, r.status]),
      );
      assert.equal(await follower.rpc('eth_getStorageAt', [logStore, hex(7), 'latest']), word(23n));
      assert.equal(await follower.rpc('eth_getStorageAt', [logStore, hex(7), hex(new1.number)]), word(21n));
    } finally {
      socket.close();
    }
  });

  it('puts back the blocks it unwound when the new branch fails its checks', async () => {
    await misled.logged(/^following stopped: /);
    assert.match(
      misled.lines.find((l) => l.startsWith('following stopped: ')) ?? '',
      /^following stopped: upstream block 2: block 2 \(0x[0-9a-f]{64}\) failed the gas used check: header has \d+, expected \d+; the store keeps blocks up to 3 /,
    );
    assert.ok(misled.lines.some((l) => /^following: reorg on the upstream: blocks 2–3 of ours/.test(l)));
    assert.ok(!misled.lines.some((l) => l.includes('putting back')), misled.lines.join('\n'));
    // The old branch, as it was: its blocks, receipts, transactions and state.
    const head = await misled.rpc<{ number: string; hash: string }>('eth_getBlockByNumber', [
      'latest',
      false,
    ]);
    assert.equal(BigInt(head.number), 3n);
    assert.equal(
      head.hash,
      await shallow.rpc('eth_getBlockByNumber', ['latest', false]).then((b) => (b as { hash: string }).hash),
    );
    await assertSameBlocks(misled.url, shallow.url, 1n, 3n);
    assert.equal(await misled.rpc('eth_getStorageAt', [logStore, hex(7), 'latest']), word(12n));
  });

  it('stops at a reorg deeper than it follows, its store left as it was', async () => {
    // The shallow follower met the same two-block reorg in the test before.
    await shallow.logged(
      /^following stopped: the upstream's chain has no block in common with ours from block/,
    );
    assert.match(
      shallow.lines.find((l) => l.startsWith('following stopped: ')) ?? '',
      /a reorg deeper than 1 blocks is not followed/,
    );
    const head = await shallow.rpc<{ number: string; hash: string }>('eth_getBlockByNumber', [
      'latest',
      false,
    ]);
    assert.equal(BigInt(head.number), 3n);
    assert.equal(
      (await shallow.rpc<unknown[]>('eth_getBlockReceipts', [head.hash])).length,
      1,
      'the old branch is still served whole',
    );
  });
});

describe('ethtrace start --follow on the command line', () => {
  let chain: { datadir: string; cleanup: () => void };
  let first: RunningServer;
  const dirs: Array<{ path: string; cleanup: () => void }> = [];
  const dir = () => {
    const d = tempDir('ethtrace-follow-cli-');
    dirs.push(d);
    return d.path;
  };
  before(async () => {
    chain = await importConformanceChain();
    first = await startServer(chain.datadir, { keys: null });
  });
  after(async () => {
    await first?.close();
    chain?.cleanup();
    for (const d of dirs) d.cleanup();
  });

  const start = (...args: string[]) => runCli(['start', '--port', '0', '--no-auth', ...args]);
  const follow = (datadir: string, upstream: string, ...extra: string[]) =>
    start('--datadir', datadir, '--upstream', upstream, '--follow', '--genesis', GENESIS, ...extra);

  it('refuses --follow without --upstream or --genesis, and its flags without --follow', async () => {
    const cases: Array<[string[], RegExp]> = [
      [['--follow', '--genesis', GENESIS], /--follow needs --upstream URL/],
      [['--genesis', GENESIS], /--genesis applies to --upstream/],
      [['--follow', '--upstream', first.url], /--follow needs --genesis FILE/],
      [['--upstream', first.url, '--no-verify-state-root'], /--no-verify-state-root applies to --follow/],
      [
        ['--upstream', first.url, '--follow', '--genesis', GENESIS, '--finality-depth', '3'],
        /--finality-depth applies to --upstream without --follow/,
      ],
    ];
    for (const [args, message] of cases) {
      const result = await start('--datadir', dir(), ...args);
      assert.equal(result.code, 2, `${args.join(' ')}: ${result.stderr}`);
      assert.match(result.stderr, message);
    }
  });

  it('refuses a datadir of a dev chain, of an upstream cache or of another chain, and an upstream of another chain', async () => {
    const devDir = dir();
    const dev = await serveDev(devDir);
    assert.equal(await stopDev(dev.child), 0);
    const onDev = await follow(devDir, first.url);
    assert.equal(onDev.code, 2, onDev.stderr);
    assert.match(onDev.stderr, /holds a dev chain: give --follow another --datadir/);

    const cacheDir = dir();
    const cache = await startUpstreamServer([first.url], { datadir: cacheDir });
    await cache.app.close();
    await cache.source.store.close();
    const onCache = await follow(cacheDir, first.url);
    assert.equal(onCache.code, 2, onCache.stderr);
    assert.match(onCache.stderr, /caches the chain of an upstream node .*: give --follow another --datadir/);

    const anvil = await startAnvil();
    try {
      const anvilDir = dir();
      const followed = await startFollowServer([anvil.url], {
        genesis: anvil.genesisPath,
        verifyStateRoot: false,
        datadir: anvilDir,
      });
      await followed.reaches(0n);
      await followed.close({ keep: true });
      const other = await follow(anvilDir, first.url);
      assert.equal(other.code, 2, other.stderr);
      assert.match(
        other.stderr,
        /datadir holds another chain \(genesis 0x[0-9a-f]{64}, head 0\) made from a different genesis file/,
      );

      const wrongUpstream = await follow(dir(), anvil.url);
      assert.equal(wrongUpstream.code, 2, wrongUpstream.stderr);
      assert.match(
        wrongUpstream.stderr,
        /--genesis is chain 3503995874084926, the upstream serves chain 31337/,
      );
    } finally {
      await anvil.stop();
    }

    const unreachable = await follow(dir(), 'http://127.0.0.1:1', '--upstream-retries', '0');
    assert.equal(unreachable.code, 2, unreachable.stderr);
    assert.match(unreachable.stderr, /the upstream cannot be read, and .* holds no chain to serve meanwhile/);
  });

  it('follows to the head, stops cleanly, and the datadir is then served as an imported chain', async () => {
    const datadir = dir();
    const running = await serveCli([
      '--no-auth',
      '--datadir',
      datadir,
      '--upstream',
      first.url,
      '--follow',
      '--genesis',
      GENESIS,
      '--upstream-poll-ms',
      '100',
    ]);
    assert.match(
      running.output,
      /^following http:\/\/127\.0\.0\.1:\d+\/v3\/\S+: every block executed and verified$/m,
    );
    assert.match(running.output, /serving followed chain 3503995874084926 \(head 0\)/);
    await eventually(
      async () => JSON.parse(await raw(running.url, 'eth_blockNumber', [])).result === hex(CONFORMANCE_HEAD),
      'the followed head',
      30_000,
    );
    const done = collect(running.child);
    running.child.kill('SIGTERM');
    const stopped = await done;
    assert.equal(stopped.code, 0, stopped.stderr);
    assert.match(stopped.stderr, /following: catching up from block 0 to the upstream's block 54/);
    assert.match(
      stopped.stderr,
      /following: in step with the upstream at block 54 \(0x[0-9a-f]{64}\); 54 blocks, 249 txs/,
    );

    const served = await serveCli(['--no-auth', '--datadir', datadir]);
    try {
      assert.match(served.output, /serving chain 3503995874084926 \(head 54\)/);
      await assertSameBlocks(served.url, first.url, 53n, 54n);
    } finally {
      assert.equal(await stopDev(served.child), 0);
    }

    // With the upstream unreachable, a datadir that holds the chain is served meanwhile.
    const unreachable = await serveCli([
      '--no-auth',
      '--datadir',
      datadir,
      '--upstream',
      'http://127.0.0.1:1',
      '--follow',
      '--genesis',
      GENESIS,
      '--upstream-retries',
      '0',
    ]);
    try {
      assert.match(unreachable.output, /serving followed chain 3503995874084926 \(head 54\)/);
      assert.equal(JSON.parse(await raw(unreachable.url, 'eth_blockNumber', [])).result, hex(54));
    } finally {
      const done = collect(unreachable.child);
      unreachable.child.kill('SIGTERM');
      const result = await done;
      assert.equal(result.code, 0, result.stderr);
      assert.match(
        result.stderr,
        /following: the upstream cannot be read \(.*\); serving the blocks stored \(head 54\) and trying again/,
      );
    }

    // Upstream mode (without --follow) reads through a cache, never into an imported chain's datadir.
    const asCache = await start('--datadir', datadir, '--upstream', first.url);
    assert.equal(asCache.code, 2, asCache.stderr);
    assert.match(asCache.stderr, /holds an imported chain, not an upstream's cache/);
  });
});
