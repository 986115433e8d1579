import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { InvalidArgument, RequestFailed } from '../core/errors.ts';
import {
  address,
  argument,
  blockSelector,
  bool,
  data,
  field,
  hash,
  optional,
  ParamProblem,
  parseParams,
  quantity,
  quoted,
  required,
  smallQuantity,
  uint64,
} from './params.ts';

/** Asserts `fn` throws an instance of `type` with exactly `message`. */
function throwsExactly(fn: () => unknown, type: new (...args: never[]) => Error, message: string): void {
  assert.throws(fn, (e: unknown) => {
    assert.ok(e instanceof type, `expected ${type.name}, got ${String(e)}`);
    assert.equal(e.message, message);
    return true;
  });
}

const problem = (fn: () => unknown, message: string) => throwsExactly(fn, ParamProblem, message);

const bytesOf = (hex: string) => Uint8Array.from(Buffer.from(hex.replace(/^0x/i, ''), 'hex'));

const MAX_UINT64 = (1n << 64n) - 1n;
const HASH = `0x${'ab'.repeat(32)}`;

describe('quantity', () => {
  it('reads 0x hex of any case', () => {
    assert.equal(quantity('0x0'), 0n);
    assert.equal(quantity('0x1'), 1n);
    assert.equal(quantity('0xff'), 255n);
    assert.equal(quantity('0xFF'), 255n);
    assert.equal(quantity('0XfF'), 255n);
    assert.equal(quantity('0x1234567890abcdef'), 0x1234567890abcdefn);
  });

  it('accepts leading zeros, and does not count them against the 256 bits', () => {
    // geth's hexutil.Big refuses them ("hex number with leading zero digits"); this service reads
    // them as the number they spell, as several clients send padded quantities.
    assert.equal(quantity('0x00ff'), 255n);
    assert.equal(quantity('0x00'), 0n);
    assert.equal(quantity(`0x${'0'.repeat(1000)}1`), 1n);
    assert.equal(quantity(`0x${'0'.repeat(10)}${'f'.repeat(64)}`), (1n << 256n) - 1n);
  });

  it('takes up to 256 bits; more is refused on the text, whatever its length', () => {
    assert.equal(quantity(`0x${'f'.repeat(64)}`), (1n << 256n) - 1n);
    problem(() => quantity(`0x1${'0'.repeat(64)}`), 'hex number > 256 bits');
    problem(() => quantity(`0x${'f'.repeat(1_000_000)}`), 'hex number > 256 bits');
  });

  it('refuses text without the 0x prefix, and a bare 0x', () => {
    for (const text of ['ff', '10', '', 'x10', '00x1', ' 0x1', '-0x1']) {
      problem(() => quantity(text), 'hex string without 0x prefix');
    }
    // The prefix is there; what follows is not hex (geth's hexutil.ErrSyntax).
    problem(() => quantity('0x1 '), 'invalid hex string');
    problem(() => quantity('0x'), 'hex string "0x"');
    problem(() => quantity('0X'), 'hex string "0x"');
  });

  it('names non-hex digits after 0x as invalid hex', () => {
    // geth: hexutil.ErrSyntax, "invalid hex string"; "hex string without 0x prefix" misleads a
    // client whose value has the prefix.
    assert.throws(
      () => quantity('0xzz'),
      (e: unknown) => e instanceof ParamProblem && /invalid hex string/.test(e.message),
    );
  });

  it('refuses a non-string with geth-style wording', () => {
    for (const value of [1, 0, 1.5, null, undefined, true, [], {}]) {
      problem(() => quantity(value), 'json: cannot unmarshal non-string into Go value of type hexutil.Big');
    }
  });
});

describe('uint64', () => {
  it('takes 2^64 − 1 and refuses 2^64', () => {
    assert.equal(uint64('0xffffffffffffffff'), MAX_UINT64);
    assert.equal(uint64('0x0'), 0n);
    problem(() => uint64('0x10000000000000000'), 'hex number > 64 bits');
  });

  it('counts significant digits only', () => {
    assert.equal(uint64(`0x0000${'f'.repeat(16)}`), MAX_UINT64);
  });

  it('keeps the quantity errors', () => {
    problem(() => uint64('0x'), 'hex string "0x"');
    problem(() => uint64('12'), 'hex string without 0x prefix');
    problem(() => uint64(`0x1${'0'.repeat(64)}`), 'hex number > 256 bits');
    problem(() => uint64(12), 'json: cannot unmarshal non-string into Go value of type hexutil.Big');
  });
});

describe('smallQuantity', () => {
  it('is a JS number up to 2^53 − 1', () => {
    assert.equal(smallQuantity('0x0'), 0);
    assert.equal(smallQuantity('0x10'), 16);
    assert.equal(smallQuantity('0x1fffffffffffff'), Number.MAX_SAFE_INTEGER);
    assert.equal(typeof smallQuantity('0x1'), 'number');
  });

  it('refuses 2^53 and more', () => {
    problem(() => smallQuantity('0x20000000000000'), 'hex number > 53 bits');
    problem(() => smallQuantity('0xffffffffffffffff'), 'hex number > 53 bits');
  });
});

describe('data', () => {
  it('reads 0x hex bytes, empty included', () => {
    assert.deepEqual(data('0x'), new Uint8Array());
    assert.deepEqual(data('0x0102ff'), Uint8Array.of(1, 2, 255));
    assert.deepEqual(data('0XABcd'), Uint8Array.of(0xab, 0xcd));
    assert.ok(data('0x00') instanceof Uint8Array);
    assert.equal(Buffer.isBuffer(data('0x00')), false, 'a plain Uint8Array, not a Buffer');
  });

  it('refuses odd length, a missing prefix and non-strings', () => {
    problem(() => data('0x012'), 'hex string of odd length');
    problem(() => data('0x0'), 'hex string of odd length');
    problem(() => data('0102'), 'hex string without 0x prefix');
    problem(() => data(''), 'hex string without 0x prefix');
    for (const value of [12, null, true, [1, 2], { 0: 1 }]) {
      problem(() => data(value), 'json: cannot unmarshal non-string into Go value of type hexutil.Bytes');
    }
  });
});

describe('address and hash', () => {
  const ADDRESS = `0x${'12'.repeat(20)}`;

  it('read exactly 20 and 32 bytes', () => {
    assert.deepEqual(address(ADDRESS), bytesOf(ADDRESS));
    assert.deepEqual(address(ADDRESS.toUpperCase().replace('0X', '0x')), bytesOf(ADDRESS));
    assert.deepEqual(hash(HASH), bytesOf(HASH));
    assert.equal(address(ADDRESS).length, 20);
    assert.equal(hash(HASH).length, 32);
  });

  it("refuse a wrong length with geth's wording", () => {
    problem(() => address(`0x${'12'.repeat(19)}`), 'hex string has length 38, want 40 for common.Address');
    problem(() => address(`0x${'12'.repeat(21)}`), 'hex string has length 42, want 40 for common.Address');
    problem(() => address('0x'), 'hex string has length 0, want 40 for common.Address');
    problem(() => hash(`0x${'ab'.repeat(31)}`), 'hex string has length 62, want 64 for common.Hash');
    problem(() => hash(ADDRESS), 'hex string has length 40, want 64 for common.Hash');
    // An odd length is a length error here; geth checks evenness first ("json: cannot unmarshal
    // hex string of odd length into Go value of type common.Address"). Both refuse it.
    problem(() => address(`0x${'1'.repeat(41)}`), 'hex string has length 41, want 40 for common.Address');
  });

  it("refuse a missing prefix and non-strings with geth's wording", () => {
    problem(
      () => address('12'.repeat(20)),
      'json: cannot unmarshal hex string without 0x prefix into Go value of type common.Address',
    );
    problem(
      () => hash('ab'.repeat(32)),
      'json: cannot unmarshal hex string without 0x prefix into Go value of type common.Hash',
    );
    problem(() => address(12), 'json: cannot unmarshal non-string into Go value of type common.Address');
    problem(() => hash(null), 'json: cannot unmarshal non-string into Go value of type common.Hash');
  });

  it('name non-hex digits as invalid hex', () => {
    // geth: "json: cannot unmarshal invalid hex string into Go value of type common.Address".
    assert.throws(
      () => address(`0x${'zz'.repeat(20)}`),
      (e: unknown) => e instanceof ParamProblem && /invalid hex string/.test(e.message),
    );
  });
});

describe('bool', () => {
  it('takes JSON booleans only', () => {
    assert.equal(bool(true), true);
    assert.equal(bool(false), false);
    for (const value of ['true', 1, 0, null, undefined, 'false']) {
      problem(() => bool(value), 'json: cannot unmarshal non-bool into Go value of type bool');
    }
  });
});

describe('blockSelector', () => {
  const num = (n: bigint) => ({ kind: 'number', number: n });

  it('reads every tag', () => {
    for (const tag of ['latest', 'earliest', 'pending', 'safe', 'finalized']) {
      assert.deepEqual(blockSelector(tag), { kind: 'tag', tag });
    }
  });

  it('tags are case-sensitive and exact', () => {
    for (const text of ['Latest', 'LATEST', ' latest', 'latest ', 'final', 'head']) {
      problem(() => blockSelector(text), `invalid block number or tag ${JSON.stringify(text)}`);
    }
  });

  it('reads a hex number', () => {
    assert.deepEqual(blockSelector('0x0'), num(0n));
    assert.deepEqual(blockSelector('0x10'), num(16n));
    assert.deepEqual(blockSelector('0XaB'), num(171n));
    assert.deepEqual(blockSelector('0xffffffffffffffff'), num(MAX_UINT64));
  });

  it('refuses a hex number past 64 bits, and a bare 0x', () => {
    problem(() => blockSelector('0x10000000000000000'), 'hex number > 64 bits');
    problem(() => blockSelector('0x'), 'hex string "0x"');
  });

  it('counts a hex number by its digits, leading zeros included', () => {
    // Up to 16 digits, leading zeros are read (geth refuses any: "hex number with leading zero
    // digits"); past 16 the text is refused as too long though its value is small. quantity() and
    // the decimal form count significant digits instead. Only padded numbers meet the difference.
    assert.deepEqual(blockSelector('0x0000000000000001'), num(1n));
    problem(() => blockSelector('0x00000000000000001'), 'hex number > 64 bits');
  });

  it('reads 64 hex digits as a block hash, not a number', () => {
    assert.deepEqual(blockSelector(HASH), { kind: 'hash', hash: bytesOf(HASH), requireCanonical: false });
    const padded = `0x${'0'.repeat(63)}1`;
    assert.deepEqual(blockSelector(padded), { kind: 'hash', hash: bytesOf(padded), requireCanonical: false });
    assert.equal(blockSelector(`0X${'AB'.repeat(32)}`).kind, 'hash');
  });

  it('reads a JSON integer', () => {
    assert.deepEqual(blockSelector(0), num(0n));
    assert.deepEqual(blockSelector(12345), num(12345n));
    assert.deepEqual(blockSelector(Number.MAX_SAFE_INTEGER), num(BigInt(Number.MAX_SAFE_INTEGER)));
  });

  it('refuses a negative, fractional or unsafe JSON number', () => {
    problem(() => blockSelector(-1), 'invalid block number -1');
    problem(() => blockSelector(1.5), 'invalid block number 1.5');
    problem(() => blockSelector(2 ** 53), 'invalid block number 9007199254740992');
    problem(() => blockSelector(2 ** 64), 'invalid block number 18446744073709552000');
  });

  it('reads a decimal string up to 2^64 − 1', () => {
    assert.deepEqual(blockSelector('0'), num(0n));
    assert.deepEqual(blockSelector('42'), num(42n));
    assert.deepEqual(blockSelector('18446744073709551615'), num(MAX_UINT64));
    assert.deepEqual(
      blockSelector('000018446744073709551615'),
      num(MAX_UINT64),
      'leading zeros do not count',
    );
    assert.deepEqual(blockSelector('0000'), num(0n));
  });

  it('refuses a decimal string of 2^64 or more, however long', () => {
    problem(() => blockSelector('18446744073709551616'), 'block number > 64 bits');
    problem(() => blockSelector('99999999999999999999'), 'block number > 64 bits');
    problem(() => blockSelector('100000000000000000000'), 'block number > 64 bits');
    problem(() => blockSelector('9'.repeat(100_000)), 'block number > 64 bits');
  });

  it('refuses other strings, quoting them cut short', () => {
    for (const text of ['', '-1', '1.0', '1e3', '0x1g', 'abc', '12ab']) {
      problem(() => blockSelector(text), `invalid block number or tag ${JSON.stringify(text)}`);
    }
    const long = 'z'.repeat(500);
    problem(() => blockSelector(long), `invalid block number or tag "${'z'.repeat(79)}…`);
  });

  it('refuses other JSON types', () => {
    problem(() => blockSelector(true), 'invalid block parameter true');
    problem(() => blockSelector(null), 'invalid block parameter null');
    problem(() => blockSelector(['latest']), 'invalid block parameter ["latest"]');
    problem(() => blockSelector(undefined), 'invalid block parameter undefined');
  });

  describe('EIP-1898 objects', () => {
    it('{blockHash} is a hash not required to be canonical', () => {
      assert.deepEqual(blockSelector({ blockHash: HASH }), {
        kind: 'hash',
        hash: bytesOf(HASH),
        requireCanonical: false,
      });
      assert.deepEqual(blockSelector({ blockHash: HASH, requireCanonical: null }), {
        kind: 'hash',
        hash: bytesOf(HASH),
        requireCanonical: false,
      });
    });

    it('{blockHash, requireCanonical} carries the flag', () => {
      assert.deepEqual(blockSelector({ blockHash: HASH, requireCanonical: true }), {
        kind: 'hash',
        hash: bytesOf(HASH),
        requireCanonical: true,
      });
      assert.deepEqual(blockSelector({ blockHash: HASH, requireCanonical: false }), {
        kind: 'hash',
        hash: bytesOf(HASH),
        requireCanonical: false,
      });
    });

    it('requireCanonical must be a boolean', () => {
      for (const requireCanonical of ['true', 1, 0, {}]) {
        problem(
          () => blockSelector({ blockHash: HASH, requireCanonical }),
          'requireCanonical must be a boolean',
        );
      }
    });

    it('blockHash must be a 32-byte hash', () => {
      problem(
        () => blockSelector({ blockHash: '0x1234' }),
        'hex string has length 4, want 64 for common.Hash',
      );
      problem(
        () => blockSelector({ blockHash: 'latest' }),
        'json: cannot unmarshal hex string without 0x prefix into Go value of type common.Hash',
      );
      problem(
        () => blockSelector({ blockHash: 5 }),
        'json: cannot unmarshal non-string into Go value of type common.Hash',
      );
    });

    it('{blockNumber} takes every number form and tag', () => {
      assert.deepEqual(blockSelector({ blockNumber: '0x10' }), num(16n));
      assert.deepEqual(blockSelector({ blockNumber: '16' }), num(16n));
      assert.deepEqual(blockSelector({ blockNumber: 16 }), num(16n));
      assert.deepEqual(blockSelector({ blockNumber: 'safe' }), { kind: 'tag', tag: 'safe' });
      // requireCanonical means nothing for a number and is ignored.
      assert.deepEqual(blockSelector({ blockNumber: '0x1', requireCanonical: true }), num(1n));
    });

    it('{blockNumber} keeps the number errors', () => {
      problem(() => blockSelector({ blockNumber: '18446744073709551616' }), 'block number > 64 bits');
      problem(() => blockSelector({ blockNumber: '0x10000000000000000' }), 'hex number > 64 bits');
      problem(() => blockSelector({ blockNumber: 'newest' }), 'invalid block number or tag "newest"');
    });

    it('{blockNumber} cannot be a hash', () => {
      problem(() => blockSelector({ blockNumber: HASH }), 'blockNumber must be a number or tag');
    });

    it('{blockNumber} cannot be another block object', () => {
      // geth decodes blockNumber as a BlockNumber (a string): an object there is a decode error.
      assert.throws(() => blockSelector({ blockNumber: { blockNumber: '0x1' } }), ParamProblem);
    });

    it('refuses both blockHash and blockNumber', () => {
      problem(
        () => blockSelector({ blockHash: HASH, blockNumber: '0x1' }),
        'cannot specify both BlockHash and BlockNumber, choose one or the other',
      );
    });

    it('a member given as null is absent', () => {
      // geth decodes both into pointers, and JSON null leaves a pointer nil: {"blockHash": null,
      // "blockNumber": "0x1"} is block 1 there (rpc/types.go BlockNumberOrHash.UnmarshalJSON).
      assert.deepEqual(blockSelector({ blockHash: null, blockNumber: '0x1' }), num(1n));
      assert.deepEqual(blockSelector({ blockHash: HASH, blockNumber: null }), {
        kind: 'hash',
        hash: bytesOf(HASH),
        requireCanonical: false,
      });
    });

    it('needs one of them', () => {
      problem(() => blockSelector({}), 'block object needs blockHash or blockNumber');
      problem(() => blockSelector({ requireCanonical: true }), 'block object needs blockHash or blockNumber');
      problem(() => blockSelector({ number: '0x1' }), 'block object needs blockHash or blockNumber');
    });
  });
});

describe('parseParams', () => {
  const spec = [required(quantity), optional(bool)] as const;

  it('parses each argument with its parser', () => {
    assert.deepEqual(parseParams(spec, ['0x1', true]), [1n, true]);
  });

  it('gives absent or null optional arguments as undefined', () => {
    assert.deepEqual(parseParams(spec, ['0x1']), [1n, undefined]);
    assert.deepEqual(parseParams(spec, ['0x1', null]), [1n, undefined]);
  });

  it('does not call an optional parser for null', () => {
    let called = false;
    const params = parseParams(
      [
        optional((v) => {
          called = true;
          return v;
        }),
      ],
      [null],
    );
    assert.deepEqual(params, [undefined]);
    assert.equal(called, false);
  });

  it('refuses a missing or null required argument, naming its position', () => {
    throwsExactly(() => parseParams(spec, []), InvalidArgument, 'missing value for required argument 0');
    throwsExactly(
      () => parseParams(spec, [null, true]),
      InvalidArgument,
      'missing value for required argument 0',
    );
    throwsExactly(
      () => parseParams(spec, undefined),
      InvalidArgument,
      'missing value for required argument 0',
    );
    throwsExactly(() => parseParams(spec, null), InvalidArgument, 'missing value for required argument 0');
    throwsExactly(
      () => parseParams([required(bool), required(bool)], [true]),
      InvalidArgument,
      'missing value for required argument 1',
    );
  });

  it('takes absent params as an empty list', () => {
    assert.deepEqual(parseParams([], undefined), []);
    assert.deepEqual(parseParams([], null), []);
    assert.deepEqual(parseParams([optional(bool)], undefined), [undefined]);
  });

  it('refuses too many arguments', () => {
    throwsExactly(
      () => parseParams(spec, ['0x1', true, 3]),
      InvalidArgument,
      'too many arguments, want at most 2',
    );
    throwsExactly(() => parseParams([], [1]), InvalidArgument, 'too many arguments, want at most 0');
  });

  it('refuses params that are not an array', () => {
    for (const params of [{}, { 0: '0x1' }, '0x1', 1, true]) {
      throwsExactly(() => parseParams(spec, params), InvalidArgument, 'non-array args');
    }
  });

  it("prefixes a parser's problem with `invalid argument N:`", () => {
    throwsExactly(
      () => parseParams(spec, ['1']),
      InvalidArgument,
      'invalid argument 0: hex string without 0x prefix',
    );
    throwsExactly(
      () => parseParams(spec, ['0x1', 'yes']),
      InvalidArgument,
      'invalid argument 1: json: cannot unmarshal non-bool into Go value of type bool',
    );
  });

  it('passes other errors through unchanged', () => {
    const failing = required(() => {
      throw new RequestFailed('tracer not found');
    });
    throwsExactly(() => parseParams([failing], [1]), RequestFailed, 'tracer not found');
    const buggy = required(() => {
      throw new TypeError('boom');
    });
    throwsExactly(() => parseParams([buggy], [1]), TypeError, 'boom');
  });

  it('checks the count before parsing any argument', () => {
    throwsExactly(
      () => parseParams(spec, ['bad', 'bad', 'bad']),
      InvalidArgument,
      'too many arguments, want at most 2',
    );
  });
});

describe('quoted', () => {
  it('is the JSON of a short value', () => {
    assert.equal(quoted('abc'), '"abc"');
    assert.equal(quoted('a"b'), '"a\\"b"');
    assert.equal(quoted(5), '5');
    assert.equal(quoted(null), 'null');
    assert.equal(quoted(true), 'true');
    assert.equal(quoted({ a: [1] }), '{"a":[1]}');
    assert.equal(quoted(undefined), 'undefined');
  });

  it('keeps 80 characters of longer text, marked with an ellipsis', () => {
    const exactly80 = 'x'.repeat(78); // its JSON is 80 characters
    assert.equal(quoted(exactly80), `"${exactly80}"`);
    assert.equal(quoted('x'.repeat(79)), `"${'x'.repeat(79)}…`);
    assert.equal(quoted('x'.repeat(1_000_000)), `"${'x'.repeat(79)}…`);
    assert.equal(quoted('x'.repeat(1_000_000)).length, 81);
  });

  it('cuts escaped text and other values too', () => {
    assert.equal(quoted('\n'.repeat(100)), `"${'\\n'.repeat(39)}\\…`);
    const array = Array.from({ length: 100 }, (_, i) => i);
    const text = quoted(array);
    assert.equal(text, `${JSON.stringify(array).slice(0, 80)}…`);
  });
});

describe('field and argument', () => {
  it('prefix a parameter problem with the field, nested fields in turn', () => {
    problem(() => field('fromBlock', () => quantity('0x')), 'fromBlock: hex string "0x"');
    problem(
      () => field('call 1', () => field('gas', () => quantity('0xg'))),
      'call 1: gas: invalid hex string',
    );
    assert.equal(
      field('count', () => smallQuantity('0x2')),
      2,
    );
  });

  it("turn a parameter problem into geth's invalid argument N", () => {
    throwsExactly(
      () => argument(1, () => field('address', () => address('0x12'))),
      InvalidArgument,
      'invalid argument 1: address: hex string has length 2, want 40 for common.Address',
    );
  });

  it('let other errors through unchanged', () => {
    const other = new RequestFailed('not a parameter problem');
    assert.throws(
      () =>
        field('x', () => {
          throw other;
        }),
      (e) => e === other,
    );
    assert.throws(
      () =>
        argument(0, () => {
          throw other;
        }),
      (e) => e === other,
    );
  });
});
