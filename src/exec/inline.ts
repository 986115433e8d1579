import type { ChainReader } from '../chain/reader.ts';
import type { CallLimits } from '../config/limits.ts';
import { DomainError } from '../core/errors.ts';
import type { JobKind, JobPayload, JobResult } from './api.ts';
import { type ExecutionClient, type RunOptions, WrappingClient } from './client.ts';
import type { CallJob } from './jobs/calls.ts';
import { inlineCallJobs } from './jobs/calls.ts';
import { Interrupted } from './watchdog.ts';

/**
 * Most eth_calls take tens of microseconds of EVM work, and handing one to a worker thread and its
 * answer back costs more than that (two messages, a thread woken, caches cold on another core).
 * This client runs eth_call and eth_estimateGas on the calling thread first, on src/evm, stopped
 * by a watchdog after `budgetMs` (src/exec/watchdog.ts) and then run again from the start on a
 * worker; every other job, and a call src/evm does not serve, goes to the worker pool as before.
 * The answering thread gives calls at most half of each 100 ms window, so a flood of heavy calls
 * cannot starve the requests it answers.
 */
export class InlineCallsClient extends WrappingClient {
  private readonly jobs: ReturnType<typeof inlineCallJobs>;
  private windowStart = 0;
  private windowUsed = 0;
  private inlineRuns = 0;
  private interrupted = 0;

  constructor(
    inner: ExecutionClient,
    chain: ChainReader,
    limits: CallLimits,
    private readonly budgetMs = DEFAULT_INLINE_BUDGET_MS,
  ) {
    super(inner);
    this.jobs = inlineCallJobs(chain, limits);
  }

  async run<K extends JobKind>(kind: K, payload: JobPayload<K>, options?: RunOptions): Promise<JobResult<K>> {
    if ((kind === 'call' || kind === 'estimateGas') && this.mayRunInline()) {
      const started = performance.now();
      try {
        const job = payload as CallJob;
        const deadline = started + this.budgetMs;
        const answer =
          kind === 'call' ? await this.jobs.call(job, deadline) : await this.jobs.estimateGas(job, deadline);
        if (answer !== null) {
          this.inlineRuns++;
          return answer as JobResult<K>;
        }
      } catch (e) {
        // A refusal or a revert is the answer; anything else (an interruption, a fault) is left to
        // the worker, which answers it as it answers every job.
        if (e instanceof DomainError) {
          this.inlineRuns++;
          throw e;
        }
        if (e instanceof Interrupted) this.interrupted++;
      } finally {
        this.windowUsed += performance.now() - started;
      }
    }
    return this.inner.run(kind, payload, options);
  }

  /** Runs answered inline, and runs stopped by the watchdog and handed to a worker. */
  inlineStats(): { answered: number; interrupted: number } {
    return { answered: this.inlineRuns, interrupted: this.interrupted };
  }

  private mayRunInline(): boolean {
    const now = performance.now();
    if (now - this.windowStart >= WINDOW_MS) {
      this.windowStart = now;
      this.windowUsed = 0;
    }
    return this.windowUsed < WINDOW_MS * INLINE_SHARE;
  }
}

/** How long a call may run inline before it is handed to a worker. */
export const DEFAULT_INLINE_BUDGET_MS = 2;
const WINDOW_MS = 100;
const INLINE_SHARE = 0.5;
