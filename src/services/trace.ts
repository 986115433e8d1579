import type { BlockOverrides, CallRequest, StateOverrides, TraceTypes } from '../exec/callRequest.ts';
import { CallSession, type CallTrace } from '../exec/executor.ts';
import type { BlockSelector } from '../rpc/params.ts';
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

/** Ad-hoc tracing: calls simulated in order on top of one block. */
export class TraceService {
  constructor(
    private readonly chain: ChainService,
    readonly limits: TraceLimits,
  ) {}

  async callMany(
    block: BlockSelector,
    calls: TracedCall[],
    overrides: { stateOverrides?: StateOverrides; blockOverrides?: BlockOverrides } = {},
  ): Promise<CallTrace[]> {
    const ref = await stateBlock(this.chain, block);
    const header = await this.chain.header(ref.hash);
    if (!header) throw new Error(`block ${ref.number} is indexed but its header is missing`);
    const session = await CallSession.open(this.chain, header, { gasCap: this.limits.gasCap, ...overrides });
    const results: CallTrace[] = [];
    for (const [index, { call, types }] of calls.entries())
      results.push(await session.trace(call, index, types));
    return results;
  }
}
