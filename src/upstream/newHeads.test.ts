import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { WebSocketServer } from 'ws';
import { caughtCounts, onCaught } from '../core/caught.ts';
import { NewHeadsDoorbell } from './newHeads.ts';

describe('the newHeads doorbell', () => {
  it('logs and counts a message that is not JSON, and still rings on the next notification', async () => {
    // A real WebSocket server: it confirms the subscription, sends a torn message, then a notification.
    const server = new WebSocketServer({ port: 0, host: '127.0.0.1' });
    await new Promise<void>((resolve) => server.once('listening', () => resolve()));
    server.on('connection', (socket) =>
      socket.once('message', () => {
        socket.send(JSON.stringify({ jsonrpc: '2.0', id: 1, result: '0x1' }));
        socket.send('{"jsonrpc":"2.0","method":"eth_subscr');
        socket.send(JSON.stringify({ jsonrpc: '2.0', method: 'eth_subscription', params: {} }));
      }),
    );
    const lines: string[] = [];
    const stop = onCaught((site, line) => lines.push(`${site}: ${line}`));
    const before = caughtCounts().get('upstream-newheads-message') ?? 0;
    const { port } = server.address() as { port: number };
    let rung: () => void = () => undefined;
    const rang = new Promise<void>((resolve) => {
      rung = resolve;
    });
    const doorbell = new NewHeadsDoorbell(
      `ws://127.0.0.1:${port}`,
      () => rung(),
      () => undefined,
    );
    try {
      doorbell.start();
      await rang;
    } finally {
      doorbell.stop();
      stop();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
    assert.equal((caughtCounts().get('upstream-newheads-message') ?? 0) - before, 1);
    assert.equal(lines.length, 1);
    assert.match(
      lines[0] ?? '',
      /^upstream-newheads-message: upstream head: a message on the newHeads subscription of ws:\/\/127\.0\.0\.1:\d+\/? is not JSON \(.+\): \{"jsonrpc":"2\.0","method":"eth_subscr$/,
    );
  });
});
