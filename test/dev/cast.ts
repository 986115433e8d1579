import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { ROOT } from '../support/cli.ts';

const CAST = join(ROOT, 'node_modules', '@foundry-rs', 'cast-linux-amd64', 'bin', 'cast');
// Only so that a broken binary fails its test instead of hanging it; a blob send computes cell
// proofs for every blob, which takes cast a few seconds on a loaded machine.
const CAST_TIMEOUT_MS = 120_000;

/** Runs the npm-installed cast binary and resolves with its stdout (rejects with its stderr). */
export function castRun(args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(
      CAST,
      args,
      { timeout: CAST_TIMEOUT_MS, maxBuffer: 64 * 1024 * 1024 },
      (error, stdout, stderr) =>
        error ? reject(new Error(`cast ${args[0]}: ${stderr || error.message}`)) : resolve(stdout),
    );
  });
}
