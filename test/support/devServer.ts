import type { ChildProcess } from 'node:child_process';
import { collect, startCli } from './cli.ts';

export interface DevServer {
  child: ChildProcess;
  /** What `start` printed up to its URLs. */
  output: string;
  /** The printed HTTP URL. */
  url: string;
  /** The printed WebSocket URL. */
  wsUrl: string;
}

/** `ethtrace start --no-auth` on `datadir` (a dev chain when empty), once it prints its URLs. */
export async function serveDev(datadir: string, extra: string[] = []): Promise<DevServer> {
  const child = startCli(['start', '--port', '0', '--no-auth', '--datadir', datadir, ...extra]);
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

export async function stopDev(child: ChildProcess): Promise<void> {
  const done = collect(child);
  child.kill('SIGTERM');
  await done;
}
