import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { DEFAULT_LIMITS } from '../../src/config/limits.ts';
import { LimitExceeded } from '../../src/core/errors.ts';
import { ReplayService } from '../../src/services/replay.ts';
import { conformanceServerForSuite, type RunningServer } from '../support/server.ts';

// The conformance chain: proof of work up to block 35 (blocks 3, 4, 6, 7, … include one uncle
// each), Byzantium at 9, Constantinople at 12, the merge at 36; every block and uncle is mined by
// the zero address.
const MINER = '0x0000000000000000000000000000000000000000';
const SENDER = '0x7435ed30a8b4aeb0877cef0c6e8cffe834eb865f';
const ETH = 10n ** 18n;
const MISSING_HASH = `0x${'ab'.repeat(32)}`;
const hex = (n: number | bigint) => `0x${n.toString(16)}`;

type Entry = {
  type: string;
  action: Record<string, string>;
  result: Record<string, string> | null;
  error?: string;
  subtraces: number;
  traceAddress: number[];
  blockHash: string;
  blockNumber: number;
  transactionHash: string | null;
  transactionPosition: number | null;
};
type Replayed = {
  output: string;
  stateDiff: unknown;
  trace: unknown[];
  vmTrace: unknown;
  transactionHash: string;
};

/** An entry as trace_replay* prints it: without the block and transaction it belongs to. */
function unlocalised(e: Entry): Record<string, unknown> {
  const { blockHash: _h, blockNumber: _n, transactionHash: _t, transactionPosition: _p, ...rest } = e;
  return rest;
}

describe('trace_ replay methods on the conformance chain', () => {
  const conformance = conformanceServerForSuite();
  let server: RunningServer;
  let head: number;
  const blocks = new Map<number, Entry[]>();
  before(async () => {
    server = conformance();
    head = Number(await server.rpc<string>('eth_blockNumber'));
    for (let n = 0; n <= head; n++) blocks.set(n, await server.rpc<Entry[]>('trace_block', [hex(n)]));
  });
  const errorOf = async (promise: Promise<unknown>) => {
    try {
      await promise;
    } catch (e) {
      return e as Error & { code: number };
    }
    assert.fail('expected an error');
  };
  const txEntries = (n: number) => (blocks.get(n) ?? []).filter((e) => e.type !== 'reward');

  it('pays the proof-of-work rewards the state shows, and none after the merge', async () => {
    for (let n = 1; n <= head; n++) {
      const entries = blocks.get(n) ?? [];
      const rewards = entries.filter((e) => e.type === 'reward');
      const block = await server.rpc<{ uncles: string[]; baseFeePerGas?: string }>('eth_getBlockByNumber', [
        hex(n),
        false,
      ]);
      if (n >= 36) {
        assert.deepEqual(rewards, [], `block ${n} is proof of stake`);
        continue;
      }
      assert.equal(rewards.length, 1 + block.uncles.length, `block ${n}`);
      // The miner's balance moves by the rewards plus the priority fees, nothing else (no
      // transaction of these blocks sends value to the zero address).
      const balance = async (at: number) =>
        BigInt(await server.rpc<string>('eth_getBalance', [MINER, hex(at)]));
      const receipts = await server.rpc<Array<{ gasUsed: string; effectiveGasPrice: string }>>(
        'eth_getBlockReceipts',
        [hex(n)],
      );
      const baseFee = BigInt(block.baseFeePerGas ?? '0x0');
      const tips = receipts.reduce(
        (s, r) => s + BigInt(r.gasUsed) * (BigInt(r.effectiveGasPrice) - baseFee),
        0n,
      );
      const paid = rewards.reduce((s, r) => s + BigInt(r.action.value ?? '0x0'), 0n);
      assert.equal((await balance(n)) - (await balance(n - 1)), paid + tips, `block ${n}`);
      for (const r of rewards) {
        assert.equal(r.action.author, MINER);
        assert.equal(r.result, null);
        assert.equal(r.subtraces, 0);
        assert.deepEqual(r.traceAddress, []);
        assert.equal(r.transactionHash, null);
        assert.equal(r.transactionPosition, null);
        assert.equal(r.blockNumber, n);
      }
      assert.deepEqual(entries.slice(-rewards.length), rewards, 'rewards come after the transactions');
    }
    // By hand: 5 ETH before Byzantium (block 9), 3 ETH before Constantinople (12), 2 ETH after; the
    // miner gets 1/32 more per uncle, an uncle one block older (8 + 2 − 3)/8 of the subsidy.
    const values = (n: number) =>
      (blocks.get(n) ?? [])
        .filter((e) => e.type === 'reward')
        .map((e) => [e.action.rewardType, BigInt(e.action.value ?? 0)]);
    assert.deepEqual(values(1), [['block', 5n * ETH]]);
    assert.deepEqual(values(3), [
      ['block', 5n * ETH + (5n * ETH) / 32n],
      ['uncle', (7n * 5n * ETH) / 8n],
    ]);
    assert.deepEqual(values(9), [
      ['block', 3n * ETH + (3n * ETH) / 32n],
      ['uncle', (7n * 3n * ETH) / 8n],
    ]);
    assert.deepEqual(values(11), [['block', 3n * ETH]]);
    assert.deepEqual(values(12), [
      ['block', 2n * ETH + (2n * ETH) / 32n],
      ['uncle', (7n * 2n * ETH) / 8n],
    ]);
    assert.deepEqual(values(35), [['block', 2n * ETH]]);
  });

  it('localises every entry with its block and transaction', async () => {
    for (let n = 1; n <= head; n++) {
      const block = await server.rpc<{ hash: string; transactions: string[] }>('eth_getBlockByNumber', [
        hex(n),
        false,
      ]);
      for (const e of blocks.get(n) ?? []) {
        assert.equal(e.blockHash, block.hash);
        assert.equal(e.blockNumber, n);
        if (e.type === 'reward') continue;
        assert.equal(typeof e.transactionPosition, 'number');
        assert.equal(e.transactionHash, block.transactions[e.transactionPosition ?? -1]);
      }
      // Every transaction has its top-level entry, in order.
      const tops = txEntries(n).filter((e) => e.traceAddress.length === 0);
      assert.deepEqual(
        tops.map((e) => e.transactionHash),
        block.transactions,
      );
    }
  });

  it('trace_transaction and trace_get give the block entries of the transaction', async () => {
    for (let n = 1; n <= head; n++) {
      const entries = txEntries(n);
      const hashes = [...new Set(entries.map((e) => e.transactionHash))];
      for (const hash of hashes) {
        const mine = entries.filter((e) => e.transactionHash === hash);
        assert.deepEqual(await server.rpc('trace_transaction', [hash]), mine);
        for (const e of mine) {
          assert.deepEqual(await server.rpc('trace_get', [hash, e.traceAddress.map(hex)]), e);
        }
        assert.equal(await server.rpc('trace_get', [hash, ['0x3e7']]), null);
      }
    }
  });

  it('trace_replayTransaction is the element of trace_replayBlockTransactions, and matches trace_block', async () => {
    for (let n = 1; n <= head; n++) {
      const replayed = await server.rpc<Replayed[]>('trace_replayBlockTransactions', [
        hex(n),
        ['trace', 'stateDiff'],
      ]);
      const entries = txEntries(n);
      const block = await server.rpc<{ transactions: string[] }>('eth_getBlockByNumber', [hex(n), false]);
      assert.deepEqual(
        replayed.map((r) => r.transactionHash),
        block.transactions,
      );
      for (const [i, r] of replayed.entries()) {
        assert.deepEqual(Object.keys(r).sort(), [
          'output',
          'stateDiff',
          'trace',
          'transactionHash',
          'vmTrace',
        ]);
        assert.equal(r.vmTrace, null);
        assert.deepEqual(r.trace, entries.filter((e) => e.transactionPosition === i).map(unlocalised));
        // Spot-check the single-transaction form on every block (all of block 2's 59 would be slow).
        if (i === 0 || i === replayed.length - 1) {
          assert.deepEqual(
            await server.rpc('trace_replayTransaction', [r.transactionHash, ['trace', 'stateDiff']]),
            r,
          );
        }
      }
    }
  });

  it('honours the trace types of the replay methods', async () => {
    const [tx] = await server.rpc<Replayed[]>('trace_replayBlockTransactions', ['0x5', []]);
    assert.ok(tx);
    assert.deepEqual(tx.trace, []);
    assert.equal(tx.stateDiff, null);
    assert.equal(tx.vmTrace, null);
    const withVm = await server.rpc<Replayed>('trace_replayTransaction', [tx.transactionHash, ['vmTrace']]);
    assert.equal(withVm.output, tx.output);
    assert.ok(withVm.vmTrace !== null && typeof withVm.vmTrace === 'object');
    assert.deepEqual(withVm.trace, []);
  });

  it('trace_filter is the matching subset of trace_block, complete and in order', async () => {
    const all = [...blocks.values()].flat();
    assert.deepEqual(await server.rpc('trace_filter', [{ fromBlock: '0x0', toBlock: 'latest' }]), all);
    assert.deepEqual(await server.rpc('trace_filter', [{}]), all, 'defaults: 0 to latest');
    const from = await server.rpc<Entry[]>('trace_filter', [{ fromBlock: '0x1', fromAddress: [SENDER] }]);
    assert.deepEqual(
      from,
      all.filter((e) => e.action.from === SENDER),
    );
    assert.ok(from.length > 50);
    const created = all.find((e) => e.type === 'create' && e.result)?.result?.address;
    assert.ok(created);
    const to = await server.rpc<Entry[]>('trace_filter', [{ toAddress: [created] }]);
    assert.deepEqual(
      to,
      all.filter((e) => (e.type === 'create' ? e.result?.address : e.action.to) === created),
    );
    assert.ok(to.length >= 1);
    // Rewards have no sender: a sender list excludes them, a recipient list finds them by author.
    const rewards = await server.rpc<Entry[]>('trace_filter', [
      { toAddress: [MINER], fromBlock: '0x1', toBlock: '0x23' },
    ]);
    assert.deepEqual(
      rewards.filter((e) => e.type === 'reward'),
      all.filter((e) => e.type === 'reward'),
    );
    // Both lists: either matches by default (Erigon, Reth), both with mode "intersection" (OpenEthereum).
    const either = await server.rpc<Entry[]>('trace_filter', [
      { fromAddress: [SENDER], toAddress: [created] },
    ]);
    assert.deepEqual(
      either,
      all.filter((e) => e.action.from === SENDER || e.result?.address === created || e.action.to === created),
    );
    const both = await server.rpc<Entry[]>('trace_filter', [
      { fromAddress: [SENDER], toAddress: [created], mode: 'intersection' },
    ]);
    assert.deepEqual(
      both,
      to.filter((e) => e.action.from === SENDER),
    );
    // Paging: after skips matches, count bounds them; JSON integers and hex both accepted.
    const page = await server.rpc<Entry[]>('trace_filter', [{ fromAddress: [SENDER], after: 10, count: 5 }]);
    assert.deepEqual(page, from.slice(10, 15));
    assert.deepEqual(
      await server.rpc('trace_filter', [{ fromAddress: [SENDER], after: '0xa', count: '0x5' }]),
      page,
    );
    assert.deepEqual(await server.rpc('trace_filter', [{ count: 0 }]), []);
    // Asked twice, the index answers the second time without any new execution.
    const before = server.app.services.replay.stats().executions;
    await server.rpc('trace_filter', [{ fromAddress: [SENDER] }]);
    assert.equal(server.app.services.replay.stats().executions, before);
  });

  it('skips the blocks the address index rules out, even once their traces are evicted', async () => {
    const all = [...blocks.values()].flat();
    const created = all.find((e) => e.type === 'create' && e.result)?.result?.address;
    assert.ok(created);
    const withCreated = new Set(
      all.filter((e) => e.result?.address === created || e.action.to === created).map((e) => e.blockNumber),
    );
    // No trace cache at all: every block traced is traced in the pool.
    const uncached = new ReplayService(server.app.services.chain, server.app.execution, {
      ...DEFAULT_LIMITS.replay,
      cacheBytes: 0,
    });
    const filter = {
      fromAddress: [],
      toAddress: [Uint8Array.from(Buffer.from(created.slice(2), 'hex'))],
      mode: 'union' as const,
    };
    const first = await uncached.filter(filter);
    assert.equal(uncached.stats().executions, head + 1, 'every block traced once');
    const second = await uncached.filter(filter);
    assert.equal(second.json, first.json);
    assert.equal(uncached.stats().executions, head + 1 + withCreated.size, 'only blocks naming the address');
  });

  it('bounds trace_filter ranges', async () => {
    const small = new ReplayService(server.app.services.chain, server.app.execution, {
      ...DEFAULT_LIMITS.replay,
      maxFilterBlocks: 10,
    });
    const e = await small.filter({ fromAddress: [], toAddress: [], mode: 'union' }).then(
      () => assert.fail('expected an error'),
      (err: unknown) => err,
    );
    assert.ok(e instanceof LimitExceeded);
    assert.equal(e.message, 'query exceeds max block range 10. Try with this block range [0x0, 0x9].');
    assert.equal(
      (
        await small.filter({
          fromAddress: [],
          toAddress: [],
          mode: 'union',
          toBlock: { kind: 'number', number: 9n },
        })
      ).json.length > 2,
      true,
    );
    const beyond = await errorOf(server.rpc('trace_filter', [{ fromBlock: '0x0', toBlock: hex(head + 1) }]));
    assert.equal(beyond.code, -32602);
    // eth_getLogs' words (src/services/blockRange.ts), as test/rpc/logs.test.ts has them.
    assert.equal(beyond.message, 'block range extends beyond current head block');
    const reversed = await errorOf(server.rpc('trace_filter', [{ fromBlock: '0x5', toBlock: '0x4' }]));
    assert.equal(reversed.code, -32602);
    assert.equal(reversed.message, 'invalid block range params');
    const badAddress = await errorOf(server.rpc('trace_filter', [{ fromAddress: ['0x12'] }]));
    assert.equal(badAddress.code, -32602);
    assert.equal(
      badAddress.message,
      'invalid argument 0: fromAddress[0]: hex string has length 2, want 40 for common.Address',
    );
  });

  it('shares one execution between concurrent requests and caches the answer', async () => {
    const replay = server.app.services.replay;
    // Trace types no other test asks for, so the block is not cached yet.
    const params = [hex(head), ['stateDiff', 'vmTrace']];
    const before = replay.stats().executions;
    const answers = await Promise.all(
      Array.from({ length: 8 }, () => server.rpc('trace_replayBlockTransactions', params)),
    );
    assert.equal(replay.stats().executions, before + 1);
    for (const a of answers) assert.deepEqual(a, answers[0]);
    await server.rpc('trace_replayBlockTransactions', params);
    assert.equal(replay.stats().executions, before + 1);
    assert.equal(replay.stats().inFlight, 0);
  });

  it('answers unknown transactions, unknown blocks and genesis', async () => {
    assert.equal(await server.rpc('trace_transaction', [MISSING_HASH]), null);
    assert.equal(await server.rpc('trace_get', [MISSING_HASH, []]), null);
    const missing = await errorOf(server.rpc('trace_replayTransaction', [MISSING_HASH, ['trace']]));
    assert.equal(missing.code, -32000);
    assert.equal(missing.message, 'transaction not found');
    assert.equal(await server.rpc('trace_block', [hex(head + 1)]), null);
    assert.equal(await server.rpc('trace_block', [MISSING_HASH]), null);
    assert.equal(await server.rpc('trace_replayBlockTransactions', [hex(head + 1), ['trace']]), null);
    assert.deepEqual(blocks.get(0), []);
    assert.deepEqual(await server.rpc('trace_replayBlockTransactions', ['earliest', ['trace']]), []);
  });

  it('rejects malformed parameters', async () => {
    const hash = txEntries(1)[0]?.transactionHash;
    assert.ok(hash);
    const cases: Array<[string, unknown[], RegExp]> = [
      ['trace_replayTransaction', [hash, ['trace', 'bogus']], /unrecognized trace type: bogus/],
      ['trace_replayTransaction', [hash], /missing value for required argument 1/],
      ['trace_replayBlockTransactions', ['0x1'], /missing value for required argument 1/],
      ['trace_transaction', ['0x1234'], /invalid argument 0/],
      ['trace_get', [hash, '0x0'], /expected an array of trace indices/],
      ['trace_get', [hash, ['zz']], /index 0/],
      ['trace_block', ['nonsense'], /invalid argument 0/],
      ['trace_filter', ['x'], /filter must be an object/],
      ['trace_filter', [{ count: -1 }], /count/],
    ];
    for (const [method, params, message] of cases) {
      const e = await errorOf(server.rpc(method, params));
      assert.equal(e.code, -32602, `${method} ${JSON.stringify(params)}`);
      assert.match(e.message, message);
    }
  });
});
