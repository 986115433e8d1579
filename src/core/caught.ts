/**
 * Failures a part of the service caught and went on past, because stopping would serve worse: each
 * is counted here by where it was caught (the `site` label of `ethtrace_caught_errors_total`,
 * src/observe/metrics.ts) and its line handed to whoever listens (the app's logger, src/app.ts).
 * Layers below observe/ cannot reach the app's logger or metrics, hence one place in core/ for all.
 *
 * The counts are the process's own (as prom-client's process metrics are), whichever app of a
 * process is scraped. With nobody listening (a CLI command) the line goes to stderr, so that nothing
 * caught is lost without a word.
 */
export const CAUGHT_SITES = [
  /** A reorg removed a block whose cached records could not be dropped (src/app.ts). */
  'upstream-cache-drop',
  /** A message on an upstream's newHeads WebSocket that is not JSON (src/upstream/newHeads.ts). */
  'upstream-newheads-message',
  /** A usage line that is not a row, or a usage file that cannot be read (src/transport/access/usage.ts). */
  'usage-line',
  /**
   * Usage dropped because the rows waiting for the usage database filled their bound
   * (src/transport/access/usageShipper.ts); counted in requests.
   */
  'usage-dropped',
  /** The free space of the store's disk cannot be told: writes go ahead unchecked (src/store/errors.ts). */
  'disk-free-space',
  /** A lock file (the datadir's writer lock, the keys file's lock) that exists but cannot be removed. */
  'lock-file-removal',
  /** A stop whose goodbye to Redis failed: the connection is dropped anyway (src/service.ts). */
  'redis-quit',
  /**
   * A PostgreSQL connection that failed outside a request: an idle one the server dropped, the keys'
   * LISTEN connection lost, a pool that did not close cleanly (src/store/postgres/).
   */
  'postgres-connection',
] as const;

export type CaughtSite = (typeof CAUGHT_SITES)[number];

const counts = new Map<CaughtSite, number>();
const listeners = new Set<(site: CaughtSite, line: string) => void>();

/**
 * Counts `count` failures (one by default) caught at `site`, and logs `line` unless `quiet` (a
 * failure that goes on, such as an unreadable disk, is logged once and counted each time).
 */
export function caught(
  site: CaughtSite,
  line: string,
  options: { quiet?: boolean; count?: number } = {},
): void {
  counts.set(site, (counts.get(site) ?? 0) + (options.count ?? 1));
  if (options.quiet) return;
  if (listeners.size === 0) process.stderr.write(`${line}\n`);
  for (const listener of listeners) listener(site, line);
}

/** How many failures each site has caught in this process. */
export function caughtCounts(): ReadonlyMap<CaughtSite, number> {
  return counts;
}

/** Hands every caught failure's line to `listener` until the returned function is called. */
export function onCaught(listener: (site: CaughtSite, line: string) => void): () => void {
  listeners.add(listener);
  return () => {
    listeners.delete(listener);
  };
}

/**
 * Marks a promise whose failure is met elsewhere: by whoever awaits it later (a waiter, a later
 * turn), or by the failure it comes with. Without a handler now, Node would take a rejection that
 * comes before that await for an unhandled one and end the process. Each use says where it is met;
 * a failure met nowhere is `caught` instead.
 */
export function metElsewhere<T>(promise: Promise<T>): Promise<T> {
  promise.catch(metByItsAwaiter);
  return promise;
}

/**
 * Resolves once `promise` settles, either way: the link of a queue (or a set of exits waited for)
 * whose callers meet each failure themselves, so that one failure does not fail what comes after.
 */
export function afterSettled(promise: Promise<unknown>): Promise<void> {
  return promise.then(nothingToPass, metByItsAwaiter);
}

function metByItsAwaiter(): void {
  // The promise's failure is met where it is awaited (see metElsewhere and afterSettled).
}

function nothingToPass(): void {
  // A queue's link carries no value: its caller has the result.
}
