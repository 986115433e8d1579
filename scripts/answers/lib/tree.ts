import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

/**
 * A checkout of the project, driven only through its CLI (`bin/ethtrace.mjs`) as a user would: the
 * tool never loads a tree's src/ into its own process, so it works the same before and after files
 * move around in there.
 */

export type Side = 'old' | 'new';
export const SIDES: readonly Side[] = ['old', 'new'];

export interface Tree {
  side: Side;
  root: string;
  cli: string;
}

export function openTree(side: Side, dir: string): Tree {
  const root = resolve(dir);
  const cli = join(root, 'bin', 'ethtrace.mjs');
  if (!existsSync(cli)) throw new Error(`--${side} ${dir}: no bin/ethtrace.mjs there`);
  return { side, root, cli };
}

export interface RunResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

function run(tree: Tree, args: string[]): Promise<RunResult> {
  const child = spawn(process.execPath, [tree.cli, ...args], {
    cwd: tree.root,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d) => {
    stdout += d;
  });
  child.stderr.on('data', (d) => {
    stderr += d;
  });
  return new Promise((resolveRun, reject) => {
    child.on('error', reject);
    child.on('close', (code) => resolveRun({ code, stdout, stderr }));
  });
}

/** `ethtrace import`; answers its summary line. */
export async function importChain(
  tree: Tree,
  opts: { genesis: string; datadir: string; files: string[]; verifyStateRoot: boolean },
): Promise<string> {
  const args = ['import', '--genesis', opts.genesis, '--datadir', opts.datadir];
  if (!opts.verifyStateRoot) args.push('--no-verify-state-root');
  const result = await run(tree, [...args, ...opts.files]);
  if (result.code !== 0) {
    throw new Error(
      `${tree.side} tree: import into ${opts.datadir} failed (exit ${result.code}):\n${result.stderr.slice(-4000)}`,
    );
  }
  return result.stderr.trim().split('\n').at(-1) ?? '';
}

export interface Server {
  tree: Tree;
  /** The printed HTTP URL. */
  url: URL;
  /** The printed WebSocket URL. */
  wsUrl: string;
  /** The last 64 KiB the server wrote to stderr (its log). */
  log(): string;
  stop(): Promise<void>;
}

const START_TIMEOUT_MS = 120_000;
const STOP_GRACE_MS = 10_000;
const LOG_KEEP = 64 * 1024;

/** `ethtrace start --port 0 --no-auth` on `datadir`, once it has printed its URLs. */
export async function startServer(
  tree: Tree,
  datadir: string,
  extra: string[] = [],
  opts: { nodeArgs?: string[]; env?: Record<string, string> } = {},
): Promise<Server> {
  const child = spawn(
    process.execPath,
    [...(opts.nodeArgs ?? []), tree.cli, 'start', '--datadir', datadir, '--port', '0', '--no-auth', ...extra],
    { cwd: tree.root, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...opts.env } },
  );
  const killOnExit = (): void => void child.kill('SIGKILL');
  process.once('exit', killOnExit);
  let stdout = '';
  let log = '';
  child.stderr.on('data', (d) => {
    log = (log + d).slice(-LOG_KEEP);
  });
  try {
    await new Promise<void>((resolveStart, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`no URLs printed within ${START_TIMEOUT_MS} ms`)),
        START_TIMEOUT_MS,
      );
      child.stdout.on('data', (d) => {
        stdout = (stdout + d).slice(-LOG_KEEP);
        if (/WebSocket\s+\S+/.test(stdout)) {
          clearTimeout(timer);
          resolveStart();
        }
      });
      child.once('exit', (code, signal) => {
        clearTimeout(timer);
        reject(new Error(`exited (${code ?? signal}) before serving`));
      });
    });
  } catch (err) {
    await stopChild(child);
    process.off('exit', killOnExit);
    throw new Error(
      `${tree.side} tree: start on ${datadir}: ${(err as Error).message}\n${stdout}\n${log.slice(-4000)}`,
    );
  }
  const http = /HTTP\s+(\S+)/.exec(stdout)?.[1];
  const ws = /WebSocket\s+(\S+)/.exec(stdout)?.[1];
  if (http === undefined || ws === undefined) throw new Error(`${tree.side} tree: no URLs in\n${stdout}`);
  return {
    tree,
    url: new URL(http),
    wsUrl: ws,
    log: () => log,
    async stop() {
      await stopChild(child);
      process.off('exit', killOnExit);
    },
  };
}

async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolveExit) => child.once('exit', () => resolveExit()));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), STOP_GRACE_MS);
  await exited;
  clearTimeout(timer);
}

/**
 * The names of a tree's method table. The table is found by what it declares (`export const
 * METHODS`), not by its path, and loaded in a child process of that tree; undefined if it cannot be
 * found or loaded (the comparison then goes by the fuzz suite's list alone).
 */
export async function methodTable(tree: Tree): Promise<{ file: string; names: string[] } | undefined> {
  const file = findDeclaring(join(tree.root, 'src'), /export const METHODS\b/);
  if (file === undefined) return undefined;
  const script = `const m = await import(${JSON.stringify(pathToFileURL(file).href)}); process.stdout.write(JSON.stringify(Object.keys(m.METHODS)));`;
  const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
    cwd: tree.root,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout.on('data', (d) => {
    out += d;
  });
  child.stderr.resume();
  const code = await new Promise<number | null>((resolveCode) => child.on('close', resolveCode));
  if (code !== 0) return undefined;
  try {
    const names = JSON.parse(out) as unknown;
    if (!Array.isArray(names) || !names.every((n) => typeof n === 'string')) return undefined;
    return { file: file.slice(tree.root.length + 1), names };
  } catch {
    return undefined;
  }
}

function findDeclaring(dir: string, pattern: RegExp): string | undefined {
  if (!existsSync(dir)) return undefined;
  const found: string[] = [];
  const walk = (d: string): void => {
    for (const name of readdirSync(d).sort()) {
      const path = join(d, name);
      if (statSync(path).isDirectory()) walk(path);
      else if (name.endsWith('.ts') && pattern.test(readFileSync(path, 'utf8'))) found.push(path);
    }
  };
  walk(dir);
  return found.length === 1 ? found[0] : undefined;
}

/**
 * A preload for `node --import`: Date.now() answers one fixed instant ($ANSWERS_FIXED_NOW_MS). A dev
 * chain's genesis carries the time it was made; made under this clock by both trees, it is the
 * same genesis. Only the short `start` that makes the chain runs with it.
 */
export const FIXED_CLOCK_PRELOAD = `const fixed = Number(process.env.ANSWERS_FIXED_NOW_MS);
if (!Number.isFinite(fixed)) throw new Error('ANSWERS_FIXED_NOW_MS is not set');
Date.now = () => fixed;
`;
