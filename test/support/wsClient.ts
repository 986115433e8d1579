import WebSocket from 'ws';

/** Resolves once `check` holds, polling; rejects after `ms`. */
export async function eventually(
  check: () => boolean | Promise<boolean>,
  what: string,
  ms = 10_000,
): Promise<void> {
  const until = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

export interface RawSocket {
  /** Every eth_subscription notification received, in order. */
  notifications: Array<{ subscription: string; result: unknown }>;
  call(
    method: string,
    params?: unknown[],
  ): Promise<{ result?: unknown; error?: { code: number; message: string } }>;
  close(): void;
}

/** A raw WebSocket JSON-RPC client that keeps every notification it receives. */
export async function rawSocket(url: string): Promise<RawSocket> {
  const ws = new WebSocket(url);
  await new Promise((resolve, reject) => ws.once('open', resolve).once('error', reject));
  const notifications: RawSocket['notifications'] = [];
  const waiting = new Map<
    number,
    (m: { result?: unknown; error?: { code: number; message: string } }) => void
  >();
  ws.on('message', (data) => {
    const m = JSON.parse(data.toString());
    if (m.method === 'eth_subscription') notifications.push(m.params);
    else waiting.get(m.id)?.(m);
  });
  let id = 0;
  return {
    notifications,
    call(method, params = []) {
      const mine = ++id;
      return new Promise((resolve) => {
        waiting.set(mine, resolve);
        ws.send(JSON.stringify({ jsonrpc: '2.0', id: mine, method, params }));
      });
    },
    close: () => ws.close(),
  };
}
