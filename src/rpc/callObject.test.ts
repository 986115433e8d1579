import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { blockOverrides, callObject, stateOverrides, traceTypes } from './callObject.ts';
import { ParamProblem } from './params.ts';

/** Asserts `fn` throws a ParamProblem with exactly `message`. */
function problem(fn: () => unknown, message: string): void {
  assert.throws(fn, (e: unknown) => {
    assert.ok(e instanceof ParamProblem, `expected a ParamProblem, got ${String(e)}`);
    assert.equal(e.message, message);
    return true;
  });
}

const bytesOf = (hex: string) => Uint8Array.from(Buffer.from(hex.replace(/^0x/i, ''), 'hex'));

const FROM = `0x${'11'.repeat(20)}`;
const TO = `0x${'22'.repeat(20)}`;
const KEY_1 = `0x${'00'.repeat(31)}01`;
const KEY_2 = `0x${'00'.repeat(31)}02`;
const VALUE = `0x${'ff'.repeat(32)}`;
const TWO_TO_64 = '0x10000000000000000';

describe('callObject', () => {
  it('an empty object is a call with nothing set', () => {
    assert.deepEqual(callObject({}), {});
  });

  it('reads every field', () => {
    assert.deepEqual(
      callObject({
        from: FROM,
        to: TO,
        gas: '0x5208',
        maxFeePerGas: '0x10',
        maxPriorityFeePerGas: '0x1',
        value: '0xde0b6b3a7640000',
        input: '0xabcd',
        nonce: '0x7',
        type: '0x2',
        maxFeePerBlobGas: '0x3',
        blobVersionedHashes: [KEY_1],
      }),
      {
        from: bytesOf(FROM),
        to: bytesOf(TO),
        gas: 21000n,
        maxFeePerGas: 16n,
        maxPriorityFeePerGas: 1n,
        value: 10n ** 18n,
        data: Uint8Array.of(0xab, 0xcd),
        nonce: 7n,
        type: 2,
        maxFeePerBlobGas: 3n,
        blobVersionedHashes: [bytesOf(KEY_1)],
      },
    );
    assert.deepEqual(callObject({ gasPrice: '0x3b9aca00' }), { gasPrice: 1_000_000_000n });
  });

  it('`to: null` is a creation; `from: null` and other nulls are absent', () => {
    assert.deepEqual(callObject({ to: null }), { to: null });
    assert.deepEqual(
      callObject({
        from: null,
        gas: null,
        gasPrice: null,
        value: null,
        data: null,
        input: null,
        nonce: null,
        type: null,
        accessList: null,
        authorizationList: null,
        blobVersionedHashes: null,
      }),
      {},
    );
  });

  it('refuses a non-object', () => {
    for (const value of [null, [], 'call', 1])
      problem(() => callObject(value), 'call object must be an object');
  });

  it('prefixes field errors with the field name', () => {
    problem(() => callObject({ from: '0x12' }), 'from: hex string has length 2, want 40 for common.Address');
    problem(
      () => callObject({ to: 5 }),
      'to: json: cannot unmarshal non-string into Go value of type common.Address',
    );
    problem(
      () => callObject({ value: 10 }),
      'value: json: cannot unmarshal non-string into Go value of type hexutil.Big',
    );
    problem(() => callObject({ maxFeePerGas: '0x' }), 'maxFeePerGas: hex string "0x"');
  });

  describe('data and input', () => {
    it('takes either', () => {
      assert.deepEqual(callObject({ input: '0x01' }).data, Uint8Array.of(1));
      assert.deepEqual(callObject({ data: '0x02' }).data, Uint8Array.of(2));
      assert.deepEqual(callObject({ input: '0x' }).data, new Uint8Array());
    });

    it('takes both when equal', () => {
      assert.deepEqual(callObject({ input: '0xabcd', data: '0xABCD' }).data, Uint8Array.of(0xab, 0xcd));
    });

    it("refuses both when different, in geth's words", () => {
      const message =
        'both "data" and "input" are set and not equal. Please use "input" to pass transaction call data';
      problem(() => callObject({ input: '0x01', data: '0x02' }), message);
      problem(() => callObject({ input: '0x', data: '0x00' }), message);
      problem(() => callObject({ input: '0x00', data: '0x' }), message);
    });

    it('a null one is absent', () => {
      assert.deepEqual(callObject({ input: null, data: '0x02' }).data, Uint8Array.of(2));
      assert.deepEqual(callObject({ input: '0x01', data: null }).data, Uint8Array.of(1));
    });

    it('names which one is malformed', () => {
      problem(() => callObject({ input: '0x012' }), 'input: hex string of odd length');
      problem(() => callObject({ data: '0x012' }), 'data: hex string of odd length');
      problem(() => callObject({ input: '0x01', data: 'zz' }), 'data: hex string without 0x prefix');
    });
  });

  describe('fees', () => {
    const message = 'both gasPrice and (maxFeePerGas or maxPriorityFeePerGas) specified';

    it('refuses gasPrice with either EIP-1559 fee', () => {
      problem(() => callObject({ gasPrice: '0x1', maxFeePerGas: '0x1' }), message);
      problem(() => callObject({ gasPrice: '0x1', maxPriorityFeePerGas: '0x1' }), message);
      problem(
        () => callObject({ gasPrice: '0x0', maxFeePerGas: '0x0', maxPriorityFeePerGas: '0x0' }),
        message,
      );
    });

    it('takes the EIP-1559 fees together, and a null gasPrice with them', () => {
      assert.deepEqual(callObject({ maxFeePerGas: '0x2', maxPriorityFeePerGas: '0x1' }), {
        maxFeePerGas: 2n,
        maxPriorityFeePerGas: 1n,
      });
      assert.deepEqual(callObject({ gasPrice: null, maxFeePerGas: '0x2' }), { maxFeePerGas: 2n });
    });

    it('takes fees up to 256 bits', () => {
      assert.equal(callObject({ value: `0x${'f'.repeat(64)}` }).value, (1n << 256n) - 1n);
      problem(() => callObject({ value: `0x1${'0'.repeat(64)}` }), 'value: hex number > 256 bits');
    });
  });

  describe('gas, nonce and type', () => {
    it('gas and nonce are 64-bit: 2^64 − 1 is taken, 2^64 refused', () => {
      assert.equal(callObject({ gas: '0xffffffffffffffff' }).gas, (1n << 64n) - 1n);
      assert.equal(callObject({ nonce: '0xffffffffffffffff' }).nonce, (1n << 64n) - 1n);
      problem(() => callObject({ gas: TWO_TO_64 }), 'gas: hex number > 64 bits');
      problem(() => callObject({ nonce: TWO_TO_64 }), 'nonce: hex number > 64 bits');
    });

    it('type is 0 to 4', () => {
      for (const type of [0, 1, 2, 3, 4]) assert.equal(callObject({ type: `0x${type}` }).type, type);
      problem(() => callObject({ type: '0x5' }), 'unsupported transaction type 5');
      problem(() => callObject({ type: '0x7e' }), 'unsupported transaction type 126');
      problem(() => callObject({ type: TWO_TO_64 }), 'type: hex number > 64 bits');
      problem(
        () => callObject({ type: 2 }),
        'type: json: cannot unmarshal non-string into Go value of type hexutil.Big',
      );
    });
  });

  describe('accessList', () => {
    it('reads addresses and storage keys; storageKeys may be omitted', () => {
      assert.deepEqual(
        callObject({
          accessList: [
            { address: TO, storageKeys: [KEY_1, KEY_2] },
            { address: FROM },
            { address: FROM, storageKeys: null },
          ],
        }).accessList,
        [
          { address: bytesOf(TO), storageKeys: [bytesOf(KEY_1), bytesOf(KEY_2)] },
          { address: bytesOf(FROM), storageKeys: [] },
          { address: bytesOf(FROM), storageKeys: [] },
        ],
      );
      assert.deepEqual(callObject({ accessList: [] }).accessList, []);
    });

    it('names the faulty entry', () => {
      problem(() => callObject({ accessList: {} }), 'accessList must be an array');
      problem(() => callObject({ accessList: [TO] }), 'accessList[0] must be an object');
      problem(
        () => callObject({ accessList: [{ address: TO }, { storageKeys: [] }] }),
        'accessList[1].address: json: cannot unmarshal non-string into Go value of type common.Address',
      );
      problem(
        () => callObject({ accessList: [{ address: TO, storageKeys: KEY_1 }] }),
        'accessList[0].storageKeys must be an array',
      );
      problem(
        () => callObject({ accessList: [{ address: TO, storageKeys: [KEY_1, '0x01'] }] }),
        'accessList[0].storageKeys[1]: hex string has length 2, want 64 for common.Hash',
      );
    });
  });

  describe('authorizationList', () => {
    const auth = { chainId: '0x1', address: TO, nonce: '0x2', yParity: '0x1', r: '0x3', s: '0x4' };

    it('reads each authorization', () => {
      assert.deepEqual(callObject({ authorizationList: [auth] }).authorizationList, [
        { chainId: 1n, address: bytesOf(TO), nonce: 2n, yParity: 1n, r: 3n, s: 4n },
      ]);
    });

    it('takes v when yParity is absent', () => {
      const { yParity: _, ...withoutParity } = auth;
      assert.equal(
        callObject({ authorizationList: [{ ...withoutParity, v: '0x0' }] }).authorizationList?.[0]?.yParity,
        0n,
      );
      assert.equal(
        callObject({ authorizationList: [{ ...auth, v: '0x0' }] }).authorizationList?.[0]?.yParity,
        1n,
        'yParity wins',
      );
    });

    it('names the faulty field', () => {
      problem(() => callObject({ authorizationList: auth }), 'authorizationList must be an array');
      problem(
        () => callObject({ authorizationList: [auth, null] }),
        'authorizationList[1] must be an object',
      );
      problem(
        () => callObject({ authorizationList: [{ ...auth, r: 3 }] }),
        'authorizationList[0].r: json: cannot unmarshal non-string into Go value of type hexutil.Big',
      );
      const { s: _, ...withoutS } = auth;
      problem(
        () => callObject({ authorizationList: [withoutS] }),
        'authorizationList[0].s: json: cannot unmarshal non-string into Go value of type hexutil.Big',
      );
      problem(
        () => callObject({ authorizationList: [{ ...auth, address: '0x' }] }),
        'authorizationList[0].address: hex string has length 0, want 40 for common.Address',
      );
    });
  });

  it('blobVersionedHashes must be a list of hashes', () => {
    problem(() => callObject({ blobVersionedHashes: KEY_1 }), 'blobVersionedHashes must be an array');
    problem(
      () => callObject({ blobVersionedHashes: [KEY_1, TO] }),
      'blobVersionedHashes[1]: hex string has length 40, want 64 for common.Hash',
    );
  });
});

describe('traceTypes', () => {
  it('omitted, null or empty asks for the output only', () => {
    const none = { trace: false, stateDiff: false, vmTrace: false };
    assert.deepEqual(traceTypes(undefined), none);
    assert.deepEqual(traceTypes(null), none);
    assert.deepEqual(traceTypes([]), none);
  });

  it('reads each type, in any order, repeats allowed', () => {
    assert.deepEqual(traceTypes(['trace']), { trace: true, stateDiff: false, vmTrace: false });
    assert.deepEqual(traceTypes(['vmTrace', 'stateDiff']), { trace: false, stateDiff: true, vmTrace: true });
    assert.deepEqual(traceTypes(['trace', 'trace', 'vmTrace', 'stateDiff']), {
      trace: true,
      stateDiff: true,
      vmTrace: true,
    });
  });

  it('refuses an unknown name, naming it', () => {
    problem(() => traceTypes(['trace', 'statediff']), 'unrecognized trace type: statediff');
    problem(() => traceTypes(['']), 'unrecognized trace type: ');
    problem(() => traceTypes([1]), 'unrecognized trace type: 1');
    problem(() => traceTypes([null]), 'unrecognized trace type: null');
    problem(() => traceTypes([['trace']]), 'unrecognized trace type: ["trace"]');
    problem(() => traceTypes(['x'.repeat(81)]), `unrecognized trace type: "${'x'.repeat(79)}…`);
  });

  it('must be an array', () => {
    problem(() => traceTypes('trace'), 'trace types must be an array');
    problem(() => traceTypes({ trace: true }), 'trace types must be an array');
  });
});

describe('stateOverrides', () => {
  it('reads balance, nonce, code and storage per account, in order', () => {
    assert.deepEqual(
      stateOverrides({
        [FROM]: { balance: '0x100', nonce: '0x5', code: '0x6000' },
        [TO]: { state: { [KEY_1]: VALUE } },
      }),
      [
        { address: bytesOf(FROM), override: { balance: 256n, nonce: 5n, code: Uint8Array.of(0x60, 0) } },
        { address: bytesOf(TO), override: { state: [[bytesOf(KEY_1), bytesOf(VALUE)]] } },
      ],
    );
    assert.deepEqual(stateOverrides({ [TO]: { stateDiff: { [KEY_1]: VALUE, [KEY_2]: KEY_1 } } }), [
      {
        address: bytesOf(TO),
        override: {
          stateDiff: [
            [bytesOf(KEY_1), bytesOf(VALUE)],
            [bytesOf(KEY_2), bytesOf(KEY_1)],
          ],
        },
      },
    ]);
  });

  it('an empty state replaces the whole storage with nothing; an empty override changes nothing', () => {
    assert.deepEqual(stateOverrides({ [TO]: { state: {} } }), [
      { address: bytesOf(TO), override: { state: [] } },
    ]);
    assert.deepEqual(stateOverrides({ [TO]: {} }), [{ address: bytesOf(TO), override: {} }]);
    assert.deepEqual(stateOverrides({}), []);
  });

  it('null fields are absent', () => {
    assert.deepEqual(
      stateOverrides({
        [TO]: { balance: null, nonce: null, code: null, state: null, stateDiff: { [KEY_1]: VALUE } },
      }),
      [{ address: bytesOf(TO), override: { stateDiff: [[bytesOf(KEY_1), bytesOf(VALUE)]] } }],
    );
  });

  it('refuses both state and stateDiff for one account', () => {
    problem(
      () => stateOverrides({ [TO]: { state: {}, stateDiff: {} } }),
      `state override ${TO}: has both 'state' and 'stateDiff'`,
    );
  });

  it('names the account and field at fault', () => {
    problem(() => stateOverrides([]), 'state overrides must be an object');
    problem(() => stateOverrides(null), 'state overrides must be an object');
    problem(() => stateOverrides({ [TO]: 1 }), `state override ${TO} must be an object`);
    problem(
      () => stateOverrides({ '0x1234': {} }),
      'state override 0x1234: hex string has length 4, want 40 for common.Address',
    );
    problem(
      () => stateOverrides({ [TO]: { balance: 1 } }),
      `state override ${TO}.balance: json: cannot unmarshal non-string into Go value of type hexutil.Big`,
    );
    problem(
      () => stateOverrides({ [TO]: { code: '0x1' } }),
      `state override ${TO}.code: hex string of odd length`,
    );
    problem(() => stateOverrides({ [TO]: { state: [] } }), `state override ${TO}.state must be an object`);
    problem(
      () => stateOverrides({ [TO]: { state: { '0x01': VALUE } } }),
      `state override ${TO}.state key: hex string has length 2, want 64 for common.Hash`,
    );
    problem(
      () => stateOverrides({ [TO]: { stateDiff: { [KEY_1]: '0x01' } } }),
      `state override ${TO}.stateDiff[${KEY_1}]: hex string has length 2, want 64 for common.Hash`,
    );
  });

  it('nonce is 64-bit, as geth types it', () => {
    // geth's override.OverrideAccount.Nonce is *hexutil.Uint64 (-32602 past 64 bits); taken here,
    // eth_call then fails at run time with -32000 "nonce cannot equal or exceed MAX_UINT64".
    problem(
      () => stateOverrides({ [TO]: { nonce: TWO_TO_64 } }),
      `state override ${TO}.nonce: hex number > 64 bits`,
    );
  });
});

describe('blockOverrides', () => {
  it('reads every field', () => {
    assert.deepEqual(
      blockOverrides({
        number: '0x10',
        time: '0x20',
        gasLimit: '0x30',
        baseFeePerGas: '0x40',
        blobBaseFee: '0x50',
        feeRecipient: TO,
        prevRandao: VALUE,
      }),
      {
        number: 16n,
        time: 32n,
        gasLimit: 48n,
        baseFeePerGas: 64n,
        blobBaseFee: 80n,
        feeRecipient: bytesOf(TO),
        prevRandao: bytesOf(VALUE),
      },
    );
  });

  it('nulls and unknown fields are ignored', () => {
    assert.deepEqual(blockOverrides({}), {});
    assert.deepEqual(
      blockOverrides({ number: null, feeRecipient: null, prevRandao: null, coinbase: TO }),
      {},
    );
  });

  it('names the field at fault', () => {
    problem(() => blockOverrides([]), 'block overrides must be an object');
    problem(
      () => blockOverrides({ number: 16 }),
      'number: json: cannot unmarshal non-string into Go value of type hexutil.Big',
    );
    problem(
      () => blockOverrides({ feeRecipient: '0x12' }),
      'feeRecipient: hex string has length 2, want 40 for common.Address',
    );
    problem(
      () => blockOverrides({ prevRandao: TO }),
      'prevRandao: hex string has length 40, want 64 for common.Hash',
    );
    problem(
      () => blockOverrides({ baseFeePerGas: `0x1${'0'.repeat(64)}` }),
      'baseFeePerGas: hex number > 256 bits',
    );
  });

  it('time and gasLimit are 64-bit, as geth types them', () => {
    // geth's override.BlockOverrides has Time and GasLimit as *hexutil.Uint64 (-32602 past 64
    // bits); here eth_call with {time: 2^64} runs and answers a result.
    problem(() => blockOverrides({ time: TWO_TO_64 }), 'time: hex number > 64 bits');
    problem(() => blockOverrides({ gasLimit: TWO_TO_64 }), 'gasLimit: hex number > 64 bits');
  });
});
