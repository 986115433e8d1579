import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

export const ROOT = resolve(import.meta.dirname, '..', '..');
export const CONFORMANCE = resolve(ROOT, '..', 'shared', 'conformance', 'execution-apis');
export const CLI = join(ROOT, 'bin', 'ethtrace.mjs');

export interface CliResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** Runs the real CLI (`bin/ethtrace.mjs`) as a user would and collects its output. */
export function runCli(args: string[], opts: { env?: NodeJS.ProcessEnv } = {}): Promise<CliResult> {
  return collect(startCli(args, opts));
}

export function startCli(args: string[], opts: { env?: NodeJS.ProcessEnv } = {}): ChildProcess {
  return spawn(process.execPath, [CLI, ...args], {
    cwd: ROOT,
    // A DATABASE_URL of the machine's (CI sets one for its PostgreSQL) would move every test's keys
    // into that database: a test that wants one says so, with --database or opts.env.
    env: { ...process.env, DATABASE_URL: '', ...opts.env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
}

export function collect(child: ChildProcess): Promise<CliResult> {
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (d) => {
    stdout += d;
  });
  child.stderr?.on('data', (d) => {
    stderr += d;
  });
  return new Promise((resolveResult, reject) => {
    child.on('error', reject);
    child.on('close', (code, signal) => resolveResult({ code, signal, stdout, stderr }));
  });
}

/** A fresh temporary directory, removed by the returned cleanup. */
export function tempDir(prefix = 'ethtrace-'): { path: string; cleanup: () => void } {
  const path = mkdtempSync(join(tmpdir(), prefix));
  return { path, cleanup: () => rmSync(path, { recursive: true, force: true }) };
}
