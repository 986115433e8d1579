import type { ChainReader } from '../chain/reader.ts';
import type { BlockSelector } from '../core/blockSelector.ts';
import type { CallBundle, CallRequest, StateOverrides } from '../core/call.ts';
import { InvalidArgument, RequestFailed } from '../core/errors.ts';
import { RawJson } from '../core/rawJson.ts';
import type { TraceCallOptions, TraceOptions } from '../core/traceConfig.ts';
import type { CallBundlesJob, DebugTraceBlockJob, DebugTraceCallJob, JobPayload } from '../exec/api.ts';
import type { ExecutionClient } from '../exec/client.ts';
import { toHex } from '../primitives/hex.ts';
import type { BlockRef } from '../store/types.ts';

/**
 * geth's debug_trace* methods. The block or transaction is resolved here, on the main thread (cheap,
 * and not-found errors come at once); the replay or the call runs in the execution layer, whose
 * deadline (or the request's shorter `timeout`) and queue bound apply.
 */
export class DebugService {
  constructor(
    readonly chain: ChainReader,
    private readonly exec: ExecutionClient,
  ) {}

  async traceTransaction(hash: Uint8Array, options: TraceOptions): Promise<RawJson> {
    const location = await this.chain.store.getTxLocation(hash);
    if (!location) throw new RequestFailed('transaction not found');
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

  async traceCall(call: CallRequest, block: BlockSelector, options: TraceCallOptions): Promise<RawJson> {
    const ref = await this.chain.stateBlock(block);
    const job: DebugTraceCallJob = {
      blockHash: ref.hash,
      call,
      config: options.tracer,
      ...(options.stateOverrides ? { stateOverrides: options.stateOverrides } : {}),
      ...(options.blockOverrides ? { blockOverrides: options.blockOverrides } : {}),
    };
    return this.run('debugTraceCall', job, options);
  }

  /**
   * debug_traceCallMany (Reth's, Erigon's): the bundles' calls traced in order on the state after
   * the block's first `transactionIndex` transactions (all of them when absent or -1), each bundle
   * a block and 12 seconds later than the one before (Reth).
   */
  async traceCallMany(
    bundles: CallBundle[],
    context: BundleContext,
    options: TraceOptions & { stateOverrides?: StateOverrides },
  ): Promise<RawJson> {
    const job: CallBundlesJob = {
      ...(await bundlesAt(this.chain, context)),
      bundles,
      bundleSeconds: 12n,
      tracer: options.tracer,
      ...(options.stateOverrides ? { stateOverrides: options.stateOverrides } : {}),
    };
    return this.run('callBundles', job, options);
  }

  /** geth's wording for a block that is not there. */
  private async tracedBlock(selector: BlockSelector): Promise<BlockRef> {
    const ref = await this.chain.resolve(selector);
    if (!ref) {
      throw new RequestFailed(
        selector.kind === 'hash'
          ? `block ${toHex(selector.hash)} not found`
          : selector.kind === 'number'
            ? `block #${selector.number} not found`
            : 'block not found',
      );
    }
    return ref;
  }

  private async run<K extends 'debugTraceBlock' | 'debugTraceCall' | 'callBundles'>(
    kind: K,
    job: JobPayload<K>,
    options: TraceOptions,
  ): Promise<RawJson> {
    // A request may ask for less time than the server allows, never more.
    const deadlineMs =
      options.timeoutMs === undefined
        ? undefined
        : Math.max(1, Math.min(options.timeoutMs, this.exec.deadlineMs));
    return new RawJson(await this.exec.run(kind, job, deadlineMs === undefined ? {} : { deadlineMs }));
  }
}

/** Where a bundle simulation runs: a block, and how many of its transactions come first. */
export interface BundleContext {
  block: BlockSelector;
  /** Run after this many of the block's transactions; absent: after all of them. */
  transactionIndex?: number;
}

/** The block and the state a bundle simulation runs on (Erigon's and Reth's StateContext). */
export async function bundlesAt(
  chain: ChainReader,
  context: BundleContext,
): Promise<Pick<CallBundlesJob, 'blockHash' | 'before'>> {
  const ref = await chain.stateBlock(context.block);
  const index = context.transactionIndex;
  if (index === undefined) return { blockHash: ref.hash };
  const count = await chain.transactionCount(ref.hash);
  if (count === null) throw new RequestFailed(`block ${toHex(ref.hash)} not found`);
  if (index > count)
    throw new InvalidArgument(
      `invalid argument 1: transactionIndex ${index} is past the block's ${count} transactions`,
    );
  // Every transaction first is the block's own state: nothing to replay.
  if (index === count) return { blockHash: ref.hash };
  const header = await chain.header(ref.hash);
  if (!header) throw new RequestFailed(`block ${toHex(ref.hash)} not found`);
  return { blockHash: ref.hash, before: { count: index, parentHash: header.parentHash } };
}
