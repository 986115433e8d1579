import net from 'node:net';

/**
 * A TCP proxy in front of a PostgreSQL server that can lose what the server says at the worst time:
 * `cutAfterCommit()` lets the next COMMIT (a simple-protocol `Q` message) through to the server,
 * swallows the server's answer and cuts the connection once the server has had time to commit, so
 * the client sees its transaction fail although it was committed (an acknowledgement lost).
 * `refuse(true)` cuts every connection and refuses new ones (a database that cannot be reached).
 */
export interface PgProxy {
  url(database: string): string;
  port: number;
  cutAfterCommit(): void;
  /** COMMITs cut so far. */
  cuts: number;
  refuse(on: boolean): void;
  close(): Promise<void>;
}

const COMMIT = Buffer.from('COMMIT\0');
/** How long the server gets to commit before the connection is cut (it commits in well under this). */
const COMMIT_GRACE_MS = 300;

export async function pgProxy(target = { host: '127.0.0.1', port: 5432 }): Promise<PgProxy> {
  let armed = false;
  let refusing = false;
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    if (refusing) {
      client.destroy();
      return;
    }
    const upstream = net.connect(target.port, target.host);
    sockets.add(client);
    sockets.add(upstream);
    let swallow = false;
    const cut = () => {
      client.destroy();
      upstream.destroy();
      sockets.delete(client);
      sockets.delete(upstream);
    };
    client.on('data', (chunk: Buffer) => {
      upstream.write(chunk);
      if (armed && chunk[0] === 0x51 && chunk.includes(COMMIT)) {
        armed = false;
        proxy.cuts++;
        swallow = true;
        setTimeout(cut, COMMIT_GRACE_MS);
      }
    });
    upstream.on('data', (chunk: Buffer) => {
      if (!swallow) client.write(chunk);
    });
    client.on('error', cut);
    upstream.on('error', cut);
    client.on('close', cut);
    upstream.on('close', cut);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('no port');
  const proxy: PgProxy = {
    port: address.port,
    url: (database) => `postgres://postgres@127.0.0.1:${address.port}/${database}`,
    cutAfterCommit() {
      armed = true;
    },
    cuts: 0,
    refuse(on) {
      refusing = on;
      if (on) for (const s of sockets) s.destroy();
    },
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  };
  return proxy;
}
