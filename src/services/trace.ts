import type { ChainReader } from '../chain/reader.ts';
import type { CallLimits } from '../config/limits.ts';
import type { BlockSelector } from '../core/blockSelector.ts';
import type { BlockOverrides, StateOverrides } from '../core/call.ts';
import { RawJson } from '../core/rawJson.ts';
import {
  type CallManyJob,
  type CallManyPartJob,
  partitionBySender,
  type SpeculationStats,
  speculate,
  type TracedCall,
} from '../exec/api.ts';
import type { ExecutionClient } from '../exec/client.ts';
import { bytesKey } from '../primitives/hex.ts';

/**
 * Ad-hoc tracing: calls simulated in order on top of one block. The block is resolved here, on the
 * main thread (a cheap lookup that gives not-found errors at once); the EVM work runs in the
 * execution layer, whose deadline and queue bound apply.
 */
export class TraceService {
  /** How speculation went: requests run in parts, and how many of those fell back to serial. */
  readonly parallelStats: SpeculationStats = { speculated: 0, fellBack: 0 };

  constructor(
    private readonly chain: ChainReader,
    private readonly exec: ExecutionClient,
    readonly limits: CallLimits,
  ) {}

  async callMany(
    block: BlockSelector,
    calls: TracedCall[],
    opts: { stateOverrides?: StateOverrides; blockOverrides?: BlockOverrides; single?: boolean } = {},
  ): Promise<RawJson> {
    const ref = await this.chain.stateBlock(block);
    const job: CallManyJob = {
      blockHash: ref.hash,
      calls,
      single: opts.single ?? false,
      ...(opts.stateOverrides ? { stateOverrides: opts.stateOverrides } : {}),
      ...(opts.blockOverrides ? { blockOverrides: opts.blockOverrides } : {}),
    };
    // The deadline bounds execution: what is read ahead first is not counted against it.
    await this.exec.prepare('callMany', job);
    const started = performance.now();
    const parts =
      calls.length >= this.limits.parallelMinCalls
        ? partitionBySender(
            calls.map(({ call }) => (call.from ? bytesKey(call.from) : '')),
            this.exec.spareWorkers(),
          )
        : null;
    if (parts !== null) {
      const answer = await this.speculate(job, parts);
      if (answer !== null) return answer;
    }
    // After a failed speculation the serial run gets only what is left of the request's deadline.
    const deadlineMs = Math.max(1, this.exec.deadlineMs - (performance.now() - started));
    return new RawJson(await this.exec.run('callMany', job, parts ? { deadlineMs } : {}));
  }

  /** The parts run at once; the answer if every call proved to have its serial result, else null. */
  private async speculate(job: CallManyJob, parts: number[][]): Promise<RawJson | null> {
    const results = await speculate(
      parts,
      job.calls.length,
      (indices, board) => {
        const part: CallManyPartJob = {
          blockHash: job.blockHash,
          calls: indices.map((i) => job.calls[i] as TracedCall),
          indices,
          ...board,
          ...(job.stateOverrides ? { stateOverrides: job.stateOverrides } : {}),
          ...(job.blockOverrides ? { blockOverrides: job.blockOverrides } : {}),
        };
        return this.exec.run('callManyPart', part);
      },
      this.parallelStats,
    );
    return results && RawJson.array(results);
  }
}
