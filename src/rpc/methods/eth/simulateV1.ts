import type {
  SimulatedBlockCalls,
  SimulatedBlockOverrides,
  SimulatedWithdrawal,
  SimulateRequest,
} from '../../../core/call.ts';
import { InvalidArgument, RequestFailed, refusedBy, SimulationRejected } from '../../../core/errors.ts';
import { blockOverrides, callObject, stateOverrides } from '../../callObject.ts';
import {
  address,
  blockSelector,
  field,
  hash,
  LATEST,
  optional,
  ParamProblem,
  quantity,
  required,
  uint64,
} from '../../params.ts';
import { method } from '../define.ts';

function object(value: unknown, what: string): Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw new ParamProblem(`${what} must be an object`);
  return value as Record<string, unknown>;
}

function flag(o: Record<string, unknown>, name: string): boolean {
  const v = o[name];
  if (v === undefined || v === null) return false;
  if (typeof v !== 'boolean') throw new ParamProblem(`${name} must be a boolean`);
  return v;
}

const present = (v: unknown) => v !== undefined && v !== null;

/** eth_call's block overrides plus the two only a simulated block takes: its beacon root and withdrawals. */
function simulatedBlockOverrides(value: unknown): SimulatedBlockOverrides {
  const out: SimulatedBlockOverrides = blockOverrides(value);
  const o = value as Record<string, unknown>;
  if (present(o.beaconRoot)) out.beaconRoot = field('beaconRoot', () => hash(o.beaconRoot));
  if (present(o.withdrawals)) {
    const list = o.withdrawals;
    if (!Array.isArray(list)) throw new ParamProblem('withdrawals must be an array');
    out.withdrawals = list.map((raw, i): SimulatedWithdrawal => {
      const w = object(raw, `withdrawals[${i}]`);
      return {
        index: field(`withdrawals[${i}].index`, () => uint64(w.index)),
        validatorIndex: field(`withdrawals[${i}].validatorIndex`, () => uint64(w.validatorIndex)),
        address: field(`withdrawals[${i}].address`, () => address(w.address)),
        amount: field(`withdrawals[${i}].amount`, () => uint64(w.amount)),
      };
    });
  }
  return out;
}

/** A call's `chainId`, when it names one (geth refuses the request when it is not the chain's). */
function chainIdOf(call: unknown): bigint | undefined {
  const v = (call as Record<string, unknown>).chainId;
  return present(v) ? field('chainId', () => quantity(v)) : undefined;
}

/** geth's simOpts: the blocks with their overrides and calls, and three switches. */
function simulateOptions(value: unknown): SimulateRequest & { chainIds: bigint[] } {
  const o = object(value, 'simulation options');
  const list = o.blockStateCalls ?? [];
  if (!Array.isArray(list)) throw new ParamProblem('blockStateCalls must be an array');
  const blocks = list.map((raw, i): SimulatedBlockCalls => {
    const where = `blockStateCalls[${i}]`;
    const b = object(raw, where);
    const calls = b.calls ?? [];
    if (!Array.isArray(calls)) throw new ParamProblem(`${where}.calls must be an array`);
    return {
      ...(present(b.blockOverrides)
        ? {
            blockOverrides: field(`${where}.blockOverrides`, () =>
              simulatedBlockOverrides(object(b.blockOverrides, 'block overrides')),
            ),
          }
        : {}),
      ...(present(b.stateOverrides)
        ? { stateOverrides: field(`${where}.stateOverrides`, () => stateOverrides(b.stateOverrides)) }
        : {}),
      calls: calls.map((c, j) => field(`${where}.calls[${j}]`, () => callObject(c))),
    };
  });
  const chainIds = list.flatMap((raw, i) => {
    const calls = (raw as Record<string, unknown>).calls;
    return (Array.isArray(calls) ? calls : []).flatMap((c, j) => {
      const id = field(`blockStateCalls[${i}].calls[${j}]`, () => chainIdOf(c));
      return id === undefined ? [] : [id];
    });
  });
  return {
    chainIds,
    blocks,
    traceTransfers: flag(o, 'traceTransfers'),
    validation: flag(o, 'validation'),
    returnFullTransactions: flag(o, 'returnFullTransactions'),
  };
}

/**
 * geth's eth_simulateV1 (execution-apis): blocks of calls simulated in order on the state after a
 * block, each answered as a block with its calls' results. The request's size is checked here; the
 * blocks run in one execution job (src/exec/jobs/simulate.ts).
 */
export const eth_simulateV1 = method(
  [required(simulateOptions), optional(blockSelector)],
  async ([{ chainIds, ...request }, block], { services }) => {
    if (request.blocks.length === 0) throw new InvalidArgument('empty input');
    const want = services.chain.chainId;
    for (const have of chainIds)
      if (have !== want)
        throw new RequestFailed(`chainId does not match node's (have=${have}, want=${want})`);
    const limits = services.trace.limits;
    if (request.blocks.length > limits.maxSimulateBlocks)
      throw refusedBy('simulate_blocks', new SimulationRejected('client limit', 'too many blocks'));
    const calls = request.blocks.reduce((n, b) => n + b.calls.length, 0);
    if (calls > limits.maxCalls)
      throw refusedBy(
        'trace_callmany_calls',
        new SimulationRejected('client limit', `too many calls: ${calls} > ${limits.maxCalls}`),
      );
    return services.execution.simulate(block ?? LATEST, request, limits.maxSimulateBlocks);
  },
);
