import type { BlockOverrides, CallRequest, StateOverrides, TraceTypes } from '../exec/callRequest.ts';
import type { WorkerPool } from '../exec/pool/pool.ts';
import type { CallManyJob, CallManyPartJob } from '../exec/worker/traceWorker.ts';
import type { BlockSelector } from '../rpc/params.ts';
import { RawJson } from '../rpc/rawJson.ts';
import type { ChainService } from './chain.ts';
import { type PartResult, partitionBySender, type SpeculationStats, speculate } from './parallelCalls.ts';
import { stateBlock } from './state.ts';

export interface TraceLimits {
  /** Gas a call may use when it names none, and the most it may name (Erigon's and Reth's default). */
  gasCap: bigint;
  /** Calls in one trace_callMany: bounds the work one request can ask for (Nethermind's limit). */
  maxCalls: number;
  /**
   * The fewest calls a trace_callMany must have to be run speculatively in parallel when workers are
   * idle (services/parallelCalls.ts): below it, one more worker's set-up outweighs what it saves.
   */
  parallelMinCalls: number;
}

export const DEFAULT_TRACE_LIMITS: TraceLimits = {
  gasCap: 50_000_000n,
  maxCalls: 1024,
  parallelMinCalls: 16,
};

export interface TracedCall {
  call: CallRequest;
  types: TraceTypes;
}

/**
 * Ad-hoc tracing: calls simulated in order on top of one block. The block is resolved here, on the
 * main thread (a cheap lookup that gives not-found errors at once); the EVM work runs in the
 * execution pool, whose deadline and queue bound apply.
 */
export class TraceService {
  /** How speculation went: requests run in parts, and how many of those fell back to serial. */
  readonly parallelStats: SpeculationStats = { speculated: 0, fellBack: 0 };

  constructor(
    private readonly chain: ChainService,
    private readonly pool: WorkerPool,
    readonly limits: TraceLimits,
  ) {}

  async callMany(
    block: BlockSelector,
    calls: TracedCall[],
    opts: { stateOverrides?: StateOverrides; blockOverrides?: BlockOverrides; single?: boolean } = {},
  ): Promise<RawJson> {
    const ref = await stateBlock(this.chain, block);
    const job: CallManyJob = {
      blockHash: ref.hash,
      calls,
      single: opts.single ?? false,
      ...(opts.stateOverrides ? { stateOverrides: opts.stateOverrides } : {}),
      ...(opts.blockOverrides ? { blockOverrides: opts.blockOverrides } : {}),
    };
    const started = performance.now();
    const parts =
      calls.length >= this.limits.parallelMinCalls
        ? partitionBySender(
            calls.map(({ call }) => (call.from ? Buffer.from(call.from).toString('hex') : '')),
            this.pool.spareWorkers(),
          )
        : null;
    if (parts !== null) {
      const answer = await this.speculate(job, parts);
      if (answer !== null) return answer;
    }
    // After a failed speculation the serial run gets only what is left of the request's deadline.
    const deadlineMs = Math.max(1, this.pool.deadlineMs - (performance.now() - started));
    return new RawJson(await this.pool.run<Uint8Array>('callMany', job, parts ? { deadlineMs } : {}));
  }

  /** The parts run at once; the answer if every call proved to have its serial result, else null. */
  private async speculate(job: CallManyJob, parts: number[][]): Promise<RawJson | null> {
    const results = await speculate(
      parts,
      job.calls.length,
      (indices) => {
        const part: CallManyPartJob = {
          blockHash: job.blockHash,
          calls: indices.map((i) => job.calls[i] as TracedCall),
          indices,
          ...(job.stateOverrides ? { stateOverrides: job.stateOverrides } : {}),
          ...(job.blockOverrides ? { blockOverrides: job.blockOverrides } : {}),
        };
        return this.pool.run<PartResult>('callManyPart', part);
      },
      this.parallelStats,
    );
    return results && RawJson.array(results);
  }
}
