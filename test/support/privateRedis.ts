import { type ChildProcess, spawn } from 'node:child_process';
import { createServer } from 'node:net';

/** A port nothing listens on now (the OS's choice), for a server that must be told its port. */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  await new Promise((resolve) => server.close(resolve));
  if (address === null || typeof address === 'string') throw new Error('no port');
  return address.port;
}

/**
 * A `redis-server` of a test's own, in memory only, so that the test may kill, restart or pause it
 * without disturbing the machine's Redis (which other tests and CI share).
 */
export interface PrivateRedis {
  port: number;
  url: string;
  /** Kills it (its data is in memory only, so it comes back empty). */
  kill(): Promise<void>;
  /** Starts it again, empty, on the same port. */
  restart(): Promise<void>;
  /** SIGSTOP / SIGCONT: a Redis that holds its connections but answers nothing. */
  signal(signal: 'SIGSTOP' | 'SIGCONT'): void;
}

/** Starts a private Redis on `port` (a free one by default), once it accepts connections. */
export async function startRedis(port?: number): Promise<PrivateRedis> {
  const at = port ?? (await freePort());
  let child = await launch(at);
  return {
    port: at,
    url: `redis://127.0.0.1:${at}/0`,
    kill: () => killed(child),
    restart: async () => {
      await killed(child);
      child = await launch(at);
    },
    signal: (signal) => {
      child.kill(signal);
    },
  };
}

async function launch(port: number): Promise<ChildProcess> {
  const child = spawn(
    'redis-server',
    ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let output = '';
  await new Promise<void>((resolve, reject) => {
    child.stdout?.on('data', (d) => {
      output += d;
      if (output.includes('Ready to accept connections')) resolve();
    });
    child.once('exit', (code) => reject(new Error(`redis-server exited ${code}: ${output}`)));
  });
  return child;
}

async function killed(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGKILL');
  await exited;
}
