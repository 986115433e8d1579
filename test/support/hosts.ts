import type { ChildProcess } from 'node:child_process';
import { cpSync } from 'node:fs';
import { join } from 'node:path';
import { CONFORMANCE, runCli, tempDir } from './cli.ts';
import { type CliServer, serveCli } from './devServer.ts';

/**
 * Several ethtrace API hosts on this machine, as issue 23 deploys them: separate `ethtrace start`
 * processes on ports of their own, each on a datadir of its own (a copy of one imported conformance
 * chain, as each host of a deployment imports or follows the same chain), sharing one Redis (a
 * private `redis-server`, so that a test may stop it without disturbing anything else on the
 * machine) and, when asked, one PostgreSQL database (test/support/postgres.ts: one made for the
 * run on the machine's server, or a private server a test may stop).
 */

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** One imported conformance chain, copied for each host. */
export async function conformanceDatadirs(parent: string, count: number): Promise<string[]> {
  const template = join(parent, 'template');
  const imported = await runCli([
    'import',
    '--genesis',
    join(CONFORMANCE, 'genesis.json'),
    '--datadir',
    template,
    join(CONFORMANCE, 'chain.rlp'),
  ]);
  if (imported.code !== 0) throw new Error(`import: ${imported.stderr}`);
  return Array.from({ length: count }, (_, i) => {
    const datadir = join(parent, `host-${i}`);
    cpSync(template, datadir, { recursive: true });
    return datadir;
  });
}

/** SIGTERM, and its exit code once it has exited (at once when it already has). */
async function stopHost(child: ChildProcess): Promise<number | null> {
  if (child.exitCode !== null || child.signalCode !== null) return child.exitCode;
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  child.kill('SIGTERM');
  return exited;
}

export interface Host {
  index: number;
  datadir: string;
  server: CliServer;
  /** http://127.0.0.1:PORT */
  base: string;
  /** Everything the host wrote to stderr (its JSON log). */
  stderr(): string;
  /** The JSON-RPC URL of `key` on this host. */
  url(key: string): string;
  /** The WebSocket URL of `key` on this host. */
  wsUrl(key: string): string;
}

export interface Hosts {
  hosts: Host[];
  /** The shared arguments every host was started with (--redis, --database). */
  shared: string[];
  /** SIGTERM to every host, waiting for each to exit; their exit codes. */
  stop(): Promise<Array<number | null>>;
}

/**
 * `ethtrace start --port 0 --datadir D_i SHARED OWN(i)` for each datadir, at once. `shared` holds
 * what every host of a deployment is given alike (--redis, --database), `own` what is its own
 * (--host-name).
 */
export async function startHosts(
  datadirs: string[],
  shared: string[],
  own: (index: number) => string[] = () => [],
): Promise<Hosts> {
  const started = await Promise.allSettled(
    datadirs.map((datadir, i) => serveCli(['--datadir', datadir, ...shared, ...own(i)])),
  );
  const servers = started.flatMap((s) => (s.status === 'fulfilled' ? [s.value] : []));
  const failed = started.find((s) => s.status === 'rejected');
  if (failed) {
    for (const s of servers) await stopHost(s.child);
    throw failed.reason;
  }
  const hosts = servers.map((server, index): Host => {
    let stderr = '';
    server.child.stderr?.on('data', (d) => {
      stderr += d;
    });
    const base = server.url.replace(/\/v3\/[^/]*$/, '');
    const wsBase = server.wsUrl.replace(/\/ws\/v3\/[^/]*$/, '');
    return {
      index,
      datadir: datadirs[index] ?? '',
      server,
      base,
      stderr: () => stderr,
      url: (key) => `${base}/v3/${key}`,
      wsUrl: (key) => `${wsBase}/ws/v3/${key}`,
    };
  });
  let stopped: Promise<Array<number | null>> | null = null;
  return {
    hosts,
    shared,
    stop: () => {
      stopped ??= Promise.all(hosts.map((h) => stopHost(h.server.child)));
      return stopped;
    },
  };
}

/** A temporary directory for a suite's datadirs. */
export function hostsDir(): { path: string; cleanup: () => void } {
  return tempDir('ethtrace-hosts-');
}
