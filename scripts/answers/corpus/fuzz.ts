import fc from 'fast-check';
import { encodeJson, type Bad as FuzzBad, type FuzzContext } from '../../../test/fuzz/kinds.ts';
import { METHOD_SPECS, type MethodSpec } from '../../../test/fuzz/methods.ts';
import type { Item } from '../lib/compare.ts';

/**
 * Malformed and well-formed requests from the fuzz suite's parameter kinds (test/fuzz/kinds.ts,
 * methods.ts), drawn with fast-check from a fixed seed: well-formed parameter lists, a malformed
 * value at each position, wrong arities, and envelopes (bad JSON, invalid requests, unknown methods,
 * ids of every shape, batches). The case makers below follow test/fuzz/rpc.test.ts (which loads
 * src/ and so cannot be imported here) without its expectations: only the two answers' equality
 * matters.
 */

/** Methods whose well-formed calls change a dev chain; on one, only their malformed calls are sent. */
export const MUTATING = new Set([
  'eth_sendRawTransaction',
  'eth_sendTransaction',
  'evm_mine',
  'anvil_mine',
  'hardhat_mine',
  'evm_snapshot',
  'anvil_snapshot',
  'evm_revert',
  'anvil_revert',
  'evm_increaseTime',
  'anvil_increaseTime',
  'evm_setNextBlockTimestamp',
  'anvil_setNextBlockTimestamp',
  'anvil_setBalance',
  'hardhat_setBalance',
  'anvil_setNonce',
  'hardhat_setNonce',
  'anvil_setCode',
  'hardhat_setCode',
  'anvil_setStorageAt',
  'hardhat_setStorageAt',
]);

/** Methods answering a fresh random id. */
export const RANDOM_RESULT_METHODS = new Set([
  'eth_newFilter',
  'eth_newBlockFilter',
  'eth_newPendingTransactionFilter',
  'eth_subscribe',
]);

/**
 * The fuzz kinds' well-formed tracer timeouts ('500ms', '1s', '2s') make an answer depend on load:
 * a heavy transaction traced under load is "execution timeout" on one side and a trace on the other.
 * Raised to 60 s (still a timeout that is parsed and applied); malformed timeouts are left alone.
 */
const SHORT_TIMEOUT = /"timeout":"(?:500ms|1s|2s)"/g;

interface Case {
  method: string;
  kind: 'well-formed' | 'malformed' | 'arity' | 'envelope';
  text: string;
}

export interface FuzzOptions {
  seed: number;
  runs: number;
  /** Every method name the servers know (so "unknown method" cases really are unknown). */
  knownMethods: ReadonlySet<string>;
  /** A dev chain: well-formed calls of MUTATING methods are left out. */
  writable: boolean;
}

export function fuzzItems(chain: string, ctx: FuzzContext, opts: FuzzOptions): Item[] {
  let nextId = 1;
  const freshId = (): string => String(nextId++);
  const methods = Object.entries(METHOD_SPECS).map(([name, spec]) => methodCase(name, spec, ctx, freshId));
  const methodRuns = Math.round((opts.runs * 5) / 6);
  const cases = [
    ...fc.sample(fc.oneof(...methods), { seed: opts.seed, numRuns: methodRuns }),
    ...fc.sample(envelopeCase(opts.knownMethods, freshId), {
      seed: opts.seed + 1,
      numRuns: opts.runs - methodRuns,
    }),
  ];
  return cases
    .filter((c) => !(opts.writable && c.kind === 'well-formed' && MUTATING.has(c.method)))
    .map((c) => {
      const body = c.kind === 'well-formed' ? c.text.replace(SHORT_TIMEOUT, '"timeout":"60s"') : c.text;
      const item: Item = { chain, category: `fuzz ${c.kind}`, method: c.method, body };
      if (RANDOM_RESULT_METHODS.has(c.method)) item.randomResult = true;
      return item;
    });
}

function request(method: string, params: unknown[] | undefined, id: string | undefined): string {
  const fields = [
    `"jsonrpc":"2.0"`,
    ...(id === undefined ? [] : [`"id":${id}`]),
    `"method":${JSON.stringify(method)}`,
  ];
  if (params !== undefined) fields.push(`"params":${encodeJson(params)}`);
  return `{${fields.join(',')}}`;
}

function methodCase(
  name: string,
  spec: MethodSpec,
  ctx: FuzzContext,
  freshId: () => string,
): fc.Arbitrary<Case> {
  const single = (kind: Case['kind'], params: unknown[] | undefined): Case => ({
    method: name,
    kind,
    text: request(name, params, freshId()),
  });
  const validParams =
    spec.validParams?.(ctx) ??
    fc
      .tuple(
        ...spec.params.map((p) =>
          p.optional ? fc.option(p.kind.valid(ctx), { nil: undefined }) : p.kind.valid(ctx),
        ),
      )
      .map((values) => {
        const out = values.map((v) => (v === undefined ? null : v));
        while (out.length > 0 && out[out.length - 1] === null && spec.params[out.length - 1]?.optional)
          out.pop();
        return out;
      });
  const valid = validParams.map((params) => single('well-formed', params));
  const positions = (spec.invalidParams ? [] : spec.params).map((p, position) =>
    fc.tuple(validParams, p.kind.invalid(ctx)).map(([params, b]: [unknown[], FuzzBad]) => {
      const out = [...params];
      while (out.length < position) out.push(null);
      out[position] = b.value;
      return single('malformed', out);
    }),
  );
  const custom = spec.invalidParams
    ? [spec.invalidParams(ctx).map(({ params }) => single('malformed', params))]
    : [];
  const arity = [
    validParams.map((params) =>
      single('arity', [...params, ...Array(spec.params.length - params.length).fill(null), 1]),
    ),
    fc.constantFrom<unknown>({}, 'x', 7).map(
      (params): Case => ({
        method: name,
        kind: 'arity',
        text: `{"jsonrpc":"2.0","id":${freshId()},"method":${JSON.stringify(name)},"params":${JSON.stringify(params)}}`,
      }),
    ),
    ...(spec.params[0] && !spec.params[0].optional ? [fc.constant(null).map(() => single('arity', []))] : []),
  ];
  return fc.oneof(
    { arbitrary: valid, weight: 4 },
    ...(positions.length + custom.length > 0
      ? [{ arbitrary: fc.oneof(...positions, ...custom), weight: 4 }]
      : []),
    { arbitrary: fc.oneof(...arity), weight: 1 },
  );
}

/** test/fuzz/rpc.test.ts's id shapes: numbers are echoed as written, strings as sent. */
const ID_SHAPES: readonly string[] = [
  '7',
  '0',
  '-12',
  '1.5',
  '1E2',
  '1e400',
  '123456789012345678901234567890',
  '9007199254740993',
  '-0',
  'null',
  '""',
  '"a\\"b\\\\c\\u00e9"',
  JSON.stringify('i'.repeat(10_000)),
];

const DEEP_REQUEST = 10_000;

function envelopeCase(known: ReadonlySet<string>, freshId: () => string): fc.Arbitrary<Case> {
  const envelope = (method: string, text: string): Case => ({ method, kind: 'envelope', text });
  const cheap = fc.constantFrom('eth_chainId', 'eth_blockNumber', 'net_version', 'eth_syncing');
  const ids = fc
    .constantFrom(...ID_SHAPES)
    .map((id) => envelope('eth_chainId', request('eth_chainId', [], id)));
  const badJson = fc
    .oneof(
      fc.constant('{"jsonrpc":"2.0","id":1,"method":"eth_chainId"'),
      fc.constant('{"jsonrpc":"2.0","id":1,"method":"eth_chainId",}'),
      fc.constant("{'jsonrpc':'2.0'}"),
      fc.constant('hello'),
      fc.constant('[{"jsonrpc":"2.0","id":1,"method":"eth_chainId"}'),
      fc.string({ minLength: 1, maxLength: 30 }).filter(notJson),
    )
    .map((raw) => envelope('(bad JSON)', raw));
  const invalidRequests = fc
    .constantFrom(
      '{"id":1,"method":"eth_chainId"}',
      '{"jsonrpc":"1.0","id":1,"method":"eth_chainId"}',
      '{"jsonrpc":2.0,"id":1,"method":"eth_chainId"}',
      '{"jsonrpc":"2.0","id":1}',
      '{"jsonrpc":"2.0","id":1,"method":5}',
      '{"jsonrpc":"2.0","id":1,"method":""}',
      '{"jsonrpc":"2.0","id":1,"method":null}',
      '{"jsonrpc":"2.0","id":{},"method":"eth_chainId"}',
      '{"jsonrpc":"2.0","id":[1],"method":"eth_chainId"}',
      '{"jsonrpc":"2.0","id":true,"method":"eth_chainId"}',
      '5',
      '"eth_chainId"',
      'null',
      'true',
    )
    .map((raw) => envelope('(invalid request)', raw));
  const deepBatch = fc.constant(
    envelope('(batch)', `[${'['.repeat(DEEP_REQUEST)}${']'.repeat(DEEP_REQUEST)}]`),
  );
  const unknown = fc
    .oneof(
      fc.string({ maxLength: 20 }).filter((m) => m !== '' && !known.has(m)),
      fc.constantFrom(
        'eth_foo',
        'toString',
        '__proto__',
        'constructor',
        'hasOwnProperty',
        'eth_chainid',
        'ETH_CHAINID',
      ),
    )
    .map((m) => envelope('(unknown method)', request(m, [], freshId())));
  const element = fc.oneof(
    cheap.map((m) => request(m, [], freshId())),
    cheap.map((m) => request(m, [], undefined)),
    fc.constantFrom('5', '"x"', '[]', '{}', 'null'),
    fc.constant(null).map(() => request('eth_nope', [], freshId())),
    fc.constant(null).map(() => request('eth_getBalance', ['0x12'], freshId())),
  );
  const batches = fc
    .array(element, { minLength: 1, maxLength: 8 })
    .map((batch) => envelope('(batch)', `[${batch.join(',')}]`));
  const empty = fc.constant(envelope('(batch)', '[]'));
  return fc.oneof(ids, badJson, invalidRequests, deepBatch, unknown, batches, empty);
}

function notJson(s: string): boolean {
  if (s.trim() === '') return false;
  try {
    JSON.parse(s);
    return false;
  } catch {
    return true;
  }
}
