import type { ChainReader } from '../../chain/reader.ts';
import type { CallLimits } from '../../config/limits.ts';
import type { BlockOverrides, CallRequest, StateOverrides } from '../../core/call.ts';
import { type AccessListResult, createAccessList } from '../calls/accessList.ts';
import type { CallContext } from '../calls/context.ts';
import { estimateGas } from '../calls/estimateGas.ts';
import { ethCall } from '../calls/ethCall.ts';
import { EvmCallSession } from '../evmSession.ts';

/**
 * One of geth's call methods (eth_call, eth_estimateGas, eth_createAccessList), as plain data for a
 * worker: the block is resolved and the arguments checked on the main thread (createAccessList's
 * fees already filled in).
 */
export interface CallJob {
  blockHash: Uint8Array;
  call: CallRequest;
  overrides: { stateOverrides?: StateOverrides; blockOverrides?: BlockOverrides };
}

/** A call method's context on src/evm (see EvmCallSession.openAt). */
async function withRunner<T>(
  chain: ChainReader,
  limits: CallLimits,
  job: CallJob,
  run: (context: CallContext) => Promise<T>,
): Promise<T> {
  const session = await EvmCallSession.openAt(chain, job.blockHash, {
    gasCap: limits.gasCap,
    ...job.overrides,
  });
  return run({ chain, limits, header: session.header, session });
}

export function callJobs(chain: ChainReader, limits: CallLimits) {
  return {
    call: (job: CallJob): Promise<Uint8Array> => withRunner(chain, limits, job, (c) => ethCall(c, job.call)),
    estimateGas: (job: CallJob): Promise<bigint> =>
      withRunner(chain, limits, job, (c) => estimateGas(c, job.call, job.overrides.blockOverrides)),
    createAccessList: (job: CallJob): Promise<AccessListResult> =>
      withRunner(chain, limits, job, (c) => createAccessList(c, job.call)),
  };
}

/** The last address of the precompile range: a call straight to one is never run inline. */
const LAST_PRECOMPILE = 0xffff;

function isPrecompileRange(to: Uint8Array | null | undefined): boolean {
  if (!to) return false;
  for (let i = 0; i < to.length - 2; i++) if (to[i] !== 0) return false;
  return (((to[to.length - 2] ?? 0) << 8) | (to[to.length - 1] ?? 0)) <= LAST_PRECOMPILE;
}

/**
 * eth_call and eth_estimateGas on the calling thread, on src/evm only, stopped at `deadline`
 * (performance.now() ms) by src/exec/watchdog.ts. Null where the job is not one to run inline (a
 * call with blobs, a call straight to a precompile); an
 * Interrupted rejection where it ran out of time: either way the job goes to a worker.
 */
export function inlineCallJobs(chain: ChainReader, limits: CallLimits) {
  const inline = async <T>(
    job: CallJob,
    deadline: number,
    run: (context: CallContext) => Promise<T>,
  ): Promise<T | null> => {
    if (job.call.blobVersionedHashes !== undefined || isPrecompileRange(job.call.to)) return null;
    const session = await EvmCallSession.openAt(chain, job.blockHash, {
      gasCap: limits.gasCap,
      ...job.overrides,
      deadline,
    });
    return run({ chain, limits, header: session.header, session });
  };
  return {
    call: (job: CallJob, deadline: number): Promise<Uint8Array | null> =>
      inline(job, deadline, (c) => ethCall(c, job.call)),
    estimateGas: (job: CallJob, deadline: number): Promise<bigint | null> =>
      inline(job, deadline, (c) => estimateGas(c, job.call, job.overrides.blockOverrides)),
  };
}
