import type { CallRequest } from '../exec/callRequest.ts';
import type { WorkerPool } from '../exec/pool/pool.ts';
import type { DebugTraceBlockJob, DebugTraceCallJob } from '../exec/worker/debugHandlers.ts';
import { ServerError } from '../rpc/errors.ts';
import type { TraceCallOptions, TraceOptions } from '../rpc/methods/debug/traceConfig.ts';
import type { BlockSelector } from '../rpc/params.ts';
import { RawJson } from '../rpc/rawJson.ts';
import type { BlockRef } from '../store/types.ts';
import type { ChainService } from './chain.ts';
import { stateBlock } from './state.ts';

/**
 * geth's debug_trace* methods. The block or transaction is resolved here, on the main thread (cheap,
 * and not-found errors come at once); the replay or the call runs in the execution pool, whose
 * deadline (or the request's shorter `timeout`) and queue bound apply.
 */
export class DebugService {
  constructor(
    readonly chain: ChainService,
    readonly pool: WorkerPool,
  ) {}

  async traceTransaction(hash: Uint8Array, options: TraceOptions): Promise<RawJson> {
    const location = await this.chain.store.getTxLocation(hash);
    if (!location) throw new ServerError('transaction not found');
    const job: DebugTraceBlockJob = {
      blockHash: location.blockHash,
      config: options.tracer,
      txIndex: location.index,
    };
    return this.run('debugTraceBlock', job, options);
  }

  async traceBlock(selector: BlockSelector, options: TraceOptions): Promise<RawJson> {
    const ref = await this.tracedBlock(selector);
    // Genesis has no transactions, so its trace is empty (Reth and anvil; geth refuses it because it
    // has no parent state, and indexers such as ponder then retry block 0 forever). trace_block and
    // trace_replayBlockTransactions answer `[]` for it too.
    if (ref.number === 0n) return new RawJson('[]');
    const job: DebugTraceBlockJob = { blockHash: ref.hash, config: options.tracer };
    return this.run('debugTraceBlock', job, options);
  }

  async traceCall(
    call: CallRequest,
    block: BlockSelector,
    options: TraceCallOptions,
    gasCap: bigint,
  ): Promise<RawJson> {
    const ref = await stateBlock(this.chain, block);
    const job: DebugTraceCallJob = {
      blockHash: ref.hash,
      call,
      config: options.tracer,
      gasCap,
      ...(options.stateOverrides ? { stateOverrides: options.stateOverrides } : {}),
      ...(options.blockOverrides ? { blockOverrides: options.blockOverrides } : {}),
    };
    return this.run('debugTraceCall', job, options);
  }

  /** geth's wording for a block that is not there. */
  private async tracedBlock(selector: BlockSelector): Promise<BlockRef> {
    const ref = await this.chain.resolve(selector);
    if (!ref) {
      throw new ServerError(
        selector.kind === 'hash'
          ? `block 0x${Buffer.from(selector.hash).toString('hex')} not found`
          : selector.kind === 'number'
            ? `block #${selector.number} not found`
            : 'block not found',
      );
    }
    return ref;
  }

  private async run(kind: string, job: unknown, options: TraceOptions): Promise<RawJson> {
    // A request may ask for less time than the server allows, never more.
    const deadlineMs =
      options.timeoutMs === undefined
        ? undefined
        : Math.max(1, Math.min(options.timeoutMs, this.pool.deadlineMs));
    return new RawJson(
      await this.pool.run<Uint8Array>(kind, job, deadlineMs === undefined ? {} : { deadlineMs }),
    );
  }
}
