import type { ChainReader } from '../../chain/reader.ts';
import type { CallLimits } from '../../config/limits.ts';
import type { BlockOverrides, CallRequest, StateOverrides } from '../../core/call.ts';
import { type AccessListResult, createAccessList } from '../calls/accessList.ts';
import type { CallContext } from '../calls/context.ts';
import { estimateGas } from '../calls/estimateGas.ts';
import { ethCall } from '../calls/ethCall.ts';
import { CallSession } from '../session.ts';

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

async function withContext<T>(
  chain: ChainReader,
  limits: CallLimits,
  job: CallJob,
  run: (context: CallContext) => Promise<T>,
): Promise<T> {
  const { session, header } = await CallSession.openAt(chain, job.blockHash, {
    gasCap: limits.gasCap,
    ...job.overrides,
  });
  try {
    return await run({ chain, limits, header, session });
  } finally {
    session.close();
  }
}

export function callJobs(chain: ChainReader, limits: CallLimits) {
  return {
    call: (job: CallJob): Promise<Uint8Array> => withContext(chain, limits, job, (c) => ethCall(c, job.call)),
    estimateGas: (job: CallJob): Promise<bigint> =>
      withContext(chain, limits, job, (c) => estimateGas(c, job.call, job.overrides.blockOverrides)),
    createAccessList: (job: CallJob): Promise<AccessListResult> =>
      withContext(chain, limits, job, (c) => createAccessList(c, job.call)),
  };
}
