import type { ChainReader } from '../chain/reader.ts';
import type { CallLimits } from '../config/limits.ts';
import type { AccessListResult } from './calls/accessList.ts';
import { bundleJobs, type CallBundlesJob, type SignedBundleJob } from './jobs/bundles.ts';
import { type CallManyJob, type CallManyPartJob, runCallMany, runCallManyPart } from './jobs/callMany.ts';
import { type CallJob, callJobs } from './jobs/calls.ts';
import { type DebugTraceBlockJob, type DebugTraceCallJob, debugJobs } from './jobs/debug.ts';
import {
  type FlatBlockTraces,
  type ReplayBlockJob,
  type ReplayedBlockJson,
  type ReplayPartJob,
  replayJobs,
} from './jobs/replay.ts';
import { runSimulate, type SimulateJob } from './jobs/simulate.ts';
import type { PartResult } from './speculation.ts';

// What the layers above (services) see of exec: this module, the jobs and their results, and
// src/exec/client.ts, the client that runs them (the layer rule `services-reach-exec-through-its-api`
// in .dependency-cruiser.cjs keeps it so).
export type { AccessListResult } from './calls/accessList.ts';
export type { CallBundlesJob, SignedBundleJob } from './jobs/bundles.ts';
export type { CallManyJob, CallManyPartJob, TracedCall } from './jobs/callMany.ts';
export type { DebugTraceBlockJob, DebugTraceCallJob } from './jobs/debug.ts';
export type {
  FlatBlockTraces,
  FlatEntry,
  ReplayBlockJob,
  ReplayedBlockJson,
  ReplayPartJob,
} from './jobs/replay.ts';
export { planBlocks, type SimulateJob } from './jobs/simulate.ts';
export { partitionBySender, type SpeculationStats, speculate } from './speculation.ts';

/**
 * Every kind of EVM work the main thread asks of the execution layer, typed end to end: a job is
 * plain data (it crosses to a worker by structured clone) and so is its answer; large answers are
 * JSON already encoded to bytes. A new kind of work is one method here and its implementation in
 * `executionApi`; src/exec/client.ts runs it on the worker pool or in-process.
 */
export interface ExecutionApi {
  /** trace_callMany, trace_call, trace_rawTransaction. */
  callMany(job: CallManyJob): Promise<Uint8Array>;
  /** Some of a trace_callMany's calls, run speculatively (src/exec/speculation.ts). */
  callManyPart(job: CallManyPartJob): Promise<PartResult>;
  call(job: CallJob): Promise<Uint8Array>;
  estimateGas(job: CallJob): Promise<bigint>;
  createAccessList(job: CallJob): Promise<AccessListResult>;
  /** trace_replayBlockTransactions (and trace_replayTransaction): one JSON text per transaction. */
  replayBlock(job: ReplayBlockJob): Promise<ReplayedBlockJson>;
  /** Some of a block's transactions, replayed speculatively. */
  replayBlockPart(job: ReplayPartJob): Promise<PartResult>;
  /** trace_block's entries, with what trace_transaction, trace_get and trace_filter look up. */
  flatTraces(job: { blockHash: Uint8Array }): Promise<FlatBlockTraces>;
  debugTraceBlock(job: DebugTraceBlockJob): Promise<Uint8Array>;
  debugTraceCall(job: DebugTraceCallJob): Promise<Uint8Array>;
  /** eth_simulateV1: its blocks as JSON. */
  simulate(job: SimulateJob): Promise<Uint8Array>;
  /** debug_traceCallMany and eth_callMany: bundles of calls chained on one block's state. */
  callBundles(job: CallBundlesJob): Promise<Uint8Array>;
  /** eth_callBundle: signed transactions applied on one block's state, in a later block's environment. */
  signedBundle(job: SignedBundleJob): Promise<Uint8Array>;
}

export type JobKind = keyof ExecutionApi;
export type JobPayload<K extends JobKind> = Parameters<ExecutionApi[K]>[0];
export type JobResult<K extends JobKind> = Awaited<ReturnType<ExecutionApi[K]>>;

/** The execution layer over one chain: what a worker serves, and what runs in-process in tests. */
export function executionApi(chain: ChainReader, limits: CallLimits): ExecutionApi {
  return {
    callMany: (job) => runCallMany(chain, limits, job),
    callManyPart: (job) => runCallManyPart(chain, limits, job),
    ...callJobs(chain, limits),
    ...replayJobs(chain),
    ...debugJobs(chain, limits),
    simulate: (job) => runSimulate(chain, limits, job),
    ...bundleJobs(chain, limits),
  };
}
