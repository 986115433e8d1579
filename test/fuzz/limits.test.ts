import assert from 'node:assert/strict';
import { Agent, request as httpRequest } from 'node:http';
import { connect, type Socket } from 'node:net';
import { after, before, describe, it } from 'node:test';
import fc from 'fast-check';
import { createPublicClient, type Hex, http, InvalidInputRpcError } from 'viem';
import WebSocket from 'ws';
import { LIMIT_NAMES, type LimitName, type LimitOverrides } from '../../src/config/limits.ts';
import { tempDir } from '../support/cli.ts';
import { LOG_STORE_INITCODE, logStoreCalldata } from '../support/contracts.ts';
import { serveDev, stopDev } from '../support/devServer.ts';
import { rpc, rpcFailure } from '../support/rpcClient.ts';
import { importConformanceChain, type RunningServer, startServer, TEST_KEY } from '../support/server.ts';
import { eventually } from '../support/wsClient.ts';

/**
 * Every abuse limit (src/config/limits.ts LIMIT_NAMES), driven past its bound with seeded random
 * input against a real server on the conformance chain, each set low: the refusal is the one the
 * README's limits table promises, the server keeps answering, and
 * `ethtrace_limit_refusals_total{limit}` counts each refusal exactly. The last test checks that no
 * limit was left out.
 *
 * FUZZ_SEED and FUZZ_RUNS as in test/fuzz/rpc.test.ts.
 */

const SEED =
  process.env.FUZZ_SEED === 'random'
    ? Math.floor(Math.random() * 2 ** 31)
    : Number(process.env.FUZZ_SEED ?? 1779222135);
const RUNS = Math.max(1, Math.min(10, Number(process.env.FUZZ_RUNS ?? 5)));
const params = { seed: SEED, numRuns: RUNS };

const OTHER_KEY = 'other-key-0123456789';
const LOW: LimitOverrides = {
  requests: {
    maxBodyBytes: 4096,
    maxBatchSize: 3,
    maxResponseBytes: 4000,
    headerTimeoutMs: 400,
    bodyTimeoutMs: 400,
    maxHttpConnectionsPerIp: 24,
  },
  pool: { workers: 1, maxQueue: 1, deadlineMs: 2_000 },
  calls: { maxCalls: 2, maxSimulateBlocks: 3 },
  methods: { maxLogsBlockRange: 4, maxLogsResults: 1 },
  replay: { maxFilterBlocks: 3 },
  webSocket: {
    maxMessageBytes: 4096,
    maxBufferedBytes: 64 * 1024,
    maxSubscriptionsPerConnection: 2,
    maxConnectionsPerIp: 3,
    maxConnectionsPerKey: 2,
  },
  // Buffered changes and idle time are driven on a dev chain of their own (below), which mines.
  filters: { maxPerConnection: 2, maxPerKey: 3, maxTotal: 4 },
};

const LOOPER = `0x${'aa'.repeat(20)}`;
const LOOP = { [LOOPER]: { code: '0x5b600056' } };
const FULL_WORD = `7f${'ff'.repeat(32)}`;
const EXP_LOOP = { [LOOPER]: { code: `0x5b${FULL_WORD}${FULL_WORD}0a50600056` } };

let nextId = 0;
const req = (method: string, params: unknown[] = []) => ({ jsonrpc: '2.0', id: ++nextId, method, params });

describe('abuse limits, fuzzed past their bounds', () => {
  let chain: { datadir: string; cleanup: () => void };
  let server: RunningServer;
  const tested = new Set<LimitName>();

  before(async () => {
    chain = await importConformanceChain();
    server = await startServer(chain.datadir, { keys: [TEST_KEY, OTHER_KEY], limits: LOW });
  });
  after(async () => {
    await server?.close();
    chain?.cleanup();
  });

  async function refusals(limit: LimitName): Promise<number> {
    const text = await server.app.metrics.text();
    const line = text
      .split('\n')
      .find((l) => l.startsWith(`ethtrace_limit_refusals_total{limit="${limit}"} `));
    return Number(line?.split(' ')[1] ?? Number.NaN);
  }

  /** Runs `body`, which causes `count` refusals of `limit` (it returns that count), and checks the metric. */
  async function counts(limit: LimitName, body: () => Promise<number>): Promise<void> {
    tested.add(limit);
    const before = await refusals(limit);
    const caused = await body();
    assert.ok(caused > 0, `${limit}: nothing was refused`);
    assert.equal((await refusals(limit)) - before, caused, `${limit} refusals counted`);
    // The server still answers.
    assert.equal(typeof (await server.rpc('eth_chainId')), 'string');
  }

  // biome-ignore lint/suspicious/noExplicitAny: JSON-RPC answers of every shape
  async function post(body: string | object): Promise<{ status: number; json: any }> {
    const res = await fetch(server.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: typeof body === 'string' ? body : JSON.stringify(body),
    });
    const text = await res.text();
    let json: unknown = null;
    try {
      json = JSON.parse(text);
    } catch {}
    return { status: res.status, json };
  }

  it('body_bytes: 413 for a body over it', () =>
    counts('body_bytes', async () => {
      let n = 0;
      await fc.assert(
        fc.asyncProperty(
          fc.integer({ min: 4097, max: 40_000 }),
          fc.string({ minLength: 1, maxLength: 8 }),
          async (size, filler) => {
            const body = `{"jsonrpc":"2.0","id":1,"method":"eth_chainId","params":["${filler.replace(/["\\]/g, '').padEnd(size, 'x')}"]}`;
            const res = await fetch(server.url, {
              method: 'POST',
              headers: { 'content-type': 'application/json' },
              body,
            });
            await res.arrayBuffer();
            assert.equal(res.status, 413);
            n++;
          },
        ),
        params,
      );
      return n;
    }));

  it('batch_size: one -32600 for a batch over it', () =>
    counts('batch_size', async () => {
      let n = 0;
      await fc.assert(
        fc.asyncProperty(fc.integer({ min: 4, max: 60 }), async (length) => {
          const { status, json } = await post(Array.from({ length }, () => req('eth_chainId')));
          assert.equal(status, 200);
          assert.equal(json.length, 1);
          assert.equal(json[0].error.code, -32600);
          n++;
        }),
        params,
      );
      return n;
    }));

  it('trace_callmany_calls: -32602 past the calls allowed', () =>
    counts('trace_callmany_calls', async () => {
      let n = 0;
      await fc.assert(
        fc.asyncProperty(fc.integer({ min: 3, max: 20 }), async (calls) => {
          const list = Array.from({ length: calls }, () => [{ to: `0x${'bb'.repeat(20)}` }, ['trace']]);
          const { json } = await post(req('trace_callMany', [list, 'latest']));
          assert.equal(json.error.code, -32602);
          n++;
          // The bundle methods count every call of every bundle against the same bound.
          const call = { to: `0x${'bb'.repeat(20)}` };
          const half = Math.floor(calls / 2);
          const bundles = [
            { transactions: Array(half).fill(call) },
            { transactions: Array(calls - half).fill(call) },
          ];
          for (const method of ['eth_callMany', 'debug_traceCallMany']) {
            const answer = await post(req(method, [bundles]));
            assert.equal(answer.json.error.code, -32602, method);
            n++;
          }
        }),
        params,
      );
      return n;
    }));

  it('trace_callmany_calls: -38026 past the calls allowed in an eth_simulateV1', () =>
    counts('trace_callmany_calls', async () => {
      let n = 0;
      await fc.assert(
        fc.asyncProperty(
          fc.integer({ min: 3, max: 20 }),
          fc.integer({ min: 1, max: 3 }),
          async (calls, blocks) => {
            const call = { to: `0x${'bb'.repeat(20)}` };
            const blockStateCalls = Array.from({ length: blocks }, (_, i) => ({
              calls: Array.from({ length: i === 0 ? calls : 0 }, () => call),
            }));
            const { json } = await post(req('eth_simulateV1', [{ blockStateCalls }, 'latest']));
            assert.equal(json.error.code, -38026);
            n++;
          },
        ),
        params,
      );
      return n;
    }));

  it('simulate_blocks: -38026 past the blocks allowed in an eth_simulateV1', () =>
    counts('simulate_blocks', async () => {
      let n = 0;
      const head = BigInt(await server.rpc<string>('eth_blockNumber'));
      await fc.assert(
        fc.asyncProperty(fc.integer({ min: 4, max: 40 }), async (blocks) => {
          // As many blocks asked for, or one numbered that far past the base (gaps are blocks too).
          const blockStateCalls =
            blocks % 2 === 0
              ? Array.from({ length: blocks }, () => ({}))
              : [{ blockOverrides: { number: `0x${(head + BigInt(blocks)).toString(16)}` } }];
          const { json } = await post(req('eth_simulateV1', [{ blockStateCalls }, 'latest']));
          assert.equal(json.error.code, -38026);
          assert.match(json.error.message, /too many blocks/);
          n++;
        }),
        params,
      );
      return n;
    }));

  it('logs_block_range: -32005 for a range over it', () =>
    counts('logs_block_range', async () => {
      let n = 0;
      await fc.assert(
        fc.asyncProperty(
          fc.integer({ min: 0, max: 40 }),
          fc.integer({ min: 4, max: 13 }),
          async (from, width) => {
            const hex = (x: number) => `0x${x.toString(16)}`;
            const { json } = await post(
              req('eth_getLogs', [{ fromBlock: hex(from), toBlock: hex(from + width) }]),
            );
            assert.equal(json.error.code, -32005);
            assert.match(json.error.message, /max block range 4/);
            n++;
          },
        ),
        params,
      );
      return n;
    }));

  it('logs_results: -32005 when a range holds more logs than allowed', () =>
    counts('logs_results', async () => {
      let n = 0;
      // Windows of the chain; those holding two logs or more are refused.
      for (let from = 0; from < 54; from += 4) {
        const { json } = await post(
          req('eth_getLogs', [
            { fromBlock: `0x${from.toString(16)}`, toBlock: `0x${Math.min(from + 3, 53).toString(16)}` },
          ]),
        );
        if (json.error) {
          assert.equal(json.error.code, -32005);
          assert.match(json.error.message, /more than 1 results/);
          n++;
        } else assert.ok(json.result.length <= 1);
      }
      return n;
    }));

  it('trace_filter_blocks: -32005 for a trace_filter range over it', () =>
    counts('trace_filter_blocks', async () => {
      let n = 0;
      await fc.assert(
        fc.asyncProperty(
          fc.integer({ min: 1, max: 40 }),
          fc.integer({ min: 3, max: 12 }),
          async (from, width) => {
            const hex = (x: number) => `0x${x.toString(16)}`;
            const { json } = await post(
              req('trace_filter', [{ fromBlock: hex(from), toBlock: hex(from + width) }]),
            );
            assert.equal(json.error.code, -32005);
            n++;
          },
        ),
        params,
      );
      return n;
    }));

  it('response_bytes: -32008 for an answer over it', () =>
    counts('response_bytes', async () => {
      let n = 0;
      await fc.assert(
        fc.asyncProperty(fc.integer({ min: 1, max: 53 }), async (block) => {
          const { json } = await post(req('debug_traceBlockByNumber', [`0x${block.toString(16)}`, {}]));
          if (json.error) {
            assert.equal(json.error.code, -32008, JSON.stringify(json.error));
            n++;
          } else assert.ok(JSON.stringify(json).length <= 4000);
        }),
        { ...params, numRuns: Math.max(RUNS, 10) },
      );
      // A loop traced with the struct logger is always over it.
      const { json } = await post(
        req('debug_traceCall', [{ to: LOOPER, gas: '0x30d40' }, 'latest', { stateOverrides: LOOP }]),
      );
      assert.equal(json.error.code, -32008, JSON.stringify(json).slice(0, 300));
      return n + 1;
    }));

  it('batch_work: -32000 execution timeout past the deadline', () =>
    counts('batch_work', async () => {
      // EXP of two full words in a loop: the most CPU per unit of gas the EVM sells (a plain jump
      // loop of the gas cap ends in ~0.2 s on src/evm, well inside the deadline).
      const heavy = [{ to: LOOPER, gas: '0x2faf080' }, 'latest', EXP_LOOP];
      const { json } = await post([req('eth_call', heavy), req('eth_call', heavy), req('eth_call', heavy)]);
      // biome-ignore lint/suspicious/noExplicitAny: JSON-RPC answers of every shape
      const timedOut = json.filter((a: any) => a.error?.message === 'execution timeout');
      assert.ok(timedOut.length >= 1, JSON.stringify(json));
      for (const a of timedOut) assert.equal(a.error.code, -32000);
      return timedOut.length;
    }));

  it('pool_queue: -32005 busy at once when the queue is full', () =>
    counts('pool_queue', async () => {
      const answers = await Promise.all(
        Array.from({ length: 6 }, () =>
          post(req('eth_call', [{ to: LOOPER, gas: '0x4c4b40' }, 'latest', LOOP])),
        ),
      );
      const busy = answers.filter((a) => a.json.error?.code === -32005);
      assert.ok(busy.length >= 1, JSON.stringify(answers.map((a) => a.json)));
      return busy.length;
    }));

  function socket(key = TEST_KEY): Promise<WebSocket> {
    const ws = new WebSocket(`${server.wsBase}/ws/v3/${key}`);
    return new Promise((resolve, reject) => ws.once('open', () => resolve(ws)).once('error', reject));
  }
  const closed = (ws: WebSocket) =>
    new Promise<number>((resolve) => ws.once('close', (code) => resolve(code)));
  // biome-ignore lint/suspicious/noExplicitAny: JSON-RPC answers of every shape
  function call(ws: WebSocket, body: { id: number }): Promise<any> {
    return new Promise((resolve) => {
      const on = (data: WebSocket.RawData) => {
        const m = JSON.parse(data.toString());
        if (m.id === body.id) {
          ws.off('message', on);
          resolve(m);
        }
      };
      ws.on('message', on);
      ws.send(JSON.stringify(body));
    });
  }

  it('ws_message_bytes: a message over it closes the socket with 1009', () =>
    counts('ws_message_bytes', async () => {
      let n = 0;
      await fc.assert(
        fc.asyncProperty(fc.integer({ min: 4097, max: 30_000 }), async (size) => {
          const ws = await socket();
          const code = closed(ws);
          ws.send(JSON.stringify(req('eth_chainId', ['x'.repeat(size)])));
          assert.equal(await code, 1009);
          n++;
        }),
        params,
      );
      return n;
    }));

  it('ws_subscriptions: -32006 past the subscriptions of one connection', () =>
    counts('ws_subscriptions', async () => {
      const ws = await socket();
      try {
        for (let i = 0; i < 2; i++)
          assert.equal(typeof (await call(ws, req('eth_subscribe', ['newHeads']))).result, 'string');
        let n = 0;
        for (let i = 0; i < RUNS; i++) {
          const over = await call(
            ws,
            req('eth_subscribe', [i % 2 ? 'newHeads' : 'logs', ...(i % 2 ? [] : [{}])]),
          );
          assert.equal(over.error.code, -32006);
          n++;
        }
        return n;
      } finally {
        ws.close();
      }
    }));

  it('connections_per_key and connections_per_ip: upgrades past them refused with 429', async () => {
    const refusedWith = (key: string) =>
      new Promise<number>((resolve, reject) => {
        const ws = new WebSocket(`${server.wsBase}/ws/v3/${key}`);
        ws.once('unexpected-response', (_req, res) => resolve(res.statusCode ?? 0));
        ws.once('open', () => reject(new Error('opened')));
      });
    const open = [await socket(), await socket()];
    await counts('connections_per_key', async () => {
      assert.equal(await refusedWith(TEST_KEY), 429);
      return 1;
    });
    open.push(await socket(OTHER_KEY));
    await counts('connections_per_ip', async () => {
      assert.equal(await refusedWith(OTHER_KEY), 429);
      assert.equal(await refusedWith(TEST_KEY), 429);
      return 2;
    });
    await Promise.all(
      open.map((ws) => {
        const c = closed(ws);
        ws.close();
        return c;
      }),
    );
  });

  it('ws_buffered_bytes: a client that does not read its answers is dropped', () =>
    counts('ws_buffered_bytes', async () => {
      const ws = await socket();
      const code = closed(ws);
      (ws as unknown as { _socket: Socket })._socket.pause();
      // Answers of a few KiB each, far more than the socket buffers between the two ends hold.
      const body = JSON.stringify(req('eth_getBlockByNumber', ['0x1', true]));
      let sent = 0;
      const stop = setInterval(() => {
        for (let i = 0; i < 200 && ws.readyState === WebSocket.OPEN; i++, sent++) ws.send(body);
      }, 5);
      let refused = 0;
      while (refused === 0) {
        await new Promise((r) => setTimeout(r, 50));
        refused = (await refusals('ws_buffered_bytes')) > 0 ? 1 : 0;
        if (sent > 200_000) break;
      }
      clearInterval(stop);
      (ws as unknown as { _socket: Socket })._socket.resume();
      const ended = await code;
      assert.ok(ended === 1008 || ended === 1006, `closed with ${ended}`);
      return 1;
    }));

  /** A raw connection that writes `head`, then one more byte of `trickle` every 100 ms until the server cuts it. */
  function trickle(head: string, more: string): Promise<string> {
    return new Promise((resolve) => {
      const sock = connect(Number(new URL(server.base).port), '127.0.0.1');
      let got = '';
      let i = 0;
      const timer = setInterval(() => {
        if (!sock.destroyed && i < more.length) sock.write(more[i++] ?? ' ');
      }, 100);
      sock.on('data', (d) => {
        got += d;
      });
      sock.on('error', () => {});
      sock.on('close', () => {
        clearInterval(timer);
        resolve(got);
      });
      sock.write(head);
    });
  }

  it('header_timeout: headers trickled a byte at a time are cut with 408', () =>
    counts('header_timeout', async () => {
      const answer = await trickle(
        'POST /v3/',
        `${TEST_KEY} HTTP/1.1\r\nHost: x\r\nX-Slow: ${'a'.repeat(10_000)}`,
      );
      assert.match(answer, /^HTTP\/1\.1 408 /);
      return 1;
    }));

  it('body_timeout: a body trickled a byte at a time is cut with 408', () =>
    counts('body_timeout', async () => {
      const answer = await trickle(
        `POST /v3/${TEST_KEY} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n`,
        ' '.repeat(1000),
      );
      assert.match(answer, /^HTTP\/1\.1 408 /);
      return 1;
    }));

  it('http_connections_per_ip: connections past them answered 429 and closed; the others still served', () =>
    counts('http_connections_per_ip', async () => {
      const port = Number(new URL(server.base).port);
      const sockets: Socket[] = [];
      /** What the server says on a new connection before it is asked anything: a refusal, or nothing. */
      const said = () =>
        new Promise<string>((resolve, reject) => {
          const sock = connect(port, '127.0.0.1');
          sockets.push(sock);
          let got = '';
          sock.on('data', (d) => {
            got += d;
          });
          sock.once('error', reject);
          sock.once('end', () => resolve(got));
          // Well within the header timeout (400 ms here), which would close the admitted ones too.
          sock.once('connect', () => setTimeout(() => resolve(got), 150));
        });
      // More at once than the cap allows (idle connections of earlier tests count as well).
      const answers = await Promise.all(Array.from({ length: 30 }, said));
      const refused = answers.filter((text) => text !== '');
      assert.ok(refused.length >= 6, `${refused.length} refused`);
      for (const text of refused) {
        assert.match(text, /^HTTP\/1\.1 429 /);
        assert.match(text, /too many connections from 127\.0\.0\.1 \(at most 24\)/);
      }
      for (const sock of sockets) sock.destroy();
      await new Promise((resolve) => setTimeout(resolve, 100));
      return refused.length;
    }));

  // biome-ignore lint/suspicious/noExplicitAny: JSON-RPC answers of every shape
  type Answer = any;
  /** A POST through `agent` (one kept-alive connection), or on a connection of its own (false). */
  function postVia(agent: Agent | false, key: string, body: object): Promise<Answer> {
    return new Promise((resolve, reject) => {
      const req = httpRequest(
        `${server.base}/v3/${key}`,
        { method: 'POST', agent, headers: { 'content-type': 'application/json' } },
        (res) => {
          let text = '';
          res.setEncoding('utf8');
          res.on('data', (d) => {
            text += d;
          });
          res.on('end', () => resolve(JSON.parse(text)));
        },
      );
      req.once('error', reject);
      req.end(JSON.stringify(body));
    });
  }
  const address = fc
    .uint8Array({ minLength: 20, maxLength: 20 })
    .map((b) => `0x${Buffer.from(b).toString('hex')}`);
  /** Any of the three filters, a log filter with random criteria. */
  const newFilter = fc.oneof(
    fc.constant(req('eth_newBlockFilter')),
    fc.constant(req('eth_newPendingTransactionFilter')),
    fc
      .record(
        {
          address: fc.oneof(address, fc.array(address, { maxLength: 3 })),
          fromBlock: fc.constantFrom('latest', '0x1'),
        },
        { requiredKeys: [] },
      )
      .map((criteria) => req('eth_newFilter', [criteria])),
  );
  /** Makes a filter with a fresh id (req() numbers each), which must be installed. */
  async function installed(agent: Agent | false, key: string, body: { method: string; params: unknown[] }) {
    const a = await postVia(agent, key, { ...body, id: ++nextId });
    assert.equal(typeof a.result, 'string', JSON.stringify(a));
    return a.result as string;
  }
  async function refusedFilter(agent: Agent | false, key: string, body: object, where: RegExp) {
    const a = await postVia(agent, key, { ...body, id: ++nextId });
    assert.equal(a.error?.code, -32005, JSON.stringify(a));
    assert.match(a.error.message, where);
  }
  async function uninstall(key: string, ids: string[]) {
    for (const id of ids)
      assert.equal((await postVia(false, key, req('eth_uninstallFilter', [id]))).result, true);
  }

  it('filters_per_connection: -32005 past the filters made on one connection, HTTP or WebSocket', () =>
    counts('filters_per_connection', async () => {
      let n = 0;
      await fc.assert(
        fc.asyncProperty(
          newFilter,
          newFilter,
          fc.array(newFilter, { minLength: 1, maxLength: 4 }),
          async (a, b, over) => {
            const agent = new Agent({ keepAlive: true, maxSockets: 1 });
            try {
              const ids = [await installed(agent, TEST_KEY, a), await installed(agent, TEST_KEY, b)];
              for (const body of over) {
                await refusedFilter(
                  agent,
                  TEST_KEY,
                  body,
                  /too many filters on this connection \(at most 2\)/,
                );
                n++;
              }
              // Live filters count: one uninstalled leaves room for one more on the same connection.
              await uninstall(TEST_KEY, ids.splice(0, 1));
              ids.push(await installed(agent, TEST_KEY, over[0] ?? a));
              await uninstall(TEST_KEY, ids);
            } finally {
              agent.destroy();
            }
          },
        ),
        params,
      );
      const ws = await socket();
      try {
        const ids: string[] = [];
        for (let i = 0; i < 2; i++) ids.push((await call(ws, req('eth_newBlockFilter'))).result);
        const over = await call(ws, req('eth_newFilter', [{}]));
        assert.equal(over.error.code, -32005);
        n++;
        await uninstall(TEST_KEY, ids);
      } finally {
        ws.close();
      }
      return n;
    }));

  it("filters_per_key: -32005 past a key's filters, whatever the connection; another key cannot see them", () =>
    counts('filters_per_key', async () => {
      let n = 0;
      const ids: string[] = [];
      for (let i = 0; i < 3; i++) ids.push(await installed(false, TEST_KEY, req('eth_newBlockFilter')));
      await fc.assert(
        fc.asyncProperty(newFilter, async (body) => {
          await refusedFilter(false, TEST_KEY, body, /too many filters for this API key \(at most 3\)/);
          n++;
        }),
        params,
      );
      // A key's filters are its own: another key neither polls nor removes them.
      const other = await postVia(false, OTHER_KEY, req('eth_getFilterChanges', [ids[0]]));
      assert.deepEqual(other.error, { code: -32000, message: 'filter not found' });
      assert.equal((await postVia(false, OTHER_KEY, req('eth_uninstallFilter', [ids[0]]))).result, false);
      assert.deepEqual((await postVia(false, TEST_KEY, req('eth_getFilterChanges', [ids[0]]))).result, []);
      await uninstall(TEST_KEY, ids);
      return n;
    }));

  it('filters_total: -32005 past the filters of every key together', () =>
    counts('filters_total', async () => {
      let n = 0;
      const mine = [];
      for (let i = 0; i < 3; i++) mine.push(await installed(false, TEST_KEY, req('eth_newBlockFilter')));
      const others = [await installed(false, OTHER_KEY, req('eth_newPendingTransactionFilter'))];
      await fc.assert(
        fc.asyncProperty(newFilter, async (body) => {
          await refusedFilter(false, OTHER_KEY, body, /too many filters on this server \(at most 4\)/);
          n++;
        }),
        params,
      );
      await uninstall(TEST_KEY, mine);
      await uninstall(OTHER_KEY, others);
      return n;
    }));

  it('filter_buffer and filter_idle: a filter too far behind, or idle too long, is removed and its next poll says so', async () => {
    const dir = tempDir('ethtrace-filter-limits-');
    const dev = await serveDev(dir.path, ['--filter-max-buffer', '3', '--filter-timeout-ms', '3000']);
    const url = dev.url;
    const refusedAt = async (limit: LimitName) => {
      const text = await (await fetch(`${new URL(url).origin}/metrics`)).text();
      const line = text
        .split('\n')
        .find((l) => l.startsWith(`ethtrace_limit_refusals_total{limit="${limit}"} `));
      return Number(line?.split(' ')[1] ?? Number.NaN);
    };
    const notFound = async (id: string) =>
      assert.deepEqual(await rpcFailure(url, 'eth_getFilterChanges', [id]), {
        code: -32000,
        message: 'filter not found',
      });
    const hex = (n: number | bigint) => `0x${n.toString(16)}`;
    try {
      tested.add('filter_buffer');
      let before = await refusedAt('filter_buffer');
      let n = 0;
      await fc.assert(
        fc.asyncProperty(fc.integer({ min: 0, max: 8 }), async (blocks) => {
          const blockFilter = await rpc<string>(url, 'eth_newBlockFilter');
          const logFilter = await rpc<string>(url, 'eth_newFilter', [{}]);
          const head = BigInt(await rpc<string>(url, 'eth_blockNumber'));
          if (blocks > 0) await rpc(url, 'anvil_mine', [hex(blocks)]);
          if (blocks <= 3) {
            const hashes: string[] = [];
            for (let b = head + 1n; b <= head + BigInt(blocks); b++)
              hashes.push((await rpc<{ hash: string }>(url, 'eth_getBlockByNumber', [hex(b), false])).hash);
            assert.deepEqual(await rpc(url, 'eth_getFilterChanges', [blockFilter]), hashes);
            assert.deepEqual(await rpc(url, 'eth_getFilterChanges', [logFilter]), []);
            await rpc(url, 'eth_uninstallFilter', [blockFilter]);
            await rpc(url, 'eth_uninstallFilter', [logFilter]);
            return;
          }
          await notFound(blockFilter);
          await notFound(logFilter);
          n += 2;
          // Removed, so the next poll is an unknown filter's (and not counted again).
          await notFound(blockFilter);
        }),
        params,
      );
      const [from] = await rpc<string[]>(url, 'eth_accounts');
      await fc.assert(
        fc.asyncProperty(fc.integer({ min: 0, max: 6 }), async (count) => {
          const pending = await rpc<string>(url, 'eth_newPendingTransactionFilter');
          // One batch, so the filter's time does not run out while they are sent.
          const sends = Array.from({ length: count }, (_, i) => ({
            jsonrpc: '2.0',
            id: i,
            method: 'eth_sendTransaction',
            params: [{ from, to: from, value: '0x1' }],
          }));
          const res = await fetch(url, {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify(sends),
          });
          const answers = count === 0 ? [] : ((await res.json()) as Array<{ result: string }>);
          const sent = answers.map((a) => a.result);
          assert.equal(sent.length, count);
          if (count <= 3) {
            // A batch's calls run at once, so the pool may take them in another order than sent.
            assert.deepEqual(
              (await rpc<string[]>(url, 'eth_getFilterChanges', [pending])).sort(),
              sent.sort(),
            );
            await rpc(url, 'eth_uninstallFilter', [pending]);
            return;
          }
          await notFound(pending);
          n++;
        }),
        params,
      );
      assert.ok(n > 0, 'nothing overflowed');
      assert.equal((await refusedAt('filter_buffer')) - before, n, 'filter_buffer refusals counted');

      tested.add('filter_idle');
      before = await refusedAt('filter_idle');
      const idle = await rpc<string>(url, 'eth_newBlockFilter');
      const polled = await rpc<string>(url, 'eth_newFilter', [{}]);
      // Polled well within the 3 s while the other one waits out its time and is swept.
      await eventually(
        async () => {
          await rpc(url, 'eth_getFilterChanges', [polled]);
          return (await refusedAt('filter_idle')) > before;
        },
        'the idle filter to be removed',
        30_000,
      );
      await notFound(idle);
      assert.deepEqual(await rpc(url, 'eth_getFilterChanges', [polled]), []);
      assert.equal((await refusedAt('filter_idle')) - before, 1, 'filter_idle refusals counted');

      // A real client tells: viem's watchEvent hears -32000 filter not found when its filter fell
      // behind, makes a new filter, and goes on delivering logs.
      const deployed = await rpc<string>(url, 'eth_sendTransaction', [{ from, data: LOG_STORE_INITCODE }]);
      const { contractAddress } = await rpc<{ contractAddress: Hex }>(url, 'eth_getTransactionReceipt', [
        deployed,
      ]);
      const emit = (value: number) =>
        rpc(url, 'eth_sendTransaction', [
          { from, to: contractAddress, data: logStoreCalldata({ key: 1n, value: BigInt(value), logs: 1 }) },
        ]);
      const heard: bigint[] = [];
      const errors: Error[] = [];
      const client = createPublicClient({ transport: http(url, { retryCount: 0 }) });
      const unwatch = client.watchEvent({
        address: contractAddress,
        // Slower than blocks are mined below, so one poll finds more than 3 new blocks.
        pollingInterval: 2000,
        onLogs: (logs) => {
          for (const log of logs) heard.push(BigInt(log.data));
        },
        onError: (e) => errors.push(e),
      });
      try {
        let value = 0;
        // Until its filter is made and has heard one.
        await eventually(
          async () => {
            await emit(++value);
            await new Promise((r) => setTimeout(r, 1000));
            return heard.length > 0;
          },
          'viem to hear a log',
          30_000,
        );
        before = await refusedAt('filter_buffer');
        // Mined a few at a time while requests are answered: blocks keep coming between viem's polls.
        await rpc(url, 'anvil_mine', ['0xc8']);
        await eventually(
          () => errors.some((e) => e instanceof InvalidInputRpcError && /filter not found/.test(e.message)),
          'viem to hear that its filter is gone',
          30_000,
        );
        // Its new filter may fall behind too while the blocks are still being mined.
        assert.ok((await refusedAt('filter_buffer')) - before >= 1, 'filter_buffer refusals counted');
        const last = value;
        await eventually(
          async () => {
            await emit(++value);
            await new Promise((r) => setTimeout(r, 1000));
            return heard.some((v) => v > BigInt(last));
          },
          'viem to hear logs through a new filter',
          30_000,
        );
      } finally {
        unwatch();
      }
    } finally {
      await stopDev(dev.child);
      dir.cleanup();
    }
  });

  it('covers every limit', () => {
    assert.deepEqual(
      LIMIT_NAMES.filter((l) => !tested.has(l)),
      [],
    );
  });
});
