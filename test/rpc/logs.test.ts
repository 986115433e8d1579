import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { RLP } from '@ethereumjs/rlp';
import { bigIntToUnpaddedBytes, bytesToBigInt } from '@ethereumjs/util';
import { type App, buildApp, DEFAULT_CONFIG } from '../../src/app.ts';
import { quantityToHex, toHex } from '../../src/primitives/hex.ts';
import { keccak256 } from '../../src/primitives/keccak.ts';
import { openLmdbStore } from '../../src/store/lmdb/index.ts';
import type { ChainStore } from '../../src/store/types.ts';
import { CONFORMANCE } from '../support/cli.ts';
import { importConformanceChain, type RunningServer, startServer } from '../support/server.ts';

interface Log {
  address: string;
  topics: string[];
  data: string;
  blockNumber: string;
  blockHash: string;
  logIndex: string;
  [key: string]: unknown;
}

interface Receipt {
  from: string;
  gasUsed: string;
  effectiveGasPrice: string;
  logs: Log[];
}

interface FeeHistory {
  oldestBlock: string;
  reward?: string[][];
  baseFeePerGas: string[];
  gasUsedRatio: number[];
  baseFeePerBlobGas: string[];
  blobGasUsedRatio: number[];
}

interface RpcFailure {
  code: number;
  message: string;
}

const METHODS_WITH_FIXTURES = ['eth_getLogs', 'eth_feeHistory', 'eth_blobBaseFee', 'eth_baseFee'];
const EMIT_CONTRACT = '0x7dcd17433742f4c0ca53122ab541d0ba67fc27df';
const ABSENT_ADDRESS = `0x${'de'.repeat(20)}`;
const ABSENT_TOPIC = `0x${'ee'.repeat(32)}`;

let chain: { datadir: string; cleanup: () => void };
let server: RunningServer;
let head: number;
/** Every block's receipts as eth_getBlockReceipts serves them, by block number. */
let receipts: Receipt[][];
/** Every log of the chain in order: the receipts' logs, concatenated. */
let allLogs: Log[];

before(async () => {
  chain = await importConformanceChain();
  server = await startServer(chain.datadir);
  head = Number(await server.rpc<string>('eth_blockNumber'));
  receipts = [];
  for (let n = 0; n <= head; n++) {
    receipts.push(await server.rpc<Receipt[]>('eth_getBlockReceipts', [quantityToHex(n)]));
  }
  allLogs = receipts.flatMap((block) => block.flatMap((r) => r.logs));
});

after(async () => {
  await server?.close();
  chain?.cleanup();
});

/** The JSON-RPC error of a call that must fail. */
async function failure(s: RunningServer, method: string, params: unknown[]): Promise<RpcFailure> {
  try {
    await s.rpc(method, params);
  } catch (e) {
    const { code, message } = e as RpcFailure;
    return { code, message };
  }
  assert.fail(`${method} succeeded, expected an error`);
}

/** Block n's header, decoded, from the server's own chain service. */
async function header(n: number) {
  const hash = await server.store.getCanonicalHash(BigInt(n));
  assert.ok(hash, `block ${n}`);
  const h = await server.app.services.chain.header(hash);
  assert.ok(h, `block ${n}`);
  return h;
}

const getLogs = (filter: Record<string, unknown>, s = server) => s.rpc<Log[]>('eth_getLogs', [filter]);
const wholeChain = () => ({ fromBlock: '0x0', toBlock: 'latest' });

describe('conformance fixtures (execution-apis)', () => {
  for (const method of METHODS_WITH_FIXTURES) {
    for (const file of readdirSync(join(CONFORMANCE, method))) {
      test(`${method}/${file}`, async () => {
        const lines = readFileSync(join(CONFORMANCE, method, file), 'utf8').split('\n');
        let request: string | undefined;
        let pairs = 0;
        for (const line of lines) {
          if (line.startsWith('>> ')) request = line.slice(3);
          if (!line.startsWith('<< ')) continue;
          assert.ok(request, 'a response line without its request');
          const res = await fetch(server.url, {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: request,
          });
          assert.deepEqual(await res.json(), JSON.parse(line.slice(3)));
          pairs++;
        }
        assert.ok(pairs > 0, 'no request/response pair in the file');
      });
    }
  }
});

describe('eth_getLogs against the receipts', () => {
  test('the chain holds logs from several contracts and topic positions', () => {
    assert.ok(allLogs.length > 300, `only ${allLogs.length} logs`);
    assert.ok(new Set(allLogs.map((l) => l.address)).size > 1, 'one contract');
    assert.ok(
      allLogs.some((l) => l.topics.length === 0),
      'no log without topics',
    );
    assert.ok(
      allLogs.some((l) => l.topics.length === 2),
      'no log with two topics',
    );
  });

  test('without criteria: every log of the range, exactly as inside eth_getBlockReceipts', async () => {
    assert.deepEqual(await getLogs(wholeChain()), allLogs);
    assert.deepEqual(
      await getLogs({ fromBlock: '0x3', toBlock: '0x6' }),
      receipts.slice(3, 7).flatMap((b) => b.flatMap((r) => r.logs)),
    );
  });

  test('from and to default to the head block', async () => {
    const headLogs = receipts[head]?.flatMap((r) => r.logs) ?? [];
    assert.ok(headLogs.length > 0, 'the head block has no logs');
    assert.deepEqual(await getLogs({}), headLogs);
    assert.deepEqual(await getLogs({ fromBlock: 'latest' }), headLogs);
  });

  test('every address present: exactly the logs it emitted', async () => {
    for (const address of new Set(allLogs.map((l) => l.address))) {
      const expected = allLogs.filter((l) => l.address === address);
      assert.deepEqual(await getLogs({ ...wholeChain(), address }), expected, address);
      // Input addresses are accepted in any case.
      const shouted = `0x${address.slice(2).toUpperCase()}`;
      assert.deepEqual(await getLogs({ ...wholeChain(), address: [shouted] }), expected, shouted);
    }
  });

  test('every topic present at every position: exactly the logs having it there', async () => {
    for (let position = 0; position < 4; position++) {
      const values = new Set(allLogs.flatMap((l) => (l.topics[position] ? [l.topics[position]] : [])));
      for (const value of values) {
        const expected = allLogs.filter((l) => l.topics[position] === value);
        const topics = [...Array(position).fill(null), value];
        assert.deepEqual(await getLogs({ ...wholeChain(), topics }), expected, `${position}: ${value}`);
      }
    }
  });

  test('address lists and topic OR-lists are unions; positions are ANDed', async () => {
    const addresses = [...new Set(allLogs.map((l) => l.address))].slice(0, 2);
    assert.equal(addresses.length, 2);
    assert.deepEqual(
      await getLogs({ ...wholeChain(), address: addresses }),
      allLogs.filter((l) => addresses.includes(l.address)),
    );

    const firsts = [...new Set(allLogs.flatMap((l) => l.topics.slice(0, 1)))].slice(0, 2);
    assert.equal(firsts.length, 2);
    assert.deepEqual(
      await getLogs({ ...wholeChain(), topics: [firsts] }),
      allLogs.filter((l) => firsts.includes(l.topics[0] ?? '')),
    );

    const sample = allLogs.find((l) => l.topics.length >= 2);
    assert.ok(sample, 'no log with two topics');
    const [t0, t1] = sample.topics;
    assert.deepEqual(
      await getLogs({ ...wholeChain(), address: sample.address, topics: [t0, [t1, ABSENT_TOPIC]] }),
      allLogs.filter((l) => l.address === sample.address && l.topics[0] === t0 && l.topics[1] === t1),
    );
  });

  test('wildcards: null, [] and an OR-list holding null match any value, but the topic must exist', async () => {
    const withTwo = allLogs.filter((l) => l.topics.length >= 2);
    assert.deepEqual(await getLogs({ ...wholeChain(), topics: [null, null] }), withTwo);
    assert.deepEqual(await getLogs({ ...wholeChain(), topics: [[], []] }), withTwo);
    assert.deepEqual(await getLogs({ ...wholeChain(), topics: [[ABSENT_TOPIC, null], null] }), withTwo);
    assert.deepEqual(await getLogs({ ...wholeChain(), topics: [] }), allLogs);
    assert.deepEqual(await getLogs({ ...wholeChain(), topics: [null, null, null] }), []);
  });

  test('criteria nothing matches give []', async () => {
    assert.deepEqual(await getLogs({ ...wholeChain(), address: ABSENT_ADDRESS }), []);
    assert.deepEqual(await getLogs({ ...wholeChain(), topics: [ABSENT_TOPIC] }), []);
    assert.deepEqual(await getLogs({ ...wholeChain(), address: EMIT_CONTRACT, topics: [ABSENT_TOPIC] }), []);
  });

  test('the blockHash form: that block only, with the same criteria', async () => {
    for (let n = 0; n <= head; n++) {
      const blockLogs = receipts[n]?.flatMap((r) => r.logs) ?? [];
      const hash = blockLogs[0]?.blockHash;
      if (!hash) continue;
      assert.deepEqual(await getLogs({ blockHash: hash }), blockLogs, `block ${n}`);
      const address = blockLogs[0]?.address;
      assert.deepEqual(
        await getLogs({ blockHash: hash, address, fromBlock: null }),
        blockLogs.filter((l) => l.address === address),
      );
    }
    assert.deepEqual(await failure(server, 'eth_getLogs', [{ blockHash: ABSENT_TOPIC }]), {
      code: -32000,
      message: 'unknown block',
    });
  });

  test('block parameters in every form, pending = latest', async () => {
    const expected = receipts.slice(3, 7).flatMap((b) => b.flatMap((r) => r.logs));
    assert.deepEqual(await getLogs({ fromBlock: 3, toBlock: '6' }), expected);
    const hash6 = expected.at(-1)?.blockHash;
    assert.deepEqual(await getLogs({ fromBlock: '0x3', toBlock: { blockHash: hash6 } }), expected);
    assert.deepEqual(
      await getLogs({ fromBlock: quantityToHex(head), toBlock: 'pending' }),
      await getLogs({ fromBlock: 'latest' }),
    );
    assert.deepEqual(
      await getLogs({ fromBlock: 'earliest', toBlock: '0x2' }),
      receipts.slice(0, 3).flatMap((b) => b.flatMap((r) => r.logs)),
    );
  });

  test('bad filters are -32602 naming the problem', async () => {
    const cases: Array<[unknown, string]> = [
      [{ fromBlock: '0x5', toBlock: '0x4' }, 'invalid block range params'],
      [{ fromBlock: quantityToHex(head + 1) }, 'invalid block range params'],
      [
        { fromBlock: '0x1', toBlock: quantityToHex(head + 1) },
        'block range extends beyond current head block',
      ],
      [
        { blockHash: ABSENT_TOPIC, toBlock: 'latest' },
        'invalid argument 0: cannot specify both BlockHash and FromBlock/ToBlock, choose one or the other',
      ],
      [{ topics: [null, null, null, null, null] }, 'invalid argument 0: exceed max topics'],
      [
        { topics: ['0x12'] },
        'invalid argument 0: invalid topic at position 0: hex string has length 2, want 64',
      ],
      [{ topics: [[1]] }, 'invalid argument 0: invalid topic(s)'],
      [{ address: '0x12' }, 'invalid argument 0: invalid address: hex string has length 2, want 40'],
      [{ address: [EMIT_CONTRACT, 7] }, 'invalid argument 0: non-string address at index 1'],
      [{ fromBlock: 'newest' }, 'invalid argument 0: invalid block number or tag "newest"'],
      ['latest', 'invalid argument 0: filter must be an object'],
    ];
    for (const [filter, message] of cases) {
      const e = await failure(server, 'eth_getLogs', [filter]);
      assert.equal(e.code, -32602, JSON.stringify(filter));
      assert.ok(e.message.startsWith(message), `${JSON.stringify(filter)}: ${e.message}`);
    }
    assert.equal((await failure(server, 'eth_getLogs', [])).code, -32602);
  });
});

describe('eth_getLogs limits', () => {
  let limited: RunningServer;
  const RANGE = 10;
  const RESULTS = 20;

  before(async () => {
    limited = await startServer(chain.datadir, {
      limits: { methods: { maxLogsBlockRange: RANGE, maxLogsResults: RESULTS, maxFeeHistoryBlocks: 5 } },
    });
  });
  after(() => limited?.close());

  test('a range wider than the limit is -32005 naming the limit and a range that fits', async () => {
    const narrow = { address: EMIT_CONTRACT, topics: [ABSENT_TOPIC] };
    assert.deepEqual(await getLogs({ fromBlock: '0x3', toBlock: '0xc', ...narrow }, limited), []);
    assert.deepEqual(
      await failure(limited, 'eth_getLogs', [{ fromBlock: '0x3', toBlock: '0xd', ...narrow }]),
      {
        code: -32005,
        message: `query exceeds max block range ${RANGE}. Try with this block range [0x3, 0xc].`,
      },
    );
  });

  test('too many results is -32005 with the range that fits, as Infura words it', async () => {
    const counts = receipts.map((b) => b.reduce((n, r) => n + r.logs.length, 0));
    // Blocks 3, 4, 5 hold 10, 1 and 11 logs: the third block overflows 20.
    assert.deepEqual(counts.slice(3, 6), [10, 1, 11]);
    const e = await failure(limited, 'eth_getLogs', [{ fromBlock: '0x3', toBlock: '0x9' }]);
    assert.deepEqual(e, {
      code: -32005,
      message: `query returned more than ${RESULTS} results. Try with this block range [0x3, 0x4].`,
    });
    // The suggested range is answered, in full.
    const range = /\[(0x[0-9a-f]+), (0x[0-9a-f]+)\]/.exec(e.message);
    assert.ok(range, `no range in ${e.message}`);
    const logs = await getLogs({ fromBlock: range[1], toBlock: range[2] }, limited);
    assert.equal(logs.length, 11);
    // Narrowing by address or topic instead also works.
    const narrowed = await getLogs({ fromBlock: '0x3', toBlock: '0x9', address: EMIT_CONTRACT }, limited);
    assert.deepEqual(
      narrowed,
      receipts
        .slice(3, 10)
        .flatMap((b) => b.flatMap((r) => r.logs.filter((l) => l.address === EMIT_CONTRACT))),
    );
  });

  test('one block holding more matches than the limit says to narrow the filter', async () => {
    const block2 = receipts[2]?.flatMap((r) => r.logs) ?? [];
    assert.ok(block2.length > RESULTS, 'block 2 holds few logs');
    for (const filter of [{ fromBlock: '0x2', toBlock: '0x2' }, { blockHash: block2[0]?.blockHash }]) {
      const e = await failure(limited, 'eth_getLogs', [filter]);
      assert.equal(e.code, -32005);
      assert.match(e.message, /^query returned more than 20 results\. Block 0x2 alone .*narrow the filter/);
    }
  });

  test('eth_feeHistory answers the newest blocks within its limit', async () => {
    const h = await limited.rpc<FeeHistory>('eth_feeHistory', ['0x10', 'latest', [50]]);
    assert.equal(h.oldestBlock, quantityToHex(head - 4));
    assert.equal(h.gasUsedRatio.length, 5);
    assert.equal(h.baseFeePerGas.length, 6);
    assert.equal(h.reward?.length, 5);
  });
});

describe('eth_feeHistory', () => {
  test('invariants over the whole chain: lengths, ratios, the headers’ fees', async () => {
    const percentiles = [0, 10, 25, 50, 75, 90, 99, 100];
    const h = await server.rpc<FeeHistory>('eth_feeHistory', [
      quantityToHex(head + 1),
      'latest',
      percentiles,
    ]);
    const count = head + 1;
    assert.equal(h.oldestBlock, '0x0');
    assert.deepEqual(Object.keys(h), [
      'oldestBlock',
      'reward',
      'baseFeePerGas',
      'gasUsedRatio',
      'baseFeePerBlobGas',
      'blobGasUsedRatio',
    ]);
    assert.equal(h.baseFeePerGas.length, count + 1);
    assert.equal(h.baseFeePerBlobGas.length, count + 1);
    assert.equal(h.gasUsedRatio.length, count);
    assert.equal(h.blobGasUsedRatio.length, count);
    assert.equal(h.reward?.length, count);
    for (let n = 0; n < count; n++) {
      const hd = await header(n);
      assert.equal(h.baseFeePerGas[n], quantityToHex(hd.baseFeePerGas ?? 0n), `base fee ${n}`);
      const blobFee = hd.excessBlobGas === undefined ? 0n : hd.getBlobGasPrice();
      assert.equal(h.baseFeePerBlobGas[n], quantityToHex(blobFee), `blob fee ${n}`);
      assert.equal(h.gasUsedRatio[n], Number(hd.gasUsed) / Number(hd.gasLimit));
      for (const ratio of [h.gasUsedRatio[n], h.blobGasUsedRatio[n]]) {
        assert.ok(ratio !== undefined && ratio >= 0 && ratio <= 1, `ratio ${ratio} at ${n}`);
      }
      if (hd.blobGasUsed === undefined) assert.equal(h.blobGasUsedRatio[n], 0);
      else assert.equal(h.blobGasUsedRatio[n] === 0, hd.blobGasUsed === 0n);
      assert.deepEqual(h.reward?.[n], expectedRewards(n, hd.baseFeePerGas, percentiles), `rewards ${n}`);
    }
    // The next block's base fee (eth_baseFee answers the same).
    assert.equal(h.baseFeePerGas[count], await server.rpc('eth_baseFee'));
    assert.equal(h.baseFeePerBlobGas[count], await server.rpc('eth_blobBaseFee'));
  });

  test('the entry after the newest block is that block’s successor’s base fee, 1 gwei at London', async () => {
    for (const newest of [26, 30, 41, 44, head - 1]) {
      const h = await server.rpc<FeeHistory>('eth_feeHistory', ['0x3', quantityToHex(newest)]);
      assert.equal(h.oldestBlock, quantityToHex(newest - 2));
      assert.equal(h.reward, undefined);
      const next = await header(newest + 1);
      assert.equal(h.baseFeePerGas[3], quantityToHex(next.baseFeePerGas ?? 0n), `after ${newest}`);
      // As in geth, a block before Cancun names no next blob fee, even right before the fork.
      const blobs = (await header(newest)).excessBlobGas !== undefined;
      assert.equal(h.baseFeePerBlobGas[3], blobs ? quantityToHex(next.getBlobGasPrice()) : '0x0');
    }
  });

  test('block count as hex, decimal string or integer; clipped at genesis; 0 gives empty arrays', async () => {
    const hex = await server.rpc<FeeHistory>('eth_feeHistory', ['0xa', '0x1e', [50]]);
    assert.deepEqual(await server.rpc('eth_feeHistory', ['10', '0x1e', [50]]), hex);
    assert.deepEqual(await server.rpc('eth_feeHistory', [10, 30, [50]]), hex);
    assert.equal(hex.oldestBlock, '0x15');

    const clipped = await server.rpc<FeeHistory>('eth_feeHistory', ['0x64', '0x5']);
    assert.equal(clipped.oldestBlock, '0x0');
    assert.equal(clipped.gasUsedRatio.length, 6);
    assert.deepEqual(clipped.baseFeePerGas, Array(7).fill('0x0'));

    assert.deepEqual(await server.rpc('eth_feeHistory', ['0x0', 'latest', [50]]), {
      oldestBlock: '0x0',
      baseFeePerGas: [],
      gasUsedRatio: [],
      baseFeePerBlobGas: [],
      blobGasUsedRatio: [],
    });
  });

  test('bad arguments', async () => {
    const invalid: Array<[unknown[], string]> = [
      [['0x1', 'latest', [50, 40]], 'invalid argument 2: invalid reward percentile: #0:50 >= #1:40'],
      [['0x1', 'latest', [101]], 'invalid argument 2: invalid reward percentile: 101'],
      [['0x1', 'latest', [-1]], 'invalid argument 2: invalid reward percentile: -1'],
      [['0x1', 'latest', Array.from({ length: 101 }, (_, i) => i / 2)], 'invalid argument 2: invalid reward'],
      [['-1', 'latest'], 'invalid argument 0: invalid block count'],
      [['0x1'], 'missing value for required argument 1'],
    ];
    for (const [params, message] of invalid) {
      const e = await failure(server, 'eth_feeHistory', params);
      assert.equal(e.code, -32602, JSON.stringify(params));
      assert.ok(e.message.startsWith(message), e.message);
    }
    assert.deepEqual(await failure(server, 'eth_feeHistory', ['0x1', quantityToHex(head + 1)]), {
      code: -32000,
      message: `request beyond head block: requested ${head + 1}, head ${head}`,
    });
  });
});

/**
 * Rewards as the spec defines them, from the receipts: tips ascending, each weighted by its gas used;
 * a percentile takes the tip at which the running gas reaches that share of the block's gas.
 */
function expectedRewards(n: number, baseFee: bigint | undefined, percentiles: number[]): string[] {
  const txs = (receipts[n] ?? [])
    .map((r) => ({ tip: BigInt(r.effectiveGasPrice) - (baseFee ?? 0n), gas: Number(r.gasUsed) }))
    .sort((a, b) => (a.tip < b.tip ? -1 : a.tip > b.tip ? 1 : 0));
  if (txs.length === 0) return percentiles.map(() => '0x0');
  const total = txs.reduce((s, t) => s + t.gas, 0);
  return percentiles.map((p) => {
    let sum = 0;
    for (const t of txs) {
      sum += t.gas;
      if (sum >= Math.trunc((total * p) / 100)) return quantityToHex(t.tip);
    }
    return quantityToHex(txs.at(-1)?.tip ?? 0n);
  });
}

describe('gas price oracle and next-block fees', () => {
  test('eth_baseFee and eth_blobBaseFee follow from the head header', async () => {
    const hd = await header(head);
    assert.equal(await server.rpc('eth_baseFee'), quantityToHex(hd.calcNextBaseFee()));
    // No blobs have pushed the excess above the target on this chain: the minimum price.
    assert.equal(hd.excessBlobGas, 0n);
    assert.equal(await server.rpc('eth_blobBaseFee'), '0x1');
  });

  test('deterministic: geth’s starting tip when recent blocks hold no tip of 2 wei or more', async () => {
    // Every tip of the blocks the oracle samples is below geth's 2-wei floor, so each block
    // contributes the fallback and the answer is geth's starting tip, 0.001 gwei.
    for (let n = head; n > head - 40; n--) {
      const base = (await header(n)).baseFeePerGas ?? 0n;
      for (const r of receipts[n] ?? []) assert.ok(BigInt(r.effectiveGasPrice) - base < 2n, `block ${n}`);
    }
    const hd = await header(head);
    const tip = await server.rpc<string>('eth_maxPriorityFeePerGas');
    assert.equal(tip, '0xf4240');
    assert.equal(await server.rpc('eth_maxPriorityFeePerGas'), tip);
    assert.equal(await server.rpc('eth_gasPrice'), quantityToHex(BigInt(tip) + (hd.baseFeePerGas ?? 0n)));

    // A second server over the same chain answers the same.
    const other = await startServer(chain.datadir);
    try {
      assert.equal(await other.rpc('eth_gasPrice'), await server.rpc('eth_gasPrice'));
    } finally {
      await other.close();
    }
  });
});

// ---- a long range of blocks that cannot match ----------------------------------------------------

/** Bloom bits of a value: yellow paper M3:2048, written out independently of the service's code. */
function bloomAdd(bloom: Uint8Array, value: Uint8Array): void {
  const h = keccak256(value);
  for (let i = 0; i < 6; i += 2) {
    const bit = (((h[i] ?? 0) << 8) | (h[i + 1] ?? 0)) & 2047;
    const index = 255 - Math.floor(bit / 8);
    bloom[index] = (bloom[index] ?? 0) | (1 << (bit % 8));
  }
}

function bloomHas(bloom: Uint8Array, value: Uint8Array): boolean {
  const probe = new Uint8Array(256);
  bloomAdd(probe, value);
  return probe.every((b, i) => (b & (bloom[i] ?? 0)) === b);
}

const hexBytes = (hex: string) => Uint8Array.from(Buffer.from(hex.slice(2), 'hex'));

/**
 * The conformance chain followed by `count` empty blocks whose blooms are those of busy blocks (each
 * claims 20 logs from a pool of 500 contracts and topics). They are served from memory over the real
 * store: writing 10,000 blocks through LMDB's durable commits takes ~20 s, too long for a unit test,
 * and the search reads them through the same ChainStore calls either way. Counts the calls it serves.
 */
async function withSyntheticTail(base: ChainStore, count: number) {
  const baseHead = await base.getHead();
  assert.ok(baseHead, 'empty store');
  const headRlp = await base.getHeader(baseHead.hash);
  assert.ok(headRlp, 'no head header');
  const fields = RLP.decode(headRlp) as Uint8Array[];
  const pool = Array.from({ length: 500 }, (_, i) => keccak256(Uint8Array.of(i >> 8, i & 255)));
  const byNumber = new Map<bigint, Uint8Array>();
  const headers = new Map<string, { number: bigint; rlp: Uint8Array }>();
  let parent = baseHead.hash;
  for (let i = 1; i <= count; i++) {
    const number = baseHead.number + BigInt(i);
    const bloom = new Uint8Array(256);
    for (let k = 0; k < 20; k++) {
      bloomAdd(bloom, (pool[(i * 7 + k * 31) % pool.length] as Uint8Array).subarray(12));
      bloomAdd(bloom, pool[(i * 13 + k * 17) % pool.length] as Uint8Array);
    }
    const f = [...fields];
    f[0] = parent;
    f[6] = bloom;
    f[8] = bigIntToUnpaddedBytes(number);
    f[10] = new Uint8Array();
    f[11] = bigIntToUnpaddedBytes(bytesToBigInt(fields[11] ?? new Uint8Array()) + 12n * BigInt(i));
    const rlp = RLP.encode(f);
    const hash = keccak256(rlp);
    byNumber.set(number, hash);
    headers.set(toHex(hash), { number, rlp });
    parent = hash;
  }
  const calls = { getHeader: 0, getBlockReceiptsJson: 0 };
  const tailHead = { number: baseHead.number + BigInt(count), hash: parent };
  const overrides: Partial<ChainStore> = {
    getHead: async () => tailHead,
    getCanonicalHash: async (n) => byNumber.get(n) ?? base.getCanonicalHash(n),
    getBlockNumber: async (h) => headers.get(toHex(h))?.number ?? base.getBlockNumber(h),
    getHeader: async (h) => {
      calls.getHeader++;
      return headers.get(toHex(h))?.rlp ?? base.getHeader(h);
    },
    getBlockReceiptsJson: async (h) => {
      calls.getBlockReceiptsJson++;
      return headers.has(toHex(h)) ? new TextEncoder().encode('[]') : base.getBlockReceiptsJson(h);
    },
  };
  const store = new Proxy(base, {
    get(target, prop, receiver) {
      const own = overrides[prop as keyof ChainStore];
      if (own) return own;
      const value = Reflect.get(target, prop, receiver);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
  return {
    store,
    calls,
    pool,
    blooms: [...headers.values()].map((h) => (RLP.decode(h.rlp) as Uint8Array[])[6]),
  };
}

describe('eth_getLogs over 10,000 blocks that cannot match', () => {
  const COUNT = 10_000;
  let base: ChainStore;
  let app: App;
  let url: string;
  let tail: Awaited<ReturnType<typeof withSyntheticTail>>;

  before(async () => {
    base = await openLmdbStore(chain.datadir, { readOnly: true });
    tail = await withSyntheticTail(base, COUNT);
    app = await buildApp(
      { ...DEFAULT_CONFIG, port: 0, keys: null },
      { store: tail.store, datadir: chain.datadir, log: () => {} },
    );
    url = (await app.listen()).httpUrl;
  });
  after(async () => {
    await app?.close();
    await base?.close();
  });

  async function timedGetLogs(filter: Record<string, unknown>): Promise<{ result: unknown; ms: number }> {
    const start = performance.now();
    const res = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'eth_getLogs', params: [filter] }),
    });
    const body = (await res.json()) as { result?: unknown; error?: unknown };
    assert.equal(body.error, undefined);
    return { result: body.result, ms: performance.now() - start };
  }

  test('only blocks whose bloom matches are read; a warm scan decodes no header', async (t) => {
    const from = head + 1;
    const filter = {
      fromBlock: quantityToHex(from),
      toBlock: quantityToHex(from + COUNT - 1),
      address: EMIT_CONTRACT,
    };
    // Bloom false positives are possible; they are the only receipts the scan may read.
    const falsePositives = tail.blooms.filter((b) => b && bloomHas(b, hexBytes(EMIT_CONTRACT))).length;

    const cold = await timedGetLogs(filter);
    assert.deepEqual(cold.result, []);
    assert.equal(tail.calls.getBlockReceiptsJson, falsePositives);
    assert.equal(tail.calls.getHeader, COUNT);

    tail.calls.getHeader = 0;
    tail.calls.getBlockReceiptsJson = 0;
    const warm = await timedGetLogs(filter);
    assert.deepEqual(warm.result, []);
    assert.equal(tail.calls.getHeader, 0);
    assert.equal(tail.calls.getBlockReceiptsJson, falsePositives);
    t.diagnostic(`10,000 non-matching blocks: cold ${cold.ms.toFixed(0)} ms, warm ${warm.ms.toFixed(0)} ms`);

    // A topic that is in some of the blooms makes exactly those blocks be read.
    const busy = tail.pool[0] as Uint8Array;
    const claimed = tail.blooms.filter((b) => b && bloomHas(b, busy)).length;
    assert.ok(claimed > 0, 'no bloom claims the busy topic');
    tail.calls.getBlockReceiptsJson = 0;
    const { result } = await timedGetLogs({ ...filter, address: undefined, topics: [toHex(busy)] });
    assert.deepEqual(result, []);
    assert.equal(tail.calls.getBlockReceiptsJson, claimed);
  });
});
