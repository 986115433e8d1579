import { UserError } from './core/errors.ts';
import type { LogLine } from './core/log.ts';
import { openLmdbStore, storeExists } from './store/lmdb/index.ts';
import { WriterLock, type WriterRecord } from './store/writerLock.ts';

/**
 * Who may write a datadir while others use it (src/store/writerLock.ts holds the lock):
 *
 * - one writer at a time: a `start` of a dev chain, a `start --follow`, a `start --upstream` (its
 *   cache), or an `import`. A second one is refused with one line naming the first's pid and port.
 * - a `start` of an imported (or followed) chain serves it read-only and takes no lock: several may
 *   serve one datadir, beside the one writer adding its blocks (an `import`, or a follower), which
 *   they notice as `--processes` does with its own follower. A dev chain cannot be served that way:
 *   a `start` on it writes (its pool, its miner), so it is a writer.
 */

/** Refused when another process writes `datadir`. */
export function claimWriter(
  datadir: string,
  command: WriterRecord['command'],
  writes: 'dev chain' | 'followed chain' | 'upstream cache' | 'imported chain',
): WriterLock {
  const claim = WriterLock.claim(datadir, { command, writes });
  if (claim.holder) throw new UserError(refusal(datadir, claim.holder));
  return claim.lock;
}

/** How often a `start` looks again while an `import` makes the chain of an empty datadir. */
const WAIT_FOR_IMPORT_MS = 100;

/**
 * A `start` with no upstream: the write side when the datadir is empty or holds a dev chain (this
 * start then makes or resumes it), null when it holds another chain, served read-only. When an
 * `import` writes an empty datadir, the start waits for its first block and serves that chain, as
 * when the import had come first (README, Commands); the wait ends when it stores it or exits.
 */
export async function claimDevChain(datadir: string, log: LogLine): Promise<WriterLock | null> {
  let told = false;
  for (;;) {
    if ((await holds(datadir)) === 'another chain') return null;
    const claim = WriterLock.claim(datadir, { command: 'start', writes: 'dev chain' });
    if (claim.lock) return claim.lock;
    if (claim.holder.command !== 'import' || (await holds(datadir)) === 'a dev chain')
      throw new UserError(refusal(datadir, claim.holder));
    if (!told)
      log(`ethtrace import (pid ${claim.holder.pid}) is making the chain of ${datadir}: waiting to serve it`);
    told = true;
    await new Promise((resolve) => setTimeout(resolve, WAIT_FOR_IMPORT_MS));
  }
}

/** What the datadir holds, by a read-only look; a store that cannot be read is left to the writer's checks. */
async function holds(datadir: string): Promise<'nothing' | 'a dev chain' | 'another chain'> {
  if (!storeExists(datadir)) return 'nothing';
  try {
    const store = await openLmdbStore(datadir, { readOnly: true });
    try {
      if ((await store.getMeta('dev')) !== null) return 'a dev chain';
      return (await store.getHead()) === null ? 'nothing' : 'another chain';
    } finally {
      await store.close();
    }
  } catch {
    return 'nothing';
  }
}

function refusal(datadir: string, holder: WriterRecord): string {
  if (holder.command === 'import')
    return `${datadir} is being written by ethtrace import (pid ${holder.pid}): wait for it to finish, or give another --datadir`;
  const where = holder.port === null ? 'still starting' : `port ${holder.port}`;
  return `${datadir} is already served by ethtrace start (pid ${holder.pid}, ${where}), which writes its ${holder.writes}: stop that one first, or give another --datadir`;
}
