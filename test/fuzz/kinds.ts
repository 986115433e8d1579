import fc from 'fast-check';

/**
 * Parameter kinds of the fuzz suite: for each, values a peer node (geth first, then Reth/anvil) takes
 * as well-formed, and labelled values it refuses as malformed. A well-formed value may still fail to
 * execute (unknown block, revert, read-only chain): that is an execution error, never -32602 or
 * -32603. A malformed one must be -32602. Labels name the malformation so a failure report says what
 * was sent without the (possibly megabyte-sized) value.
 */

export type Hex = `0x${string}`;

/** What the generators pick real values from: the chain under test, read before fuzzing. */
export interface FuzzContext {
  head: number;
  blockHashes: Hex[];
  txHashes: Hex[];
  /** Accounts with state (senders, contracts, genesis accounts). */
  addresses: Hex[];
  /** eth_accounts: the dev chain's signers (empty on an imported chain). */
  signers: Hex[];
}

/**
 * JSON text sent exactly as written: numbers no JS number can carry (`1e400`, 30 digits), and nesting
 * deeper than JSON.stringify's own recursion can write.
 */
export class RawJson {
  constructor(readonly text: string) {}
}

/** JSON text of a value that may hold RawJsons. */
export function encodeJson(value: unknown): string {
  const raws: string[] = [];
  const text = JSON.stringify(value, (_key, v) => {
    if (!(v instanceof RawJson)) return v;
    raws.push(v.text);
    return `\u0000raw${raws.length - 1}\u0000`;
  });
  return raws.length === 0
    ? text
    : text.replace(/"\\u0000raw(\d+)\\u0000"/g, (_m, i) => raws[Number(i)] ?? '');
}

export interface Bad {
  label: string;
  value: unknown;
  /** Codes a peer may answer besides -32602 (e.g. -32000 where geth reports the problem so). */
  alsoCodes?: number[];
}

export interface Kind {
  valid(ctx: FuzzContext): fc.Arbitrary<unknown>;
  invalid(ctx: FuzzContext): fc.Arbitrary<Bad>;
}

// Sizes of the pathological values. Nesting: a recursive parser overflows V8's stack well below this
// (the issue saw it at 10,000); digits: enough to make a quadratic BigInt parse or a full-value log
// line visible, small enough that a hundred of them stay within the suite's time budget.
const DEEP_NESTING = 10_000;
const HUGE_DIGITS = 100_000;

const bad = (label: string, value: unknown, alsoCodes?: number[]): fc.Arbitrary<Bad> =>
  fc.constant(alsoCodes === undefined ? { label, value } : { label, value, alsoCodes });
const badOf = (label: string, arb: fc.Arbitrary<unknown>): fc.Arbitrary<Bad> =>
  arb.map((value) => ({ label, value }));

const deep = (depth: number): RawJson => new RawJson(`${'['.repeat(depth)}${']'.repeat(depth)}`);
const deepObject = (depth: number): RawJson => new RawJson(`${'{"a":'.repeat(depth)}{}${'}'.repeat(depth)}`);

/** Malformations every position shares: wrong JSON types and pathological nesting. */
function commonBad(...skip: Array<'string' | 'number' | 'bool' | 'object' | 'array'>): fc.Arbitrary<Bad>[] {
  const all: Array<[string, fc.Arbitrary<Bad>]> = [
    ['string', badOf('a random string', fc.string({ maxLength: 12 }))],
    [
      'number',
      badOf('a JSON number', fc.oneof(fc.integer(), fc.double({ noNaN: true, noDefaultInfinity: true }))),
    ],
    ['bool', badOf('a boolean', fc.boolean())],
    ['object', bad('an empty object', {})],
    ['array', bad('an empty array', [])],
  ];
  return [
    ...all.filter(([k]) => !skip.includes(k as never)).map(([, a]) => a),
    bad(`arrays nested ${DEEP_NESTING} deep`, deep(DEEP_NESTING)),
    // An object with an unknown member is a well-formed object (peers ignore unknown members).
    ...(skip.includes('object')
      ? []
      : [bad(`objects nested ${DEEP_NESTING} deep`, deepObject(DEEP_NESTING))]),
  ];
}

export const hexOf = (bytes: Uint8Array): Hex => `0x${Buffer.from(bytes).toString('hex')}`;
const bytesHex = (min: number, max: number) => fc.uint8Array({ minLength: min, maxLength: max }).map(hexOf);
const quantityHex = (max: bigint) => fc.bigInt({ min: 0n, max }).map((n): Hex => `0x${n.toString(16)}`);
const pick = <T>(items: readonly T[], fallback: fc.Arbitrary<T>): fc.Arbitrary<T> =>
  items.length === 0 ? fallback : fc.oneof(fc.constantFrom(...items), fallback);

const U64 = 2n ** 64n;
const U256 = 2n ** 256n;

/** `sized`: the kind has a fixed or bounded size, so a value of HUGE_DIGITS digits is malformed. */
function badHex(what: string, bytes?: number, sized = true): fc.Arbitrary<Bad>[] {
  return [
    bad(`${what} without 0x`, 'ab'.repeat(bytes ?? 2)),
    bad(`${what} "0x" + non-hex`, '0xzz'),
    bad(`${what} with a leading space`, ` 0x${'11'.repeat(bytes ?? 1)}`),
    ...(sized ? [bad(`${what} of ${HUGE_DIGITS} hex digits`, `0x${'f'.repeat(HUGE_DIGITS)}`)] : []),
  ];
}

export const address: Kind = {
  valid: (ctx) => pick(ctx.addresses, bytesHex(20, 20)),
  invalid: () =>
    fc.oneof(
      ...commonBad('string'),
      ...badHex('address', 20),
      badOf('address of the wrong length', bytesHex(0, 19)),
      bad('address of 21 bytes', `0x${'11'.repeat(21)}`),
    ),
};

export const hash: Kind = {
  valid: (ctx) => pick([...ctx.blockHashes, ...ctx.txHashes], bytesHex(32, 32)),
  invalid: () =>
    fc.oneof(
      ...commonBad('string'),
      ...badHex('hash', 32),
      badOf('hash of the wrong length', bytesHex(0, 31)),
      bad('hash of 33 bytes', `0x${'11'.repeat(33)}`),
    ),
};

export const bool: Kind = {
  valid: () => fc.boolean(),
  invalid: () => fc.oneof(...commonBad('bool'), bad('"true" as a string', 'true'), bad('1 for true', 1)),
};

export const data: Kind = {
  valid: () => bytesHex(0, 64),
  // Data has no size bound of its own (the body limit is the bound), so long data is well-formed.
  invalid: () =>
    fc.oneof(...commonBad('string'), ...badHex('data', undefined, false), bad('data of odd length', '0x123')),
};

/** A hex quantity of at most `bits` bits: geth's hexutil.Big (256) or hexutil.Uint64 (64). */
export function quantity(bits: 64 | 256, validMax: bigint = bits === 64 ? 1_000_000n : 10n ** 24n): Kind {
  const limit = bits === 64 ? U64 : U256;
  return {
    valid: () => quantityHex(validMax),
    invalid: () =>
      fc.oneof(
        ...commonBad('string', 'number'),
        bad('a JSON integer for a hex quantity', 5),
        ...badHex('quantity'),
        bad('quantity "0x"', '0x'),
        bad('negative quantity', '-0x1'),
        bad('decimal quantity', '12'),
        bad(`quantity of 2^${bits}`, `0x${limit.toString(16)}`),
        bad(`quantity above 2^${bits}`, `0x${(limit * 4096n + 7n).toString(16)}`),
      ),
  };
}

/** An index (transaction, trace): hex quantity up to 2^64. */
export const index: Kind = {
  valid: () => quantityHex(300n),
  invalid: quantity(64).invalid,
};

const TAGS = ['latest', 'earliest', 'pending', 'safe', 'finalized'] as const;

function blockValid(ctx: FuzzContext, decimal: boolean): fc.Arbitrary<unknown> {
  const n = fc.integer({ min: 0, max: ctx.head + 2 });
  return fc.oneof(
    fc.constantFrom(...TAGS),
    n.map((x) => `0x${x.toString(16)}`),
    n,
    ...(decimal ? [n.map((x) => String(x))] : []),
    n.map((x) => ({ blockNumber: `0x${x.toString(16)}` })),
    pick(ctx.blockHashes, bytesHex(32, 32)).map((h) => ({ blockHash: h })),
    pick(ctx.blockHashes, bytesHex(32, 32)),
  );
}

function blockInvalid(ctx: FuzzContext, decimal: boolean): fc.Arbitrary<Bad> {
  const someHash = ctx.blockHashes[0] ?? `0x${'11'.repeat(32)}`;
  return fc.oneof(
    // JSON integers are block numbers in this profile; the malformed ones are listed below.
    ...commonBad('number'),
    bad('misspelt tag', 'lateest'),
    bad('block "0x"', '0x'),
    bad('block "0x" + non-hex', '0xzz'),
    bad('hex block number above 64 bits', `0x1${'0'.repeat(16)}`),
    bad('negative JSON block number', -1),
    bad('fractional JSON block number', 1.5),
    bad('JSON block number above 2^53', 2 ** 60),
    bad('JSON block number 1e400', new RawJson('1e400')),
    ...(decimal
      ? [
          bad('decimal block number 2^64', U64.toString()),
          bad('decimal block number of 30 digits', '123456789012345678901234567890'),
          bad(`decimal block number of ${HUGE_DIGITS} digits`, '9'.repeat(HUGE_DIGITS)),
        ]
      : [bad('decimal string (debug_ refuses it)', '12')]),
    bad('both blockHash and blockNumber', { blockHash: someHash, blockNumber: '0x1' }),
    bad('blockHash of 2 bytes', { blockHash: '0x1234' }),
    bad('blockNumber not a number', { blockNumber: 'zz' }),
    bad('{blockNumber} of 2^64 in decimal', { blockNumber: U64.toString() }),
    bad('{blockNumber} above 64 bits in hex', { blockNumber: `0x1${'0'.repeat(16)}` }),
    bad('requireCanonical not a boolean', { blockHash: someHash, requireCanonical: 'yes' }),
  );
}

/** Our profile's block parameter (decimal strings taken) and the debug_ one (refused there). */
export const block: Kind = { valid: (c) => blockValid(c, true), invalid: (c) => blockInvalid(c, true) };
export const debugBlock: Kind = {
  valid: (c) => blockValid(c, false),
  invalid: (c) => blockInvalid(c, false),
};

export const storageKey: Kind = {
  valid: () => bytesHex(0, 32),
  invalid: () =>
    fc.oneof(
      ...commonBad('string'),
      bad('storage key of 33 bytes', `0x${'11'.repeat(33)}`),
      bad('storage key with non-hex digits', '0xzz'),
      bad(`storage key of ${HUGE_DIGITS} digits`, `0x${'1'.repeat(HUGE_DIGITS)}`),
    ),
};

export const storageKeys: Kind = {
  valid: () => fc.array(storageKey.valid(emptyContext), { maxLength: 3 }),
  invalid: () =>
    fc.oneof(
      ...commonBad('array'),
      badOf(
        'a list holding a malformed key',
        storageKey.invalid(emptyContext).map((b) => [b.value]),
      ),
      bad(
        '1,025 storage keys',
        Array.from({ length: 1025 }, (_, i) => `0x${i.toString(16)}`),
      ),
    ),
};

export const slotRequests: Kind = {
  valid: (ctx) =>
    // At least one slot: geth refuses an empty request as invalid params.
    fc.dictionary(
      address.valid(ctx) as fc.Arbitrary<string>,
      fc.array(bytesHex(32, 32), { minLength: 1, maxLength: 3 }),
      { minKeys: 1, maxKeys: 2 },
    ),
  invalid: (ctx) =>
    fc.oneof(
      ...commonBad('object'),
      bad('a malformed address key', { '0x12': [] }),
      badOf(
        'slots not a list',
        address.valid(ctx).map((a) => ({ [a as string]: 'x' })),
      ),
      badOf(
        'a slot of 2 bytes',
        address.valid(ctx).map((a) => ({ [a as string]: ['0x1234'] })),
      ),
    ),
};

export const traceTypes: Kind = {
  valid: () => fc.subarray(['trace', 'stateDiff', 'vmTrace']),
  invalid: () =>
    fc.oneof(
      ...commonBad('array'),
      bad('unknown trace type', ['trace', 'foo']),
      bad('trace type not a string', [1]),
    ),
};

/** `valid` picks a subset of the optional fields; `invalid` breaks one field or the whole value. */
function objectKind(
  fields: Record<string, Kind>,
  extraBad: (ctx: FuzzContext) => fc.Arbitrary<Bad>[] = () => [],
  check: (o: Record<string, unknown>) => Record<string, unknown> = (o) => o,
): Kind {
  const names = Object.keys(fields);
  return {
    valid: (ctx) => validObject(fields, ctx, check),
    invalid: (ctx) =>
      fc.oneof(
        ...commonBad('object'),
        ...extraBad(ctx),
        ...names.map((n) =>
          fc
            .tuple(validObject(fields, ctx, check), (fields[n] as Kind).invalid(ctx))
            .map(([o, b]) => ({ ...b, label: `${n}: ${b.label}`, value: { ...o, [n]: b.value } })),
        ),
      ),
  };
}

function validObject(
  fields: Record<string, Kind>,
  ctx: FuzzContext,
  check: (o: Record<string, unknown>) => Record<string, unknown>,
): fc.Arbitrary<Record<string, unknown>> {
  const names = Object.keys(fields);
  return fc
    .record(Object.fromEntries(names.map((n) => [n, (fields[n] as Kind).valid(ctx)])), { requiredKeys: [] })
    .map(check);
}

const list = (item: Kind, maxLength = 2): Kind => ({
  valid: (ctx) => fc.array(item.valid(ctx), { maxLength }),
  invalid: (ctx) =>
    fc.oneof(
      ...commonBad('array'),
      item.invalid(ctx).map((b) => ({ ...b, label: `[${b.label}]`, value: [b.value] })),
    ),
});

const accessList = list(
  objectKind(
    { address, storageKeys: list(hash) },
    () => [],
    (o) => ({ address: `0x${'22'.repeat(20)}`, ...o }),
  ),
);

/** No call both prices with gasPrice and EIP-1559 fields, and data and input agree. */
function consistentCall(o: Record<string, unknown>): Record<string, unknown> {
  const out = { ...o };
  if (out.gasPrice !== undefined) {
    delete out.maxFeePerGas;
    delete out.maxPriorityFeePerGas;
  }
  if (out.input !== undefined && out.data !== undefined) out.input = out.data;
  return out;
}

const callFields = {
  from: address,
  to: address,
  gas: quantity(64, 3_000_000n),
  gasPrice: quantity(256, 10n ** 11n),
  maxFeePerGas: quantity(256, 10n ** 11n),
  maxPriorityFeePerGas: quantity(256, 10n ** 10n),
  value: quantity(256, 10n ** 18n),
  nonce: quantity(64, 1000n),
  data,
  input: data,
  type: {
    valid: () => fc.constantFrom('0x0', '0x1', '0x2'),
    invalid: () =>
      fc.oneof(bad('transaction type 0x5', '0x5'), bad('type not hex', 'abc'), bad('type as JSON', [])),
  } satisfies Kind,
  accessList,
};

export const callObject: Kind = objectKind(
  callFields,
  () => [
    bad('gasPrice and maxFeePerGas together', { gasPrice: '0x1', maxFeePerGas: '0x1' }),
    bad('data and input that differ', { data: '0x01', input: '0x02' }),
  ],
  consistentCall,
);

/** eth_sendTransaction's call: from a dev signer, a small plain transfer or call. */
export const sendCall: Kind = {
  valid: (ctx) =>
    fc
      .record(
        {
          from: pick(ctx.signers, bytesHex(20, 20)),
          to: address.valid(ctx),
          value: quantityHex(10n ** 15n),
          gas: fc.constant('0x30d40'),
          data: bytesHex(0, 8),
        },
        { requiredKeys: ['from', 'to'] },
      )
      .map((o) => o),
  invalid: callObject.invalid,
};

const slots: Kind = {
  valid: () => fc.dictionary(bytesHex(32, 32) as fc.Arbitrary<string>, bytesHex(32, 32), { maxKeys: 2 }),
  invalid: () =>
    fc.oneof(
      ...commonBad('object'),
      bad('a slot key of 1 byte', { '0x01': `0x${'00'.repeat(32)}` }),
      bad('a slot value of 1 byte', { [`0x${'00'.repeat(32)}`]: '0x01' }),
    ),
};

const accountOverride = objectKind(
  { balance: quantity(256), nonce: quantity(64), code: data, state: slots, stateDiff: slots },
  () => [bad('both state and stateDiff', { state: {}, stateDiff: {} })],
  (o) => {
    const out = { ...o };
    if (out.state !== undefined) delete out.stateDiff;
    return out;
  },
);

export const stateOverrides: Kind = {
  valid: (ctx) =>
    fc.dictionary(address.valid(ctx) as fc.Arbitrary<string>, accountOverride.valid(ctx), { maxKeys: 2 }),
  invalid: (ctx) =>
    fc.oneof(
      ...commonBad('object'),
      bad('a malformed address key', { '0x12': {} }),
      fc
        .tuple(address.valid(ctx), accountOverride.invalid(ctx))
        .map(([a, b]) => ({ label: `account: ${b.label}`, value: { [a as string]: b.value } })),
    ),
};

export const blockOverrides: Kind = objectKind({
  number: quantity(64, 100n),
  time: quantity(64, 2_000_000_000n),
  gasLimit: quantity(64, 60_000_000n),
  baseFeePerGas: quantity(256, 10n ** 10n),
  blobBaseFee: quantity(256, 10n ** 10n),
  feeRecipient: address,
  prevRandao: hash,
});

const flag: Kind = bool;

function alsoCodes(kind: Kind, codes: number[]): Kind {
  return { valid: kind.valid, invalid: (ctx) => kind.invalid(ctx).map((b) => ({ ...b, alsoCodes: codes })) };
}
const TRACERS = ['', 'callTracer', 'prestateTracer', 'noopTracer'] as const;

const traceConfigFields = {
  tracer: {
    valid: () => fc.constantFrom(...TRACERS),
    invalid: () => fc.oneof(bad('tracer not a string', 5), bad('tracer as an object', {})),
  } satisfies Kind,
  // geth reads tracerConfig when it builds the tracer and reports its errors as -32000.
  tracerConfig: alsoCodes(objectKind({ onlyTopCall: flag, withLog: flag, diffMode: flag }), [-32000]),
  disableStack: flag,
  disableStorage: flag,
  enableMemory: flag,
  enableReturnData: flag,
  limit: {
    valid: () => fc.integer({ min: 0, max: 50 }),
    invalid: () =>
      fc.oneof(bad('negative limit', -1), bad('limit as a string', '10'), bad('fractional limit', 1.5)),
  } satisfies Kind,
  timeout: {
    valid: () => fc.constantFrom('1s', '500ms', '2s'),
    invalid: () => fc.oneof(bad('timeout as a number', 5), bad('timeout as an object', {})),
  } satisfies Kind,
};

export const traceConfig: Kind = objectKind(traceConfigFields);
export const traceCallConfig: Kind = objectKind({ ...traceConfigFields, stateOverrides, blockOverrides });

const addressOrList: Kind = {
  valid: (ctx) => fc.oneof(address.valid(ctx), fc.array(address.valid(ctx), { maxLength: 2 })),
  invalid: (ctx) =>
    fc.oneof(...commonBad('string', 'array'), address.invalid(ctx), bad('a list holding a number', [5])),
};

const topics: Kind = {
  valid: (ctx) =>
    fc.array(fc.oneof(fc.constant(null), hash.valid(ctx), fc.array(hash.valid(ctx), { maxLength: 2 })), {
      maxLength: 4,
    }),
  invalid: () =>
    fc.oneof(
      ...commonBad('array'),
      bad('five topic positions', [null, null, null, null, null]),
      bad('a topic of 2 bytes', ['0x1234']),
      bad('a topic as a number', [5]),
      bad('an OR-list holding a number', [[5]]),
    ),
};

const logFilterRange = objectKind({ fromBlock: block, toBlock: block, address: addressOrList, topics });

export const logFilter: Kind = {
  valid: (ctx) =>
    fc.oneof(
      logFilterRange.valid(ctx),
      fc.record(
        { blockHash: pick(ctx.blockHashes, bytesHex(32, 32)), address: addressOrList.valid(ctx) },
        {
          requiredKeys: ['blockHash'],
        },
      ),
    ),
  invalid: (ctx) =>
    fc.oneof(
      logFilterRange.invalid(ctx),
      bad('blockHash with fromBlock', { blockHash: `0x${'11'.repeat(32)}`, fromBlock: '0x1' }),
      bad('blockHash of 2 bytes', { blockHash: '0x1234' }),
    ),
};

const addressList = list(address);
const smallCount: Kind = {
  valid: () => fc.oneof(fc.integer({ min: 0, max: 20 }), quantityHex(20n)),
  invalid: () =>
    fc.oneof(
      ...commonBad('number', 'string'),
      bad('negative count', -1),
      bad('fractional count', 1.5),
      bad('count not hex', 'zz'),
      bad('count above 2^64', `0x1${'0'.repeat(16)}`),
    ),
};

export const traceFilter: Kind = objectKind({
  fromBlock: block,
  toBlock: block,
  fromAddress: addressList,
  toAddress: addressList,
  mode: {
    valid: () => fc.constantFrom('union', 'intersection'),
    invalid: () => fc.oneof(bad('unknown mode', 'both'), bad('mode as a number', 1)),
  },
  after: smallCount,
  count: smallCount,
});

export const callManyCalls: Kind = {
  valid: (ctx) => fc.array(fc.tuple(callObject.valid(ctx), traceTypes.valid(ctx)), { maxLength: 3 }),
  invalid: (ctx) =>
    fc.oneof(
      ...commonBad('array'),
      bad('an empty call entry', [[]]),
      bad('a call entry of three elements', [[{}, ['trace'], 1]]),
      bad('a call entry that is an object', [{}]),
      callObject.invalid(ctx).map((b) => ({ label: `call: ${b.label}`, value: [[b.value, ['trace']]] })),
      traceTypes.invalid(ctx).map((b) => ({ label: `types: ${b.label}`, value: [[{}, b.value]] })),
    ),
};

export const callManyOptions: Kind = objectKind({ stateOverrides, blockOverrides });

export const traceIndices: Kind = {
  valid: () => fc.array(fc.oneof(fc.integer({ min: 0, max: 3 }), quantityHex(3n)), { maxLength: 2 }),
  invalid: () =>
    fc.oneof(
      ...commonBad('array'),
      bad('an index not hex', ['zz']),
      bad('a negative index', [-1]),
      bad('an index above 2^64', [`0x1${'0'.repeat(16)}`]),
    ),
};

export const opaqueId: Kind = {
  valid: () => bytesHex(1, 16),
  invalid: () => fc.oneof(...commonBad('string')),
};

/** A count or time of the dev methods: a JSON integer or a hex quantity. */
export function devNumber(validMax: number, tooLarge: Array<[string, unknown]> = []): Kind {
  return {
    valid: () =>
      fc.oneof(
        fc.integer({ min: 0, max: validMax }),
        fc.integer({ min: 0, max: validMax }).map((n) => `0x${n.toString(16)}`),
      ),
    invalid: () =>
      fc.oneof(
        ...commonBad('number', 'string'),
        bad('negative number', -1),
        bad('fractional number', 1.5),
        bad('not hex', 'zz'),
        bad('"0x"', '0x'),
        ...tooLarge.map(([label, value]) => bad(label, value)),
      ),
  };
}

export const mineOptions: Kind = {
  valid: () =>
    fc.record({ blocks: fc.integer({ min: 1, max: 3 }) }, { requiredKeys: [] }).map((o) => o as unknown),
  invalid: () =>
    fc.oneof(
      bad('a list', []),
      bad('a string', 'zz'),
      bad('negative timestamp', -1),
      bad('blocks not a number', { blocks: 'zz' }),
      bad('negative blocks', { blocks: -1 }),
      bad(`arrays nested ${DEEP_NESTING} deep`, deep(DEEP_NESTING)),
    ),
};

// A well-formed JSON value that is not valid typed data: geth's signer answers -32000 with the reason,
// other peers -32602; either is a clear refusal, -32603 or a JavaScript message is not.
const TYPED_DATA_CODES = [-32000];

const MAIL_TYPES = {
  EIP712Domain: [
    { name: 'name', type: 'string' },
    { name: 'chainId', type: 'uint256' },
  ],
  Mail: [
    { name: 'to', type: 'address' },
    { name: 'amount', type: 'uint256' },
    { name: 'note', type: 'string' },
  ],
};

export const typedData: Kind = {
  valid: (ctx) =>
    fc
      .record({ to: address.valid(ctx), amount: fc.bigInt({ min: 0n, max: 10n ** 30n }), note: fc.string() })
      .chain((message) => {
        const value = {
          types: MAIL_TYPES,
          primaryType: 'Mail',
          domain: { name: 'fuzz', chainId: 1 },
          message: { ...message, amount: message.amount.toString() },
        };
        return fc.constantFrom(value, JSON.stringify(value));
      }),
  invalid: () => {
    const base = { types: MAIL_TYPES, primaryType: 'Mail', domain: { name: 'fuzz', chainId: 1 } };
    const to = `0x${'22'.repeat(20)}`;
    return fc.oneof(
      ...commonBad('string', 'object'),
      bad('a string that is not JSON', '{not json'),
      bad('an empty object', {}),
      bad('primaryType not among types', { ...base, primaryType: 'Nope', message: {} }, TYPED_DATA_CODES),
      bad(
        'uint256 field not a number',
        { ...base, message: { to, amount: 'abc', note: '' } },
        TYPED_DATA_CODES,
      ),
      bad(
        'address field not an address',
        { ...base, message: { to: 'abc', amount: '1', note: '' } },
        TYPED_DATA_CODES,
      ),
      bad('uint256 field an object', { ...base, message: { to, amount: {}, note: '' } }, TYPED_DATA_CODES),
      bad('types an array', { ...base, types: [], message: {} }, TYPED_DATA_CODES),
      bad(
        'a field of unknown type',
        {
          ...base,
          types: { ...MAIL_TYPES, Mail: [{ name: 'x', type: 'Unknown' }] },
          message: { x: 1 },
        },
        TYPED_DATA_CODES,
      ),
    );
  },
};

const emptyContext: FuzzContext = { head: 0, blockHashes: [], txHashes: [], addresses: [], signers: [] };

/** One block of eth_simulateV1: its calls and state overrides (block numbers left to the default). */
const simulatedBlock: Kind = objectKind({
  calls: {
    valid: (ctx) => fc.array(callObject.valid(ctx), { maxLength: 2 }),
    invalid: (ctx) =>
      fc.oneof(
        ...commonBad('array'),
        callObject.invalid(ctx).map((b) => ({ label: `call: ${b.label}`, value: [b.value] })),
      ),
  },
  stateOverrides,
});

/** eth_simulateV1's options: one or two blocks and its switches. */
export const simulateOptions: Kind = {
  valid: (ctx) =>
    fc.record(
      {
        blockStateCalls: fc.array(simulatedBlock.valid(ctx), { minLength: 1, maxLength: 2 }),
        validation: fc.boolean(),
        traceTransfers: fc.boolean(),
        returnFullTransactions: fc.boolean(),
      },
      { requiredKeys: ['blockStateCalls'] },
    ),
  invalid: (ctx) =>
    fc.oneof(
      ...commonBad('object'),
      bad('blockStateCalls not an array', { blockStateCalls: {} }),
      bad('a block that is not an object', { blockStateCalls: [1] }),
      bad('validation not a boolean', { blockStateCalls: [{}], validation: 'yes' }),
      simulatedBlock
        .invalid(ctx)
        .map((b) => ({ label: `block: ${b.label}`, value: { blockStateCalls: [b.value] } })),
    ),
};

/** A bundle's `blockOverride` (eth_callMany, debug_traceCallMany): geth's names or Erigon's. */
const bundleBlockOverride: Kind = objectKind({
  blockNumber: quantity(64, 100n),
  timestamp: quantity(64, 2_000_000_000n),
  coinbase: address,
  baseFee: quantity(256, 10n ** 10n),
  difficulty: quantity(256, 10n ** 10n),
  gasLimit: quantity(64, 60_000_000n),
});

const bundle: Kind = objectKind({ transactions: list(callObject), blockOverride: bundleBlockOverride });

/** debug_traceCallMany's and eth_callMany's bundles: at least one. */
export const callBundles: Kind = {
  valid: (ctx) => fc.array(bundle.valid(ctx), { minLength: 1, maxLength: 2 }),
  invalid: (ctx) =>
    fc.oneof(
      ...commonBad('array'),
      bad('no bundles', []),
      bad('a bundle that is an array', [[]]),
      bad('transactions that are an object', [{ transactions: {} }]),
      bundle.invalid(ctx).map((b) => ({ label: `bundle: ${b.label}`, value: [b.value] })),
    ),
};

/** Erigon's and Reth's StateContext; a transaction index past the block's is refused too. */
export const stateContext: Kind = objectKind({
  blockNumber: block,
  transactionIndex: {
    valid: () => fc.constantFrom(-1, 0),
    invalid: () =>
      fc.oneof(bad('index -2', -2), bad('a fractional index', 1.5), bad('index as an object', {})),
  },
});

/** debug_traceCallMany's trace config: debug_traceCall's, its block overrides given per bundle. */
export const bundleTraceConfig: Kind = objectKind({ ...traceConfigFields, stateOverrides });

export const timeoutMs: Kind = {
  valid: () => fc.integer({ min: 0, max: 5000 }),
  invalid: () =>
    fc.oneof(bad('a negative timeout', -1), bad('a timeout as a string', '1s'), bad('fractional', 1.5)),
};

/** eth_callBundle's bundle: signed transactions (random bytes decode to none: -32602 too). */
export const signedBundle: Kind = {
  valid: (ctx) =>
    fc.record({
      txs: fc.array(data.valid(ctx), { minLength: 1, maxLength: 2 }),
      blockNumber: quantityHex(100n).filter((q) => q !== '0x0'),
      stateBlockNumber: fc.constantFrom('latest', '0x0'),
    }),
  invalid: (ctx) =>
    fc.oneof(
      ...commonBad('object'),
      bad('no txs', { txs: [], blockNumber: '0x1', stateBlockNumber: 'latest' }),
      bad('no blockNumber', { txs: ['0x01'], stateBlockNumber: 'latest' }),
      bad('no stateBlockNumber', { txs: ['0x01'], blockNumber: '0x1' }),
      data.invalid(ctx).map((b) => ({
        label: `txs: ${b.label}`,
        value: { txs: [b.value], blockNumber: '0x1', stateBlockNumber: 'latest' },
      })),
    ),
};
