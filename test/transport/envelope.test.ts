import assert from 'node:assert/strict';
import { once } from 'node:events';
import { connect } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { setImmediate } from 'node:timers/promises';
import WebSocket from 'ws';
import { RequestFailed } from '../../src/core/errors.ts';
import { type ResponseChunks, RpcEnvelope } from '../../src/rpc/envelope.ts';
import { method } from '../../src/rpc/method.ts';
import { importConformanceChain, type RunningServer, startServer, TEST_KEY } from '../support/server.ts';

type Answer = {
  jsonrpc: string;
  id: unknown;
  result?: unknown;
  error?: { code: number; message: string; data?: unknown };
};

describe('JSON-RPC envelope and HTTP transport', () => {
  let chain: { datadir: string; cleanup: () => void };
  let server: RunningServer;
  before(async () => {
    chain = await importConformanceChain();
    server = await startServer(chain.datadir, {
      limits: { requests: { maxBatchSize: 5, maxBodyBytes: 64 * 1024 } },
    });
  });
  after(async () => {
    await server?.close();
    chain?.cleanup();
  });

  const post = (body: string, init: { path?: string; type?: string; method?: string } = {}) =>
    fetch(`${server.base}${init.path ?? `/v3/${TEST_KEY}`}`, {
      method: init.method ?? 'POST',
      headers: { 'content-type': init.type ?? 'application/json' },
      ...(init.method === 'GET' ? {} : { body }),
    });
  const call = async (body: unknown): Promise<Answer | Answer[]> => {
    const res = await post(typeof body === 'string' ? body : JSON.stringify(body));
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type') ?? '', /application\/json/);
    return (await res.json()) as Answer | Answer[];
  };

  it('answers a single request with the id echoed, numbers and strings alike', async () => {
    const head = await server.store.getHead();
    assert.deepEqual(await call({ jsonrpc: '2.0', id: 7, method: 'eth_blockNumber', params: [] }), {
      jsonrpc: '2.0',
      id: 7,
      result: `0x${head?.number.toString(16)}`,
    });
    const byString = (await call({ jsonrpc: '2.0', id: 'abc', method: 'eth_chainId' })) as Answer;
    assert.equal(byString.id, 'abc');
    assert.equal(byString.result, `0x${server.app.services.chain.chainId.toString(16)}`);
  });

  it('answers malformed JSON with -32700 and a null id', async () => {
    assert.deepEqual(await call('{"jsonrpc":"2.0","id":1,"method":'), {
      jsonrpc: '2.0',
      id: null,
      error: { code: -32700, message: 'parse error' },
    });
  });

  it('answers invalid request objects with -32600', async () => {
    for (const bad of [
      { jsonrpc: '2.0', id: 1 },
      { jsonrpc: '2.0', id: 1, method: '' },
      { jsonrpc: '1.0', id: 1, method: 'eth_chainId' },
      { jsonrpc: '2.0', id: { nested: true }, method: 'eth_chainId' },
      { jsonrpc: '2.0', id: 1, method: 5 },
      42,
    ]) {
      const answer = (await call(bad)) as Answer;
      assert.equal(answer.error?.code, -32600, JSON.stringify(bad));
      assert.equal(answer.error?.message, 'invalid request');
    }
  });

  it('names an unknown method in its -32601 error', async () => {
    const answer = (await call({ jsonrpc: '2.0', id: 1, method: 'eth_nope' })) as Answer;
    assert.deepEqual(answer.error, {
      code: -32601,
      message: 'the method eth_nope does not exist/is not available',
    });
    const proto = (await call({ jsonrpc: '2.0', id: 1, method: '__proto__' })) as Answer;
    assert.equal(proto.error?.code, -32601);
  });

  it('answers bad params with -32602 naming the argument and the problem', async () => {
    const cases: Array<[unknown[] | object, RegExp]> = [
      [[], /^missing value for required argument 0$/],
      [['latest', 'extra'], /^too many arguments, want at most 1$/],
      [['0xzz'], /^invalid argument 0: /],
      [['nonsense'], /^invalid argument 0: invalid block number or tag "nonsense"$/],
      [
        [{ blockHash: `0x${'00'.repeat(32)}`, blockNumber: '0x1' }],
        /^invalid argument 0: cannot specify both BlockHash and BlockNumber/,
      ],
      [{ not: 'an array' }, /^non-array args$/],
    ];
    for (const [params, message] of cases) {
      const answer = (await call({
        jsonrpc: '2.0',
        id: 1,
        method: 'eth_getBlockReceipts',
        params,
      })) as Answer;
      assert.equal(answer.error?.code, -32602, JSON.stringify(params));
      assert.match(answer.error?.message ?? '', message);
    }
  });

  it('accepts every block-parameter form of the profile for eth_getBlockReceipts', async () => {
    const head = await server.store.getHead();
    assert.ok(head);
    const headHash = `0x${Buffer.from(head.hash).toString('hex')}`;
    const expected = await server.rpc('eth_getBlockReceipts', [`0x${head.number.toString(16)}`]);
    assert.ok(Array.isArray(expected) && expected.length > 0);
    for (const form of [
      `0x${head.number.toString(16).toUpperCase()}`.replace('0X', '0x'),
      Number(head.number),
      head.number.toString(10),
      'latest',
      'pending',
      'safe',
      'finalized',
      headHash,
      { blockHash: headHash },
      { blockHash: headHash, requireCanonical: true },
      { blockNumber: `0x${head.number.toString(16)}` },
    ]) {
      assert.deepEqual(await server.rpc('eth_getBlockReceipts', [form]), expected, JSON.stringify(form));
    }
    assert.deepEqual(await server.rpc('eth_getBlockReceipts', ['earliest']), []);
    assert.equal(await server.rpc('eth_getBlockReceipts', [`0x${(head.number + 1n).toString(16)}`]), null);
    assert.equal(await server.rpc('eth_getBlockReceipts', [`0x${'ab'.repeat(32)}`]), null);
  });

  it('answers batches in request order, skipping notifications, each element on its own', async () => {
    const answer = (await call([
      { jsonrpc: '2.0', id: 1, method: 'eth_chainId' },
      { jsonrpc: '2.0', method: 'eth_chainId' },
      { jsonrpc: '2.0', id: 'x', method: '' },
      { jsonrpc: '2.0', id: 3, method: 'eth_nope' },
      { jsonrpc: '2.0', id: 4, method: 'eth_blockNumber' },
    ])) as Answer[];
    assert.deepEqual(
      answer.map((a) => [a.id, a.error?.code ?? 'ok']),
      [
        [1, 'ok'],
        ['x', -32600],
        [3, -32601],
        [4, 'ok'],
      ],
    );
  });

  it('answers an empty batch with one -32600 object and an oversized batch with a one-element array', async () => {
    assert.deepEqual(await call([]), {
      jsonrpc: '2.0',
      id: null,
      error: { code: -32600, message: 'empty batch' },
    });
    const six = Array.from({ length: 6 }, (_, i) => ({ jsonrpc: '2.0', id: i + 10, method: 'eth_chainId' }));
    const answer = (await call(six)) as Answer[];
    assert.equal(answer.length, 1);
    assert.equal(answer[0]?.id, 10);
    assert.equal(answer[0]?.error?.code, -32600);
    assert.match(answer[0]?.error?.message ?? '', /batch too large: 6 requests, at most 5/);
    const five = (await call(six.slice(0, 5))) as Answer[];
    assert.equal(five.length, 5);
  });

  it('sends an empty 200 for notifications only', async () => {
    for (const body of [
      { jsonrpc: '2.0', method: 'eth_chainId' },
      [
        { jsonrpc: '2.0', method: 'eth_chainId' },
        { jsonrpc: '2.0', method: 'eth_blockNumber' },
      ],
    ]) {
      const res = await post(JSON.stringify(body));
      assert.equal(res.status, 200);
      assert.equal(await res.text(), '');
    }
  });

  it('answers key problems with Infura’s plain-text 401s', async () => {
    const missing = await post('{}', { path: '/v3/' });
    assert.equal(missing.status, 401);
    assert.equal(await missing.text(), 'project id required in the url\n');
    const onlySlash = await post('{}', { path: '/v3//' });
    assert.equal(onlySlash.status, 401);
    assert.equal(await onlySlash.text(), 'project id required in the url\n');
    const unknownSlash = await post('{}', { path: '/v3/not-a-key/' });
    assert.equal(unknownSlash.status, 401);
    assert.equal(await unknownSlash.text(), 'invalid project id\n');
    const unknown = await post('{}', { path: '/v3/not-a-key' });
    assert.equal(unknown.status, 401);
    assert.match(unknown.headers.get('content-type') ?? '', /text\/plain/);
    assert.equal(await unknown.text(), 'invalid project id\n');
    const root = await post('{}', { path: '/' });
    assert.equal(root.status, 404);
  });

  it('serves `/v3/<key>/` and `/ws/v3/<key>/` with a trailing slash, as Infura does', async () => {
    const chainId = `0x${server.app.services.chain.chainId.toString(16)}`;
    const res = await post(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'eth_chainId' }), {
      path: `/v3/${TEST_KEY}/`,
    });
    assert.equal(res.status, 200);
    assert.deepEqual(await res.json(), { jsonrpc: '2.0', id: 1, result: chainId });
    const ws = new WebSocket(`${server.wsBase}/ws/v3/${TEST_KEY}/`);
    await new Promise((resolve, reject) => ws.once('open', resolve).once('error', reject));
    const answer = new Promise<Answer>((resolve) =>
      ws.once('message', (m) => resolve(JSON.parse(m.toString()))),
    );
    ws.send(JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'eth_chainId' }));
    assert.deepEqual(await answer, { jsonrpc: '2.0', id: 2, result: chainId });
    ws.close();
  });

  it('answers transport problems with 405, 415 and 413', async () => {
    const get = await post('', { method: 'GET' });
    assert.equal(get.status, 405);
    const put = await post('{}', { method: 'PUT' });
    assert.equal(put.status, 405);
    const text = await post('{"jsonrpc":"2.0","id":1,"method":"eth_chainId"}', { type: 'text/plain' });
    assert.equal(text.status, 415);
    const withCharset = await post('{"jsonrpc":"2.0","id":1,"method":"eth_chainId"}', {
      type: 'application/json; charset=utf-8',
    });
    assert.equal(withCharset.status, 200);
    const big = await post(
      JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'eth_chainId', params: ['x'.repeat(70_000)] }),
    );
    assert.equal(big.status, 413);
  });

  it('answers an over-size chunked body 413 while it is still being sent, and cuts an endless one', async () => {
    const limit = 64 * 1024;
    const { hostname, port } = new URL(server.base);
    const socket = connect(Number(port), hostname);
    await once(socket, 'connect');
    let response = '';
    socket.on('data', (d) => {
      response += d;
    });
    // Writes fail once the server has cut the connection; that is expected.
    socket.on('error', () => {});
    const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
    socket.write(
      `POST /v3/${TEST_KEY} HTTP/1.1\r\nhost: ${hostname}\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n`,
    );
    // A body that never ends: chunks until the server answers, then until it cuts the connection
    // (bounded far past what the server may drain after its answer).
    const chunk = `${(64 * 1024).toString(16)}\r\n${' '.repeat(64 * 1024)}\r\n`;
    let sent = 0;
    let sentAtAnswer = -1;
    while (!socket.destroyed && sent < 256 * 1024 * 1024) {
      if (response !== '' && sentAtAnswer < 0) sentAtAnswer = sent;
      if (!socket.write(chunk)) await Promise.race([new Promise((r) => socket.once('drain', r)), closed]);
      else await setImmediate();
      sent += 64 * 1024;
    }
    assert.match(response, /^HTTP\/1\.1 413 /, `no answer after ${sent} bytes of a body over ${limit}`);
    assert.match(response, /content length too large/);
    assert.ok(sentAtAnswer >= 0 && sentAtAnswer < 4 * 1024 * 1024, `answered after ${sentAtAnswer} bytes`);
    await closed;
    assert.ok(sent < 128 * 1024 * 1024, `the endless body was read for ${sent} bytes`);
  });

  it('lets a client that sends its whole over-size body first (fetch) read the 413', async () => {
    // Far more than the kernel's socket buffers hold, so the server must read on after its answer.
    const body = JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'eth_chainId',
      params: ['x'.repeat(1 << 20)],
    });
    const declared = await fetch(server.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body,
    });
    assert.equal(declared.status, 413);
    assert.match(await declared.text(), /content length too large/);
    const chunked = await fetch(server.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: new Blob([body]).stream(),
      duplex: 'half',
    } as RequestInit);
    assert.equal(chunked.status, 413);
    await chunked.text();
    // The connection that drained a refused body still serves.
    const after = await fetch(server.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"jsonrpc":"2.0","id":2,"method":"eth_chainId"}',
    });
    assert.equal(after.status, 200);
  });

  it('keeps a WebSocket open across a malformed message and answers in the same shapes', async () => {
    const ws = new WebSocket(server.wsUrl);
    const messages: Answer[] = [];
    const next = () =>
      new Promise<Answer | Answer[]>((resolve) =>
        ws.once('message', (m) => resolve(JSON.parse(m.toString()))),
      );
    await new Promise((resolve, reject) => {
      ws.once('open', resolve);
      ws.once('error', reject);
    });
    ws.send('{not json');
    messages.push((await next()) as Answer);
    ws.send(JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'eth_chainId' }));
    messages.push((await next()) as Answer);
    ws.send(
      JSON.stringify([
        { jsonrpc: '2.0', id: 3, method: 'eth_blockNumber' },
        { jsonrpc: '2.0', id: 4, method: 'nope' },
      ]),
    );
    const batch = (await next()) as Answer[];
    ws.close();
    assert.equal(messages[0]?.error?.code, -32700);
    assert.equal(messages[1]?.result, `0x${server.app.services.chain.chainId.toString(16)}`);
    assert.deepEqual(
      batch.map((a) => a.id),
      [3, 4],
    );
    assert.equal(batch[1]?.error?.code, -32601);
  });

  it('echoes every id as the exact text sent, escapes and all, over HTTP and WebSocket, single and batch, results and errors', async () => {
    // Each id as it is written in the body; JSON.parse would turn `"\u0041\n"` into "A\n", which
    // JSON.stringify writes back as `"A\n"`, not as sent.
    const ids = ['"\\u0041\\n"', '"\\/"', '"a\\"b"', '"\\ud83d\\ude00"', '"\\u00e9"', '"plain"', '1e400'];
    const request = (id: string, method: string, params = '[]') =>
      `{"jsonrpc":"2.0","id":${id},"method":"${method}","params":${params}}`;
    // The id's text in an answer, cut out of the answer's own text (an answer starts with jsonrpc and id).
    const idsIn = (text: string): string[] =>
      [...text.matchAll(/\{"jsonrpc":"2\.0","id":("(?:[^"\\]|\\.)*"|[^,]*),/g)].map((m) => m[1] ?? '');
    const bodies = ids.flatMap((id) => [
      request(id, 'eth_chainId'),
      request(id, 'eth_nope'),
      request(id, 'eth_getBlockReceipts', '["nonsense"]'),
    ]);
    const ws = new WebSocket(server.wsUrl);
    await once(ws, 'open');
    const viaWs = async (body: string): Promise<string> => {
      const answer = once(ws, 'message');
      ws.send(body);
      return String((await answer)[0]);
    };
    try {
      for (const body of bodies) {
        const id = /"id":(.*),"method"/.exec(body)?.[1] ?? '';
        const http = await (await post(body)).text();
        assert.deepEqual(idsIn(http), [id], `HTTP ${body} → ${http}`);
        const socket = await viaWs(body);
        assert.deepEqual(idsIn(socket), [id], `WebSocket ${body} → ${socket}`);
      }
      // A batch (within the server's 5), each answer in the request's place.
      const batch = `[${bodies.slice(0, 5).join(' , ')}]`;
      const want = bodies.slice(0, 5).map((b) => /"id":(.*),"method"/.exec(b)?.[1] ?? '');
      assert.deepEqual(idsIn(await (await post(batch)).text()), want);
      assert.deepEqual(idsIn(await viaWs(batch)), want);
      // A parse error has no id to echo: null.
      assert.deepEqual(idsIn(await (await post('{"jsonrpc":"2.0","id":"\\u0041",')).text()), ['null']);
    } finally {
      ws.close();
    }
  });

  it('refuses a WebSocket upgrade without a valid key with the same 401 texts', async () => {
    for (const [path, text] of [
      ['/ws/v3/wrong', 'invalid project id\n'],
      ['/ws/v3/wrong/', 'invalid project id\n'],
      ['/ws/v3/', 'project id required in the url\n'],
      ['/ws/v3//', 'project id required in the url\n'],
    ] as const) {
      const ws = new WebSocket(`${server.wsBase}${path}`);
      const response = await new Promise<{ status: number; body: string }>((resolve) => {
        ws.on('unexpected-response', (_req, res) => {
          let body = '';
          res.on('data', (d) => {
            body += d;
          });
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
        });
      });
      assert.deepEqual(response, { status: 401, body: text });
    }
  });
});

describe('the envelope with failing methods', () => {
  const envelope = new RpcEnvelope(
    {
      boom: method([], () => {
        throw new TypeError('secret internals at /some/path.ts:12');
      }),
      refuse: method([], () => {
        throw new RequestFailed('not today', { why: 'testing' });
      }),
    },
    { services: {} },
    { maxBatchSize: 10 },
    () => {},
  );
  const answer = async (body: unknown) => {
    const { chunks } = await envelope.handle(JSON.stringify(body));
    assert.ok(chunks);
    return JSON.parse(
      Buffer.concat(chunks.map((c) => (typeof c === 'string' ? Buffer.from(c) : c))).toString(),
    );
  };

  it('turns a bug into -32603 without leaking its message or stack', async () => {
    const a = await answer({ jsonrpc: '2.0', id: 1, method: 'boom' });
    assert.deepEqual(a.error, { code: -32603, message: 'internal error' });
  });

  it('passes a method error through with its code, message and data', async () => {
    const a = await answer({ jsonrpc: '2.0', id: 1, method: 'refuse' });
    assert.deepEqual(a.error, { code: -32000, message: 'not today', data: { why: 'testing' } });
  });
});

describe('the envelope with a gate', () => {
  const envelope = new RpcEnvelope(
    {
      echo: method([], async () => 'ok'),
      refuse: method([], () => {
        throw new RequestFailed('not today');
      }),
    },
    { services: {} },
    { maxBatchSize: 10 },
    () => {},
  );
  const text = (chunks: ResponseChunks | null) =>
    chunks && Buffer.concat(chunks.map((c) => (typeof c === 'string' ? Buffer.from(c) : c))).toString();
  const refusal = {
    httpStatus: 429,
    error: { code: -32005, message: 'slow down' },
    headers: { 'retry-after': '1' },
  };

  it('hands the gate the well-formed calls before any runs, and each outcome after', async () => {
    const admitted: unknown[] = [];
    const answered: unknown[] = [];
    const answer = await envelope.handle(
      JSON.stringify([
        { jsonrpc: '2.0', id: 1, method: 'echo', params: [] },
        { jsonrpc: '2.0', id: 2, method: 'refuse' },
        { jsonrpc: '2.0', id: 3, method: 'nope' },
        { id: 4, method: 'echo' },
        { jsonrpc: '2.0', method: 'echo' },
      ]),
      null,
      {
        admit: (calls) => {
          admitted.push(...calls);
          return null;
        },
        answered: (call, code) => answered.push([call.method, code]),
      },
    );
    assert.deepEqual(admitted, [
      { method: 'echo', params: [] },
      { method: 'refuse', params: undefined },
      { method: 'nope', params: undefined },
      { method: 'echo', params: undefined },
    ]);
    // The malformed request is answered -32600 and heard by no one; the notification is heard.
    // Outcomes come as calls finish: compared in a fixed order.
    assert.deepEqual(answered.map((a) => JSON.stringify(a)).sort(), [
      '["echo",null]',
      '["echo",null]',
      '["nope",-32601]',
      '["refuse",-32000]',
    ]);
    assert.equal(answer.httpStatus, 200);
    assert.equal(JSON.parse(text(answer.chunks) ?? '').length, 4);
  });

  it('answers every request of a refused body with the refusal, its status and headers, and runs none', async () => {
    let ran = 0;
    const gate = { admit: () => refusal, answered: () => ran++ };
    const single = await envelope.handle(
      JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'echo' }),
      null,
      gate,
    );
    assert.deepEqual(
      { status: single.httpStatus, headers: single.headers, body: JSON.parse(text(single.chunks) ?? '') },
      {
        status: 429,
        headers: { 'retry-after': '1' },
        body: { jsonrpc: '2.0', id: 7, error: { code: -32005, message: 'slow down' } },
      },
    );
    // A raw body: the large numeric id and the escaped string id come back as their source text.
    const batch = await envelope.handle(
      '[{"jsonrpc":"2.0","id":"\\u0061","method":"echo"},{"jsonrpc":"2.0","method":"echo"},' +
        '{"jsonrpc":"2.0","id":12345678901234567890123,"method":"echo"}]',
      null,
      gate,
    );
    assert.equal(batch.httpStatus, 429);
    assert.equal(
      text(batch.chunks),
      '[{"jsonrpc":"2.0","id":"\\u0061","error":{"code":-32005,"message":"slow down"}},' +
        '{"jsonrpc":"2.0","id":12345678901234567890123,"error":{"code":-32005,"message":"slow down"}}]',
    );
    assert.equal(ran, 0);
  });

  it('asks no gate about a body with no well-formed call', async () => {
    const answer = await envelope.handle('{"id":1}', null, { admit: () => refusal });
    assert.equal(answer.httpStatus, 200);
    assert.match(text(answer.chunks) ?? '', /-32600/);
  });
});
