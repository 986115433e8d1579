import { RequestFailed } from '../../../core/errors.ts';
import type { GethTracerConfig, TraceCallOptions, TraceOptions } from '../../../core/traceConfig.ts';
import { blockOverrides, stateOverrides } from '../../callObject.ts';
import { ParamProblem, quoted } from '../../params.ts';

export const DEFAULT_TRACE_OPTIONS: TraceOptions = {
  tracer: {
    tracer: 'structLogger',
    options: {
      disableStack: false,
      disableStorage: false,
      enableMemory: false,
      enableReturnData: false,
      limit: 0,
    },
  },
};

export function traceConfig(value: unknown): TraceOptions {
  const o = object(value, 'trace config');
  const timeoutMs = o.timeout === undefined || o.timeout === null ? undefined : duration(o.timeout);
  return { tracer: tracerOf(o), ...(timeoutMs !== undefined ? { timeoutMs } : {}) };
}

export function traceCallConfig(value: unknown): TraceCallOptions {
  const o = object(value, 'trace config');
  return {
    ...traceConfig(value),
    ...(o.stateOverrides ? { stateOverrides: stateOverrides(o.stateOverrides) } : {}),
    ...(o.blockOverrides ? { blockOverrides: blockOverrides(o.blockOverrides) } : {}),
  };
}

// Fields of geth's tracerConfig for its native tracers: each is a boolean whichever tracer runs.
const TRACER_CONFIG_FLAGS = ['onlyTopCall', 'withLog', 'diffMode', 'disableCode', 'disableStorage'];

/**
 * geth decodes the whole TraceConfig into typed fields before it picks a tracer, so a field of the
 * wrong type is refused (-32602) even where the chosen tracer would not read it.
 */
function tracerOf(o: Record<string, unknown>): GethTracerConfig {
  const name = o.tracer;
  if (name !== undefined && name !== null && typeof name !== 'string')
    throw new ParamProblem('tracer: expected a tracer name (a string)');
  const config =
    o.tracerConfig === undefined || o.tracerConfig === null ? {} : object(o.tracerConfig, 'tracerConfig');
  for (const field of TRACER_CONFIG_FLAGS) flag(config, field, 'tracerConfig.');
  const logger = {
    disableStack: flag(o, 'disableStack'),
    disableStorage: flag(o, 'disableStorage'),
    enableMemory: flag(o, 'enableMemory'),
    enableReturnData: flag(o, 'enableReturnData'),
    limit: o.limit === undefined || o.limit === null ? 0 : count(o.limit, 'limit'),
  };
  if (name === undefined || name === null || name === '') return { tracer: 'structLogger', options: logger };
  switch (name) {
    case 'callTracer':
      return {
        tracer: 'callTracer',
        onlyTopCall: flag(config, 'onlyTopCall'),
        withLog: flag(config, 'withLog'),
      };
    case 'prestateTracer':
      return {
        tracer: 'prestateTracer',
        diffMode: flag(config, 'diffMode'),
        disableCode: flag(config, 'disableCode'),
        disableStorage: flag(config, 'disableStorage'),
      };
    case 'noopTracer':
      return { tracer: 'noopTracer' };
    default:
      // geth also runs JavaScript tracers given as source; this service runs only the native ones.
      throw new RequestFailed('tracer not found');
  }
}

const UNITS: Record<string, number> = {
  ns: 1e-6,
  us: 1e-3,
  µs: 1e-3,
  μs: 1e-3,
  ms: 1,
  s: 1000,
  m: 60_000,
  h: 3_600_000,
};

/** A Go duration ("5s", "1m30s", "300ms"), as geth's `timeout` takes it, in milliseconds. */
export function duration(value: unknown): number {
  if (typeof value !== 'string') throw new ParamProblem('timeout: expected a duration string');
  const parts = [...value.matchAll(/(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h)/gy)];
  const consumed = parts.reduce((n, m) => n + m[0].length, 0);
  if (value === '' || parts.length === 0 || consumed !== value.length)
    throw new RequestFailed(`time: invalid duration ${quoted(value)}`);
  return parts.reduce((ms, m) => ms + Number(m[1]) * (UNITS[m[2] ?? 's'] ?? 1000), 0);
}

function flag(o: Record<string, unknown>, name: string, prefix = ''): boolean {
  const v = o[name];
  if (v === undefined || v === null) return false;
  if (typeof v !== 'boolean') throw new ParamProblem(`${prefix}${name}: expected a boolean`);
  return v;
}

function count(value: unknown, name: string): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0)
    throw new ParamProblem(`${name}: expected a non-negative integer`);
  return value;
}

function object(value: unknown, what: string): Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw new ParamProblem(`${what} must be an object`);
  return value as Record<string, unknown>;
}
