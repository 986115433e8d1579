import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { RequestFailed } from '../../../core/errors.ts';
import { ParamProblem } from '../../params.ts';
import { DEFAULT_TRACE_OPTIONS, duration, traceCallConfig, traceConfig } from './traceConfig.ts';

/** Asserts `fn` throws an instance of `type` with exactly `message`. */
function throwsExactly(fn: () => unknown, type: new (...args: never[]) => Error, message: string): void {
  assert.throws(fn, (e: unknown) => {
    assert.ok(e instanceof type, `expected ${type.name}, got ${String(e)}`);
    assert.equal(e.message, message);
    return true;
  });
}

const ADDRESS = `0x${'11'.repeat(20)}`;

describe('duration (Go time.ParseDuration, as geth reads `timeout`)', () => {
  it('reads a single number and unit, in milliseconds', () => {
    assert.equal(duration('5s'), 5000);
    assert.equal(duration('300ms'), 300);
    assert.equal(duration('2m'), 120_000);
    assert.equal(duration('1h'), 3_600_000);
    assert.equal(duration('0s'), 0);
  });

  it('sums several parts, in any order and repeated (as Go does)', () => {
    assert.equal(duration('1m30s'), 90_000);
    assert.equal(duration('2h45m'), 9_900_000);
    assert.equal(duration('1h1h'), 7_200_000);
    assert.equal(duration('30s1m'), 90_000);
    assert.equal(duration('1s500ms'), 1500);
  });

  it('takes fractions, with or without a leading digit', () => {
    assert.equal(duration('1.5h'), 5_400_000);
    assert.equal(duration('.5s'), 500);
    assert.equal(duration('1.s'), 1000); // Go accepts a trailing point too
    assert.equal(duration('0.25ms'), 0.25);
  });

  it('takes the sub-millisecond units, both spellings of micro', () => {
    assert.equal(duration('1us'), 0.001);
    assert.equal(duration('1µs'), 0.001); // U+00B5 micro sign
    assert.equal(duration('1μs'), 0.001); // U+03BC Greek mu
    assert.equal(duration('1000000ns'), 1);
    assert.equal(duration('1500us'), 1.5);
  });

  it("refuses malformed text with Go's generic message, as a request failure (geth answers -32000)", () => {
    // Go says `time: unknown unit "x" in duration "5x"` for a unit it does not know; every refusal
    // here uses the generic `time: invalid duration "…"` (Go's for "", "s", "-", ".", "1e3s").
    for (const text of [
      '',
      's',
      '-',
      '.',
      '.s',
      '5x',
      '5sx',
      'x5s',
      '1S',
      '5 s',
      ' 5s',
      '5s ',
      '1e3s',
      '1m30',
    ]) {
      throwsExactly(() => duration(text), RequestFailed, `time: invalid duration ${JSON.stringify(text)}`);
    }
  });

  it('refuses a bare number, even 0', () => {
    // Go: "5" fails with `time: missing unit in duration "5"`; here the generic message. Go takes
    // a bare "0" as zero, which geth would then run into an immediate timeout; refusing it answers
    // an error too, with a different message.
    throwsExactly(() => duration('5'), RequestFailed, 'time: invalid duration "5"');
    throwsExactly(() => duration('0'), RequestFailed, 'time: invalid duration "0"');
  });

  it('refuses a signed duration', () => {
    // Go accepts "-5s" and "+5s"; a negative timeout in geth expires at once (execution timeout).
    // No deadline can be negative, so a request asking for one is refused before running.
    throwsExactly(() => duration('-5s'), RequestFailed, 'time: invalid duration "-5s"');
    throwsExactly(() => duration('+5s'), RequestFailed, 'time: invalid duration "+5s"');
  });

  it('quotes a long value cut short', () => {
    const long = `${'1'.repeat(200)}x`;
    throwsExactly(() => duration(long), RequestFailed, `time: invalid duration "${'1'.repeat(79)}…`);
  });

  it('refuses a non-string as a parameter problem', () => {
    for (const value of [5, 5000, true, {}, ['5s']]) {
      throwsExactly(() => duration(value), ParamProblem, 'timeout: expected a duration string');
    }
  });
});

describe('traceConfig', () => {
  it('defaults to the struct logger with every option off', () => {
    assert.deepEqual(traceConfig({}), DEFAULT_TRACE_OPTIONS);
    assert.deepEqual(DEFAULT_TRACE_OPTIONS, {
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
    });
    assert.deepEqual(traceConfig({ tracer: null }), DEFAULT_TRACE_OPTIONS);
    assert.deepEqual(traceConfig({ tracer: '' }), DEFAULT_TRACE_OPTIONS);
  });

  it('reads the struct logger options', () => {
    assert.deepEqual(
      traceConfig({
        disableStack: true,
        disableStorage: true,
        enableMemory: true,
        enableReturnData: true,
        limit: 10,
      }),
      {
        tracer: {
          tracer: 'structLogger',
          options: {
            disableStack: true,
            disableStorage: true,
            enableMemory: true,
            enableReturnData: true,
            limit: 10,
          },
        },
      },
    );
    assert.deepEqual(traceConfig({ limit: null }), DEFAULT_TRACE_OPTIONS);
  });

  it('reads the timeout in milliseconds, only when given', () => {
    assert.equal(traceConfig({ timeout: '2s' }).timeoutMs, 2000);
    assert.equal('timeoutMs' in traceConfig({}), false);
    assert.equal('timeoutMs' in traceConfig({ timeout: null }), false);
    assert.throws(() => traceConfig({ timeout: '2' }), RequestFailed);
  });

  it('picks the native tracers by name with their tracerConfig', () => {
    assert.deepEqual(traceConfig({ tracer: 'callTracer' }).tracer, {
      tracer: 'callTracer',
      onlyTopCall: false,
      withLog: false,
    });
    assert.deepEqual(
      traceConfig({ tracer: 'callTracer', tracerConfig: { onlyTopCall: true, withLog: true } }).tracer,
      { tracer: 'callTracer', onlyTopCall: true, withLog: true },
    );
    assert.deepEqual(traceConfig({ tracer: 'prestateTracer' }).tracer, {
      tracer: 'prestateTracer',
      diffMode: false,
      disableCode: false,
      disableStorage: false,
    });
    assert.deepEqual(
      traceConfig({
        tracer: 'prestateTracer',
        tracerConfig: { diffMode: true, disableCode: true, disableStorage: true },
      }).tracer,
      { tracer: 'prestateTracer', diffMode: true, disableCode: true, disableStorage: true },
    );
    assert.deepEqual(traceConfig({ tracer: 'noopTracer' }).tracer, { tracer: 'noopTracer' });
  });

  it("a tracer's own flags do not leak from the struct logger's top-level fields", () => {
    // disableStorage at the top level is the struct logger's; the prestate tracer's is in tracerConfig.
    assert.deepEqual(traceConfig({ tracer: 'prestateTracer', disableStorage: true }).tracer, {
      tracer: 'prestateTracer',
      diffMode: false,
      disableCode: false,
      disableStorage: false,
    });
  });

  it("an unknown tracer (or JavaScript source) is 'tracer not found', a request failure", () => {
    for (const tracer of ['fourByteTracer4', 'CallTracer', '{ result: function() {} }']) {
      throwsExactly(() => traceConfig({ tracer }), RequestFailed, 'tracer not found');
    }
  });

  it('a non-string tracer is a parameter problem', () => {
    throwsExactly(
      () => traceConfig({ tracer: 1 }),
      ParamProblem,
      'tracer: expected a tracer name (a string)',
    );
    throwsExactly(
      () => traceConfig({ tracer: {} }),
      ParamProblem,
      'tracer: expected a tracer name (a string)',
    );
  });

  it('tracerConfig flags must be booleans, whichever tracer runs (geth decodes them all first)', () => {
    for (const field of ['onlyTopCall', 'withLog', 'diffMode', 'disableCode', 'disableStorage']) {
      for (const tracer of ['callTracer', 'prestateTracer', 'noopTracer', undefined]) {
        throwsExactly(
          () => traceConfig({ tracer, tracerConfig: { [field]: 'true' } }),
          ParamProblem,
          `tracerConfig.${field}: expected a boolean`,
        );
      }
      throwsExactly(
        () => traceConfig({ tracer: 'callTracer', tracerConfig: { [field]: 1 } }),
        ParamProblem,
        `tracerConfig.${field}: expected a boolean`,
      );
    }
    // A flag given as null is absent.
    assert.deepEqual(traceConfig({ tracer: 'callTracer', tracerConfig: { onlyTopCall: null } }).tracer, {
      tracer: 'callTracer',
      onlyTopCall: false,
      withLog: false,
    });
  });

  it('a bad field is refused before an unknown tracer is looked up', () => {
    throwsExactly(
      () => traceConfig({ tracer: 'nope', tracerConfig: { withLog: 'yes' } }),
      ParamProblem,
      'tracerConfig.withLog: expected a boolean',
    );
  });

  it('tracerConfig must be an object; unknown fields in it are ignored', () => {
    throwsExactly(
      () => traceConfig({ tracer: 'callTracer', tracerConfig: [] }),
      ParamProblem,
      'tracerConfig must be an object',
    );
    throwsExactly(
      () => traceConfig({ tracer: 'callTracer', tracerConfig: 'x' }),
      ParamProblem,
      'tracerConfig must be an object',
    );
    assert.deepEqual(traceConfig({ tracer: 'noopTracer', tracerConfig: { whatever: 1 } }).tracer, {
      tracer: 'noopTracer',
    });
  });

  it('struct logger flags must be booleans', () => {
    for (const field of ['disableStack', 'disableStorage', 'enableMemory', 'enableReturnData']) {
      throwsExactly(() => traceConfig({ [field]: 0 }), ParamProblem, `${field}: expected a boolean`);
    }
  });

  it('limit must be a non-negative integer JSON number', () => {
    assert.deepEqual(traceConfig({ limit: 0 }), DEFAULT_TRACE_OPTIONS);
    for (const limit of [-1, 1.5, '10', '0x10', true, 2 ** 53]) {
      throwsExactly(() => traceConfig({ limit }), ParamProblem, 'limit: expected a non-negative integer');
    }
  });

  it('the config must be an object', () => {
    for (const value of [null, [], 'callTracer', 1]) {
      throwsExactly(() => traceConfig(value), ParamProblem, 'trace config must be an object');
      throwsExactly(() => traceCallConfig(value), ParamProblem, 'trace config must be an object');
    }
  });
});

describe('traceCallConfig', () => {
  it('is a traceConfig without overrides when none are given', () => {
    assert.deepEqual(traceCallConfig({}), DEFAULT_TRACE_OPTIONS);
    assert.deepEqual(traceCallConfig({ tracer: 'noopTracer', timeout: '1s' }), {
      tracer: { tracer: 'noopTracer' },
      timeoutMs: 1000,
    });
  });

  it('adds state and block overrides', () => {
    const options = traceCallConfig({
      tracer: 'callTracer',
      stateOverrides: { [ADDRESS]: { balance: '0x10', nonce: '0x1' } },
      blockOverrides: { number: '0x20', time: '0x30' },
    });
    assert.deepEqual(options.tracer, { tracer: 'callTracer', onlyTopCall: false, withLog: false });
    assert.deepEqual(options.stateOverrides, [
      {
        address: Uint8Array.from(Buffer.from(ADDRESS.slice(2), 'hex')),
        override: { balance: 16n, nonce: 1n },
      },
    ]);
    assert.deepEqual(options.blockOverrides, { number: 32n, time: 48n });
  });

  it('passes override errors on', () => {
    assert.throws(
      () => traceCallConfig({ stateOverrides: { [ADDRESS]: { balance: 16 } } }),
      (e: unknown) =>
        e instanceof ParamProblem && e.message.startsWith(`state override ${ADDRESS}.balance: `),
    );
    assert.throws(
      () => traceCallConfig({ blockOverrides: { number: 'latest' } }),
      (e: unknown) => e instanceof ParamProblem && e.message === 'number: hex string without 0x prefix',
    );
  });

  it('checks the tracer fields as traceConfig does', () => {
    throwsExactly(() => traceCallConfig({ tracer: 'jsTracer' }), RequestFailed, 'tracer not found');
    throwsExactly(
      () => traceCallConfig({ limit: -1 }),
      ParamProblem,
      'limit: expected a non-negative integer',
    );
  });
});
