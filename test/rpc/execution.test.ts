import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { toChecksumAddress } from '@ethereumjs/util';
import { DEFAULT_LIMITS } from '../../src/config/limits.ts';
import { revertReason } from '../../src/exec/revertReason.ts';
import { importConformanceChain, type RunningServer, startServer } from '../support/server.ts';

/**
 * eth_call, eth_estimateGas and eth_createAccessList beyond the execution-apis fixtures, on the
 * imported conformance chain. Expectations come from the chain itself (balances, code, headers) or
 * from small contracts injected with state overrides, assembled by hand below.
 */

interface Answer<T = unknown> {
  result?: T;
  error?: { code: number; message: string; data?: string };
}

type Json = Record<string, unknown>;

const hex = (n: bigint | number) => `0x${n.toString(16)}`;
const word = (n: bigint | number) => n.toString(16).padStart(64, '0');
const addr = (tail: string) => `0x${tail.padStart(40, '0')}`;

// The chain's accounts: the one sending every block's transactions (its balance changes each block),
// two funded accounts and one that never held anything.
const SENDER = '0x7435ed30a8b4aeb0877cef0c6e8cffe834eb865f';
const RICH = '0x14e46043e63d0e3cdcf2530519f4cfaf35058cb2';
const EMPTY = '0x0102030000000000000000000000000000000000';
// The chain's contracts (hive's hivechain): callenv echoes the environment; 0x17e7… answers 0xff01.
const CALLENV = '0x9344b07175800259691961298ca11c824e65032d';
const CALLME = '0x17e7eedce4ac02ef114a7ed9fe6e2f33feba1667';

// Addresses for injected code, and two that only get looked at.
const C1 = addr('c0de01');
const C2 = addr('c0de02');
const C3 = addr('c0de03');
const X = `0x${'11'.repeat(20)}`;

// `<value on the stack>` then PUSH1 0 MSTORE PUSH1 32 PUSH1 0 RETURN: returns that word. PUSH1 0
// rather than PUSH0, which would be an invalid opcode before Shanghai (the chain starts at Frontier).
const RETURN_TOP = '60005260206000f3';
/** BALANCE(a) as the output. */
const balanceOf = (a: string) => `0x73${a.slice(2)}31${RETURN_TOP}`;
/** CALLDATASIZE PUSH0 PUSH0 CALLDATACOPY CALLDATASIZE PUSH0 REVERT: reverts with its call data. */
const ECHO_REVERT = '0x365f5f37365ffd';
const BLOBBASEFEE = `0x4a${RETURN_TOP}`;
/** BALANCE(ORIGIN): what the sender holds while the call runs. */
const ORIGIN_BALANCE = `0x3231${RETURN_TOP}`;
/** PUSH0 SLOAD: storage slot 0 as the output. */
const SLOAD_0 = `0x5f54${RETURN_TOP}`;
/** Clears slots 1–4 (PUSH0 PUSH1 k SSTORE each): a call whose refund makes its used gas misleading. */
const CLEAR_FOUR = '0x5f6001555f6002555f6003555f60045500';
/** Counts down from 1000 (JUMPDEST PUSH1 1 SWAP1 SUB DUP1 PUSH1 3 JUMPI): burns 26 gas a round. */
const BURN = '0x6103e85b600190038060035700';
/**
 * CALLs `target` with all its gas (GAS CALL) and reverts if that call failed (PUSH1 0x22 JUMPI …
 * REVERT; JUMPDEST STOP): a call that needs 64/63 of what it uses.
 */
const callAllGas = (target: string) => `0x5f5f5f5f5f73${target.slice(2)}5af16022575f5ffd5b00`;
/** PUSH1 7 SLOAD POP STOP. */
const SLOAD_7 = '0x6007545000';
/**
 * BALANCE(X), BALANCE(ORIGIN), STATICCALL(identity precompile), STATICCALL(C3): touches X, the
 * sender (excluded), a precompile (excluded) and C3, which reads its slot 7.
 */
const TOUCHER = `0x${[
  `73${X.slice(2)}3150`, // PUSH20 X BALANCE POP
  '323150', // ORIGIN BALANCE POP
  '5f5f5f5f60045afa50', // PUSH0 ×4 PUSH1 4 GAS STATICCALL POP
  `5f5f5f5f73${C3.slice(2)}5afa50`, // PUSH0 ×4 PUSH20 C3 GAS STATICCALL POP
  '00', // STOP
].join('')}`;
/** PUSH1 5 SLOAD POP, PUSH20 X BALANCE POP, STOP: reads its own slot 5. */
const OWN_SLOT = `0x6005545073${X.slice(2)}315000`;

/** Initcode that deploys `0x6001`: PUSH2 0x6001 PUSH1 0 MSTORE PUSH1 2 PUSH1 30 RETURN. */
const DEPLOY = '0x6160016000526002601ef3';

const BLOB_HASH = `0x01${'00'.repeat(31)}`;

function errorString(message: string): string {
  const bytes = Buffer.from(message, 'utf8');
  const padded = bytes.toString('hex').padEnd(Math.ceil(bytes.length / 32) * 64, '0');
  return `0x08c379a0${word(32)}${word(bytes.length)}${padded}`;
}

describe('eth_call, eth_estimateGas, eth_createAccessList', () => {
  let server: RunningServer;
  /** The same chain with an exact gas search (no error ratio), so `estimate − 1` must fail. */
  let exact: RunningServer;
  let cleanup = () => {};
  let head: bigint;
  let baseFee: bigint;
  let id = 0;

  async function ask<T = unknown>(s: RunningServer, method: string, params: unknown[]): Promise<Answer<T>> {
    const res = await fetch(s.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: ++id, method, params }),
    });
    return (await res.json()) as Answer<T>;
  }

  async function result<T = string>(s: RunningServer, method: string, params: unknown[]): Promise<T> {
    const answer = await ask<T>(s, method, params);
    assert.equal(answer.error, undefined, `${method}: ${JSON.stringify(answer.error)}`);
    return answer.result as T;
  }

  async function failure(s: RunningServer, method: string, params: unknown[]) {
    const answer = await ask(s, method, params);
    assert.ok(answer.error, `${method} should fail, got ${JSON.stringify(answer.result)}`);
    return answer.error;
  }

  const code = (entries: Record<string, string>) =>
    Object.fromEntries(Object.entries(entries).map(([a, c]) => [a, { code: c }]));

  before(async () => {
    const chain = await importConformanceChain();
    cleanup = chain.cleanup;
    server = await startServer(chain.datadir);
    exact = await startServer(chain.datadir, {
      limits: { calls: { estimateGasErrorRatio: 0 } },
    });
    head = BigInt(await result(server, 'eth_blockNumber', []));
    const latest = await result<Json>(server, 'eth_getBlockByNumber', ['latest', false]);
    baseFee = BigInt(latest.baseFeePerGas as string);
  });

  after(async () => {
    await server?.close();
    await exact?.close();
    cleanup();
  });

  describe('eth_call', () => {
    it('reads the state of the block asked for', async () => {
      // The chain's sender pays for transactions in every block, so its balance differs block by block.
      const seen = new Set<string>();
      for (const n of [1n, 10n, 30n, head]) {
        const balance = await result(server, 'eth_getBalance', [SENDER, hex(n)]);
        const called = await result(server, 'eth_call', [
          { to: C1 },
          hex(n),
          code({ [C1]: balanceOf(SENDER) }),
        ]);
        assert.equal(BigInt(called), BigInt(balance), `block ${n}`);
        seen.add(called);
      }
      assert.equal(seen.size, 4, 'the balances differ between these blocks');
    });

    it('sees a contract only from the block that deployed it, with that block’s rules', async () => {
      let deployed = 0n;
      while ((await result(server, 'eth_getCode', [CALLME, hex(deployed)])) === '0x') deployed++;
      assert.ok(deployed > 0n);
      const call = { to: CALLME, input: '0xff01' };
      assert.equal(await result(server, 'eth_call', [call, hex(deployed - 1n)]), '0x');
      assert.equal(await result(server, 'eth_call', [call, 'latest']), '0xffee');
      // Its code shifts with SHR, which only exists from Constantinople (block 12 of this chain) on.
      if (deployed < 12n) {
        const early = await failure(server, 'eth_call', [call, hex(deployed)]);
        // geth's words (ErrInvalidOpCode): the op as later forks name it.
        assert.deepEqual(early, { code: -32000, message: 'invalid opcode: SHR' });
      }
    });

    it("runs in the block's environment, whichever form names the block", async () => {
      const block = await result<Json>(server, 'eth_getBlockByNumber', ['0x20', false]);
      for (const selector of ['0x20', 32, block.hash, { blockHash: block.hash }, { blockNumber: '0x20' }]) {
        const output = await result(server, 'eth_call', [{ to: CALLENV }, selector]);
        assert.equal(output.slice(2, 66), word(0x20), JSON.stringify(selector));
      }
      assert.equal((await result(server, 'eth_call', [{ to: CALLENV }])).slice(2, 66), word(head));
    });

    it('applies state overrides: code, balance, storage', async () => {
      assert.equal(
        await result(server, 'eth_call', [
          { to: C1 },
          'latest',
          { [C1]: { code: SLOAD_0, state: { [`0x${word(0)}`]: `0x${word(42)}` } } },
        ]),
        `0x${word(42)}`,
      );
      assert.equal(
        await result(server, 'eth_call', [
          { to: C1 },
          'latest',
          { [C1]: { code: balanceOf(X) }, [X]: { balance: '0x1234' } },
        ]),
        `0x${word(0x1234)}`,
      );
      // The chain's storage contract holds a non-zero slot 0; stateDiff keeps it, state wipes it.
      const storage = '0x7dcd17433742f4c0ca53122ab541d0ba67fc27df';
      const slot0 = await result(server, 'eth_getStorageAt', [storage, '0x0', 'latest']);
      assert.notEqual(BigInt(slot0), 0n);
      const keep = await result(server, 'eth_call', [
        { to: storage },
        'latest',
        { [storage]: { code: SLOAD_0, stateDiff: { [`0x${word(9)}`]: `0x${word(1)}` } } },
      ]);
      assert.equal(BigInt(keep), BigInt(slot0));
      const wiped = await result(server, 'eth_call', [
        { to: storage },
        'latest',
        { [storage]: { code: SLOAD_0, state: { [`0x${word(9)}`]: `0x${word(1)}` } } },
      ]);
      assert.equal(BigInt(wiped), 0n);
    });

    it("moves and replaces precompiles as geth's state overrides do, answering as eth_simulateV1", async () => {
      const IDENTITY = addr('04');
      const data = '0x68656c6c6f';
      const moved = { [IDENTITY]: { movePrecompileToAddress: C2 } };
      const cases: Array<[string, Json, Record<string, Json>, string]> = [
        ['the moved precompile at its new address', { to: C2, input: data }, moved, data],
        ['its old address, an account without code now', { to: IDENTITY, input: data }, moved, '0x'],
        [
          'code put at a precompile address runs instead of it',
          { to: IDENTITY, input: data },
          { [IDENTITY]: { code: `0x602a${RETURN_TOP}` } },
          `0x${word(42)}`,
        ],
        // geth takes the precompile away for any override naming its address, a balance too.
        [
          'a balance given to a precompile address',
          { to: IDENTITY, input: data },
          { [IDENTITY]: { balance: '0x1' } },
          '0x',
        ],
        [
          'moved, then called from a contract (STATICCALL of a word, its answer returned)',
          { to: C1 },
          { ...moved, [C1]: { code: `0x602a600052602060206020600073${C2.slice(2)}5afa5060206020f3` } },
          `0x${word(42)}`,
        ],
      ];
      for (const [what, call, overrides, expected] of cases) {
        assert.equal(await result(server, 'eth_call', [call, 'latest', overrides]), expected, what);
        const simulated = await result<Array<{ calls: Array<{ returnData: string; status: string }> }>>(
          server,
          'eth_simulateV1',
          [{ blockStateCalls: [{ stateOverrides: overrides, calls: [call] }] }, 'latest'],
        );
        assert.equal(simulated[0]?.calls[0]?.returnData, expected, `${what} (eth_simulateV1)`);
      }
      // Unmoved, the identity precompile answers at its own address; moved, the call costs the same.
      assert.equal(await result(server, 'eth_call', [{ to: IDENTITY, input: data }, 'latest']), data);
      assert.equal(
        await result(server, 'eth_estimateGas', [{ to: C2, input: data }, 'latest', moved]),
        await result(server, 'eth_estimateGas', [{ to: IDENTITY, input: data }, 'latest']),
      );
      const traced = await result<Json>(server, 'debug_traceCall', [
        { to: C2, input: data },
        'latest',
        { tracer: 'callTracer', stateOverrides: moved },
      ]);
      assert.equal(traced.output, data);
      for (const [overrides, message] of [
        [{ [C1]: { movePrecompileToAddress: C2 } }, `account ${C1} is not a precompile`],
        [{ ...moved, [C2]: { balance: '0x1' } }, `account ${C2} is already overridden`],
      ] as const) {
        const error = await failure(server, 'eth_call', [{ to: C2, input: data }, 'latest', overrides]);
        assert.deepEqual([error.code, error.message], [-32000, message]);
      }
    });

    it('applies block overrides', async () => {
      const output = await result(server, 'eth_call', [
        { from: RICH, to: CALLENV, gasPrice: '0x9' },
        'latest',
        null,
        { number: '0x1234', feeRecipient: X, prevRandao: `0x${word(0x42)}`, baseFeePerGas: '0x7' },
      ]);
      const words = output.slice(2).match(/.{64}/g) ?? [];
      assert.equal(words[0], word(0x1234), 'NUMBER');
      assert.equal(words[2], `${'0'.repeat(24)}${X.slice(2)}`, 'COINBASE');
      assert.equal(words[3], word(7), 'BASEFEE');
      assert.equal(words[4], word(0x42), 'PREVRANDAO');
      assert.equal(words[5], `${'0'.repeat(24)}${RICH.slice(2)}`, 'ORIGIN');
    });

    it("debits gas × price from the sender before the call runs (geth's eth_call)", async () => {
      const balance = BigInt(await result(server, 'eth_getBalance', [RICH, 'latest']));
      const gas = 100_000n;
      const price = 2n * baseFee;
      const charged = await result(server, 'eth_call', [
        { from: RICH, to: C1, gas: hex(gas), gasPrice: hex(price), value: '0x5' },
        'latest',
        code({ [C1]: ORIGIN_BALANCE }),
      ]);
      assert.equal(BigInt(charged), balance - gas * price - 5n);
      // A call that names no price pays nothing, and sees a zero base fee.
      const free = await result(server, 'eth_call', [
        { from: RICH, to: C1 },
        'latest',
        code({ [C1]: ORIGIN_BALANCE }),
      ]);
      assert.equal(BigInt(free), balance);
    });

    it('fails a call the sender cannot afford, with geth’s error', async () => {
      const error = await failure(server, 'eth_call', [{ from: EMPTY, to: X, value: '0x1' }]);
      assert.equal(error.code, -32000);
      assert.equal(
        error.message,
        `err: insufficient funds for gas * price + value: address ${toChecksumAddress(EMPTY)} have 0 want 1 (supplied gas 50000000)`,
      );
      const priced = await failure(server, 'eth_call', [
        { from: EMPTY, to: X, gas: '0x5208', gasPrice: hex(baseFee) },
      ]);
      assert.match(
        priced.message,
        /^err: insufficient funds for gas \* price \+ value: .* have 0 want \d+ \(supplied gas 21000\)$/,
      );
    });

    it('rejects gas below the intrinsic cost and a fee cap below the base fee', async () => {
      const low = await failure(server, 'eth_call', [{ to: X, gas: '0x5000' }]);
      assert.equal(low.code, -32000);
      assert.equal(low.message, 'err: intrinsic gas too low: have 20480, want 21000 (supplied gas 20480)');
      const cheap = await failure(server, 'eth_call', [{ from: RICH, to: X, maxFeePerGas: '0x1' }]);
      assert.match(
        cheap.message,
        /^err: max fee per gas less than block base fee: address .*, maxFeePerGas: 1, baseFee: \d+ \(supplied gas 50000000\)$/,
      );
      const tip = await failure(server, 'eth_call', [{ from: RICH, to: X, maxPriorityFeePerGas: '0x1' }]);
      assert.match(tip.message, /max priority fee per gas higher than max fee per gas/);
    });

    it('reverts with code 3, the revert data and the decoded reason', async () => {
      const revert = (input: string) =>
        failure(server, 'eth_call', [{ to: C1, input }, 'latest', code({ [C1]: ECHO_REVERT })]);
      const reason = errorString('hello, world');
      assert.deepEqual(await revert(reason), {
        code: 3,
        message: 'execution reverted: hello, world',
        data: reason,
      });
      const panic = `0x4e487b71${word(0x11)}`;
      assert.deepEqual(await revert(panic), {
        code: 3,
        message: 'execution reverted: arithmetic underflow or overflow',
        data: panic,
      });
      const unknownPanic = `0x4e487b71${word(0x99)}`;
      assert.equal((await revert(unknownPanic))?.message, 'execution reverted: unknown panic code: 0x99');
      const custom = `0xdeadbeef${word(7)}`;
      assert.deepEqual(await revert(custom), { code: 3, message: 'execution reverted', data: custom });
      assert.deepEqual(await revert('0x'), { code: 3, message: 'execution reverted', data: '0x' });
    });

    it('answers a creation with the code it would deploy', async () => {
      assert.equal(await result(server, 'eth_call', [{ from: RICH, input: DEPLOY }]), '0x6001');
    });

    it('reports other EVM failures as -32000 with geth’s words', async () => {
      const invalid = await failure(server, 'eth_call', [{ to: C1 }, 'latest', code({ [C1]: '0xfe' })]);
      assert.equal(invalid.code, -32000);
      assert.match(invalid.message, /^invalid opcode/);
      const oog = await failure(server, 'eth_call', [
        { to: C1, gas: '0x5300' },
        'latest',
        code({ [C1]: BURN }),
      ]);
      assert.deepEqual(oog, { code: -32000, message: 'out of gas' });
    });

    it('lets a contract be the sender (no EIP-3607 check for calls, as geth)', async () => {
      const output = await result(server, 'eth_call', [
        { from: C2, to: C1 },
        'latest',
        { [C1]: { code: ORIGIN_BALANCE }, [C2]: { code: BURN, balance: '0x77' } },
      ]);
      assert.equal(BigInt(output), 0x77n);
    });

    it('gives a blob call without a blob fee cap a zero blob base fee; blobBaseFee overrides it', async () => {
      const blob = { from: RICH, to: C1, blobVersionedHashes: [BLOB_HASH] };
      const overrides = code({ [C1]: BLOBBASEFEE });
      assert.equal(BigInt(await result(server, 'eth_call', [blob, 'latest', overrides])), 0n);
      const set = await result(server, 'eth_call', [
        { ...blob, maxFeePerBlobGas: '0x100' },
        'latest',
        overrides,
        { blobBaseFee: '0x77' },
      ]);
      assert.equal(BigInt(set), 0x77n);
      const chainFee = await result(server, 'eth_blobBaseFee', []);
      const real = await result(server, 'eth_call', [
        { ...blob, maxFeePerBlobGas: '0x100' },
        'latest',
        overrides,
      ]);
      assert.ok(BigInt(real) > 0n && BigInt(real) <= BigInt(chainFee) * 2n);
    });
  });

  describe('eth_estimateGas', () => {
    /** The estimate succeeds as the call's gas limit, and one gas less fails. */
    async function assertTight(call: Json, overrides: Json = {}): Promise<bigint> {
      const estimate = await result(exact, 'eth_estimateGas', [call, 'latest', overrides]);
      await result(exact, 'eth_call', [{ ...call, gas: estimate }, 'latest', overrides]);
      await failure(exact, 'eth_call', [{ ...call, gas: hex(BigInt(estimate) - 1n) }, 'latest', overrides]);
      return BigInt(estimate);
    }

    it('finds the exact limit for plain transfers, calls, refunds and the 63/64 rule', async () => {
      assert.equal(await assertTight({ from: RICH, to: X, value: '0x1' }), 21_000n);
      // A creation pays 32,000 more plus 200 a byte of deployed code.
      assert.ok((await assertTight({ from: RICH, input: DEPLOY })) > 53_000n + 400n);
      await assertTight({ from: RICH, to: CALLME, input: '0xff01' });
      // Four cleared slots: the refund makes the gas used far lower than the gas needed.
      const refund = await assertTight(
        { to: C1 },
        {
          [C1]: {
            code: CLEAR_FOUR,
            state: Object.fromEntries([1, 2, 3, 4].map((k) => [`0x${word(k)}`, `0x${word(1)}`])),
          },
        },
      );
      assert.ok(refund > 40_000n, `refund case ${refund}`);
      // The inner call gets 63/64 of what is left: the limit must cover that sixty-fourth too.
      const nested = await assertTight({ to: C1 }, code({ [C1]: callAllGas(C2), [C2]: BURN }));
      assert.ok(nested > 21_000n + 26_000n);
    });

    it('stops within geth’s 1.5% by default, never below the exact limit', async () => {
      const cases: Array<[Json, Json]> = [
        [{ to: C1 }, code({ [C1]: callAllGas(C2), [C2]: BURN })],
        [{ from: RICH, to: CALLME, input: '0xff01' }, {}],
      ];
      for (const [call, overrides] of cases) {
        const loose = BigInt(await result(server, 'eth_estimateGas', [call, 'latest', overrides]));
        const tight = BigInt(await result(exact, 'eth_estimateGas', [call, 'latest', overrides]));
        assert.ok(
          loose >= tight &&
            Number(loose - tight) / Number(loose) < DEFAULT_LIMITS.calls.estimateGasErrorRatio,
        );
        await result(server, 'eth_call', [{ ...call, gas: hex(loose) }, 'latest', overrides]);
      }
    });

    it('uses the block and the overrides asked for', async () => {
      // Before the contract existed the call only pays for its calldata: two non-zero bytes at 68 gas
      // each (before Istanbul).
      assert.equal(
        await result(exact, 'eth_estimateGas', [{ to: CALLME, input: '0xff01' }, '0x0']),
        hex(21_136n),
      );
      const burn = BigInt(
        await result(exact, 'eth_estimateGas', [{ to: C1 }, 'latest', code({ [C1]: BURN })]),
      );
      assert.ok(burn > 21_000n + 26_000n);
    });

    it('reverts with code 3 and the reason', async () => {
      const reason = errorString('nope');
      const error = await failure(server, 'eth_estimateGas', [
        { to: C1, input: reason },
        'latest',
        code({ [C1]: ECHO_REVERT }),
      ]);
      assert.deepEqual(error, { code: 3, message: 'execution reverted: nope', data: reason });
    });

    it('caps the search at what the balance pays for', async () => {
      const price = 1_000_000_000n;
      const error = await failure(server, 'eth_estimateGas', [
        { from: EMPTY, to: C1, gasPrice: hex(price) },
        'latest',
        { [C1]: { code: BURN }, [EMPTY]: { balance: hex(30_000n * price) } },
      ]);
      assert.deepEqual(error, { code: -32000, message: 'gas required exceeds allowance (30000)' });
      const transfer = await failure(server, 'eth_estimateGas', [
        { from: EMPTY, to: X, gasPrice: hex(price), value: hex(30_000n * price) },
        'latest',
        { [EMPTY]: { balance: hex(30_000n * price) } },
      ]);
      assert.deepEqual(transfer, { code: -32000, message: 'insufficient funds for transfer' });
    });

    it('fails when the sender cannot pay the value', async () => {
      const error = await failure(server, 'eth_estimateGas', [{ from: EMPTY, to: X, value: '0x1' }]);
      assert.equal(error.code, -32000);
      assert.equal(
        error.message,
        `failed with 16777216 gas: insufficient funds for gas * price + value: address ${toChecksumAddress(EMPTY)} have 0 want 1`,
      );
    });

    it('says when no allowed gas is enough', async () => {
      const error = await failure(server, 'eth_estimateGas', [
        { to: C1, gas: '0x7530' },
        'latest',
        code({ [C1]: BURN }),
      ]);
      assert.deepEqual(error, { code: -32000, message: 'gas required exceeds allowance (30000)' });
    });
  });

  describe('eth_createAccessList', () => {
    const touch = code({ [C1]: TOUCHER, [C3]: SLOAD_7 });

    it("lists what the call's opcodes touch, less the sender, the recipient and precompiles", async () => {
      const answer = await result<Json>(server, 'eth_createAccessList', [
        { from: RICH, to: C1 },
        'latest',
        touch,
      ]);
      assert.deepEqual(answer.accessList, [
        { address: C3, storageKeys: [`0x${word(7)}`] },
        { address: X, storageKeys: [] },
      ]);
      assert.equal(answer.error, undefined);
    });

    it('makes the call cheaper', async () => {
      const call = { from: RICH, to: C1 };
      const { accessList } = await result<Json>(server, 'eth_createAccessList', [call, 'latest', touch]);
      const without = BigInt(await result(exact, 'eth_estimateGas', [call, 'latest', touch]));
      const withList = BigInt(
        await result(exact, 'eth_estimateGas', [{ ...call, accessList }, 'latest', touch]),
      );
      // 100 saved on each of the three entries: 2,600 → 2,400 + 100 for an address, 2,100 → 1,900 + 100
      // for a slot.
      assert.equal(without - withList, 300n);
    });

    it("lists the recipient's slots as geth does, and its gasUsed is the call's with the list", async () => {
      const call = { from: RICH, to: C1 };
      const overrides = code({ [C1]: OWN_SLOT });
      const answer = await result<Json>(server, 'eth_createAccessList', [call, 'latest', overrides]);
      assert.deepEqual(answer.accessList, [
        { address: C1, storageKeys: [`0x${word(5)}`] },
        { address: X, storageKeys: [] },
      ]);
      // No refunds and no nested calls: the least gas that works is exactly the gas used.
      const withList = await result(exact, 'eth_estimateGas', [
        { ...call, accessList: answer.accessList },
        'latest',
        overrides,
      ]);
      assert.equal(answer.gasUsed, withList);
      // The one case where the list costs more: geth lists the recipient, warm anyway, for its slot,
      // paying 2,400 to save 100 on the slot (X still saves its 100).
      const without = await result(exact, 'eth_estimateGas', [call, 'latest', overrides]);
      assert.equal(BigInt(withList) - BigInt(without), 2_400n - 100n - 100n);
      // Given its own list, it answers the same.
      assert.deepEqual(
        await result(server, 'eth_createAccessList', [
          { ...call, accessList: answer.accessList },
          'latest',
          overrides,
        ]),
        answer,
      );
    });

    it('reports a failing call in `error` and still lists its accesses', async () => {
      const answer = await result<Json>(server, 'eth_createAccessList', [
        { from: RICH, to: C1, input: errorString('no') },
        'latest',
        code({ [C1]: `0x73${X.slice(2)}3150${ECHO_REVERT.slice(2)}` }),
      ]);
      assert.equal(answer.error, 'execution reverted');
      assert.deepEqual(answer.accessList, [{ address: X, storageKeys: [] }]);
    });

    it('fills in fees as for a transaction to send, so the sender must afford them', async () => {
      const error = await failure(server, 'eth_createAccessList', [{ from: EMPTY, to: X }]);
      assert.equal(error.code, -32000);
      assert.match(
        error.message,
        /^failed to apply transaction: 0x[0-9a-f]{64} err: insufficient funds for gas \* price \+ value: /,
      );
      const zero = await failure(server, 'eth_createAccessList', [{ from: RICH, to: X, gasPrice: '0x0' }]);
      assert.deepEqual(zero, { code: -32000, message: 'gasPrice must be non-zero after london fork' });
    });

    it('names no made-up hash when the call makes no transaction', async () => {
      // A blob call without blobs: ethereumjs cannot build the transaction, so it has no hash; the
      // failure says what is wrong rather than naming the zero hash.
      const error = await failure(server, 'eth_createAccessList', [
        { from: RICH, to: X, blobVersionedHashes: [] },
      ]);
      assert.equal(error.code, -32000);
      assert.doesNotMatch(error.message, /0x0{64}/);
      assert.match(error.message, /^failed to apply transaction: \S/);
    });
  });

  describe('at the London fork block (27), where EIP-1559 starts, and the blocks either side', () => {
    // geth and ethereumjs both pin the London block's base fee to EIP-1559's initial 1 gwei.
    const LONDON = 27;
    const INITIAL_BASE_FEE = 1_000_000_000n;
    const BASEFEE = `0x48${RETURN_TOP}`;
    const transfer = { from: RICH, to: X, value: '0x1' };

    it('answers eth_call, eth_estimateGas, trace_call, trace_callMany and debug_traceCall', async () => {
      for (const n of [LONDON - 1, LONDON, LONDON + 1]) {
        const block = hex(n);
        const at = `block ${n}`;
        assert.equal(await result(server, 'eth_call', [transfer, block]), '0x', at);
        assert.equal(await result(server, 'eth_estimateGas', [transfer, block]), '0x5208', at);
        type Traced = { output: string; trace: Array<{ action: { from: string; value: string } }> };
        const traced = await result<Traced>(server, 'trace_call', [transfer, ['trace'], block]);
        assert.deepEqual(
          [traced.output, traced.trace[0]?.action.from, traced.trace[0]?.action.value],
          ['0x', RICH, '0x1'],
          at,
        );
        const many = await result<Traced[]>(server, 'trace_callMany', [
          [
            [transfer, ['trace']],
            [{ ...transfer, value: '0x2' }, ['trace']],
          ],
          block,
        ]);
        assert.deepEqual(
          many.map((t) => t.trace[0]?.action.value),
          ['0x1', '0x2'],
          at,
        );
        const debug = await result<{ gas: number; failed: boolean }>(server, 'debug_traceCall', [
          transfer,
          block,
          {},
        ]);
        assert.deepEqual([debug.gas, debug.failed], [21000, false], at);
      }
    });

    it("sees the block's base fee, zero for a call that names no fee (geth), or the override", async () => {
      const baseFeeAt = async (call: Json, block: number, env?: Json) =>
        BigInt(
          await result(server, 'eth_call', [
            { from: RICH, to: C1, ...call },
            hex(block),
            code({ [C1]: BASEFEE }),
            ...(env ? [env] : []),
          ]),
        );
      assert.equal(await baseFeeAt({ gasPrice: hex(INITIAL_BASE_FEE) }, LONDON), INITIAL_BASE_FEE);
      assert.equal(await baseFeeAt({}, LONDON), 0n);
      assert.equal(await baseFeeAt({ gasPrice: '0x9' }, LONDON, { baseFeePerGas: '0x7' }), 7n);
      const next = await result<Json>(server, 'eth_getBlockByNumber', [hex(LONDON + 1), false]);
      const fee = BigInt(next.baseFeePerGas as string);
      assert.notEqual(fee, INITIAL_BASE_FEE);
      assert.equal(await baseFeeAt({ gasPrice: hex(fee) }, LONDON + 1), fee);
      // A later block's environment moved onto the London block keeps the base fee it is given.
      assert.equal(
        await baseFeeAt({ gasPrice: '0x9' }, LONDON + 1, { number: hex(LONDON), baseFeePerGas: '0x9' }),
        9n,
      );
    });
  });

  describe('errors', () => {
    const methods = ['eth_call', 'eth_estimateGas', 'eth_createAccessList'];

    it('rejects bad parameters with -32602', async () => {
      const bad: unknown[][] = [
        [],
        ['0x1234'],
        [{ to: '0x1234' }],
        [{ to: X, gasPrice: '0x1', maxFeePerGas: '0x1' }],
        [{ to: X, input: '0x01', data: '0x02' }],
        [{ to: X, gas: 21000 }],
        [{ to: X }, 'newest'],
        [{ to: X }, 'latest', { [X]: { state: {}, stateDiff: {} } }],
      ];
      for (const method of methods) {
        for (const params of bad) {
          const error = await failure(server, method, params);
          assert.equal(error.code, -32602, `${method} ${JSON.stringify(params)}: ${error.message}`);
        }
      }
    });

    it('answers unknown blocks and a wrong chain id with -32000', async () => {
      for (const method of methods) {
        assert.deepEqual(await failure(server, method, [{ to: X }, hex(head + 100n)]), {
          code: -32000,
          message: 'header not found',
        });
        assert.deepEqual(await failure(server, method, [{ to: X }, `0x${'ab'.repeat(32)}`]), {
          code: -32000,
          message: 'header for hash not found',
        });
        const wrong = await failure(server, method, [{ from: RICH, to: X, chainId: '0x1' }]);
        assert.equal(wrong.code, -32000);
        assert.match(wrong.message, /^chainId does not match node's \(have=1, want=\d+\)$/);
      }
    });
  });

  it('decodes revert reasons as geth does', () => {
    assert.equal(revertReason(Buffer.from(errorString('').slice(2), 'hex')), '');
    assert.equal(revertReason(Buffer.from(`4e487b71${word(1)}`, 'hex')), 'assert(false)');
    // Too short, an offset past the end, a length past the end: not a reason.
    assert.equal(revertReason(Buffer.from('08c379a0', 'hex')), null);
    assert.equal(revertReason(Buffer.from(`08c379a0${word(64)}${word(1)}`, 'hex')), null);
    assert.equal(revertReason(Buffer.from(`08c379a0${word(32)}${word(33)}${word(0)}`, 'hex')), null);
    assert.equal(revertReason(Buffer.from(`4e487b71${'00'.repeat(31)}`, 'hex')), null);
  });
});
