import type { SimulatedBlockCalls, SimulateRequest } from '../../../core/call.ts';
import { InvalidArgument, refusedBy, SimulationRejected } from '../../../core/errors.ts';
import { blockOverrides, callObject, stateOverrides } from '../../callObject.ts';
import { blockSelector, field, LATEST, optional, ParamProblem, required } from '../../params.ts';
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

/** geth's simOpts: the blocks with their overrides and calls, and three switches. */
function simulateOptions(value: unknown): SimulateRequest {
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
        ? { blockOverrides: field(`${where}.blockOverrides`, () => blockOverrides(b.blockOverrides)) }
        : {}),
      ...(present(b.stateOverrides)
        ? { stateOverrides: field(`${where}.stateOverrides`, () => stateOverrides(b.stateOverrides)) }
        : {}),
      calls: calls.map((c, j) => field(`${where}.calls[${j}]`, () => callObject(c))),
    };
  });
  return {
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
  async ([request, block], { services }) => {
    if (request.blocks.length === 0) throw new InvalidArgument('empty input');
    const limits = services.trace.limits;
    if (request.blocks.length > limits.maxSimulateBlocks)
      throw refusedBy('simulate_blocks', new SimulationRejected('client limit', 'too many blocks'));
    const calls = request.blocks.reduce((n, b) => n + b.calls.length, 0);
    if (calls > limits.maxCalls)
      throw refusedBy(
        'trace_callmany_calls',
        new SimulationRejected('client limit', `too many calls: ${calls} > ${limits.maxCalls}`),
      );
    return services.execution.simulate(block ?? LATEST, request);
  },
);
