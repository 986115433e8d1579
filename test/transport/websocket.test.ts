import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import WebSocket from 'ws';
import { DEFAULT_LIMITS } from '../../src/config/limits.ts';
import { collect, runCli, tempDir } from '../support/cli.ts';
import { type CliServer, devChainForSuite, serveCli, stopDev } from '../support/devServer.ts';
import { rpc } from '../support/rpcClient.ts';

interface Message {
  id?: number;
  method?: string;
  params?: { subscription: string; result: { number?: string } };
  result?: unknown;
  error?: { code: number; message: string };
}

/**
 * A raw `ws` client that keeps every frame it receives with its kind (text or binary), answers
 * requests by id and hands notifications to `onNotification`.
 */
async function rawClient(url: string) {
  const ws = new WebSocket(url);
  await new Promise((resolve, reject) => ws.once('open', resolve).once('error', reject));
  const frames: Array<{ isBinary: boolean; message: Message | Message[] }> = [];
  const waiting = new Map<number, (m: Message | Message[]) => void>();
  const listeners = new Set<(m: Message) => void>();
  const closed = new Promise<{ code: number; reason: string }>((resolve) =>
    ws.once('close', (code, reason) => resolve({ code, reason: reason.toString() })),
  );
  ws.on('message', (data, isBinary) => {
    const message = JSON.parse(data.toString()) as Message | Message[];
    frames.push({ isBinary, message });
    if (Array.isArray(message)) waiting.get(message[0]?.id ?? -1)?.(message);
    else if (message.method === 'eth_subscription') for (const l of listeners) l(message);
    else waiting.get(message.id ?? -1)?.(message);
  });
  let nextId = 0;
  const send = (body: unknown, id: number) =>
    new Promise<Message | Message[]>((resolve) => {
      waiting.set(id, resolve);
      ws.send(JSON.stringify(body));
    });
  return {
    ws,
    frames,
    closed,
    call(method: string, params: unknown[] = []): Promise<Message> {
      const id = ++nextId;
      return send({ jsonrpc: '2.0', id, method, params }, id) as Promise<Message>;
    },
    batch(methods: string[]): Promise<Message[]> {
      const first = nextId + 1;
      const body = methods.map((method) => ({ jsonrpc: '2.0', id: ++nextId, method, params: [] }));
      return send(body, first) as Promise<Message[]>;
    },
    /** Resolves with the first notification `match` accepts. */
    notification(match: (m: Message) => boolean): Promise<Message> {
      return new Promise((resolve) => {
        const listener = (m: Message) => {
          if (!match(m)) return;
          listeners.delete(listener);
          resolve(m);
        };
        listeners.add(listener);
      });
    },
    async close(): Promise<void> {
      ws.close();
      await closed;
    },
  };
}

/** The resident set of a process, from /proc (the server runs as a child `ethtrace start`). */
function rssBytes(pid: number): number {
  const line = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  assert.ok(line, 'VmRSS in /proc status');
  return Number(line[1]) * 1024;
}

describe('WebSocket transport on a dev chain', () => {
  const dev = devChainForSuite('ethtrace-ws-');

  it('sends every answer and notification as a text frame (raw ws client)', async () => {
    const client = await rawClient(dev().wsUrl);
    try {
      const single = await client.call('eth_chainId');
      assert.equal(single.result, '0x7a69');
      const batch = await client.batch(['eth_chainId', 'eth_blockNumber']);
      assert.equal(batch.length, 2);
      const error = await client.call('eth_nope');
      assert.equal(error.error?.code, -32601);
      const sub = await client.call('eth_subscribe', ['newHeads']);
      const head = client.notification((m) => m.params?.subscription === sub.result);
      await rpc(dev().url, 'evm_mine');
      await head;
      assert.equal(client.frames.length, 5);
      assert.deepEqual(
        client.frames.map((f) => f.isBinary),
        [false, false, false, false, false],
      );
    } finally {
      await client.close();
    }
  });

  it("hands strings, not Blobs, to Node's WHATWG WebSocket", async () => {
    // Node 20 has the WHATWG WebSocket behind a flag (Node 22 has it by default), so it runs in a child.
    const script = `
      const ws = new WebSocket(process.env.WS_URL);
      const kinds = [];
      let mined = false;
      let notified = false;
      ws.onopen = () => ws.send(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'eth_subscribe', params: ['newHeads'] }));
      ws.onmessage = (event) => {
        kinds.push(typeof event.data === 'string' ? 'string' : Object.prototype.toString.call(event.data));
        if (typeof event.data !== 'string') return finish();
        const m = JSON.parse(event.data);
        if (m.id === 1) ws.send(JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'evm_mine', params: [] }));
        if (m.id === 2) mined = true;
        if (m.method === 'eth_subscription') notified = true;
        if (mined && notified) finish();
      };
      ws.onerror = (e) => { console.error(String(e.message ?? e)); process.exit(1); };
      function finish() { console.log(JSON.stringify(kinds)); ws.close(); }
    `;
    const child = spawn(process.execPath, ['--experimental-websocket', '--no-warnings', '-e', script], {
      env: { ...process.env, WS_URL: dev().wsUrl },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const result = await collect(child);
    assert.equal(result.code, 0, result.stderr);
    const kinds = JSON.parse(result.stdout) as string[];
    assert.deepEqual(
      kinds.filter((k) => k !== 'string'),
      [],
    );
    // The subscription id, the evm_mine answer and the newHeads notification, in some order.
    assert.equal(kinds.length, 3);
  });

  it('caps the subscriptions of one connection with a JSON-RPC error', async () => {
    const max = DEFAULT_LIMITS.webSocket.maxSubscriptionsPerConnection;
    const client = await rawClient(dev().wsUrl);
    try {
      const made = await Promise.all(
        Array.from({ length: max }, () => client.call('eth_subscribe', ['newHeads'])),
      );
      assert.ok(made.every((m) => typeof m.result === 'string'));
      const over = await client.call('eth_subscribe', ['newHeads']);
      assert.equal(over.error?.code, -32006);
      assert.match(
        over.error?.message ?? '',
        new RegExp(`too many subscriptions on this connection \\(at most ${max}\\)`),
      );
      assert.equal((await client.call('eth_unsubscribe', [made[0]?.result])).result, true);
      assert.equal(typeof (await client.call('eth_subscribe', ['newHeads'])).result, 'string');
      // The cap is per connection: another one starts from zero.
      const other = await rawClient(dev().wsUrl);
      assert.equal(typeof (await other.call('eth_subscribe', ['newHeads'])).result, 'string');
      await other.close();
    } finally {
      await client.close();
    }
  });

  it('refuses WebSocket upgrades past the per-address cap with HTTP 429, and frees a slot on close', async () => {
    const max = DEFAULT_LIMITS.webSocket.maxConnectionsPerIp;
    const clients = await Promise.all(Array.from({ length: max }, () => rawClient(dev().wsUrl)));
    try {
      const refused = await new Promise<{ status: number; body: string }>((resolve, reject) => {
        const ws = new WebSocket(dev().wsUrl);
        ws.once('open', () => reject(new Error(`connection ${max + 1} was accepted`)));
        ws.once('unexpected-response', (_req, res) => {
          let body = '';
          res.on('data', (d) => {
            body += d;
          });
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
        });
      });
      assert.equal(refused.status, 429);
      assert.match(
        refused.body,
        new RegExp(`too many WebSocket connections from 127\\.0\\.0\\.1 \\(at most ${max}\\)`),
      );
      // A closed connection's slot is free again.
      await clients.pop()?.close();
      const again = await rawClient(dev().wsUrl);
      assert.equal((await again.call('eth_chainId')).result, '0x7a69');
      clients.push(again);
    } finally {
      await Promise.all(clients.map((c) => c.close()));
    }
  });

  it('drops a client that never reads while blocks are mined, and the server stays bounded', async () => {
    const { maxBufferedBytes, maxSubscriptionsPerConnection: subs } = DEFAULT_LIMITS.webSocket;
    const pid = dev().child.pid;
    assert.ok(pid);
    const slow = await rawClient(dev().wsUrl);
    const made = await Promise.all(
      Array.from({ length: subs }, () => slow.call('eth_subscribe', ['newHeads'])),
    );
    assert.ok(made.every((m) => typeof m.result === 'string'));
    // Subscribed after the slow client's subscriptions, so notified after them for each block.
    const watcher = await rawClient(dev().wsUrl);
    const watched = (await watcher.call('eth_subscribe', ['newHeads'])).result;
    const header = JSON.stringify(
      (await rpc<object>(dev().url, 'eth_getBlockByNumber', ['latest', false])) ?? {},
    );
    // Enough blocks that the slow client's notifications are eight times the cap, more than any
    // socket buffers between the two processes can hold.
    const blocks = Math.ceil((8 * maxBufferedBytes) / (subs * header.length));
    const before = rssBytes(pid);
    slow.ws.pause();
    const start = BigInt(await rpc<string>(dev().url, 'eth_blockNumber'));
    const last = `0x${(start + BigInt(blocks)).toString(16)}`;
    const lastSeen = watcher.notification(
      (m) => m.params?.subscription === watched && m.params?.result.number === last,
    );
    // Mined a few blocks per call, so the drop and the resume below are close together.
    for (let mined = 0; mined < blocks; mined += 16) {
      await rpc(dev().url, 'anvil_mine', [`0x${Math.min(16, blocks - mined).toString(16)}`]);
    }
    await lastSeen;
    const grown = rssBytes(pid) - before;
    // Unbounded, the server would hold every unsent notification (eight times the cap).
    assert.ok(
      grown < 4 * maxBufferedBytes,
      `server RSS grew ${(grown / 2 ** 20).toFixed(1)} MiB for a client that does not read`,
    );
    let received = 0;
    const all = subs * blocks;
    const gotAll = new Promise<void>((resolve) =>
      slow.ws.on('message', () => {
        if (++received === all) resolve();
      }),
    );
    slow.ws.resume();
    const ended = await Promise.race([slow.closed, gotAll.then(() => null)]);
    assert.ok(ended, 'the client that did not read was still connected after every notification');
    // The close frame waits behind the unsent output; a client that reads it within the server's grace
    // period gets 1008 and the reason, else the server has destroyed the socket (1006, no frame).
    if (ended.code !== 1006) {
      assert.deepEqual(ended, {
        code: 1008,
        reason: 'output buffer full: the client does not read its messages',
      });
    }
    assert.ok(
      received < all,
      `${received} of ${all} notifications were queued for a client that did not read`,
    );
    // Everyone else is served as before.
    assert.equal((await watcher.call('eth_chainId')).result, '0x7a69');
    await watcher.close();
  });
});

describe('WebSocket connections of a revoked key', () => {
  const dir = tempDir('ethtrace-ws-revoke-');
  let server: CliServer | undefined;
  before(async () => {
    // Authenticated: the first start creates the key "default" and prints it.
    server = await serveCli(['--datadir', dir.path]);
  });
  after(async () => {
    if (server) await stopDev(server.child);
    dir.cleanup();
  });

  // The timeout turns the hang of a socket that is never closed into a failure.
  it('are closed once `ethtrace keys revoke` revokes their key, requests and notifications alike', {
    timeout: 60_000,
  }, async () => {
    assert.ok(server);
    const key = /created API key "default" [^:]*: (\S+)/.exec(server.output)?.[1];
    assert.ok(key, server.output);
    assert.ok(server.wsUrl.endsWith(`/ws/v3/${key}`));
    const client = await rawClient(server.wsUrl);
    const sub = await client.call('eth_subscribe', ['newHeads']);
    const head = client.notification((m) => m.params?.subscription === sub.result);
    assert.equal((await client.call('evm_mine')).error, undefined);
    await head;
    const revoked = await runCli(['keys', 'revoke', 'default', '--datadir', dir.path]);
    assert.equal(revoked.code, 0, revoked.stderr);
    // The socket sends nothing after the revoke: the server must notice it by itself.
    assert.deepEqual(await client.closed, { code: 1008, reason: 'API key revoked' });
    const http = await fetch(server.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'eth_chainId' }),
    });
    assert.equal(http.status, 401);
  });
});
