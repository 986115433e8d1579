import { accessSync, constants, mkdirSync, statSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { StoreUnusableError, storeError } from './errors.ts';

/** `--datadir`, else `ETHTRACE_DATADIR`, else the per-user data directory (XDG on Linux). */
export function resolveDatadir(flag: string | undefined, env: NodeJS.ProcessEnv = process.env): string {
  if (flag) return flag;
  if (env.ETHTRACE_DATADIR) return env.ETHTRACE_DATADIR;
  const dataHome = env.XDG_DATA_HOME || join(homedir(), '.local', 'share');
  return join(dataHome, 'ethtrace');
}

/**
 * Makes sure `datadir` is a directory this process can write to (creating it if missing), before
 * anything is written there: every command writes into it (the store and its lock file, the keys
 * file), and finding out half-way would leave some of it made.
 */
export function prepareDatadir(datadir: string): void {
  try {
    const existing = statOrNull(datadir);
    if (existing === null) mkdirSync(datadir, { recursive: true });
    else if (!existing.isDirectory()) throw Object.assign(new Error('not a directory'), { code: 'ENOTDIR' });
    accessSync(datadir, constants.W_OK | constants.X_OK);
  } catch (error) {
    // A recursive mkdir under a read-only or missing mount point fails with ENOENT.
    if ((error as NodeJS.ErrnoException).code === 'ENOENT')
      throw new StoreUnusableError(
        `${datadir} cannot be created: give a --datadir under a writable directory`,
      );
    throw storeError(error, datadir);
  }
}

/**
 * Makes sure `datadir` is an existing directory this process can read (and write to, with
 * `writable`), making nothing: for commands that read what is there or change it (`ethtrace keys
 * list`, `revoke`), for which a missing datadir is a mistake (a wrong path, the wrong user's default)
 * rather than something to create.
 */
export function checkExistingDatadir(datadir: string, options: { writable: boolean }): void {
  try {
    const existing = statOrNull(datadir);
    if (existing === null)
      throw new StoreUnusableError(
        `${datadir} does not exist: give the --datadir that \`ethtrace start\` or \`ethtrace keys create\` uses`,
      );
    if (!existing.isDirectory()) throw Object.assign(new Error('not a directory'), { code: 'ENOTDIR' });
    if (!canAccess(datadir, constants.R_OK | constants.X_OK))
      throw new StoreUnusableError(`${datadir} is not readable: give a --datadir this user can read`);
    if (options.writable) accessSync(datadir, constants.W_OK | constants.X_OK);
  } catch (error) {
    throw storeError(error, datadir);
  }
}

function canAccess(path: string, mode: number): boolean {
  try {
    accessSync(path, mode);
    return true;
  } catch {
    return false;
  }
}

function statOrNull(path: string) {
  try {
    return statSync(path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw error;
  }
}
