import type { BlockOverrides, CallRequest, StateOverrides, TraceTypes } from '../exec/callRequest.ts';
import type { WorkerPool } from '../exec/pool/pool.ts';
import type { CallManyJob } from '../exec/worker/traceWorker.ts';
import type { BlockSelector } from '../rpc/params.ts';
import { RawJson } from '../rpc/rawJson.ts';
import type { ChainService } from './chain.ts';
import { stateBlock } from './state.ts';

export interface TraceLimits {
  /** Gas a call may use when it names none, and the most it may name (Erigon's and Reth's default). */
  gasCap: bigint;
  /** Calls in one trace_callMany: bounds the work one request can ask for (Nethermind's limit). */
  maxCalls: number;
}

export const DEFAULT_TRACE_LIMITS: TraceLimits = { gasCap: 50_000_000n, maxCalls: 1024 };

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
    return new RawJson(await this.pool.run<string>('callMany', job));
  }
}
