import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { describe, it } from 'node:test';
import { createWalletClient, type Hex, http, publicActions } from 'viem';
import { collect } from '../support/cli.ts';
import { devAccount } from '../support/devAccounts.ts';
import { devChainForSuite } from '../support/devServer.ts';
import { rpc } from '../support/rpcClient.ts';

/**
 * The WHATWG WebSocket a browser or Node ≥ 22 gives a dapp, used end to end: a request and a newHeads
 * subscription. It runs in a child node (Node 20 needs --experimental-websocket for the global), which
 * reports each message it receives as a line: the type of `event.data` (a string for a text frame, a
 * Blob for a binary one) and the message.
 */

const CLIENT = `
const ws = new WebSocket(process.argv[1]);
ws.onmessage = async (event) => {
  const type = typeof event.data === 'string' ? 'string' : event.data?.constructor?.name ?? typeof event.data;
  const text = typeof event.data === 'string' ? event.data : await new Response(event.data).text();
  console.log(JSON.stringify({ type, message: JSON.parse(text) }));
};
ws.onopen = () => {
  ws.send(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'eth_chainId', params: [] }));
  ws.send(JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'eth_subscribe', params: ['newHeads'] }));
};
ws.onerror = (e) => { console.error('websocket error', e.message ?? e); process.exit(3); };
process.stdin.on('end', () => ws.close());
process.stdin.resume();
`;

interface Line {
  type: string;
  message: {
    id?: number;
    result?: unknown;
    method?: string;
    params?: { subscription: string; result: { hash: Hex } };
  };
}

describe('a native (WHATWG) WebSocket client', () => {
  const dev = devChainForSuite('ethtrace-native-ws-');

  it('gets text frames: an answer, a subscription id and a newHeads notification', async () => {
    const child = spawn(
      process.execPath,
      ['--experimental-websocket', '--no-warnings', '-e', CLIENT, dev().wsUrl],
      {
        stdio: ['pipe', 'pipe', 'pipe'],
      },
    );
    const done = collect(child);
    const lines: Line[] = [];
    const reader = createInterface({ input: child.stdout });
    const wallet = createWalletClient({ account: devAccount(8), transport: http(dev().url) }).extend(
      publicActions,
    );
    let sent: Promise<{ blockHash: Hex }> | undefined;
    for await (const text of reader) {
      const line = JSON.parse(text) as Line;
      lines.push(line);
      // Once subscribed, a transaction makes a block, whose head must arrive.
      if (line.message.id === 2) {
        sent = wallet
          .sendTransaction({ to: devAccount(9).address, value: 1n, chain: null })
          .then((hash) => wallet.waitForTransactionReceipt({ hash }));
      }
      const seen = (what: (l: Line) => boolean) => lines.some(what);
      if (seen((l) => l.message.method === 'eth_subscription') && seen((l) => l.message.id === 1)) break;
    }
    child.stdin.end();
    const { code, stderr } = await done;
    assert.equal(code, 0, stderr);
    assert.ok(sent, 'the subscription was answered');
    const receipt = await sent;
    assert.deepEqual(
      lines.map((l) => l.type),
      ['string', 'string', 'string'],
    );
    const byId = (id: number) => lines.find((l) => l.message.id === id)?.message.result;
    assert.equal(byId(1), await rpc<Hex>(dev().url, 'eth_chainId'));
    const notification = lines.find((l) => l.message.method === 'eth_subscription')?.message.params;
    assert.equal(notification?.subscription, byId(2));
    assert.equal(notification?.result.hash, receipt.blockHash);
  });
});
