import type { ChainReader } from '../../../src/chain/reader.ts';
import type { CallLimits } from '../../../src/config/limits.ts';
import { type AccessListResult, createAccessList } from '../../../src/exec/calls/accessList.ts';
import type { CallContext } from '../../../src/exec/calls/context.ts';
import { estimateGas } from '../../../src/exec/calls/estimateGas.ts';
import { ethCall } from '../../../src/exec/calls/ethCall.ts';
import { type CallManyJob, traceJson } from '../../../src/exec/jobs/callMany.ts';
import type { CallJob } from '../../../src/exec/jobs/calls.ts';
import {
  blockAnswer,
  callContext,
  type DebugTraceBlockJob,
  type DebugTraceCallJob,
  txContext,
} from '../../../src/exec/jobs/debug.ts';
import {
  type FlatBlockTraces,
  flatTraces,
  isGenesis,
  type ReplayBlockJob,
  replayJson,
} from '../../../src/exec/jobs/replay.ts';
import { createGethTracer, type GethTracer } from './geth/index.ts';
import { replayBlock } from './replay.ts';
import { CallSession } from './session.ts';

// The oracle of the differential tests: the service's execution paths as they ran on @ethereumjs/vm
// before src/evm replaced them (test/support/engineDiff.ts, test/exec/inlineCalls.test.ts,
// test/upstream/evmEngine.test.ts, bench/callJob.ts). Each answers what the job of the same name in
// src/exec/jobs answers, rendered by the same code, so only the EVM underneath differs.

const NO_PARITY_TRACES = { trace: false, stateDiff: false, vmTrace: false };
const ZERO_ADDRESS = new Uint8Array(20);
const IDLE = { frameStart() {}, frameEnd() {} };

/** trace_replayBlockTransactions and trace_block on ethereumjs (src/exec/jobs/replay.ts's replayJobs). */
export function oracleReplayJobs(chain: ChainReader) {
  return {
    replayBlock: async (job: ReplayBlockJob): Promise<Uint8Array[]> => {
      if (await isGenesis(chain, job.blockHash)) return [];
      const { txs } = await replayBlock(chain, job.blockHash, job.types);
      return txs.map(replayJson);
    },
    flatTraces: (job: { blockHash: Uint8Array }): Promise<FlatBlockTraces> =>
      flatTraces(chain, job.blockHash, (c, hash, types) => replayBlock(c, hash, types)),
  };
}

async function withSession<T>(
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

/** eth_call, eth_estimateGas and eth_createAccessList on ethereumjs (src/exec/jobs/calls.ts's callJobs). */
export function oracleCallJobs(chain: ChainReader, limits: CallLimits) {
  return {
    call: (job: CallJob): Promise<Uint8Array> => withSession(chain, limits, job, (c) => ethCall(c, job.call)),
    estimateGas: (job: CallJob): Promise<bigint> =>
      withSession(chain, limits, job, (c) => estimateGas(c, job.call, job.overrides.blockOverrides)),
    createAccessList: (job: CallJob): Promise<AccessListResult> =>
      withSession(chain, limits, job, (c) => createAccessList(c, job.call)),
  };
}

/** trace_callMany (trace_call, trace_rawTransaction) on ethereumjs (src/exec/jobs/callMany.ts's runCallMany). */
export async function oracleRunCallMany(
  chain: ChainReader,
  limits: CallLimits,
  job: CallManyJob,
): Promise<Uint8Array> {
  const { session } = await CallSession.openAt(chain, job.blockHash, {
    gasCap: limits.gasCap,
    ...(job.stateOverrides ? { stateOverrides: job.stateOverrides } : {}),
    ...(job.blockOverrides ? { blockOverrides: job.blockOverrides } : {}),
  });
  try {
    const results: Buffer[] = [];
    for (const [index, { call, types }] of job.calls.entries()) {
      if (index > 0) results.push(Buffer.from(','));
      results.push(traceJson(await session.trace(call, index, types)));
    }
    return job.single
      ? (results[0] ?? Buffer.from('null'))
      : Buffer.concat([Buffer.from('['), ...results, Buffer.from(']')]);
  } finally {
    session.close();
  }
}

/** geth's debug_trace* on ethereumjs (src/exec/jobs/debug.ts's debugJobs). */
export function oracleDebugJobs(chain: ChainReader, limits: CallLimits) {
  return {
    debugTraceBlock: (job: DebugTraceBlockJob): Promise<Uint8Array> => traceBlock(chain, job),
    debugTraceCall: (job: DebugTraceCallJob): Promise<Uint8Array> => traceCall(chain, limits, job),
  };
}

async function traceBlock(chain: ChainReader, job: DebugTraceBlockJob): Promise<Uint8Array> {
  const block = await chain.block(job.blockHash);
  const coinbase = block?.header.coinbase.bytes ?? ZERO_ADDRESS;
  const tracers: Array<GethTracer | undefined> = [];
  const replaying = replayBlock(chain, job.blockHash, NO_PARITY_TRACES, (tx, index, evm) => {
    if (job.txIndex !== undefined && job.txIndex !== index) return IDLE;
    const tracer = createGethTracer(job.config, txContext(tx, coinbase));
    tracer.attach(evm);
    tracers[index] = tracer;
    return {
      frameStart: (f) => tracer.frameStart(f),
      frameEnd: (e) => tracer.frameEnd(e),
      selfDestruct: (s) => tracer.selfDestruct?.(s),
      // Right after the transaction, before the next one changes the state the tracer reads.
      finish: () => tracer.detach(),
    };
  });
  let replayed: Awaited<typeof replaying>;
  try {
    replayed = await replaying;
  } catch (e) {
    // A transaction that failed mid-way never reached `finish`: leave the reused EVM as it was.
    for (const tracer of tracers) tracer?.detach();
    throw e;
  }
  return blockAnswer(chain, job, replayed.txs, (index, outcome) => tracers[index]?.result(outcome));
}

async function traceCall(
  chain: ChainReader,
  limits: CallLimits,
  job: DebugTraceCallJob,
): Promise<Uint8Array> {
  const { session, header } = await CallSession.openAt(chain, job.blockHash, {
    gasCap: limits.gasCap,
    ...(job.stateOverrides ? { stateOverrides: job.stateOverrides } : {}),
    ...(job.blockOverrides ? { blockOverrides: job.blockOverrides } : {}),
  });
  try {
    const { call, tx } = await callContext(job, limits, session, header.coinbase.bytes);
    const tracer = createGethTracer(job.config, tx);
    tracer.attach(session.evm);
    let gasUsed: bigint;
    try {
      const outcome = await session.simulate(call, 0, tracer, { dialect: 'geth' });
      gasUsed = outcome.gasSpent ?? outcome.gasUsed;
    } finally {
      tracer.detach();
    }
    return Buffer.from(JSON.stringify(await tracer.result({ gasUsed })));
  } finally {
    session.close();
  }
}
