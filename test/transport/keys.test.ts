import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createPublicClient, http } from 'viem';
import WebSocket from 'ws';
import { USAGE_FLUSH_MS } from '../../src/transport/access/usage.ts';
import { KEY_RELOAD_MS } from '../../src/transport/apiKeys.ts';
import { runCli, tempDir } from '../support/cli.ts';
import { type CliServer, serveCli, stopDev } from '../support/devServer.ts';
import { postJson } from '../support/http.ts';

/**
 * Keys with settings, end to end: keys made and changed with the real `ethtrace keys` CLI while a
 * real `ethtrace start` serves them, driven with fetch (statuses and headers), `ws` and viem.
 */

const A = '0x70997970c51812dc3a010c7d01b50e0d17dc79c8';
const B = '0x3c44cdddb6a900fa2b585dd299e03d12fa4293bc';

const post = postJson;

let nextId = 0;
const req = (method: string, params: unknown[] = []) => ({ jsonrpc: '2.0', id: ++nextId, method, params });
const ethCall = (to = A) => req('eth_call', [{ to, data: '0x' }, 'latest']);

const REJECTED = { code: -32002, message: 'rejected due to project ID settings' };

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** A WebSocket with its close (code and reason) and answers by id. */
async function socket(url: string, headers: Record<string, string> = {}) {
  const ws = new WebSocket(url, { headers });
  await new Promise((resolve, reject) => ws.once('open', resolve).once('error', reject));
  const closed = new Promise<{ code: number; reason: string }>((resolve) =>
    ws.once('close', (code, reason) => resolve({ code, reason: reason.toString() })),
  );
  // biome-ignore lint/suspicious/noExplicitAny: JSON-RPC messages
  const messages: any[] = [];
  // biome-ignore lint/suspicious/noExplicitAny: JSON-RPC messages
  const waiters = new Set<(m: any) => void>();
  ws.on('message', (data) => {
    const m = JSON.parse(data.toString());
    messages.push(m);
    for (const w of waiters) w(m);
  });
  // biome-ignore lint/suspicious/noExplicitAny: JSON-RPC messages
  const next = (match: (m: any) => boolean): Promise<any> =>
    new Promise((resolve) => {
      const found = messages.find(match);
      if (found) return resolve(found);
      // biome-ignore lint/suspicious/noExplicitAny: JSON-RPC messages
      const w = (m: any) => {
        if (!match(m)) return;
        waiters.delete(w);
        resolve(m);
      };
      waiters.add(w);
    });
  return {
    ws,
    closed,
    messages,
    next,
    // biome-ignore lint/suspicious/noExplicitAny: JSON-RPC messages
    async call(method: string, params: unknown[] = []): Promise<any> {
      const body = req(method, params);
      ws.send(JSON.stringify(body));
      return next((m) => m.id === body.id);
    },
  };
}

describe('keys with settings, on a running ethtrace start', () => {
  const dir = tempDir('ethtrace-keys-');
  let server: CliServer;
  let base = '';
  let wsBase = '';
  /** The key `start` made: unlimited, used to mine blocks. */
  let adminUrl = '';

  before(async () => {
    server = await serveCli(['--datadir', dir.path]);
    adminUrl = server.url;
    base = server.url.replace(/\/v3\/[^/]+$/, '');
    wsBase = server.wsUrl.replace(/\/ws\/v3\/[^/]+$/, '');
  });
  after(async () => {
    if (server) await stopDev(server.child);
    dir.cleanup();
  });

  /** `ethtrace keys ARGS --datadir DIR`, which must succeed. */
  async function keys(...args: string[]): Promise<{ stdout: string; stderr: string }> {
    const r = await runCli(['keys', ...args, '--datadir', dir.path]);
    assert.equal(r.code, 0, r.stderr);
    return r;
  }

  /**
   * A key made with `keys create --name NAME ARGS`, once the server serves it: polled with an empty
   * batch, which the server answers without running (or charging) anything.
   */
  async function created(
    name: string,
    ...args: string[]
  ): Promise<{ key: string; secret: string; url: string }> {
    const { stdout } = await keys('create', '--name', name, ...args);
    const [key = '', secret = ''] = stdout.trim().split('\n');
    const url = `${base}/v3/${key}`;
    const auth = secret ? { authorization: `Basic ${Buffer.from(`:${secret}`).toString('base64')}` } : {};
    for (let i = 0; i < 40; i++) {
      if ((await post(url, [], auth)).status !== 401) break;
      await sleep(100);
    }
    return { key, secret, url };
  }

  it('refuses the sixth eth_call of a second for a key made with --credits-per-second 400 (429, -32005, Retry-After)', async () => {
    const { url } = await created('rate', '--credits-per-second', '400');
    // All six at once: the bucket is charged as each arrives, so the answer does not depend on how
    // long the calls take to run (sent after the five answered, a sixth found 80 credits refilled
    // whenever they took over 200 ms on a loaded machine).
    const requests = [1, 2, 3, 4, 5, 6].map(() => ethCall());
    const answers = await Promise.all(requests.map((r) => post(url, r)));
    const admitted = answers.filter((a) => a.status === 200);
    assert.equal(admitted.length, 5, answers.map((a) => a.text).join('\n'));
    for (const a of admitted) assert.equal(a.body.result, '0x');
    const i = answers.findIndex((a) => a.status !== 200);
    const sixth = answers[i];
    assert.ok(sixth);
    assert.equal(sixth.status, 429, sixth.text);
    assert.equal(sixth.headers.get('retry-after'), '1');
    assert.equal(sixth.body.jsonrpc, '2.0');
    assert.equal(sixth.body.id, requests[i]?.id);
    const { code, message, data } = sixth.body.error;
    assert.equal(code, -32005);
    assert.equal(message, 'project ID request rate exceeded');
    assert.deepEqual(Object.keys(data), ['see', 'current_rps', 'allowed_rps', 'backoff_seconds']);
    assert.equal(data.see, 'docs/keys.md#rate-limits');
    assert.equal(data.allowed_rps, 400);
    assert.ok(data.current_rps >= 480, `current_rps ${data.current_rps}`);
    assert.ok(data.backoff_seconds > 0 && data.backoff_seconds <= 0.2, `backoff ${data.backoff_seconds}`);
  });

  it("gets viem's http transport through: it backs off on 429 with Retry-After and succeeds", async () => {
    const { url } = await created('viem', '--credits-per-second', '400');
    const statuses: number[] = [];
    const client = createPublicClient({
      transport: http(url, { onFetchResponse: (res) => void statuses.push(res.status) }),
    });
    const started = Date.now();
    for (let i = 0; i < 8; i++) {
      const { data } = await client.call({ to: A, data: '0x' });
      assert.equal(data, undefined);
    }
    assert.ok(statuses.includes(429), `statuses ${statuses}`);
    assert.equal(statuses.filter((s) => s === 200).length, 8);
    // Retry-After: 1 is honoured.
    assert.ok(Date.now() - started >= 1000);
  });

  it('over WebSocket refuses with the JSON-RPC error only', async () => {
    const { key } = await created('ws-rate', '--credits-per-second', '400');
    const client = await socket(`${wsBase}/ws/v3/${key}`);
    try {
      const answers = await Promise.all(
        [1, 2, 3, 4, 5, 6].map(() => client.call('eth_call', [{ to: A }, 'latest'])),
      );
      const refused = answers.filter((a) => a.error);
      assert.equal(refused.length, 1);
      assert.equal(refused[0].error.code, -32005);
      assert.equal(refused[0].error.message, 'project ID request rate exceeded');
      assert.equal(client.ws.readyState, WebSocket.OPEN);
    } finally {
      client.ws.close();
    }
  });

  it('counts every call of a batch', async () => {
    const { url } = await created('batch', '--credits-per-second', '400');
    const five = await post(
      url,
      [1, 2, 3, 4, 5].map(() => ethCall()),
    );
    assert.equal(five.status, 200);
    assert.ok(five.body.every((a: { result?: string }) => a.result === '0x'));
    // The five calls spent the second: one more is refused, and a batch is refused whole.
    const six = await post(url, [ethCall(), req('eth_chainId')]);
    assert.equal(six.status, 429);
    assert.equal(six.body.length, 2);
    for (const a of six.body) assert.equal(a.error.code, -32005);
  });

  it('refuses for the day once the daily credits are spent (429), and closes the WebSockets of the key', async () => {
    const { key, url } = await created('daily', '--credits-per-day', '400');
    const client = await socket(`${wsBase}/ws/v3/${key}`);
    // eth_subscribe: 5 credits.
    const sub = await client.call('eth_subscribe', ['newHeads']);
    assert.match(sub.result, /^0x/);
    for (let i = 0; i < 4; i++) assert.equal((await post(url, ethCall())).status, 200);
    const refused = await post(url, ethCall());
    assert.equal(refused.status, 429);
    assert.equal(refused.headers.get('retry-after'), null);
    assert.equal(refused.body.error.code, -32005);
    assert.equal(refused.body.error.message, 'daily request count exceeded, request rate limited');
    assert.equal(refused.body.error.data.see, 'docs/keys.md#daily-quota');
    assert.match(refused.body.error.data.reset_at, /T00:00:00.000Z$/);
    const closed = await client.closed;
    assert.deepEqual(closed, { code: 1008, reason: 'daily request count exceeded' });
    // HTTP stays refused for the day.
    assert.equal((await post(url, req('eth_chainId'))).status, 429);
  });

  it('charges subscription events, and closes the socket once events spend the day', async () => {
    const { key } = await created('events', '--credits-per-day', '100');
    const client = await socket(`${wsBase}/ws/v3/${key}`);
    const sub = await client.call('eth_subscribe', ['newHeads']);
    // 5 for eth_subscribe, 50 per newHeads event: the second event spends the day.
    await post(adminUrl, req('evm_mine'));
    await client.next((m) => m.params?.subscription === sub.result);
    assert.equal(client.ws.readyState, WebSocket.OPEN);
    await post(adminUrl, req('evm_mine'));
    const closed = await client.closed;
    assert.deepEqual(closed, { code: 1008, reason: 'daily request count exceeded' });
    // Usage shows the events with their credits.
    const usage = await waitForUsage('events', (rows) =>
      rows.some((r) => r.method === 'eth_subscription:newHeads' && r.requests >= 2),
    );
    const events = usage.find((r) => r.method === 'eth_subscription:newHeads');
    assert.equal(events?.credits, 100);
    assert.equal(events?.status, 'ok');
  });

  interface Row {
    key: string;
    method: string;
    status: string;
    requests: number;
    credits: number;
  }

  /** `keys usage NAME --json` until `ready` holds (the server flushes every USAGE_FLUSH_MS). */
  async function waitForUsage(name: string, ready: (rows: Row[]) => boolean): Promise<Row[]> {
    let rows: Row[] = [];
    const deadline = Date.now() + 5 * USAGE_FLUSH_MS + 5000;
    while (Date.now() < deadline) {
      rows = JSON.parse((await keys('usage', name, '--json')).stdout) as Row[];
      if (ready(rows)) return rows;
      await sleep(USAGE_FLUSH_MS / 2);
    }
    assert.fail(`usage of ${name} never showed what was expected: ${JSON.stringify(rows)}`);
  }

  it('shows the traffic with keys usage, per method and status, with credits', async () => {
    const { url } = await created('usage', '--credits-per-second', '400', '--allow-method', 'eth_call');
    await Promise.all([1, 2, 3, 4, 5].map(() => post(url, ethCall())));
    assert.equal((await post(url, ethCall())).status, 429);
    assert.equal((await post(url, req('eth_chainId'))).status, 403);
    const rows = await waitForUsage('usage', (r) => r.length >= 3);
    const sum = (status: string) =>
      rows
        .filter((r) => r.status === status)
        .reduce((n, r) => ({ requests: n.requests + r.requests, credits: n.credits + r.credits }), {
          requests: 0,
          credits: 0,
        });
    assert.deepEqual(sum('ok'), { requests: 5, credits: 400 });
    assert.deepEqual(sum('refused-rate'), { requests: 1, credits: 0 });
    assert.deepEqual(sum('refused-allowlist'), { requests: 1, credits: 0 });
    const text = (await keys('usage', 'usage', '--since', '1h')).stdout;
    assert.match(text, /usage\s+eth_call\s+ok\s+5\s+400/);
    assert.match(text, /usage\s+eth_call\s+refused-rate\s+1\s+0/);
    assert.match(text, /usage\s+eth_chainId\s+refused-allowlist\s+1\s+0/);
  });

  describe('allow-lists (403, -32002)', () => {
    it('contract addresses: state reads, calls, logs (an address filter is required) and trace_callMany', async () => {
      const { url } = await created('contracts', '--allow-contract', A);
      const refuses = async (body: unknown) => {
        const a = await post(url, body);
        assert.equal(a.status, 403, a.text);
        assert.deepEqual(a.body.error, REJECTED);
      };
      assert.equal((await post(url, req('eth_getBalance', [A, 'latest']))).status, 200);
      await refuses(req('eth_getBalance', [B, 'latest']));
      assert.equal((await post(url, ethCall(A))).status, 200);
      await refuses(ethCall(B));
      assert.equal((await post(url, req('eth_getLogs', [{ address: A, fromBlock: '0x0' }]))).status, 200);
      await refuses(req('eth_getLogs', [{ fromBlock: '0x0' }]));
      await refuses(req('eth_getLogs', [{ address: [A, B] }]));
      const calls = (...tos: string[]) =>
        req('trace_callMany', [tos.map((to) => [{ to }, ['trace']]), 'latest']);
      assert.equal((await post(url, calls(A, A))).status, 200);
      await refuses(calls(A, B));
      // Methods that name no contract are not affected.
      assert.equal((await post(url, req('eth_blockNumber'))).status, 200);
    });

    it('origins, with *.example.com wildcards', async () => {
      const { url } = await created('origins', '--allow-origin', 'https://*.example.com');
      for (const origin of [
        'https://app.example.com',
        'https://app.example.com:8443',
        'https://a.b.example.com',
      ])
        assert.equal((await post(url, req('eth_chainId'), { origin })).status, 200, origin);
      for (const origin of [
        'https://example.com',
        'http://app.example.com',
        'https://evil.org',
        'null',
        // Not origins at all: each hides evil.com behind text that ends like a subdomain.
        'https://evil.com#.example.com',
        'https://evil.com?x=.example.com',
        'https://evil.com:443.example.com',
        'https://evil.com/.example.com',
      ]) {
        const a = await post(url, req('eth_chainId'), { origin });
        assert.equal(a.status, 403, origin);
        assert.deepEqual(a.body.error, REJECTED);
      }
      assert.equal((await post(url, req('eth_chainId'))).status, 403);
    });

    it('user agents, by substring', async () => {
      const { url } = await created('agents', '--allow-user-agent', 'Android', '--allow-user-agent', 'viem');
      assert.equal(
        (await post(url, req('eth_chainId'), { 'user-agent': 'Mozilla/5.0 (Android 14)' })).status,
        200,
      );
      assert.equal((await post(url, req('eth_chainId'), { 'user-agent': 'viem/2.57' })).status, 200);
      const a = await post(url, req('eth_chainId'), { 'user-agent': 'curl/8.5.0' });
      assert.equal(a.status, 403);
      assert.deepEqual(a.body.error, REJECTED);
    });

    it('methods; a batch is refused whole when one call is not allowed', async () => {
      const { url } = await created('methods', '--allow-method', 'eth_chainId');
      assert.equal((await post(url, req('eth_chainId'))).status, 200);
      assert.equal((await post(url, req('eth_blockNumber'))).status, 403);
      const batch = await post(url, [req('eth_chainId'), req('eth_blockNumber')]);
      assert.equal(batch.status, 403);
      assert.deepEqual(
        batch.body.map((a: { error: unknown }) => a.error),
        [REJECTED, REJECTED],
      );
    });

    it('contract addresses: state overrides that set code, or touch an account off the list, are refused in every method that takes them', async () => {
      const { url } = await created('overrides', '--allow-contract', A);
      // BALANCE(B), returned: the code that read an account off the list through an allowed one.
      const readB = `0x73${B.slice(2)}3160005260206000f3` as const;
      const code = { [A]: { code: readB } };
      const withOverrides = (overrides: unknown, call: object = { to: A, data: '0x' }) => [
        req('eth_call', [call, 'latest', overrides]),
        req('eth_estimateGas', [call, 'latest', overrides]),
        req('eth_createAccessList', [call, 'latest', overrides]),
        req('trace_call', [call, ['trace'], 'latest', overrides]),
        req('trace_callMany', [[[call, ['trace']]], 'latest', { stateOverrides: overrides }]),
        req('debug_traceCall', [call, 'latest', { stateOverrides: overrides }]),
      ];
      const refused = async (body: { method: string }, why: string) => {
        const a = await post(url, body);
        assert.equal(a.status, 403, `${body.method} ${why}: ${a.text}`);
        assert.deepEqual(a.body.error, REJECTED);
      };
      for (const body of withOverrides(code)) await refused(body, 'code on an allowed contract');
      for (const body of withOverrides({ [B]: { code: '0x00' } })) await refused(body, 'code elsewhere');
      for (const touch of [
        { balance: '0x1' },
        { nonce: '0x1' },
        { state: { [`0x${'00'.repeat(32)}`]: `0x${'00'.repeat(31)}01` } },
        { stateDiff: { [`0x${'00'.repeat(32)}`]: `0x${'00'.repeat(31)}01` } },
      ]) {
        for (const body of withOverrides({ [A]: { balance: '0x1' }, [B]: touch }))
          await refused(body, `${Object.keys(touch)[0]} off the list`);
      }
      for (const body of withOverrides({ [A]: { movePrecompileToAddress: B } }))
        await refused(body, 'a precompile moved');
      // The calls that run a contract are checked by their `to` in every one of these methods.
      await refused(req('eth_createAccessList', [{ to: B, data: '0x' }, 'latest']), 'to B');
      await refused(req('debug_traceCall', [{ to: B, data: '0x' }, 'latest']), 'to B');
      // Overrides of allowed accounts that set no code still run (A pays, as eth_createAccessList
      // charges its sender: the zero address has nothing).
      const slot = `0x${'00'.repeat(32)}`;
      const allowed = { [A]: { nonce: '0x2', stateDiff: { [slot]: `0x${'00'.repeat(31)}01` } } };
      for (const body of withOverrides(allowed, { from: A, to: A, data: '0x' })) {
        const a = await post(url, body);
        assert.equal(a.status, 200, `${body.method}: ${a.text}`);
        assert.equal(a.body.error, undefined, `${body.method}: ${a.text}`);
      }
      // viem, as a dapp would send it: the override is refused, the plain call answered.
      const client = createPublicClient({ transport: http(url, { retryCount: 0 }) });
      assert.deepEqual(await client.call({ to: A, data: '0x' }), { data: undefined });
      await assert.rejects(
        client.call({ to: A, data: '0x', stateOverride: [{ address: A, code: readB }] }),
        (e: Error) => {
          // viem reads the JSON-RPC error of the 403 (its ResourceUnavailableRpcError), under its call error.
          let cause: unknown = e;
          while (cause instanceof Error && (cause as { code?: number }).code !== -32002) cause = cause.cause;
          assert.ok(cause instanceof Error, e.message);
          return true;
        },
      );
    });

    it('AND across kinds, OR within one', async () => {
      const { url } = await created(
        'and',
        '--allow-method',
        'eth_getBalance',
        '--allow-method',
        'eth_getCode',
        '--allow-contract',
        A,
      );
      assert.equal((await post(url, req('eth_getBalance', [A, 'latest']))).status, 200);
      assert.equal((await post(url, req('eth_getCode', [A, 'latest']))).status, 200);
      assert.equal((await post(url, req('eth_getBalance', [B, 'latest']))).status, 403);
      assert.equal((await post(url, req('eth_chainId'))).status, 403);
    });
  });

  it('requires the secret of a key made with --secret, as Basic auth on HTTP and at the WebSocket upgrade (401)', async () => {
    const { key, secret, url } = await created('secret', '--secret');
    assert.match(secret, /^[0-9a-f]{64}$/);
    const basic = (s: string) => ({ authorization: `Basic ${Buffer.from(`:${s}`).toString('base64')}` });
    for (const headers of [{}, basic('wrong'), { authorization: `Bearer ${secret}` }]) {
      const a = await post(url, req('eth_chainId'), headers);
      assert.equal(a.status, 401);
      assert.equal(a.text, 'invalid project id or project secret\n');
      assert.match(a.headers.get('content-type') ?? '', /^text\/plain/);
    }
    assert.equal((await post(url, req('eth_chainId'), basic(secret))).status, 200);
    // An unknown key keeps its own message.
    assert.equal(
      (await post(`${base}/v3/nokey`, req('eth_chainId'), basic(secret))).text,
      'invalid project id\n',
    );

    const upgrade = (headers: Record<string, string>) =>
      new Promise<number>((resolve, reject) => {
        const ws = new WebSocket(`${wsBase}/ws/v3/${key}`, { headers });
        ws.once('unexpected-response', (_req, res) => resolve(res.statusCode ?? 0));
        ws.once('open', () => {
          ws.close();
          resolve(101);
        });
        ws.once('error', reject);
      });
    assert.equal(await upgrade({}), 401);
    assert.equal(await upgrade(basic('wrong')), 401);
    assert.equal(await upgrade(basic(secret)), 101);
    // The `ws` client turns a URL's user info into Basic auth too.
    const client = await socket(`${wsBase.replace('ws://', `ws://:${secret}@`)}/ws/v3/${key}`);
    assert.equal((await client.call('eth_chainId')).result, '0x7a69');
    client.ws.close();
  });

  it('applies keys update to a running server within a second', async () => {
    const { url } = await created('update');
    assert.equal((await post(url, req('eth_blockNumber'))).status, 200);
    await keys('update', 'update', '--allow-method', 'eth_chainId');
    const updated = Date.now();
    let status = 200;
    while (status === 200 && Date.now() - updated < 3 * KEY_RELOAD_MS) {
      status = (await post(url, req('eth_blockNumber'))).status;
      if (status === 200) await sleep(50);
    }
    assert.equal(status, 403);
    assert.ok(Date.now() - updated <= KEY_RELOAD_MS + 300, `${Date.now() - updated} ms`);
    assert.equal((await post(url, req('eth_chainId'))).status, 200);
    // And back: cleared, everything passes again.
    await keys('update', 'update', '--clear-methods', '--credits-per-second', '400');
    const shown = (await keys('show', 'update')).stdout;
    assert.match(shown, /methods\s+any/);
    assert.match(shown, /limits\s+400 credits\/s \(burst 400\)/);
    assert.ok(!shown.includes(url.slice(-32)));
  });
});
