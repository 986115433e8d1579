import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { getContractAddress, type Hex } from 'viem';
import { asm } from '../support/asm.ts';
import { conformanceServerForSuite, type RunningServer } from '../support/server.ts';

// Every expectation below is counted by hand from the bytecode and the Osaka gas schedule (the
// conformance chain's latest fork): PUSHn/ADD/SUB/DUP/SWAP/MLOAD 3, JUMPDEST 1, JUMPI 10, memory
// 3 gas per word, cold account 2600, warm 100, cold slot 2100, SSTORE 0→x 20000.

const SENDER = '0x7435ed30a8b4aeb0877cef0c6e8cffe834eb865f';
const FRESH = '0xd46e8dd67c5d32be8058bb8eb970870f07244567';
const CONTRACT = '0x00000000000000000000000000000000000a0001';
const CALLEE = '0x00000000000000000000000000000000000a0002';
// 100,000 gas: a call without calldata leaves 79,000 for the top frame.
const GAS = '0x186a0';
const FRAME_GAS = 79_000;

const WORD = (n: number | bigint) => `0x${n.toString(16).padStart(64, '0')}`;

interface Ex {
  mem: { off: number; data: string } | null;
  push: string[];
  store: { key: string; val: string } | null;
  used: number;
}
interface Op {
  cost: number;
  ex: Ex | null;
  pc: number;
  sub: VmTrace | null;
  op: string;
}
interface VmTrace {
  code: string;
  ops: Op[];
}
interface Result {
  output: string;
  trace: Array<{ type: string; error?: string; result: Record<string, string> | null }>;
  stateDiff: Record<string, unknown> | null;
  vmTrace: VmTrace | null;
}

/** The op at `i`, which must exist. */
function at(trace: VmTrace, i: number): Op {
  const op = trace.ops[i];
  assert.ok(op, `op ${i} of ${trace.ops.length}`);
  return op;
}

/** An op that completed without touching memory or storage. */
const plain = (pc: number, op: string, cost: number, used: number, push: string[] = []): Op => ({
  cost,
  ex: { mem: null, push, store: null, used },
  pc,
  sub: null,
  op,
});

describe('vmTrace', () => {
  const conformance = conformanceServerForSuite();
  let server: RunningServer;
  before(async () => {
    server = conformance();
  });

  /** trace_call of CONTRACT running `code` (other accounts' code in `more`). */
  const run = (code: Hex, opts: { types?: string[]; gas?: string; more?: Record<string, Hex> } = {}) => {
    const overrides: Record<string, { code: Hex }> = { [CONTRACT]: { code } };
    for (const [address, c] of Object.entries(opts.more ?? {})) overrides[address] = { code: c };
    return server.rpc<Result>('trace_call', [
      { from: SENDER, to: CONTRACT, gas: opts.gas ?? GAS },
      opts.types ?? ['vmTrace'],
      'latest',
      overrides,
    ]);
  };
  const vmTraceOf = async (code: Hex, opts: Parameters<typeof run>[1] = {}): Promise<VmTrace> => {
    const result = await run(code, opts);
    assert.ok(result.vmTrace);
    return result.vmTrace;
  };

  it('records PUSH, ADD, DUP and SWAP with the values they left and the gas remaining after them', async () => {
    const code = asm('PUSH1 2 PUSH1 3 ADD PUSH1 7 DUP2 SWAP1 STOP');
    const trace = await vmTraceOf(code);
    assert.deepEqual(trace, {
      code,
      ops: [
        plain(0, 'PUSH1', 3, FRAME_GAS - 3, ['0x2']),
        plain(2, 'PUSH1', 3, FRAME_GAS - 6, ['0x3']),
        plain(4, 'ADD', 3, FRAME_GAS - 9, ['0x5']),
        plain(5, 'PUSH1', 3, FRAME_GAS - 12, ['0x7']),
        // DUPn and SWAPn show their whole window, bottom to top: [5, 7, 5] and then [5, 5, 7].
        plain(7, 'DUP2', 3, FRAME_GAS - 15, ['0x5', '0x7', '0x5']),
        plain(8, 'SWAP1', 3, FRAME_GAS - 18, ['0x5', '0x7']),
        plain(9, 'STOP', 0, FRAME_GAS - 18),
      ],
    });
  });

  it('shows the memory window MSTORE, MSTORE8 and MLOAD wrote or read, not the whole memory', async () => {
    const code = asm(`
      PUSH2 0xbeef PUSH1 0 MSTORE   ; first word: memory grows to 32 bytes (3 gas)
      PUSH1 0xaa PUSH1 0x21 MSTORE8 ; byte 33: memory grows to 64 bytes (3 more)
      PUSH1 0 MLOAD
      PUSH1 0x20 PUSH1 0 RETURN`);
    const { vmTrace, output } = await run(code);
    assert.ok(vmTrace);
    assert.equal(output, WORD(0xbeef));
    let gas = FRAME_GAS - 3 - 3 - 6;
    assert.deepEqual(at(vmTrace, 2), {
      cost: 6,
      ex: { mem: { off: 0, data: WORD(0xbeef) }, push: [], store: null, used: gas },
      pc: 5,
      sub: null,
      op: 'MSTORE',
    });
    gas -= 6 + 6;
    assert.deepEqual(at(vmTrace, 5), {
      cost: 6,
      ex: { mem: { off: 0x21, data: '0xaa' }, push: [], store: null, used: gas },
      pc: 10,
      sub: null,
      op: 'MSTORE8',
    });
    gas -= 3 + 3;
    assert.deepEqual(at(vmTrace, 7), {
      cost: 3,
      ex: { mem: { off: 0, data: WORD(0xbeef) }, push: ['0xbeef'], store: null, used: gas },
      pc: 13,
      sub: null,
      op: 'MLOAD',
    });
    gas -= 6;
    assert.deepEqual(at(vmTrace, 10), plain(18, 'RETURN', 0, gas));
    assert.equal(vmTrace.ops.length, 11);
  });

  it('shows the SSTORE key and value, cold then warm (EIP-2929/2200/3529), and SLOAD pushes', async () => {
    const code = asm('PUSH1 0x2a PUSH1 1 SSTORE PUSH1 0x2b PUSH1 1 SSTORE PUSH1 1 SLOAD STOP');
    const result = await run(code, { types: ['vmTrace', 'trace'] });
    const trace = result.vmTrace;
    assert.ok(trace);
    // Cold slot, 0 → 0x2a: 2100 + 20000. Same slot again, now dirty: a warm read, 100.
    let gas = FRAME_GAS - 6 - 22_100;
    assert.deepEqual(at(trace, 2), {
      cost: 22_100,
      ex: { mem: null, push: [], store: { key: '0x1', val: '0x2a' }, used: gas },
      pc: 4,
      sub: null,
      op: 'SSTORE',
    });
    gas -= 6 + 100;
    assert.deepEqual(at(trace, 5), {
      cost: 100,
      ex: { mem: null, push: [], store: { key: '0x1', val: '0x2b' }, used: gas },
      pc: 9,
      sub: null,
      op: 'SSTORE',
    });
    gas -= 3 + 100;
    assert.deepEqual(at(trace, 7), plain(12, 'SLOAD', 100, gas, ['0x2b']));
    assert.deepEqual(at(trace, 8), plain(13, 'STOP', 0, gas));
    assert.equal(result.trace[0]?.result?.gasUsed, `0x${(FRAME_GAS - gas).toString(16)}`);
  });

  it('nests the callee frame under CALL, whose cost includes the gas handed over', async () => {
    const callee = asm('PUSH1 7 PUSH1 0 MSTORE PUSH1 0x20 PUSH1 0 RETURN');
    const code = asm(`
      PUSH1 0x20 PUSH1 0 PUSH1 0 PUSH1 0 PUSH1 0 ; retLen retOff argsLen argsOff value
      PUSH20 ${CALLEE} PUSH2 0x1000 CALL        ; 4096 gas to the callee
      STOP`);
    const result = await run(code, { types: ['vmTrace', 'trace'], more: { [CALLEE]: callee } });
    const trace = result.vmTrace;
    assert.ok(trace);
    const before = FRAME_GAS - 7 * 3;
    // Cold callee 2600 + a word of memory for the return buffer 3, plus the 4096 forwarded; the
    // callee used 18 of them.
    const call = at(trace, 7);
    assert.deepEqual(
      { ...call, sub: null },
      {
        cost: 2603 + 4096,
        ex: { mem: { off: 0, data: WORD(7) }, push: ['0x1'], store: null, used: before - 2603 - 18 },
        pc: 34,
        sub: null,
        op: 'CALL',
      },
    );
    assert.deepEqual(call.sub, {
      code: callee,
      ops: [
        plain(0, 'PUSH1', 3, 4093, ['0x7']),
        plain(2, 'PUSH1', 3, 4090, ['0x0']),
        {
          cost: 6,
          ex: { mem: { off: 0, data: WORD(7) }, push: [], store: null, used: 4084 },
          pc: 4,
          sub: null,
          op: 'MSTORE',
        },
        plain(5, 'PUSH1', 3, 4081, ['0x20']),
        plain(7, 'PUSH1', 3, 4078, ['0x0']),
        plain(9, 'RETURN', 0, 4078),
      ],
    });
    assert.deepEqual(at(trace, 8), plain(35, 'STOP', 0, before - 2603 - 18));
    assert.equal(result.trace.length, 2);
  });

  it('gives calls to an EOA and to a precompile an empty frame', async () => {
    const code = asm(`
      PUSH2 0xabcd PUSH1 0 MSTORE
      PUSH1 0 PUSH1 0 PUSH1 0 PUSH1 0 PUSH1 0 PUSH20 ${FRESH} PUSH1 0 CALL
      PUSH1 0x20 PUSH1 0x20 PUSH1 0x20 PUSH1 0 PUSH1 4 PUSH2 0x100 STATICCALL ; identity of word 0 into word 1
      STOP`);
    const trace = await vmTraceOf(code);
    let gas = FRAME_GAS - 3 - 3 - 6 - 7 * 3;
    // A cold EOA, no memory, no gas forwarded: the callee's empty frame returns at once.
    gas -= 2600;
    assert.deepEqual(at(trace, 10), {
      cost: 2600,
      ex: { mem: null, push: ['0x1'], store: null, used: gas },
      pc: 39,
      sub: { code: '0x', ops: [] },
      op: 'CALL',
    });
    // The identity precompile is warm (100), the return buffer adds a word (3), 256 forwarded, of
    // which it uses 15 + 3 per word.
    gas -= 6 * 3;
    assert.deepEqual(at(trace, 17), {
      cost: 100 + 3 + 256,
      ex: { mem: { off: 32, data: WORD(0xabcd) }, push: ['0x1'], store: null, used: gas - 103 - 18 },
      pc: 53,
      sub: { code: '0x', ops: [] },
      op: 'STATICCALL',
    });
  });

  it('gives CREATE the frame of its init code and pushes the new address', async () => {
    const init = asm('PUSH1 0 PUSH1 0 RETURN'); // deploys empty code
    const code = asm(`
      PUSH5 ${init} PUSH1 0 MSTORE
      PUSH1 5 PUSH1 27 PUSH1 0 CREATE ; the init code is the last 5 bytes of word 0
      STOP`);
    const result = await run(code, { types: ['vmTrace', 'trace'] });
    const trace = result.vmTrace;
    assert.ok(trace);
    // An account whose code came from an override has nonce 0.
    const created = getContractAddress({ from: CONTRACT, nonce: 0n }).toLowerCase();
    const before = FRAME_GAS - 3 - 3 - 6 - 3 * 3;
    // 32000 + 2 per init code word; the frame gets all but 1/64 of what is left (EIP-150).
    const base = 32_002;
    const forwarded = before - base - Math.floor((before - base) / 64);
    const create = at(trace, 6);
    assert.deepEqual(
      { ...create, sub: null },
      {
        cost: base + forwarded,
        ex: { mem: null, push: [created], store: null, used: before - base - 6 },
        pc: 15,
        sub: null,
        op: 'CREATE',
      },
    );
    assert.deepEqual(create.sub, {
      code: init,
      ops: [
        plain(0, 'PUSH1', 3, forwarded - 3, ['0x0']),
        plain(2, 'PUSH1', 3, forwarded - 6, ['0x0']),
        plain(4, 'RETURN', 0, forwarded - 6),
      ],
    });
    assert.equal(result.trace[1]?.result?.address, created);
  });

  it('keeps ex for REVERT, and the reverted call in the parent', async () => {
    const reverter = asm('PUSH4 0xdeadbeef PUSH1 0 MSTORE PUSH1 4 PUSH1 28 REVERT');
    const result = await run(reverter, { types: ['vmTrace', 'trace'] });
    assert.equal(result.trace[0]?.error, 'Reverted');
    assert.equal(result.output, '0xdeadbeef');
    const trace = result.vmTrace;
    assert.ok(trace);
    assert.equal(trace.ops.length, 6);
    assert.deepEqual(at(trace, 5), plain(12, 'REVERT', 0, FRAME_GAS - 3 - 3 - 6 - 3 - 3));
  });

  it('records a failing op with ex null: invalid and undefined opcodes, out of gas, stack underflow', async () => {
    const invalid = await vmTraceOf(asm('PUSH1 1 INVALID'));
    assert.deepEqual(invalid.ops, [
      plain(0, 'PUSH1', 3, FRAME_GAS - 3, ['0x1']),
      { cost: 0, ex: null, pc: 2, sub: null, op: 'INVALID' },
    ]);
    const undefinedOp = await run(asm('PUSH1 1 .data 0x0c'), { types: ['vmTrace', 'trace'] });
    assert.equal(undefinedOp.trace[0]?.error, 'Bad instruction');
    assert.deepEqual(undefinedOp.vmTrace?.ops[1], {
      cost: 0,
      ex: null,
      pc: 2,
      sub: null,
      op: 'opcode 0xc not defined',
    });
    // 2406 gas for the frame: past the 2300 SSTORE sentry, far from the 22100 the store costs.
    const outOfGas = await run(asm('PUSH1 1 PUSH1 0 SSTORE'), {
      types: ['vmTrace', 'trace'],
      gas: `0x${(21_000 + 2406).toString(16)}`,
    });
    assert.equal(outOfGas.trace[0]?.error, 'Out of gas');
    assert.deepEqual(outOfGas.vmTrace?.ops[2], { cost: 22_100, ex: null, pc: 4, sub: null, op: 'SSTORE' });
    const underflow = await vmTraceOf(asm('PUSH1 1 ADD'));
    assert.deepEqual(underflow.ops[1], { cost: 3, ex: null, pc: 2, sub: null, op: 'ADD' });
  });

  it('keeps ex for a JUMP to a bad destination, as OpenEthereum checks the target after the jump', async () => {
    const result = await run(asm('PUSH1 0 JUMP'), { types: ['vmTrace', 'trace'] });
    assert.equal(result.trace[0]?.error, 'Bad jump destination');
    assert.deepEqual(result.vmTrace?.ops[1], plain(2, 'JUMP', 8, FRAME_GAS - 11));
  });

  it('records no STOP for code that runs off its end, and JUMPDEST like any op', async () => {
    const trace = await vmTraceOf(asm('PUSH1 @end JUMP end: JUMPDEST PUSH1 5 PUSH1 0 MSTORE'));
    assert.deepEqual(
      trace.ops.map((op) => op.op),
      ['PUSH1', 'JUMP', 'JUMPDEST', 'PUSH1', 'PUSH1', 'MSTORE'],
    );
    assert.deepEqual(at(trace, 2), plain(3, 'JUMPDEST', 1, FRAME_GAS - 12));
    // The last op still gets its results, though no later op follows it.
    assert.deepEqual(at(trace, 5).ex, {
      mem: { off: 0, data: WORD(5) },
      push: [],
      store: null,
      used: FRAME_GAS - 12 - 12,
    });
  });

  it('gives a CALL the EVM refused (value beyond the balance) no sub frame', async () => {
    const code = asm(`PUSH1 0 PUSH1 0 PUSH1 0 PUSH1 0 PUSH1 1 PUSH20 ${CALLEE} PUSH2 0x100 CALL STOP`);
    const result = await run(code, { types: ['vmTrace', 'trace'], more: { [CALLEE]: asm('STOP') } });
    const call = result.vmTrace?.ops[7];
    assert.ok(call);
    // Cold callee 2600 + value transfer 9000 + the 256 offered; nothing ran, so the 256 come back,
    // with the 2300 stipend the value would have carried (as in geth).
    const before = FRAME_GAS - 7 * 3;
    assert.deepEqual(call, {
      cost: 11_600 + 256,
      ex: { mem: null, push: ['0x0'], store: null, used: before - 11_600 + 2300 },
      pc: 34,
      sub: null,
      op: 'CALL',
    });
    assert.equal(result.trace[1]?.error, 'Insufficient balance for transfer');
  });

  it('gives a plain transfer an empty trace', async () => {
    const [result] = await server.rpc<Result[]>('trace_callMany', [
      [[{ from: SENDER, to: FRESH, value: '0x1' }, ['vmTrace']]],
      'latest',
    ]);
    assert.deepEqual(result?.vmTrace, { code: '0x', ops: [] });
  });

  it('leaves output, trace and stateDiff as they are without vmTrace, and restores the EVM after', async () => {
    const callee = asm('PUSH1 1 PUSH1 0 SSTORE PUSH1 9 PUSH1 0 MSTORE PUSH1 0x20 PUSH1 0 RETURN');
    const code = asm(`
      PUSH1 0x20 PUSH1 0 PUSH1 0 PUSH1 0 PUSH1 0 PUSH20 ${CALLEE} GAS CALL
      PUSH1 0 MLOAD PUSH1 3 SSTORE
      PUSH5 0x60006000f3 PUSH1 0 MSTORE PUSH1 5 PUSH1 27 PUSH1 0 CREATE
      PUSH1 0x20 PUSH1 0 RETURN`);
    const overrides = { stateOverrides: { [CONTRACT]: { code }, [CALLEE]: { code: callee } } };
    const call = { from: SENDER, to: CONTRACT, gas: GAS };
    // Two calls a request: the second sees what the first wrote (storage, nonces, the created account).
    const request = (types: string[]) =>
      server.rpc<Result[]>('trace_callMany', [
        [
          [call, types],
          [call, types],
        ],
        'latest',
        overrides,
      ]);
    const without = await request(['trace', 'stateDiff']);
    const withVm = await request(['trace', 'stateDiff', 'vmTrace']);
    assert.deepEqual(await request(['trace', 'stateDiff']), without);
    assert.equal(withVm.length, 2);
    for (const [i, r] of withVm.entries()) {
      assert.ok(r.vmTrace);
      assert.deepEqual({ ...r, vmTrace: null }, without[i]);
    }
    const [traced, tracedAgain] = withVm;
    assert.ok(traced?.vmTrace && tracedAgain?.vmTrace);
    // The second traced call on the same EVM counts each op once: the first left no wrapper behind.
    assert.deepEqual(
      tracedAgain.vmTrace.ops.map((op) => [op.pc, op.op]),
      traced.vmTrace.ops.map((op) => [op.pc, op.op]),
    );
    assert.equal(
      traced.vmTrace.ops.filter((op) => op.sub).length,
      2,
      'the CALL and the CREATE each have a sub frame',
    );
  });

  it('traces a loop-heavy call of a million gas', async (t) => {
    // 7 ops and 26 gas per iteration, counting down from 35,000.
    const code = asm(`
      PUSH3 35000
      loop: JUMPDEST PUSH1 1 SWAP1 SUB DUP1 @loop JUMPI
      STOP`);
    const gas = `0x${(1_000_000).toString(16)}`;
    await run(code, { gas, types: ['trace'] }); // warm-up
    let start = performance.now();
    await run(code, { gas, types: ['trace'] });
    const plainMs = performance.now() - start;
    start = performance.now();
    const trace = await vmTraceOf(code, { gas });
    const tracedMs = performance.now() - start;
    assert.equal(trace.ops.length, 1 + 35_000 * 7 + 1);
    const last = trace.ops.at(-1);
    assert.deepEqual(last, plain(14, 'STOP', 0, 1_000_000 - 21_000 - 3 - 35_000 * 26));
    t.diagnostic(
      `${trace.ops.length} ops: ${tracedMs.toFixed(0)} ms with vmTrace (${Math.round(
        trace.ops.length / (tracedMs / 1000),
      )} ops/s end to end), ${plainMs.toFixed(0)} ms without`,
    );
  });
});
