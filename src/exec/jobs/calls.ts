import type { ChainReader } from '../../chain/reader.ts';
import type { CallLimits } from '../../config/limits.ts';
import type { BlockOverrides, CallRequest, StateOverrides } from '../../core/call.ts';
import { type AccessListResult, createAccessList } from '../calls/accessList.ts';
import type { CallContext } from '../calls/context.ts';
import { estimateGas } from '../calls/estimateGas.ts';
import { ethCall } from '../calls/ethCall.ts';
import { defaultEngine, type Engine } from '../evmEngine.ts';
import { EvmCallSession } from '../evmSession.ts';
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
  run: (context: CallContext<CallSession>) => Promise<T>,
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

/**
 * A call method's context on src/evm where it can serve the call (a store with synchronous reads, a
 * fork with a rule row: see EvmCallSession.openAt), else on ethereumjs.
 */
async function withRunner<T>(
  chain: ChainReader,
  limits: CallLimits,
  job: CallJob,
  engine: Engine,
  run: (context: CallContext) => Promise<T>,
): Promise<T> {
  if (engine === 'evm') {
    const session = await EvmCallSession.openAt(chain, job.blockHash, {
      gasCap: limits.gasCap,
      ...job.overrides,
    });
    if (session) return run({ chain, limits, header: session.header, session });
  }
  return withContext(chain, limits, job, run);
}

export function callJobs(chain: ChainReader, limits: CallLimits, engine: Engine = defaultEngine()) {
  return {
    call: (job: CallJob): Promise<Uint8Array> =>
      withRunner(chain, limits, job, engine, (c) => ethCall(c, job.call)),
    estimateGas: (job: CallJob): Promise<bigint> =>
      withRunner(chain, limits, job, engine, (c) => estimateGas(c, job.call, job.overrides.blockOverrides)),
    createAccessList: (job: CallJob): Promise<AccessListResult> =>
      withRunner(chain, limits, job, engine, (c) => createAccessList(c, job.call)),
  };
}
