import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import fc from 'fast-check';
import WebSocket from 'ws';
import { METHODS } from '../../src/rpc/methods/index.ts';
import { tempDir } from '../support/cli.ts';
import { type CliServer, serveCli, serveDev, stopDev } from '../support/devServer.ts';
import { importConformanceChain } from '../support/server.ts';
import { type Bad, encodeJson, type FuzzContext, type Hex } from './kinds.ts';
import { METHOD_SPECS, type MethodSpec } from './methods.ts';

/**
 * The fuzz suite: seeded, bounded requests against a dev chain and the imported conformance chain,
 * each served by the real CLI in its own process, over HTTP and WebSocket. Every method of the table
 * with well-formed parameters, a malformed value at every parameter position, wrong arities, and
 * malformed envelopes (bad JSON, invalid requests, unknown methods, ids of every shape, batches).
 * Each answer must be a valid JSON-RPC answer with the right code: -32700 / -32600 / -32601 / -32602
 * for what is wrong with the request, an execution code for a well-formed one, never -32603 for
 * bad input, the id echoed as sent. The server's memory must stay bounded.
 *
 * Every case runs even after a failure; the test then fails once with the distinct failure classes
 * (method, input, answer), each with one example. Reproduce with FUZZ_SEED (printed) and FUZZ_RUNS;
 * FUZZ_SEED=random draws a new sample; FUZZ_METHODS=a,b fuzzes only those methods.
 */

// Per chain and transport. Four streams of this many take about a minute on two cores.
const DEFAULT_RUNS = 800;
const RUNS = Number(process.env.FUZZ_RUNS ?? DEFAULT_RUNS);
// The test command fuzzes one fixed sample, so a run that lands is a run anyone can repeat; a
// new sample is one `FUZZ_SEED=random` away (the seed it drew is printed).
const DEFAULT_SEED = 1779222135;
const SEED =
  process.env.FUZZ_SEED === 'random'
    ? Math.floor(Math.random() * 2 ** 31)
    : Number(process.env.FUZZ_SEED ?? DEFAULT_SEED);
// A server that answers this run in a few hundred MB; the issue saw 2 GB once answers went unbounded.
const MAX_RSS_MB = 1024;
// A request nested as deep as a recursive parser would overflow on (the issue saw 10,000 fail).
const DEEP_REQUEST = 10_000;
// After this many refused connections in a row the server is gone; more cases would say nothing new.
const MAX_CONNECTION_FAILURES = 5;
// The JSON-RPC codes that say what is wrong with the request; a well-formed one never gets them.
const PARSE_ERROR = -32700;
const INVALID_REQUEST = -32600;
const METHOD_NOT_FOUND = -32601;
const INVALID_PARAMS = -32602;
const READ_ONLY = -32000;
const INTERNAL_ERROR = -32603;
const REQUEST_CODES = new Set([
  PARSE_ERROR,
  INVALID_REQUEST,
  METHOD_NOT_FOUND,
  INVALID_PARAMS,
  INTERNAL_ERROR,
]);
// Texts that only come from JavaScript itself, never from a message written for a user.
const JS_INTERNALS =
  /\[object Object\]|Cannot (convert|read|mix)|is not a function|is not iterable|undefined|Maximum call stack|Unexpected token|SyntaxError|TypeError|RangeError/;

process.stdout.write(`fuzz: FUZZ_SEED=${SEED} FUZZ_RUNS=${RUNS}\n`);

/** `ok`: a result or an execution error (or one of `allow`); `codes`: exactly one of these errors. */
type Expect = { kind: 'ok'; allow?: number[] } | { kind: 'codes'; codes: number[] };

interface Single {
  /** Request JSON text. */
  text: string;
  /** The id as sent: raw JSON text, or undefined for a notification. */
  idText: string | undefined;
  expect: Expect;
}

interface Case {
  /** Failure class: method and what was wrong with the input (no values, so classes group). */
  what: string;
  /** The body, or the batch's elements. */
  body: Single | { batch: Single[] } | { raw: string; idText?: string; expect: Expect };
}

interface Answer {
  /** HTTP status (WebSocket: 200). */
  status: number;
  /** The body; null when nothing was sent back. */
  text: string | null;
}

let nextId = 1;
const freshId = (): string => String(nextId++);

function request(method: string, params: unknown[] | undefined, id: string | undefined): string {
  const fields = [
    `"jsonrpc":"2.0"`,
    ...(id === undefined ? [] : [`"id":${id}`]),
    `"method":${JSON.stringify(method)}`,
  ];
  if (params !== undefined) fields.push(`"params":${encodeJson(params)}`);
  return `{${fields.join(',')}}`;
}

const ok: Expect = { kind: 'ok' };
const codes = (...c: number[]): Expect => ({ kind: 'codes', codes: c });

/** A call of `name` with well-formed params, one malformed position, or a wrong arity. */
function methodCase(name: string, spec: MethodSpec, ctx: FuzzContext, overHttp: boolean): fc.Arbitrary<Case> {
  // The dev chain's evm_/anvil_/hardhat_ methods are unavailable on an imported (read-only) chain
  // whatever their params: -32000 "read-only" before any parameter check, as a method switched off.
  const readOnlyDev = ctx.signers.length === 0 && /^(evm|anvil|hardhat)_/.test(name);
  const onHttp = (given: Expect): Expect => {
    const e = readOnlyDev && given.kind === 'codes' ? codes(...given.codes, READ_ONLY) : given;
    if (!overHttp || !spec.socketOnly) return e;
    return e.kind === 'ok' ? codes(METHOD_NOT_FOUND) : codes(METHOD_NOT_FOUND, ...e.codes);
  };
  const single = (what: string, params: unknown[] | undefined, expect: Expect): Case => {
    const id = freshId();
    return {
      what: `${name} ${what}`,
      body: { text: request(name, params, id), idText: id, expect: onHttp(expect) },
    };
  };
  const validParams =
    spec.validParams?.(ctx) ??
    fc
      .tuple(
        ...spec.params.map((p) =>
          p.optional ? fc.option(p.kind.valid(ctx), { nil: undefined }) : p.kind.valid(ctx),
        ),
      )
      .map((values) => {
        // Trailing absent optionals are left out, inner ones sent as null (both mean "absent").
        const out = values.map((v) => (v === undefined ? null : v));
        while (out.length > 0 && out[out.length - 1] === null && spec.params[out.length - 1]?.optional)
          out.pop();
        return out;
      });
  const wellFormed: Expect = spec.validAlsoCodes ? { kind: 'ok', allow: spec.validAlsoCodes } : ok;
  const valid = validParams.map((params) => single('well-formed', params, wellFormed));
  // A method with its own malformed lists has parameters that depend on each other: only those.
  const positions = (spec.invalidParams ? [] : spec.params).map((p, position) =>
    fc.tuple(validParams, p.kind.invalid(ctx)).map(([params, b]: [unknown[], Bad]) => {
      const out = [...params];
      while (out.length < position) out.push(null);
      out[position] = b.value;
      return single(`param ${position}: ${b.label}`, out, codes(INVALID_PARAMS, ...(b.alsoCodes ?? [])));
    }),
  );
  const custom = spec.invalidParams
    ? [
        spec
          .invalidParams(ctx)
          .map(({ position, bad, params }) =>
            single(
              `param ${position}: ${bad.label}`,
              params,
              codes(INVALID_PARAMS, ...(bad.alsoCodes ?? [])),
            ),
          ),
      ]
    : [];
  const arity = [
    validParams.map((params) =>
      single(
        'with one argument too many',
        [...params, ...Array(spec.params.length - params.length).fill(null), 1],
        codes(INVALID_PARAMS),
      ),
    ),
    fc
      .constantFrom<[string, unknown]>(
        ['params an object', {}],
        ['params a string', 'x'],
        ['params a number', 7],
      )
      .map(([what, params]) => {
        const id = freshId();
        const text = `{"jsonrpc":"2.0","id":${id},"method":${JSON.stringify(name)},"params":${JSON.stringify(params)}}`;
        return { what: `${name} ${what}`, body: { text, idText: id, expect: onHttp(codes(INVALID_PARAMS)) } };
      }),
    ...(spec.params[0] && !spec.params[0].optional
      ? [fc.constant(null).map(() => single('without its required arguments', [], codes(INVALID_PARAMS)))]
      : []),
  ];
  return fc.oneof(
    { arbitrary: valid, weight: 4 },
    ...(positions.length + custom.length > 0
      ? [{ arbitrary: fc.oneof(...positions, ...custom), weight: 4 }]
      : []),
    { arbitrary: fc.oneof(...arity), weight: 1 },
  );
}

/** Ids as clients send them; numbers are compared as text, since 1e400 or 30 digits have no JS number. */
const ID_SHAPES: Array<[string, string]> = [
  ['a small integer', '7'],
  ['zero', '0'],
  ['a negative integer', '-12'],
  ['a fraction', '1.5'],
  ['an exponent', '1E2'],
  ['1e400', '1e400'],
  ['a 30-digit integer', '123456789012345678901234567890'],
  ['2^53 + 1', '9007199254740993'],
  ['-0', '-0'],
  ['null', 'null'],
  ['an empty string', '""'],
  ['a string with escapes', '"a\\"b\\\\c\\u00e9"'],
  ['a long string', JSON.stringify('i'.repeat(10_000))],
];

function envelopeCase(): fc.Arbitrary<Case> {
  const cheap = fc.constantFrom('eth_chainId', 'eth_blockNumber', 'net_version', 'eth_syncing');
  const ids = fc.constantFrom(...ID_SHAPES).map(([what, text]) => ({
    what: `id ${what}`,
    body: { text: request('eth_chainId', [], text), idText: text, expect: ok },
  }));
  const badJson = fc
    .oneof(
      fc.constant(['truncated', '{"jsonrpc":"2.0","id":1,"method":"eth_chainId"']),
      fc.constant(['a trailing comma', '{"jsonrpc":"2.0","id":1,"method":"eth_chainId",}']),
      fc.constant(['single quotes', "{'jsonrpc':'2.0'}"]),
      fc.constant(['a bare word', 'hello']),
      fc.constant(['an unterminated batch', '[{"jsonrpc":"2.0","id":1,"method":"eth_chainId"}']),
      fc
        .string({ minLength: 1, maxLength: 30 })
        .filter(notJson)
        .map((s) => ['random text', s]),
    )
    .map(([what, raw]) => ({
      what: `bad JSON: ${what}`,
      body: { raw: raw as string, expect: codes(PARSE_ERROR) },
    }));
  // The id is echoed when it is a valid id, whatever else is wrong (geth does the same).
  const invalidRequests = fc
    .constantFrom<[string, string, string]>(
      ['jsonrpc missing', '{"id":1,"method":"eth_chainId"}', '1'],
      ['jsonrpc "1.0"', '{"jsonrpc":"1.0","id":1,"method":"eth_chainId"}', '1'],
      ['jsonrpc a number', '{"jsonrpc":2.0,"id":1,"method":"eth_chainId"}', '1'],
      ['method missing', '{"jsonrpc":"2.0","id":1}', '1'],
      ['method a number', '{"jsonrpc":"2.0","id":1,"method":5}', '1'],
      ['method empty', '{"jsonrpc":"2.0","id":1,"method":""}', '1'],
      ['method null', '{"jsonrpc":"2.0","id":1,"method":null}', '1'],
      ['id an object', '{"jsonrpc":"2.0","id":{},"method":"eth_chainId"}', 'null'],
      ['id a list', '{"jsonrpc":"2.0","id":[1],"method":"eth_chainId"}', 'null'],
      ['id a boolean', '{"jsonrpc":"2.0","id":true,"method":"eth_chainId"}', 'null'],
      ['a number', '5', 'null'],
      ['a string', '"eth_chainId"', 'null'],
      ['null', 'null', 'null'],
      ['true', 'true', 'null'],
    )
    .map(
      ([what, raw, id]): Case => ({
        what: `invalid request: ${what}`,
        body: { raw, idText: id, expect: codes(INVALID_REQUEST) },
      }),
    );
  // A batch whose one element is a list nested 10,000 deep: one -32600 for that element.
  const deepBatch = fc.constant<Case>({
    what: `a batch holding lists nested ${DEEP_REQUEST} deep`,
    body: {
      batch: [
        {
          text: `${'['.repeat(DEEP_REQUEST)}${']'.repeat(DEEP_REQUEST)}`,
          idText: 'null',
          expect: codes(INVALID_REQUEST),
        },
      ],
    },
  });
  const unknown = fc
    .oneof(
      fc.string({ maxLength: 20 }).filter((m) => m !== '' && !Object.hasOwn(METHODS, m)),
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
    .map((m) => {
      const id = freshId();
      return {
        what: 'unknown method',
        body: { text: request(m, [], id), idText: id, expect: codes(METHOD_NOT_FOUND) },
      };
    });
  const element = fc.oneof(
    cheap.map((m): Single => {
      const id = freshId();
      return { text: request(m, [], id), idText: id, expect: ok };
    }),
    cheap.map((m): Single => ({ text: request(m, [], undefined), idText: undefined, expect: ok })),
    fc
      .constantFrom('5', '"x"', '[]', '{}', 'null')
      .map((t): Single => ({ text: t, idText: 'null', expect: codes(INVALID_REQUEST) })),
    fc.constant(null).map((): Single => {
      const id = freshId();
      return { text: request('eth_nope', [], id), idText: id, expect: codes(METHOD_NOT_FOUND) };
    }),
    fc.constant(null).map((): Single => {
      const id = freshId();
      return { text: request('eth_getBalance', ['0x12'], id), idText: id, expect: codes(INVALID_PARAMS) };
    }),
  );
  const batches = fc
    .array(element, { minLength: 1, maxLength: 8 })
    .map((batch) => ({ what: 'batch', body: { batch } }));
  const empty = fc.constant({ what: 'empty batch', body: { raw: '[]', expect: codes(INVALID_REQUEST) } });
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

/** The problem with an answer to one request, or null if it is right. */
function checkOne(answer: unknown, sent: Single): string | null {
  if (typeof answer !== 'object' || answer === null || Array.isArray(answer)) return 'answer not an object';
  const a = answer as Record<string, unknown>;
  if (a.jsonrpc !== '2.0') return 'jsonrpc not "2.0"';
  const hasResult = Object.hasOwn(a, 'result');
  const hasError = Object.hasOwn(a, 'error');
  if (hasResult === hasError) return 'not exactly one of result and error';
  if (hasError) {
    const e = a.error as Record<string, unknown> | null;
    if (typeof e !== 'object' || e === null) return 'error not an object';
    if (!Number.isInteger(e.code)) return 'error code not an integer';
    if (typeof e.message !== 'string' || e.message === '') return 'error without a message';
    if (JS_INTERNALS.test(e.message))
      return `error ${e.code} leaks JavaScript internals: "${e.message.slice(0, 80)}"`;
    const code = e.code as number;
    if (sent.expect.kind === 'ok' && REQUEST_CODES.has(code) && !sent.expect.allow?.includes(code))
      return `well-formed request refused with ${code} "${e.message.slice(0, 80)}"`;
    if (sent.expect.kind === 'codes' && !sent.expect.codes.includes(code))
      return `expected ${sent.expect.codes.join(' or ')}, got ${code} "${e.message.slice(0, 80)}"`;
  } else if (sent.expect.kind === 'codes') {
    return `expected ${sent.expect.codes.join(' or ')}, got a result`;
  }
  return null;
}

/** The raw text of the `id` member of an answer object (the server writes compact JSON). */
function rawIdOf(text: string): string | undefined {
  return /^\{"jsonrpc":"2\.0","id":((?:"(?:[^"\\]|\\.)*")|[^,}]+)/.exec(text)?.[1];
}

function checkIdEcho(text: string, sent: Single): string | null {
  if (sent.idText === undefined) return null;
  const got = rawIdOf(text);
  if (got === undefined) return 'answer without an id first';
  // Strings compare as values; numbers as written, which is what "echoed as sent" means for 1e400.
  const same = sent.idText.startsWith('"')
    ? JSON.parse(got) === JSON.parse(sent.idText)
    : got === sent.idText;
  return same ? null : `id not echoed as sent (sent ${sent.idText.slice(0, 40)}, got ${got.slice(0, 40)})`;
}

function check(c: Case, answer: Answer): string | null {
  if (answer.status !== 200) return `HTTP ${answer.status}`;
  const body = c.body;
  if ('batch' in body) {
    const expected = body.batch.filter((s) => s.idText !== undefined);
    if (expected.length === 0)
      return answer.text === null || answer.text === '' ? null : 'an answer to notifications only';
    if (answer.text === null) return 'no answer';
    let parsed: unknown;
    try {
      parsed = JSON.parse(answer.text);
    } catch {
      return `answer not JSON: ${answer.text.slice(0, 60)}`;
    }
    if (!Array.isArray(parsed)) return 'batch answer not an array';
    if (parsed.length !== expected.length)
      return `batch of ${expected.length} answered with ${parsed.length}`;
    // Ids are unique in a batch except null; answers are matched to requests by id.
    const left = [...expected];
    for (const a of parsed) {
      const id = JSON.stringify((a as { id?: unknown }).id ?? null);
      const i = left.findIndex((s) => JSON.stringify(JSON.parse(s.idText as string)) === id);
      if (i < 0) return `batch answer with an unexpected id ${id}`;
      const [sent] = left.splice(i, 1);
      const problem = checkOne(a, sent as Single);
      if (problem) return `batch element: ${problem}`;
    }
    return null;
  }
  const sent: Single =
    'raw' in body ? { text: body.raw, idText: body.idText ?? 'null', expect: body.expect } : body;
  if (sent.idText === undefined)
    return answer.text === null || answer.text === '' ? null : 'an answer to a notification';
  if (answer.text === null || answer.text === '') return 'no answer';
  let parsed: unknown;
  try {
    parsed = JSON.parse(answer.text);
  } catch {
    return `answer not JSON: ${answer.text.slice(0, 60)}`;
  }
  return checkOne(parsed, sent) ?? checkIdEcho(answer.text, sent);
}

function bodyText(c: Case): string {
  const body = c.body;
  if ('batch' in body) return `[${body.batch.map((s) => s.text).join(',')}]`;
  return 'raw' in body ? body.raw : body.text;
}

const expectsAnswer = (c: Case): boolean => {
  const body = c.body;
  if ('batch' in body) return body.batch.some((s) => s.idText !== undefined);
  return 'raw' in body || body.idText !== undefined;
};

interface Transport {
  name: string;
  send(body: string, answered: boolean): Promise<Answer>;
  close(): Promise<void>;
}

function httpTransport(url: string): Transport {
  return {
    name: 'HTTP',
    async send(body) {
      const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
      const text = await res.text();
      return { status: res.status, text: text === '' ? null : text };
    },
    close: async () => {},
  };
}

/**
 * One request at a time on one socket, so the next message is the answer (subscription notifications
 * aside). A request that gets no answer is followed by a sentinel, whose answer must come next.
 */
async function wsTransport(url: string): Promise<Transport> {
  const ws = new WebSocket(url);
  await new Promise((resolve, reject) => ws.once('open', resolve).once('error', reject));
  const queue: string[] = [];
  let waiter: ((m: string) => void) | undefined;
  let closed: string | undefined;
  ws.on('message', (data, isBinary) => {
    const text = isBinary ? `<binary frame> ${data.toString()}` : data.toString();
    if (text.startsWith('{"jsonrpc":"2.0","method":"eth_subscription"')) return;
    if (waiter) {
      const w = waiter;
      waiter = undefined;
      w(text);
    } else queue.push(text);
  });
  ws.on('close', (code) => {
    closed = `socket closed (${code})`;
    waiter?.(closed);
  });
  const next = () =>
    new Promise<string>((resolve) => {
      const queued = queue.shift();
      if (queued !== undefined) resolve(queued);
      else if (closed !== undefined) resolve(closed);
      else waiter = resolve;
    });
  let sentinel = 0;
  return {
    name: 'WebSocket',
    async send(body, answered) {
      if (closed !== undefined) throw new Error(closed);
      ws.send(body);
      if (answered) {
        const text = await next();
        return closed === text ? { status: 1006, text: null } : { status: 200, text };
      }
      const id = `"sentinel-${++sentinel}"`;
      ws.send(request('eth_chainId', [], id));
      const text = await next();
      if (rawIdOf(text) === id) return { status: 200, text: null };
      await next();
      return { status: 200, text };
    },
    close: async () => {
      ws.close();
    },
  };
}

/** The chain the generators pick values from: hashes, accounts and head, read over HTTP. */
async function readContext(url: string): Promise<FuzzContext> {
  let id = 0;
  const call = async <T>(method: string, params: unknown[] = []): Promise<T> => {
    const res = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: ++id, method, params }),
    });
    const body = (await res.json()) as { result: T };
    return body.result;
  };
  const head = Number(await call<Hex>('eth_blockNumber'));
  const blockHashes: Hex[] = [];
  const txHashes: Hex[] = [];
  const addresses = new Set<Hex>();
  for (let n = 0; n <= head; n++) {
    const b = await call<{
      hash: Hex;
      miner: Hex;
      transactions: Array<{ hash: Hex; from: Hex; to: Hex | null }>;
    }>('eth_getBlockByNumber', [`0x${n.toString(16)}`, true]);
    blockHashes.push(b.hash);
    for (const tx of b.transactions) {
      txHashes.push(tx.hash);
      addresses.add(tx.from);
      if (tx.to) addresses.add(tx.to);
    }
  }
  const signers = await call<Hex[]>('eth_accounts');
  for (const s of signers) addresses.add(s);
  return { head, blockHashes, txHashes, addresses: [...addresses], signers };
}

interface Failure {
  count: number;
  where: Set<string>;
  example: string;
}

/** Runs every case of one stream and records its failures by class. */
async function runStream(
  label: string,
  transport: Transport,
  cases: Case[],
  failures: Map<string, Failure>,
): Promise<void> {
  let refused = 0;
  for (const c of cases) {
    const body = bodyText(c);
    let problem: string | null;
    try {
      problem = check(c, await transport.send(body, expectsAnswer(c)));
      refused = 0;
    } catch (e) {
      problem = `no answer: ${(e as Error).message}`;
      if (++refused >= MAX_CONNECTION_FAILURES) {
        record(failures, `${label}: the server stopped answering`, label, body);
        return;
      }
    }
    if (problem !== null) record(failures, `${c.what} → ${problem}`, label, body);
  }
}

function record(failures: Map<string, Failure>, key: string, where: string, body: string): void {
  const f = failures.get(key) ?? {
    count: 0,
    where: new Set<string>(),
    example: body.length > 300 ? `${body.slice(0, 300)}… (${body.length} bytes)` : body,
  };
  f.count++;
  f.where.add(where);
  failures.set(key, f);
}

function report(failures: Map<string, Failure>): string {
  return [...failures.entries()]
    .sort(([a], [b]) => (a < b ? -1 : 1))
    .map(([key, f]) => `- ${key}\n    ×${f.count} on ${[...f.where].join(', ')}; e.g. ${f.example}`)
    .join('\n');
}

function rssMb(pid: number): { now: number; peak: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (name: string) => Number(new RegExp(`${name}:\\s+(\\d+)`).exec(status)?.[1] ?? Number.NaN);
  return { now: Math.round(kb('VmRSS') / 1024), peak: Math.round(kb('VmHWM') / 1024) };
}

/** A stream's cases: every method (each equally likely) and the envelope, from one seed. */
function casesFor(ctx: FuzzContext, overHttp: boolean, seed: number): Case[] {
  // FUZZ_METHODS=a,b fuzzes only those methods (while working on them); the envelope cases stay.
  const only = process.env.FUZZ_METHODS?.split(',').filter((m) => m !== '') ?? [];
  const methods = Object.entries(METHOD_SPECS)
    .filter(([name]) => only.length === 0 || only.includes(name))
    .map(([name, spec]) => methodCase(name, spec, ctx, overHttp));
  const arb = fc.oneof(
    { arbitrary: fc.oneof(...methods), weight: 5 },
    { arbitrary: envelopeCase(), weight: 1 },
  );
  return fc.sample(arb, { seed, numRuns: RUNS });
}

async function fuzzChain(server: CliServer, chain: string, seedOffset: number): Promise<void> {
  const ctx = await readContext(server.url);
  // The server logs each -32603 (the first line says where it came from).
  const internal = new Map<string, number>();
  server.child.stderr?.on('data', (d: Buffer) => {
    for (const m of d.toString().matchAll(/^.*(?:internal error in|failed in a worker).*$/gm)) {
      const key = m[0].trim().slice(0, 240);
      internal.set(key, (internal.get(key) ?? 0) + 1);
    }
  });
  const failures = new Map<string, Failure>();
  const ws = await wsTransport(server.wsUrl);
  try {
    await Promise.all([
      runStream(`${chain} HTTP`, httpTransport(server.url), casesFor(ctx, true, SEED + seedOffset), failures),
      runStream(`${chain} WebSocket`, ws, casesFor(ctx, false, SEED + seedOffset + 1), failures),
    ]);
  } finally {
    await ws.close();
  }
  const pid = server.child.pid as number;
  const alive = server.child.exitCode === null && server.child.signalCode === null;
  assert.ok(alive, `the ${chain} server exited (${server.child.exitCode ?? server.child.signalCode})`);
  const rss = rssMb(pid);
  process.stdout.write(`fuzz ${chain}: server RSS ${rss.now} MB (peak ${rss.peak} MB)\n`);
  const logged = [...internal.entries()].map(([k, n]) => `- ×${n} ${k}`).join('\n');
  assert.equal(
    failures.size,
    0,
    `${failures.size} failure classes on the ${chain} (FUZZ_SEED=${SEED} FUZZ_RUNS=${RUNS}):\n${report(failures)}` +
      (logged === '' ? '' : `\ninternal errors the server logged:\n${logged}`),
  );
  assert.ok(rss.now <= MAX_RSS_MB, `server RSS ${rss.now} MB after fuzzing, over ${MAX_RSS_MB} MB`);
}

// README's limits: 5 MiB bodies (HTTP 413; a WebSocket message over it closes the socket), 1000 requests per batch (one -32600 in a one-element array, with the first request's id).
const MAX_BODY_BYTES = 5 * 1024 * 1024;
const MAX_BATCH = 1000;

async function checkLimits(server: CliServer): Promise<void> {
  const oversize = request('eth_getBalance', [`0x${'1'.repeat(MAX_BODY_BYTES)}`, 'latest'], '1');
  const http = httpTransport(server.url);
  assert.equal((await http.send(oversize, true)).status, 413);
  const ws = new WebSocket(server.wsUrl);
  await new Promise((resolve, reject) => ws.once('open', resolve).once('error', reject));
  const closed = new Promise<number>((resolve) => ws.once('close', resolve));
  ws.send(oversize);
  // 1009 "message too big" (RFC 6455), so the client learns why its socket ended.
  assert.equal(await closed, 1009, 'the socket of an oversize message is closed with 1009');
  const batch = Array.from({ length: MAX_BATCH + 1 }, (_, i) => request('eth_chainId', [], String(i + 5)));
  const answer = await http.send(`[${batch.join(',')}]`, true);
  const parsed = JSON.parse(answer.text ?? 'null') as Array<{ id: unknown; error?: { code: number } }>;
  assert.deepEqual(
    parsed.map((a) => [a.id, a.error?.code]),
    [[5, INVALID_REQUEST]],
  );
  // Still serving, on both transports.
  const after = await http.send(request('eth_chainId', [], '1'), true);
  assert.match(after.text ?? '', /"result":"0x/);
  const socket = await wsTransport(server.wsUrl);
  try {
    assert.match((await socket.send(request('eth_chainId', [], '2'), true)).text ?? '', /"result":"0x/);
  } finally {
    await socket.close();
  }
}

describe('fuzz: every method and malformed envelopes over HTTP and WebSocket', {
  timeout: 15 * 60_000,
}, () => {
  it('has a parameter table for exactly the methods the server serves', () => {
    assert.deepEqual(Object.keys(METHOD_SPECS).sort(), Object.keys(METHODS).sort());
  });

  describe('on a dev chain', () => {
    const dir = tempDir('ethtrace-fuzz-dev-');
    let server: CliServer | undefined;
    before(async () => {
      server = await serveDev(dir.path);
      // A few mined transactions, so hashes and senders exist to pick from.
      const [from] = (await readContext(server.url)).signers;
      for (let i = 0; i < 3; i++) {
        await fetch(server.url, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({
            jsonrpc: '2.0',
            id: i,
            method: 'eth_sendTransaction',
            params: [{ from, to: `0x${'42'.repeat(20)}`, value: '0x1', gas: '0x5208' }],
          }),
        });
      }
    });
    after(async () => {
      if (server) await stopDev(server.child);
      dir.cleanup();
    });
    it('answers every request with a valid answer and the right code', async () => {
      await fuzzChain(server as CliServer, 'dev chain', 0);
    });
    it('refuses an oversize body or batch with the documented answers and keeps serving', async () => {
      await checkLimits(server as CliServer);
    });
  });

  describe('on the conformance chain', () => {
    let chain: { datadir: string; cleanup: () => void } | undefined;
    let server: CliServer | undefined;
    before(async () => {
      chain = await importConformanceChain();
      server = await serveCli(['--no-auth', '--datadir', chain.datadir]);
    });
    after(async () => {
      if (server) await stopDev(server.child);
      chain?.cleanup();
    });
    it('answers every request with a valid answer and the right code', async () => {
      await fuzzChain(server as CliServer, 'conformance chain', 2);
    });
  });
});
