import type { ChildProcess } from 'node:child_process';
import { after, before } from 'node:test';
import { collect, startCli, tempDir } from './cli.ts';

export interface CliServer {
  child: ChildProcess;
  /** What `start` printed up to its URLs. */
  output: string;
  /** The printed HTTP URL. */
  url: string;
  /** The printed WebSocket URL. */
  wsUrl: string;
}

/** `ethtrace start --port 0 ARGS`, once it has printed its URLs (the last lines of its banner). */
export async function serveCli(args: string[], env: NodeJS.ProcessEnv = {}): Promise<CliServer> {
  const child = startCli(['start', '--port', '0', ...args], { env });
  let output = '';
  await new Promise<void>((resolve, reject) => {
    child.stdout?.on('data', (d) => {
      output += d;
      if (/WebSocket\s+\S+/.test(output)) resolve();
    });
    child.once('exit', (code) => reject(new Error(`start exited ${code}: ${output}`)));
  });
  return {
    child,
    output,
    url: /HTTP\s+(\S+)/.exec(output)?.[1] ?? '',
    wsUrl: /WebSocket\s+(\S+)/.exec(output)?.[1] ?? '',
  };
}

/** `ethtrace start --no-auth` on `datadir`: a dev chain when the datadir is empty. */
export function serveDev(datadir: string, extra: string[] = []): Promise<CliServer> {
  return serveCli(['--no-auth', '--datadir', datadir, ...extra]);
}

/** Stops a started CLI server and resolves with its exit code. */
export async function stopDev(child: ChildProcess): Promise<number | null> {
  const done = collect(child);
  child.kill('SIGTERM');
  return (await done).code;
}

/** A dev chain on a fresh datadir for the enclosing describe, stopped and removed after it. */
export function devChainForSuite(prefix: string, extra: string[] = []): () => CliServer {
  const dir = tempDir(prefix);
  let server: CliServer | undefined;
  before(async () => {
    server = await serveDev(dir.path, extra);
  });
  after(async () => {
    if (server) await stopDev(server.child);
    dir.cleanup();
  });
  return () => {
    if (!server) throw new Error('the dev chain of this suite is not running');
    return server;
  };
}
