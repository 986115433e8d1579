import { homedir } from 'node:os';
import { join } from 'node:path';

/** `--datadir`, else `ETHTRACE_DATADIR`, else the per-user data directory (XDG on Linux). */
export function resolveDatadir(flag: string | undefined, env: NodeJS.ProcessEnv = process.env): string {
  if (flag) return flag;
  if (env.ETHTRACE_DATADIR) return env.ETHTRACE_DATADIR;
  const dataHome = env.XDG_DATA_HOME || join(homedir(), '.local', 'share');
  return join(dataHome, 'ethtrace');
}
