import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { concatHex, getContractAddress, type Hex, keccak256, toHex } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { asm, deployCode } from '../support/asm.ts';
import { conformanceServerForSuite, type RunningServer } from '../support/server.ts';

// stateDiff of trace_callMany / trace_call against expectations worked out by hand from the bytecode
// and the OpenEthereum/Erigon rules: an account that did not exist before the
// call is all "+", a deleted one all "-", otherwise each field "*" or "="; only changed accounts and
// slots; storage keys and values as 32-byte words; ascending order. The simulation charges no fees
// (Reth), so a sender's balance moves by exactly the value it sends, its nonce by one, and the
// coinbase never appears. The chain is the execution-apis conformance chain, Osaka (BPO2) at latest.

// Funded accounts of the conformance chain (genesis alloc), and addresses that hold nothing there.
const SENDER = '0x7435ed30a8b4aeb0877cef0c6e8cffe834eb865f';
const OTHER = '0x0c2c51a0990aee1d73c1228de158688341557508';
const fresh = (n: number): Hex => `0x00000000000000000000000000000000005d${n.toString(16).padStart(4, '0')}`;
const FRESH = fresh(0xf1);
const FRESH2 = fresh(0xf2);
// Contracts injected with state overrides (fresh addresses as well).
const CONTRACT = fresh(0xc1);
const FACTORY = fresh(0xc2);
const DELEGATE = fresh(0xc3);
const IDENTITY = '0x0000000000000000000000000000000000000004';
const SHA256 = '0x0000000000000000000000000000000000000002';

const WORD = (n: number | bigint | Hex): Hex =>
  `0x${(typeof n === 'string' ? n.slice(2) : n.toString(16)).padStart(64, '0')}`;
const q = (n: bigint | number): Hex => `0x${n.toString(16)}`;
const lower = (a: string): Hex => a.toLowerCase() as Hex;

type Delta = '=' | { '+': string } | { '-': string } | { '*': { from: string; to: string } };
type AccountDiff = { balance: Delta; code: Delta; nonce: Delta; storage: Record<string, Delta> };
type StateDiff = Record<string, AccountDiff>;
type Entry = {
  type: string;
  action: Record<string, string>;
  result: Record<string, string> | null;
  error?: string;
  subtraces: number;
  traceAddress: number[];
};
type Result = { output: string; stateDiff: StateDiff | null; trace: Entry[]; vmTrace: unknown };

const plus = (v: string): Delta => ({ '+': v });
const minus = (v: string): Delta => ({ '-': v });
const star = (from: string, to: string): Delta => ({ '*': { from, to } });
/** An account that did not exist before the call. */
const created = (balance: bigint, code: Hex, nonce: bigint, storage: Record<string, Delta> = {}) => ({
  balance: plus(q(balance)),
  code: plus(code),
  nonce: plus(q(nonce)),
  storage,
});

/** The account as the chain holds it at latest (all tests run on latest, which never moves). */
interface Pre {
  balance: bigint;
  nonce: bigint;
}

const words = (d: Delta): string[] =>
  d === '=' ? [] : '*' in d ? [d['*'].from, d['*'].to] : '+' in d ? [d['+']] : [d['-']];

/** Every address, slot and storage value in the canonical form, addresses and slots ascending. */
function assertCanonical(diff: StateDiff): void {
  const addresses = Object.keys(diff);
  assert.deepEqual(addresses, [...addresses].sort(), 'addresses in ascending order');
  for (const [address, account] of Object.entries(diff)) {
    assert.match(address, /^0x[0-9a-f]{40}$/);
    assert.deepEqual(Object.keys(account).sort(), ['balance', 'code', 'nonce', 'storage']);
    const slots = Object.keys(account.storage);
    assert.deepEqual(slots, [...slots].sort(), `slots of ${address} in ascending order`);
    for (const [slot, delta] of Object.entries(account.storage)) {
      assert.match(slot, /^0x[0-9a-f]{64}$/);
      for (const v of words(delta)) assert.match(v, /^0x[0-9a-f]{64}$/, `value of ${address} ${slot}`);
    }
  }
}

describe('stateDiff', () => {
  const conformance = conformanceServerForSuite();
  let server: RunningServer;
  let sender: Pre;
  let other: Pre;
  let coinbase: string;
  before(async () => {
    server = conformance();
    const pre = async (address: string): Promise<Pre> => ({
      balance: BigInt(await server.rpc<string>('eth_getBalance', [address, 'latest'])),
      nonce: BigInt(await server.rpc<string>('eth_getTransactionCount', [address, 'latest'])),
    });
    sender = await pre(SENDER);
    other = await pre(OTHER);
    const head = await server.rpc<{ miner: string }>('eth_getBlockByNumber', ['latest', false]);
    coinbase = head.miner;
    // The fresh addresses really are fresh.
    for (const address of [FRESH, FRESH2, CONTRACT, FACTORY, DELEGATE, IDENTITY, SHA256]) {
      assert.deepEqual(await pre(address), { balance: 0n, nonce: 0n }, address);
      assert.equal(await server.rpc('eth_getCode', [address, 'latest']), '0x', address);
    }
  });

  const callMany = async (calls: unknown[], overrides?: Record<string, unknown>): Promise<Result[]> => {
    const results = await server.rpc<Result[]>('trace_callMany', [
      calls,
      'latest',
      ...(overrides ? [{ stateOverrides: overrides }] : []),
    ]);
    for (const r of results) if (r.stateDiff) assertCanonical(r.stateDiff);
    return results;
  };
  const traceCall = async (call: unknown, types: string[], overrides?: Record<string, unknown>) => {
    const r = await server.rpc<Result>('trace_call', [
      call,
      types,
      'latest',
      ...(overrides ? [overrides] : []),
    ]);
    if (r.stateDiff) assertCanonical(r.stateDiff);
    return r;
  };
  /** The sender's entry for a call sending `value`, after `calls` earlier calls that sent `spent` in all. */
  const senderAfter = (value = 0n, calls = 0n, spent = 0n): AccountDiff => ({
    balance: value === 0n ? '=' : star(q(sender.balance - spent), q(sender.balance - spent - value)),
    code: '=',
    nonce: star(q(sender.nonce + calls), q(sender.nonce + calls + 1n)),
    storage: {},
  });

  it('transfer to an existing account: both balances "*" by the value, the sender nonce +1', async () => {
    const [plain, priced] = await callMany([
      [{ from: SENDER, to: OTHER, value: '0x3e8' }, ['stateDiff']],
      // A fee-paying call changes nothing more: no gas is debited and the coinbase is not paid.
      [
        { from: SENDER, to: OTHER, value: '0x3e8', maxFeePerGas: '0x3b9aca00', maxPriorityFeePerGas: '0x2' },
        ['stateDiff'],
      ],
    ]);
    assert.deepEqual(plain?.stateDiff, {
      [OTHER]: {
        balance: star(q(other.balance), q(other.balance + 1000n)),
        code: '=',
        nonce: '=',
        storage: {},
      },
      [SENDER]: senderAfter(1000n),
    });
    assert.deepEqual(priced?.stateDiff, {
      [OTHER]: {
        balance: star(q(other.balance + 1000n), q(other.balance + 2000n)),
        code: '=',
        nonce: '=',
        storage: {},
      },
      [SENDER]: senderAfter(1000n, 1n, 1000n),
    });
    assert.ok(!(coinbase in (priced?.stateDiff ?? {})));
  });

  it('transfer to a fresh account: "+" with the value, code 0x, nonce 0x0', async () => {
    const r = await traceCall({ from: SENDER, to: FRESH, value: '0x3e8' }, ['stateDiff']);
    assert.deepEqual(r.stateDiff, {
      [FRESH]: created(1000n, '0x', 0n),
      [SENDER]: senderAfter(1000n),
    });
  });

  it('zero-value call to a fresh address: only the sender nonce (EIP-161, no empty account)', async () => {
    const r = await traceCall({ from: SENDER, to: FRESH }, ['stateDiff']);
    assert.deepEqual(r.stateDiff, { [SENDER]: senderAfter() });
  });

  it('CREATE from a transaction: the contract all "+", runtime code, nonce 0x1, constructor storage', async () => {
    // Constructor: slot 0 = 0x2a, slot 1 = 0 (a write that changes nothing), then deploy RUNTIME.
    const runtime = asm('PUSH0 SLOAD PUSH0 MSTORE PUSH1 32 PUSH0 RETURN');
    const initcode = asm(`
      PUSH1 0x2a PUSH0 SSTORE
      PUSH0 PUSH1 1 SSTORE
      @end-@runtime DUP1 @runtime PUSH0 CODECOPY PUSH0 RETURN
      runtime: .data ${runtime}
      end:
    `);
    const address = lower(getContractAddress({ from: SENDER, nonce: sender.nonce }));
    const r = await traceCall({ from: SENDER, value: '0x64', data: initcode }, ['trace', 'stateDiff']);
    assert.equal(r.trace[0]?.result?.address, address);
    assert.deepEqual(r.stateDiff, {
      [address]: created(100n, runtime, 1n, { [WORD(0)]: plus(WORD(0x2a)) }),
      [SENDER]: senderAfter(100n),
    });
  });

  it('CREATE2 from a contract: the child all "+", the factory nonce and balance "*"', async () => {
    const child = asm('CALLVALUE PUSH0 MSTORE PUSH1 32 PUSH0 RETURN');
    const childInit = deployCode(child);
    // CREATE2(value 0x0a, mem[0:len] = childInit, salt 7); slot 0 = the child's address.
    const factory = asm(`
      @end-@init DUP1 @init PUSH0 CODECOPY
      PUSH1 7 SWAP1 PUSH0 PUSH1 0x0a CREATE2
      PUSH0 SSTORE STOP
      init: .data ${childInit}
      end:
    `);
    const address = lower(
      getContractAddress({ opcode: 'CREATE2', from: FACTORY, salt: WORD(7), bytecode: childInit }),
    );
    const r = await traceCall({ from: SENDER, to: FACTORY }, ['trace', 'stateDiff'], {
      [FACTORY]: { code: factory, balance: '0x3e8' },
    });
    assert.equal(r.trace[1]?.action.creationMethod, 'create2');
    assert.equal(r.trace[1]?.result?.address, address);
    assert.deepEqual(r.stateDiff, {
      [address]: created(10n, child, 1n),
      [FACTORY]: {
        balance: star('0x3e8', '0x3de'),
        code: '=',
        nonce: star('0x0', '0x1'),
        storage: { [WORD(0)]: star(WORD(0), WORD(address)) },
      },
      [SENDER]: senderAfter(),
    });
  });

  it('a constructor that reverts: only the sender nonce, the value stays', async () => {
    const initcode = asm('PUSH1 1 PUSH0 SSTORE PUSH4 0xdeadbeef PUSH0 MSTORE PUSH1 4 PUSH1 28 REVERT');
    const r = await traceCall({ from: SENDER, value: '0x64', data: initcode }, ['trace', 'stateDiff']);
    assert.equal(r.trace[0]?.error, 'Reverted');
    assert.deepEqual(r.stateDiff, { [SENDER]: senderAfter() });
  });

  it('storage 0→x, x→y and x→0 are "*" with zero words; a slot written and restored is absent', async () => {
    const code = asm(`
      PUSH1 0x05 PUSH0 SSTORE                              ; slot 0: 0 → 5
      PUSH1 0x77 PUSH1 1 SSTORE                            ; slot 1: 0x11 → 0x77
      PUSH0 PUSH1 2 SSTORE                                 ; slot 2: 0x22 → 0
      PUSH1 0x99 PUSH1 3 SSTORE PUSH0 PUSH1 3 SSTORE       ; slot 3: 0 → 0x99 → 0
      PUSH1 0x55 PUSH1 4 SSTORE PUSH1 0x44 PUSH1 4 SSTORE  ; slot 4: 0x44 → 0x55 → 0x44
      PUSH1 0x01 PUSH2 0x0100 SSTORE                       ; slot 0x100: 0 → 1
      PUSH1 0x02 PUSH1 0x20 SSTORE                         ; slot 0x20: 0 → 2
    `);
    const r = await traceCall({ from: SENDER, to: CONTRACT }, ['stateDiff'], {
      [CONTRACT]: {
        code,
        stateDiff: { [WORD(1)]: WORD(0x11), [WORD(2)]: WORD(0x22), [WORD(4)]: WORD(0x44) },
      },
    });
    assert.deepEqual(r.stateDiff, {
      [CONTRACT]: {
        balance: '=',
        code: '=',
        nonce: '=',
        storage: {
          [WORD(0)]: star(WORD(0), WORD(5)),
          [WORD(1)]: star(WORD(0x11), WORD(0x77)),
          [WORD(2)]: star(WORD(0x22), WORD(0)),
          [WORD(0x20)]: star(WORD(0), WORD(2)),
          [WORD(0x100)]: star(WORD(0), WORD(1)),
        },
      },
      [SENDER]: senderAfter(),
    });
  });

  it('storage written and restored in one call: no slot, and no account when nothing else changed', async () => {
    const code = asm(`
      PUSH1 0x99 PUSH1 3 SSTORE PUSH0 PUSH1 3 SSTORE       ; slot 3: 0 → 0x99 → 0
      PUSH1 0x55 PUSH1 4 SSTORE PUSH1 0x44 PUSH1 4 SSTORE  ; slot 4: 0x44 → 0x55 → 0x44
      PUSH0 PUSH1 4 SSTORE PUSH1 0x44 PUSH1 4 SSTORE       ; slot 4: 0x44 → 0 → 0x44
    `);
    const r = await traceCall({ from: SENDER, to: CONTRACT }, ['stateDiff'], {
      [CONTRACT]: { code, stateDiff: { [WORD(4)]: WORD(0x44) } },
    });
    assert.deepEqual(r.stateDiff, { [SENDER]: senderAfter() });
  });

  it('a call that reverts after writing storage: only the sender nonce; a reverted subcall leaves nothing', async () => {
    // CONTRACT writes two slots and reverts; FACTORY writes slot 1, then calls CONTRACT with 3 wei.
    const code = asm('PUSH1 1 PUSH0 SSTORE PUSH1 2 PUSH1 1 SSTORE PUSH0 PUSH0 REVERT');
    const caller = asm(`PUSH1 2 PUSH1 1 SSTORE PUSH0 PUSH0 PUSH0 PUSH0 PUSH1 3 PUSH20 ${CONTRACT} GAS CALL`);
    const [top, inner] = await callMany(
      [
        [{ from: SENDER, to: CONTRACT, value: '0x5' }, ['trace', 'stateDiff']],
        [{ from: SENDER, to: FACTORY }, ['trace', 'stateDiff']],
      ],
      {
        [CONTRACT]: { code, stateDiff: { [WORD(1)]: WORD(0x11) } },
        [FACTORY]: { code: caller, balance: '0x10' },
      },
    );
    assert.equal(top?.trace[0]?.error, 'Reverted');
    assert.deepEqual(top?.stateDiff, { [SENDER]: senderAfter() });
    // A reverted subcall: only the caller's own write survives, and the 3 wei stay with it.
    assert.equal(inner?.trace[1]?.error, 'Reverted');
    assert.deepEqual(inner?.stateDiff, {
      [FACTORY]: { balance: '=', code: '=', nonce: '=', storage: { [WORD(1)]: star(WORD(0), WORD(2)) } },
      [SENDER]: senderAfter(0n, 1n),
    });
  });

  it('a call that runs out of gas after writing storage: only the sender nonce', async () => {
    const code = asm('PUSH1 1 PUSH0 SSTORE spin: JUMPDEST @spin JUMP');
    const r = await traceCall(
      { from: SENDER, to: CONTRACT, value: '0x5', gas: '0x186a0' },
      ['trace', 'stateDiff'],
      {
        [CONTRACT]: { code },
      },
    );
    assert.equal(r.trace[0]?.error, 'Out of gas');
    assert.deepEqual(r.stateDiff, { [SENDER]: senderAfter() });
  });

  it('SELFDESTRUCT of a contract created in the same call: the contract is absent, the beneficiary paid', async () => {
    // Initcode: slot 0 = 1, then SELFDESTRUCT to the beneficiary (EIP-6780: created here, so deleted).
    const initcode = (beneficiary: Hex) => asm(`PUSH1 1 PUSH0 SSTORE PUSH20 ${beneficiary} SELFDESTRUCT`);
    const [toFresh, toExisting] = await callMany([
      [{ from: SENDER, value: '0x64', data: initcode(FRESH) }, ['trace', 'stateDiff']],
      [{ from: SENDER, value: '0x65', data: initcode(OTHER as Hex) }, ['trace', 'stateDiff']],
    ]);
    const first = lower(getContractAddress({ from: SENDER, nonce: sender.nonce }));
    const second = lower(getContractAddress({ from: SENDER, nonce: sender.nonce + 1n }));
    assert.equal(toFresh?.trace[0]?.result?.address, first);
    assert.equal(toFresh?.trace[1]?.type, 'suicide');
    assert.equal(toExisting?.trace[0]?.result?.address, second);
    assert.deepEqual(toFresh?.stateDiff, {
      [FRESH]: created(100n, '0x', 0n),
      [SENDER]: senderAfter(100n),
    });
    assert.deepEqual(toExisting?.stateDiff, {
      [OTHER]: {
        balance: star(q(other.balance), q(other.balance + 101n)),
        code: '=',
        nonce: '=',
        storage: {},
      },
      [SENDER]: senderAfter(101n, 1n, 100n),
    });
  });

  it('SELFDESTRUCT of an existing contract (post-Cancun): its balance moves, the contract stays', async () => {
    const code = asm(`PUSH20 ${FRESH} SELFDESTRUCT`);
    const r = await traceCall({ from: SENDER, to: CONTRACT, value: '0x5' }, ['trace', 'stateDiff'], {
      [CONTRACT]: { code, balance: '0x2710', nonce: '0x3', stateDiff: { [WORD(0)]: WORD(1) } },
    });
    assert.deepEqual(r.trace[1]?.action, { address: CONTRACT, balance: '0x2715', refundAddress: FRESH });
    assert.deepEqual(r.stateDiff, {
      [CONTRACT]: { balance: star('0x2710', '0x0'), code: '=', nonce: '=', storage: {} },
      [FRESH]: created(0x2715n, '0x', 0n),
      [SENDER]: senderAfter(5n),
    });
  });

  it('a deleted account is all "-": a funded address a constructor destroys, an empty account touched', async () => {
    // Call 0 funds the address call 1 creates at; call 1's constructor SELFDESTRUCTs to FRESH, and a
    // contract created in its own transaction is deleted (EIP-6780), so the address that existed with
    // 7 wei before call 1 does not after it. Call 2 touches an account an override made with nothing
    // but storage: empty (EIP-161), so the touch deletes it, storage and all.
    const target = lower(getContractAddress({ from: SENDER, nonce: sender.nonce + 1n }));
    const [, destroyed, touched] = await callMany(
      [
        [{ from: SENDER, to: target, value: '0x7' }, ['stateDiff']],
        [{ from: SENDER, data: asm(`PUSH20 ${FRESH} SELFDESTRUCT`) }, ['trace', 'stateDiff']],
        [{ from: SENDER, to: FRESH2 }, ['stateDiff']],
      ],
      { [FRESH2]: { stateDiff: { [WORD(5)]: WORD(0x55) } } },
    );
    assert.equal(destroyed?.trace[0]?.result?.address, target);
    assert.deepEqual(destroyed?.stateDiff, {
      [FRESH]: created(7n, '0x', 0n),
      [SENDER]: senderAfter(0n, 1n, 7n),
      [target]: { balance: minus('0x7'), code: minus('0x'), nonce: minus('0x0'), storage: {} },
    });
    assert.deepEqual(touched?.stateDiff, {
      [FRESH2]: {
        balance: minus('0x0'),
        code: minus('0x'),
        nonce: minus('0x0'),
        storage: { [WORD(5)]: minus(WORD(0x55)) },
      },
      [SENDER]: senderAfter(0n, 2n, 7n),
    });
  });

  it('value transfer inside a subcall: the payer "*", a fresh payee "+", an existing payee "*"', async () => {
    // CALL(gas, to, value, 0, 0, 0, 0) twice: 0x7b to FRESH, 0x0c to OTHER.
    const code = asm(`
      PUSH0 PUSH0 PUSH0 PUSH0 PUSH1 0x7b PUSH20 ${FRESH} GAS CALL POP
      PUSH0 PUSH0 PUSH0 PUSH0 PUSH1 0x0c PUSH20 ${OTHER} GAS CALL POP
    `);
    const r = await traceCall({ from: SENDER, to: CONTRACT }, ['trace', 'stateDiff'], {
      [CONTRACT]: { code, balance: '0x3e8' },
    });
    assert.deepEqual(
      r.trace.map((e) => [e.traceAddress, e.action.to, e.action.value]),
      [
        [[], CONTRACT, '0x0'],
        [[0], FRESH, '0x7b'],
        [[1], OTHER, '0xc'],
      ],
    );
    assert.deepEqual(r.stateDiff, {
      [OTHER]: {
        balance: star(q(other.balance), q(other.balance + 12n)),
        code: '=',
        nonce: '=',
        storage: {},
      },
      [CONTRACT]: { balance: star('0x3e8', q(1000 - 123 - 12)), code: '=', nonce: '=', storage: {} },
      [FRESH]: created(123n, '0x', 0n),
      [SENDER]: senderAfter(),
    });
  });

  it('transient storage (TSTORE) leaves no diff', async () => {
    const code = asm('PUSH1 0x2a PUSH0 TSTORE PUSH0 TLOAD PUSH0 MSTORE PUSH1 32 PUSH0 RETURN');
    const r = await traceCall({ from: SENDER, to: CONTRACT }, ['stateDiff'], { [CONTRACT]: { code } });
    assert.equal(r.output, WORD(0x2a));
    assert.deepEqual(r.stateDiff, { [SENDER]: senderAfter() });
  });

  it('a precompile called with value becomes an account ("+"); without value it is not created', async () => {
    // The identity precompile returns its input. With value the EVM credits the precompile's account
    // like any other (so it now exists: balance 1, no code, nonce 0); with no value it is only touched,
    // and EIP-161 removes touched empty accounts at the end of the transaction.
    const [withValue, without, nested] = await callMany(
      [
        [{ from: SENDER, to: IDENTITY, value: '0x1', data: '0xc0ffee' }, ['stateDiff']],
        [{ from: SENDER, to: SHA256, data: '0xc0ffee' }, ['stateDiff']],
        [{ from: SENDER, to: CONTRACT }, ['stateDiff']],
      ],
      {
        // CALL(gas, SHA256, 2, 0, 0, 0, 0): a precompile paid from a contract.
        [CONTRACT]: {
          code: asm(`PUSH0 PUSH0 PUSH0 PUSH0 PUSH1 2 PUSH20 ${SHA256} GAS CALL`),
          balance: '0x9',
        },
      },
    );
    assert.equal(withValue?.output, '0xc0ffee');
    assert.deepEqual(withValue?.stateDiff, {
      [IDENTITY]: created(1n, '0x', 0n),
      [SENDER]: senderAfter(1n),
    });
    assert.deepEqual(without?.stateDiff, { [SENDER]: senderAfter(0n, 1n) });
    assert.deepEqual(nested?.stateDiff, {
      [SHA256]: created(2n, '0x', 0n),
      [CONTRACT]: { balance: star('0x9', '0x7'), code: '=', nonce: '=', storage: {} },
      [SENDER]: senderAfter(0n, 2n, 1n),
    });
  });

  it('EIP-7702: the authority gets the delegation designator and nonce +1, "+" when fresh', async () => {
    const chainId = Number(await server.rpc<string>('eth_chainId'));
    const freshKey = privateKeyToAccount(keccak256(toHex('ethtrace stateDiff authority 1')));
    const fundedKey = privateKeyToAccount(keccak256(toHex('ethtrace stateDiff authority 2')));
    const [fresh7702, funded7702] = [lower(freshKey.address), lower(fundedKey.address)];
    const authorization = async (key: typeof freshKey) => {
      const a = await key.signAuthorization({ chainId, contractAddress: DELEGATE, nonce: 0 });
      return {
        chainId: q(a.chainId),
        address: a.address,
        nonce: q(a.nonce),
        yParity: q(a.yParity ?? 0),
        r: a.r,
        s: a.s,
      };
    };
    // The delegate stores 0x2a in slot 0 of whichever account runs it.
    const r = await traceCall(
      {
        from: SENDER,
        to: fresh7702,
        authorizationList: [await authorization(freshKey), await authorization(fundedKey)],
      },
      ['stateDiff'],
      { [DELEGATE]: { code: asm('PUSH1 0x2a PUSH0 SSTORE') }, [funded7702]: { balance: '0x3e8' } },
    );
    const designator = concatHex(['0xef0100', DELEGATE]);
    const expected: StateDiff = {
      [fresh7702]: created(0n, designator, 1n, { [WORD(0)]: plus(WORD(0x2a)) }),
      [funded7702]: { balance: '=', code: star('0x', designator), nonce: star('0x0', '0x1'), storage: {} },
      [SENDER]: senderAfter(),
    };
    assert.deepEqual(r.stateDiff, expected);
  });

  it('chained calls: each diff starts from the state the previous call left', async () => {
    const counter = asm('PUSH0 SLOAD PUSH1 1 ADD PUSH0 SSTORE');
    const results = await callMany(
      [
        [{ from: SENDER, to: FRESH, value: '0x10' }, ['stateDiff']],
        [{ from: SENDER, to: FRESH, value: '0x20' }, ['stateDiff']],
        [{ from: SENDER, to: CONTRACT }, ['stateDiff']],
        [{ from: SENDER, to: CONTRACT }, ['stateDiff']],
      ],
      { [CONTRACT]: { code: counter } },
    );
    assert.deepEqual(
      results.map((r) => r.stateDiff),
      [
        { [FRESH]: created(0x10n, '0x', 0n), [SENDER]: senderAfter(0x10n) },
        {
          [FRESH]: { balance: star('0x10', '0x30'), code: '=', nonce: '=', storage: {} },
          [SENDER]: senderAfter(0x20n, 1n, 0x10n),
        },
        {
          [CONTRACT]: { balance: '=', code: '=', nonce: '=', storage: { [WORD(0)]: star(WORD(0), WORD(1)) } },
          [SENDER]: senderAfter(0n, 2n),
        },
        {
          [CONTRACT]: { balance: '=', code: '=', nonce: '=', storage: { [WORD(0)]: star(WORD(1), WORD(2)) } },
          [SENDER]: senderAfter(0n, 3n),
        },
      ],
    );
  });

  it('state overrides never appear in a diff, and diffs start from the overridden values', async () => {
    const reader = asm('PUSH0 SLOAD PUSH0 MSTORE PUSH1 32 PUSH0 RETURN');
    const [read, paid] = await callMany(
      [
        [{ from: SENDER, to: CONTRACT }, ['stateDiff']],
        [{ from: SENDER, to: CONTRACT, value: '0x1' }, ['stateDiff']],
      ],
      {
        [SENDER]: { balance: '0xde0b6b3a7640000', nonce: '0x20' },
        [CONTRACT]: { code: reader, balance: '0x5', state: { [WORD(0)]: WORD(0x2a) } },
        [OTHER]: { balance: '0x1', nonce: '0x9' },
        [FRESH]: { code: '0x00', stateDiff: { [WORD(1)]: WORD(1) } },
      },
    );
    assert.equal(read?.output, WORD(0x2a));
    assert.deepEqual(read?.stateDiff, {
      [SENDER]: { balance: '=', code: '=', nonce: star('0x20', '0x21'), storage: {} },
    });
    assert.deepEqual(paid?.stateDiff, {
      [CONTRACT]: { balance: star('0x5', '0x6'), code: '=', nonce: '=', storage: {} },
      [SENDER]: {
        balance: star('0xde0b6b3a7640000', '0xde0b6b3a763ffff'),
        code: '=',
        nonce: star('0x21', '0x22'),
        storage: {},
      },
    });
  });
});
