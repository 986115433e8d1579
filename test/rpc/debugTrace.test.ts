import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type Anvil, startAnvil } from '../support/anvil.ts';
import { asm } from '../support/asm.ts';
import { conformanceServerForSuite, type RunningServer } from '../support/server.ts';

// The conformance chain's funded sender, and addresses for contracts put in place by overrides.
const SENDER = '0x7435ed30a8b4aeb0877cef0c6e8cffe834eb865f';
const COUNTER = '0x00000000000000000000000000000000c0ffee01';
const REVERTER = '0x00000000000000000000000000000000c0ffee02';
const CALLER = '0x00000000000000000000000000000000c0ffee03';
const CLEARER = '0x00000000000000000000000000000000c0ffee04';
const RUNS_OFF = '0x00000000000000000000000000000000c0ffee05';
// slot0 = 1: with 2300 gas or less left at the SSTORE, EIP-2200's sentry stops it
const STORER = '0x00000000000000000000000000000000c0ffee07';
const STORER_CODE = asm('PUSH1 1 PUSH1 0 SSTORE STOP');
/** Gas for a call to the storer that leaves `left` at its SSTORE (two PUSH1s before it). */
const storerGas = (left: number) => left + 6;
// CALLs the storer with 2300 gas left at its SSTORE (the sentry), with 2301 (short of the 22100
// the store costs: plain out of gas), and with none (the sentry again)
const SENTRY_CALLER = '0x00000000000000000000000000000000c0ffee08';
const SENTRY_CALLER_CODE = asm(`
  PUSH0 PUSH0 PUSH0 PUSH0 PUSH0 PUSH20 ${STORER} PUSH2 0x${storerGas(2300).toString(16)} CALL POP
  PUSH0 PUSH0 PUSH0 PUSH0 PUSH0 PUSH20 ${STORER} PUSH2 0x${storerGas(2301).toString(16)} CALL POP
  PUSH0 PUSH0 PUSH0 PUSH0 PUSH0 PUSH20 ${STORER} PUSH1 ${storerGas(0)} CALL POP
  STOP
`);
const SENTRY = 'out of gas: not enough gas for reentrancy sentry';
const ZERO_ADDRESS = `0x${'00'.repeat(20)}`;
const WORD = (n: number | bigint) => `0x${n.toString(16).padStart(64, '0')}`;

// slot0 += 1; return slot0
const COUNTER_CODE = asm(
  'PUSH1 0 SLOAD PUSH1 1 ADD DUP1 PUSH1 0 SSTORE PUSH1 0 MSTORE PUSH1 32 PUSH1 0 RETURN',
);
// revert Error("boom")
const REVERTER_CODE = asm(`
  PUSH32 0x08c379a000000000000000000000000000000000000000000000000000000000 PUSH1 0 MSTORE
  PUSH1 0x20 PUSH1 4 MSTORE
  PUSH1 4 PUSH1 0x24 MSTORE
  PUSH32 0x626f6f6d00000000000000000000000000000000000000000000000000000000 PUSH1 0x44 MSTORE
  PUSH1 0x64 PUSH1 0 REVERT
`);
// LOG1, CALL the counter, STATICCALL the reverter, LOG1, return the counter's answer
const CALLER_CODE = asm(`
  PUSH1 0xaa PUSH1 0 MSTORE
  PUSH1 0x11 PUSH1 0x20 PUSH1 0 LOG1
  PUSH1 0x20 PUSH1 0 PUSH1 0 PUSH1 0 PUSH1 0 PUSH20 ${COUNTER} GAS CALL POP
  PUSH1 0 PUSH1 0 PUSH1 0 PUSH1 0 PUSH20 ${REVERTER} GAS STATICCALL POP
  PUSH1 0x22 PUSH1 0x20 PUSH1 0 LOG1
  PUSH1 0x20 PUSH1 0 RETURN
`);
// slot0 = 0 (the override sets it to 1 first, so the write earns a refund)
const CLEARER_CODE = asm('PUSH1 0 PUSH1 0 SSTORE PUSH1 0 PUSH1 0 SSTORE STOP');
// two pushes and no STOP: geth still records the STOP past the end of the code
const RUNS_OFF_CODE = asm('PUSH1 1 PUSH1 2');

const OVERRIDES = {
  [COUNTER]: { code: COUNTER_CODE },
  [REVERTER]: { code: REVERTER_CODE },
  [CALLER]: { code: CALLER_CODE },
  [CLEARER]: { code: CLEARER_CODE, state: { [WORD(0)]: WORD(1) } },
  [RUNS_OFF]: { code: RUNS_OFF_CODE },
  [STORER]: { code: STORER_CODE },
};

interface StructLog {
  pc: number;
  op: string;
  gas: number;
  gasCost: number;
  depth: number;
  stack?: string[];
  memory?: string[];
  storage?: Record<string, string>;
  returnData?: string;
  refund?: number;
  error?: string;
}
interface StructResult {
  gas: number;
  failed: boolean;
  returnValue: string;
  structLogs: StructLog[];
}
interface CallFrame {
  type: string;
  from: string;
  to?: string;
  gas: string;
  gasUsed: string;
  input: string;
  output?: string;
  error?: string;
  revertReason?: string;
  value?: string;
  calls?: CallFrame[];
  logs?: Array<{ address: string; topics: string[]; data: string; position: string }>;
}
interface PrestateAccount {
  balance?: string;
  nonce?: number;
  code?: string;
  storage?: Record<string, string>;
}
type Prestate = Record<string, PrestateAccount>;
interface Receipt {
  gasUsed: string;
  status?: string;
  from: string;
  transactionHash: string;
}

// LOG0 … LOG4 with distinct topics, over stack items the logs must not pick up.
const LOGGER = '0x00000000000000000000000000000000c0ffee06';
const LOGGER_CODE = asm(`
  PUSH1 0x91 PUSH1 0x92 PUSH1 0x93 PUSH1 0x94 PUSH1 0x95 PUSH1 0x96
  PUSH1 0xaa PUSH0 MSTORE
  PUSH1 1 PUSH0 LOG0
  PUSH1 0x11 PUSH1 2 PUSH0 LOG1
  PUSH1 0x22 PUSH1 0x21 PUSH1 3 PUSH0 LOG2
  PUSH1 0x33 PUSH1 0x32 PUSH1 0x31 PUSH1 4 PUSH0 LOG3
  PUSH1 0x44 PUSH1 0x43 PUSH1 0x42 PUSH1 0x41 PUSH1 32 PUSH0 LOG4
  STOP
`);
// A sender both chains know alike (by override), so the contracts its creations make have one address.
const CREATOR = '0x00000000000000000000000000000000000abc01';
/** Initcode that CALLs the counter, logs `tag`, then deploys one byte or (with `fail`) reverts. */
const constructorCode = (tag: number, fail: boolean) => `
  PUSH0 PUSH0 PUSH0 PUSH0 PUSH0 PUSH20 ${COUNTER} GAS CALL POP
  PUSH1 ${tag} PUSH1 0x10 PUSH0 LOG1
  PUSH1 1 PUSH0 ${fail ? 'REVERT' : 'RETURN'}`;
/** Initcode as `constructorCode`, which in between CREATEs each of `children` (initcodes) in turn. */
const factoryCode = (tag: number, children: string[]) => {
  const creates = children.map((child, i) => {
    const length = (child.length - 2) / 2;
    return `PUSH ${length} @child${i} PUSH0 CODECOPY PUSH ${length} PUSH0 PUSH0 CREATE POP`;
  });
  return asm(`
    ${constructorCode(tag, false).replace('PUSH1 1 PUSH0 RETURN', '')}
    ${creates.join('\n')}
    PUSH1 1 PUSH0 RETURN
    ${children.map((child, i) => `child${i}: .data ${child}`).join('\n')}
  `);
};
// A factory whose constructor calls, logs and creates: a product that itself creates a contract whose
// constructor calls, and a product whose constructor calls and then reverts.
const FACTORY_INITCODE = factoryCode(0x55, [
  factoryCode(0x66, [asm(constructorCode(0x77, false))]),
  asm(constructorCode(0x88, true)),
]);

// Code put in place by each case of the error test.
const FAULTY = '0x00000000000000000000000000000000000fa017';

describe('debug_trace* (geth tracers)', () => {
  const conformance = conformanceServerForSuite();
  let server: RunningServer;
  before(async () => {
    server = conformance();
  });

  const traceCall = <T>(call: Record<string, unknown>, config: Record<string, unknown> = {}) =>
    server.rpc<T>('debug_traceCall', [
      { from: SENDER, gas: '0x100000', ...call },
      'latest',
      { stateOverrides: OVERRIDES, ...config },
    ]);
  const errorOf = async (promise: Promise<unknown>) => {
    try {
      await promise;
    } catch (e) {
      return e as Error & { code: number };
    }
    assert.fail('expected a JSON-RPC error');
  };
  const receiptsOf = (block: string) => server.rpc<Receipt[]>('eth_getBlockReceipts', [block]);

  describe('struct logger', () => {
    it('logs each op with gas before it and its cost, ending in RETURN with the output', async () => {
      const r = await traceCall<StructResult>({ to: COUNTER });
      assert.equal(r.failed, false);
      assert.equal(r.returnValue, WORD(1));
      assert.deepEqual(
        r.structLogs.map((l) => l.op),
        [
          'PUSH1',
          'SLOAD',
          'PUSH1',
          'ADD',
          'DUP1',
          'PUSH1',
          'SSTORE',
          'PUSH1',
          'MSTORE',
          'PUSH1',
          'PUSH1',
          'RETURN',
        ],
      );
      // Each op starts with what the one before it left.
      for (let i = 1; i < r.structLogs.length; i++) {
        const [prev, log] = [r.structLogs[i - 1], r.structLogs[i]];
        assert.ok(prev && log);
        assert.equal(log.gas, prev.gas - prev.gasCost, `op ${i}`);
      }
      // The first op has the gas limit less the intrinsic gas; the receipt-style total follows.
      assert.equal(r.structLogs[0]?.gas, 0x100000 - 21_000);
      assert.equal(r.structLogs[0]?.depth, 1);
      assert.deepEqual(r.structLogs[0]?.stack, []);
      assert.deepEqual(r.structLogs[2]?.stack, ['0x0']);
    });

    it('shows the slots touched so far at each SLOAD and SSTORE, as 32-byte words', async () => {
      const r = await traceCall<StructResult>({ to: COUNTER });
      const sload = r.structLogs.find((l) => l.op === 'SLOAD');
      const sstore = r.structLogs.find((l) => l.op === 'SSTORE');
      assert.deepEqual(sload?.storage, { [WORD(0)]: WORD(0) });
      assert.deepEqual(sstore?.storage, { [WORD(0)]: WORD(1) });
      assert.ok(r.structLogs.filter((l) => l.storage).length === 2, 'storage only on SLOAD/SSTORE');
    });

    it('honours disableStack, disableStorage, enableMemory and limit', async () => {
      const bare = await traceCall<StructResult>(
        { to: COUNTER },
        { disableStack: true, disableStorage: true },
      );
      assert.ok(bare.structLogs.every((l) => l.stack === undefined && l.storage === undefined));
      const memory = await traceCall<StructResult>({ to: COUNTER }, { enableMemory: true });
      const ret = memory.structLogs.find((l) => l.op === 'RETURN');
      assert.deepEqual(ret?.memory, [WORD(1)]);
      // Memory is shown as the op finds it: empty (so absent) before the first MSTORE runs.
      assert.equal(memory.structLogs.find((l) => l.op === 'MSTORE')?.memory, undefined);
      const plain = await traceCall<StructResult>({ to: COUNTER });
      assert.ok(plain.structLogs.every((l) => l.memory === undefined));
      const limited = await traceCall<StructResult>({ to: COUNTER }, { limit: 3 });
      assert.equal(limited.structLogs.length, 3);
    });

    it('counts the gas handed to a callee in the CALL cost and shows returnData when asked', async () => {
      const r = await traceCall<StructResult>({ to: CALLER }, { enableReturnData: true });
      const calls = r.structLogs.filter((l) => l.op === 'CALL' || l.op === 'STATICCALL');
      assert.equal(calls.length, 2);
      for (const call of calls) {
        const i = r.structLogs.indexOf(call);
        const callee = r.structLogs[i + 1];
        assert.equal(callee?.depth, 2);
        // The callee starts with what the CALL's cost handed over (no value, so no stipend); the
        // CALL's own part is the 100 gas of a warm-or-cold access and nothing else here.
        assert.ok(callee && call.gasCost - callee.gas >= 100 && call.gasCost - callee.gas <= 2600);
      }
      const afterCall = r.structLogs.find((l, i) => l.depth === 1 && r.structLogs[i - 1]?.depth === 2);
      assert.equal(afterCall?.returnData, WORD(1));
      assert.equal(r.returnValue, WORD(1));
      const without = await traceCall<StructResult>({ to: CALLER });
      assert.ok(without.structLogs.every((l) => l.returnData === undefined));
    });

    it('reports a revert as failed with the revert data as returnValue', async () => {
      const r = await traceCall<StructResult>({ to: REVERTER });
      assert.equal(r.failed, true);
      assert.ok(r.returnValue.startsWith('0x08c379a0'));
      assert.equal(r.structLogs.at(-1)?.op, 'REVERT');
    });

    it('shows the refund counter once a write earns one', async () => {
      const r = await traceCall<StructResult>({ to: CLEARER });
      const [first, second] = r.structLogs.filter((l) => l.op === 'SSTORE');
      assert.equal(first?.refund, 4800);
      assert.equal(second?.refund, 4800);
      assert.equal(r.structLogs[0]?.refund, undefined);
    });

    it('records the STOP geth runs past the end of the code', async () => {
      const r = await traceCall<StructResult>({ to: RUNS_OFF });
      assert.deepEqual(
        r.structLogs.map((l) => [l.pc, l.op, l.gasCost]),
        [
          [0, 'PUSH1', 3],
          [2, 'PUSH1', 3],
          [4, 'STOP', 0],
        ],
      );
      assert.deepEqual(r.structLogs[2]?.stack, ['0x1', '0x2']);
    });

    it('marks an op that runs out of gas with the error', async () => {
      const r = await traceCall<StructResult>({ to: COUNTER, gas: `0x${(21_000 + 2_000).toString(16)}` });
      assert.equal(r.failed, true);
      assert.equal(r.returnValue, '0x');
      const last = r.structLogs.at(-1);
      assert.equal(last?.op, 'SLOAD');
      assert.equal(last?.error, 'out of gas');
    });

    it('words an SSTORE stopped by the EIP-2200 sentry as geth does, and one past it as out of gas', async () => {
      const call = (left: number) => ({ to: STORER, gas: `0x${(21_000 + storerGas(left)).toString(16)}` });
      const sentry = await traceCall<StructResult>(call(2300));
      assert.equal(sentry.failed, true);
      assert.deepEqual(
        sentry.structLogs.map((l) => [l.op, l.gas, l.error]),
        [
          ['PUSH1', 2306, undefined],
          ['PUSH1', 2303, undefined],
          ['SSTORE', 2300, SENTRY],
        ],
      );
      const past = await traceCall<StructResult>(call(2301));
      assert.equal(past.structLogs.at(-1)?.error, 'out of gas');
      // The same words in callTracer's top frame and in eth_call's error, as geth's; Parity's
      // dialect has no word for the sentry (OpenEthereum, Reth and anvil print "Out of gas").
      const top = await traceCall<CallFrame>(call(2300), { tracer: 'callTracer' });
      assert.equal(top.error, SENTRY);
      const failure = await errorOf(server.rpc('eth_call', [call(2300), 'latest', OVERRIDES]));
      assert.equal(failure.message, SENTRY);
      const parity = await server.rpc<{ trace: Array<{ error?: string }> }>('trace_call', [
        call(2300),
        ['trace'],
        'latest',
        OVERRIDES,
      ]);
      assert.equal(parity.trace[0]?.error, 'Out of gas');
    });
  });

  describe('callTracer', () => {
    it('gives the call tree with gas, output, revert reason and logs placed among calls', async () => {
      const r = await traceCall<CallFrame>(
        { to: CALLER },
        { tracer: 'callTracer', tracerConfig: { withLog: true } },
      );
      assert.equal(r.type, 'CALL');
      assert.equal(r.from, SENDER);
      assert.equal(r.to, CALLER);
      assert.equal(r.gas, '0x100000');
      assert.equal(r.value, '0x0');
      assert.equal(r.output, WORD(1));
      const [counter, reverter] = r.calls ?? [];
      assert.equal(counter?.type, 'CALL');
      assert.equal(counter?.from, CALLER);
      assert.equal(counter?.to, COUNTER);
      assert.equal(counter?.output, WORD(1));
      assert.equal(reverter?.type, 'STATICCALL');
      assert.equal(reverter?.value, undefined, 'STATICCALL has no value');
      assert.equal(reverter?.error, 'execution reverted');
      assert.equal(reverter?.revertReason, 'boom');
      assert.deepEqual(
        r.logs?.map((l) => [l.topics, l.data, l.position]),
        [
          [[WORD(0x11)], WORD(0xaa), '0x0'],
          [[WORD(0x22)], WORD(1), '0x2'],
        ],
      );
      assert.equal(r.logs?.[0]?.address, CALLER);
      // The top frame's gasUsed is the whole call's, intrinsic gas included, as the struct logger's.
      const logged = await traceCall<StructResult>({ to: CALLER });
      assert.equal(BigInt(r.gasUsed), BigInt(logged.gas));
      assert.ok(BigInt(r.gasUsed) > BigInt(counter?.gasUsed ?? 0) + 21_000n);
    });

    it('words errors as geth does, with the failing op and the stack it found', async () => {
      const cases: Array<[string, string]> = [
        ['PUSH1 1 PUSH1 2 ADD .data 0x0c', 'invalid opcode: opcode 0xc not defined'],
        ['.data 0xfe', 'invalid opcode: INVALID'],
        ['PUSH1 1 ADD', 'stack underflow (1 <=> 2)'],
        ['PUSH0 PUSH0 PUSH0 PUSH0 PUSH0 PUSH0 CALL', 'stack underflow (6 <=> 7)'],
        ['PUSH0 PUSH0 JUMP', 'invalid jump destination'],
      ];
      for (const [source, error] of cases) {
        const overrides = { ...OVERRIDES, [FAULTY]: { code: asm(source) } };
        const r = await traceCall<CallFrame>(
          { to: FAULTY },
          { tracer: 'callTracer', stateOverrides: overrides },
        );
        assert.equal(r.error, error, source);
        const logged = await traceCall<StructResult>({ to: FAULTY }, { stateOverrides: overrides });
        assert.equal(logged.failed, true);
        if (error.startsWith('stack')) assert.equal(logged.structLogs.at(-1)?.error, error, source);
      }
    });

    it('leaves out logs unless withLog, and subcalls with onlyTopCall', async () => {
      const plain = await traceCall<CallFrame>({ to: CALLER }, { tracer: 'callTracer' });
      assert.equal(plain.logs, undefined);
      assert.equal(plain.calls?.length, 2);
      const top = await traceCall<CallFrame>(
        { to: CALLER },
        { tracer: 'callTracer', tracerConfig: { onlyTopCall: true, withLog: true } },
      );
      assert.equal(top.calls, undefined);
      assert.deepEqual(
        top.logs?.map((l) => l.position),
        ['0x0', '0x0'],
      );
    });

    it('matches the receipts of replayed blocks: top gasUsed, failure, one entry per transaction', async () => {
      for (const block of ['0x1', '0x2', '0x2d']) {
        const [traces, receipts] = await Promise.all([
          server.rpc<Array<{ txHash: string; result: CallFrame }>>('debug_traceBlockByNumber', [
            block,
            { tracer: 'callTracer' },
          ]),
          receiptsOf(block),
        ]);
        assert.equal(traces.length, receipts.length);
        for (const [i, { txHash, result }] of traces.entries()) {
          const receipt = receipts[i];
          assert.ok(receipt);
          assert.equal(txHash, receipt.transactionHash);
          assert.equal(result.gasUsed, receipt.gasUsed, `${block}/${i}`);
          assert.equal(result.from, receipt.from);
          if (receipt.status !== undefined)
            assert.equal(result.error === undefined, receipt.status === '0x1');
        }
      }
    });
  });

  describe('callTracer against anvil', () => {
    let anvil: Anvil;
    before(async () => {
      anvil = await startAnvil();
    });
    after(async () => {
      await anvil?.stop();
    });
    const overrides = {
      [COUNTER]: { code: COUNTER_CODE },
      [LOGGER]: { code: LOGGER_CODE },
      [CREATOR]: { balance: '0xde0b6b3a7640000', nonce: '0x5' },
      [STORER]: { code: STORER_CODE },
      [SENTRY_CALLER]: { code: SENTRY_CALLER_CODE },
    };
    const withoutIndex = <T extends object>(log: T): T => {
      const { index: _, ...rest } = log as T & { index?: string };
      return rest as T;
    };
    /** Both servers' callTracer answers, anvil's brought to geth's shape where it deliberately differs. */
    const bothTrace = async (call: Record<string, unknown>) => {
      const params = [
        { from: CREATOR, gas: '0x200000', ...call },
        'latest',
        { tracer: 'callTracer', tracerConfig: { withLog: true }, stateOverrides: overrides },
      ];
      const ours = await server.rpc<CallFrame>('debug_traceCall', params);
      const theirs = await anvil.rpc<CallFrame>('debug_traceCall', params);
      // anvil gives the top frame the gas left after intrinsic gas; geth (and we) the call's gas.
      // It also numbers logs (`index`, alloy's addition); geth's callLog has address, topics, data
      // and position only.
      const normalise = (frame: CallFrame, top: boolean): CallFrame =>
        ({
          ...frame,
          ...(top ? { gas: ours.gas } : {}),
          ...(frame.logs ? { logs: frame.logs.map(withoutIndex) } : {}),
          ...(frame.calls ? { calls: frame.calls.map((c) => normalise(c, false)) } : {}),
        }) as CallFrame;
      return { ours, theirs: normalise(theirs, true) };
    };

    it('reports each LOGn with its n topics (withLog)', async () => {
      const { ours, theirs } = await bothTrace({ to: LOGGER });
      assert.deepEqual(
        ours.logs?.map((l) => l.topics.length),
        [0, 1, 2, 3, 4],
      );
      assert.deepEqual(ours.logs?.[4]?.topics, [WORD(0x41), WORD(0x42), WORD(0x43), WORD(0x44)]);
      assert.deepEqual(ours, theirs);
    });

    it('words an SSTORE stopped by the EIP-2200 sentry as anvil (and geth) do', async () => {
      const { ours, theirs } = await bothTrace({ to: SENTRY_CALLER });
      assert.deepEqual(
        ours.calls?.map((c) => c.error),
        [SENTRY, 'out of gas', SENTRY],
      );
      assert.deepEqual(ours, theirs);
    });

    it('names the contract under construction as the sender of what its constructor does', async () => {
      const { ours, theirs } = await bothTrace({ input: FACTORY_INITCODE });
      const factory = ours.to;
      const [counterCall, product, failed] = ours.calls ?? [];
      assert.equal(ours.type, 'CREATE');
      assert.equal(counterCall?.from, factory);
      assert.equal(product?.type, 'CREATE');
      assert.equal(product?.from, factory);
      assert.equal(product?.calls?.[0]?.from, product?.to);
      const grandchild = product?.calls?.[1];
      assert.equal(grandchild?.from, product?.to);
      assert.equal(grandchild?.calls?.[0]?.from, grandchild?.to);
      assert.equal(failed?.error, 'execution reverted');
      assert.equal(failed?.from, factory);
      assert.ok(failed?.calls?.[0]?.from !== ZERO_ADDRESS);
      assert.deepEqual(ours, theirs);
    });

    it('lists what constructors changed in prestateTracer diffMode as anvil does', async () => {
      // Non-diff mode differs on purpose: geth (and we) leave out contracts the transaction created,
      // revm-inspectors lists them as empty accounts.
      const params = [
        { from: CREATOR, gas: '0x200000', input: FACTORY_INITCODE },
        'latest',
        { tracer: 'prestateTracer', tracerConfig: { diffMode: true }, stateOverrides: overrides },
      ];
      const ours = await server.rpc<{ pre: Prestate; post: Prestate }>('debug_traceCall', params);
      assert.equal(Object.keys(ours.post).length, 5, 'sender, counter and three contracts made');
      assert.deepEqual(ours, await anvil.rpc('debug_traceCall', params));
    });
  });

  describe('prestateTracer', () => {
    it('lists the touched accounts as they were, with the slots read or written', async () => {
      const r = await traceCall<Prestate>({ to: CALLER }, { tracer: 'prestateTracer' });
      for (const address of [SENDER, CALLER, COUNTER, REVERTER]) assert.ok(r[address], address);
      assert.deepEqual(r[COUNTER]?.storage, { [WORD(0)]: WORD(0) });
      assert.equal(r[COUNTER]?.code, COUNTER_CODE);
      const balance = await server.rpc<string>('eth_getBalance', [SENDER, 'latest']);
      assert.equal(r[SENDER]?.balance, balance);
    });

    it('gives {pre, post} of what changed in diffMode', async () => {
      const r = await traceCall<{ pre: Prestate; post: Prestate }>(
        { to: CALLER },
        { tracer: 'prestateTracer', tracerConfig: { diffMode: true } },
      );
      assert.deepEqual(r.post[COUNTER]?.storage, { [WORD(0)]: WORD(1) });
      // A zero slot is left out of pre; an account that did not change is in neither.
      assert.equal(r.pre[COUNTER]?.storage, undefined);
      assert.equal(r.pre[REVERTER], undefined);
      assert.equal(r.post[REVERTER], undefined);
      assert.equal(r.post[SENDER]?.nonce, (r.pre[SENDER]?.nonce ?? 0) + 1);
    });

    it('agrees with eth_getBalance before and after mined transactions', async () => {
      const number = 0x2d;
      const block = `0x${number.toString(16)}`;
      const parent = `0x${(number - 1).toString(16)}`;
      const receipts = await receiptsOf(block);
      const pre = await server.rpc<Array<{ result: Prestate }>>('debug_traceBlockByNumber', [
        block,
        { tracer: 'prestateTracer' },
      ]);
      const diff = await server.rpc<Array<{ result: { pre: Prestate; post: Prestate } }>>(
        'debug_traceBlockByNumber',
        [block, { tracer: 'prestateTracer', tracerConfig: { diffMode: true } }],
      );
      const first = receipts[0];
      assert.ok(first);
      assert.equal(
        pre[0]?.result[first.from]?.balance,
        await server.rpc('eth_getBalance', [first.from, parent]),
      );
      // A sender's state after its last transaction of the block is its state after the block.
      const last = receipts.length - 1 - [...receipts].reverse().findIndex((r) => r.from === first.from);
      assert.equal(
        diff[last]?.result.post[first.from]?.balance,
        await server.rpc('eth_getBalance', [first.from, block]),
      );
      assert.equal(
        diff[last]?.result.post[first.from]?.nonce,
        Number(await server.rpc<string>('eth_getTransactionCount', [first.from, block])),
      );
    });
  });

  describe('methods', () => {
    it('debug_traceTransaction answers what the block trace has for that transaction', async () => {
      const block = await server.rpc<Array<{ txHash: string; result: unknown }>>('debug_traceBlockByNumber', [
        '0x2',
        { tracer: 'callTracer' },
      ]);
      const entry = block[2];
      assert.ok(entry);
      const single = await server.rpc('debug_traceTransaction', [entry.txHash, { tracer: 'callTracer' }]);
      assert.deepEqual(single, entry.result);
      const hash = await server
        .rpc<string>('eth_getBlockByNumber', ['0x2', false])
        .then((b) => (b as unknown as { hash: string }).hash);
      assert.deepEqual(await server.rpc('debug_traceBlockByHash', [hash, { tracer: 'callTracer' }]), block);
    });

    it('answers geth errors: unknown tracer, block, transaction, bad timeout', async () => {
      const tracer = await errorOf(traceCall({ to: COUNTER }, { tracer: 'fourByteTracerX' }));
      assert.equal(tracer.code, -32000);
      assert.equal(tracer.message, 'tracer not found');
      const block = await errorOf(server.rpc('debug_traceBlockByNumber', ['0x3e8']));
      assert.equal(block.message, 'block #1000 not found');
      const tx = await errorOf(server.rpc('debug_traceTransaction', [WORD(1)]));
      assert.equal(tx.message, 'transaction not found');
      const timeout = await errorOf(server.rpc('debug_traceBlockByNumber', ['0x1', { timeout: 'soon' }]));
      assert.equal(timeout.code, -32000);
      const flag = await errorOf(server.rpc('debug_traceBlockByNumber', ['0x1', { disableStack: 'yes' }]));
      assert.equal(flag.code, -32602);
    });

    it('traces genesis as the empty block it is, as trace_block does (Reth, anvil)', async () => {
      const genesis = await server.rpc<{ hash: string; transactions: unknown[] }>('eth_getBlockByNumber', [
        '0x0',
        false,
      ]);
      assert.deepEqual(genesis.transactions, []);
      for (const config of [{}, { tracer: 'callTracer' }, { tracer: 'prestateTracer' }]) {
        for (const block of ['0x0', 'earliest']) {
          assert.deepEqual(await server.rpc('debug_traceBlockByNumber', [block, config]), []);
        }
        assert.deepEqual(await server.rpc('debug_traceBlockByHash', [genesis.hash, config]), []);
      }
      assert.deepEqual(await server.rpc('trace_block', ['0x0']), []);
      assert.deepEqual(await server.rpc('trace_replayBlockTransactions', ['0x0', ['trace', 'vmTrace']]), []);
    });

    it('accepts a timeout and caps it at the server deadline', async () => {
      const r = await server.rpc<StructResult[]>('debug_traceBlockByNumber', ['0x1', { timeout: '1m' }]);
      assert.equal(r.length, 4);
    });
  });
});
