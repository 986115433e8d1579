/**
 * `GET /health` and `GET /ready`, for a supervisor and a load balancer. Health says the process
 * answers at all (restart it when it does not); readiness says it should be sent traffic now: its
 * store can be read, its chain is not stale, and the node it reads from answers.
 */

/** What readiness looks at; each part is optional. */
export interface ReadinessSources {
  /** Whether the server is stopping: it answers what it has taken and wants nothing new. */
  stopping?: () => boolean;
  /** The served head's number and timestamp (seconds); throws when the store cannot be read. */
  head(): Promise<{ number: bigint; timestamp: bigint } | null>;
  /**
   * Seconds the head may lag the clock before the service is not ready: following or reading an
   * upstream, or a dev chain mining on a timer. null: no bound (an imported chain, a dev chain that
   * mines only on demand, whose head may rightly be old).
   */
  maxHeadAgeSeconds: number | null;
  /** With an upstream: why it cannot be reached, or null when it answers. */
  upstreamProblem?: () => string | null;
  /** Following: why following stopped, or null. */
  followProblem?: () => string | null;
  /**
   * Limits shared with other processes (Redis, the primary): why they cannot be reached, or null.
   * Degraded, not unready: requests are still answered, only admitted without their limits (they
   * fail open), and every host shares the one Redis, so a 503 here would take them all out of the
   * balancer at once for what limits exist to prevent.
   */
  sharedLimitsProblem?: () => string | null;
  /**
   * Keys kept in a shared database (`--database`): why it cannot be reached, or null. Degraded, not
   * unready: the keys known are still served from memory; only changes wait for it.
   */
  keysProblem?: () => string | null;
  /**
   * Usage recorded in a shared database: why it cannot be written, or null. Degraded, not unready:
   * requests are served and their usage waits in memory (within a bound) until it can be written.
   */
  usageProblem?: () => string | null;
}

export interface Probe {
  status: 200 | 503;
  body: Record<string, unknown>;
}

const started = Date.now();

export function health(): Probe {
  return { status: 200, body: { status: 'ok', uptimeSeconds: Math.round((Date.now() - started) / 1000) } };
}

/**
 * 200 with the head when ready, else 503 with the reasons (each a sentence an operator can act on).
 * Ready but with a part down that it does without (the shared limits): 200, status `degraded`, and
 * what is down in `degraded`.
 */
export async function readiness(sources: ReadinessSources): Promise<Probe> {
  const reasons: string[] = [];
  if (sources.stopping?.())
    reasons.push(
      'the server is stopping: it answers the requests it has taken, and takes no new connections',
    );
  let head: { number: bigint; timestamp: bigint } | null = null;
  try {
    head = await sources.head();
  } catch (e) {
    reasons.push(`the store cannot be read: ${(e as Error).message}`);
  }
  const age = head === null ? null : Math.max(0, Math.round(Date.now() / 1000 - Number(head.timestamp)));
  const bound = sources.maxHeadAgeSeconds;
  if (bound !== null && age !== null && age > bound)
    reasons.push(`the head block is ${age} s old, more than ${bound} s (--ready-max-head-age)`);
  const upstream = sources.upstreamProblem?.() ?? null;
  if (upstream !== null) reasons.push(`the upstream cannot be reached: ${upstream}`);
  const follow = sources.followProblem?.() ?? null;
  if (follow !== null) reasons.push(`following stopped: ${follow}`);
  const degraded = [
    sources.sharedLimitsProblem?.() ?? null,
    sources.keysProblem?.() ?? null,
    sources.usageProblem?.() ?? null,
  ].filter((problem) => problem !== null);
  const facts = {
    head: head === null ? null : Number(head.number),
    headAgeSeconds: age,
    ...(degraded.length > 0 ? { degraded } : {}),
  };
  if (reasons.length > 0) return { status: 503, body: { status: 'not ready', reasons, ...facts } };
  return { status: 200, body: { status: degraded.length === 0 ? 'ready' : 'degraded', ...facts } };
}
