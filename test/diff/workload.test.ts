import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { type Address, type Hex, hexToBigInt, keccak256, numberToHex, stringToHex } from 'viem';
import { type Anvil, startAnvil } from '../support/anvil.ts';
import { runCli, tempDir } from '../support/cli.ts';
import { exportChain } from '../support/exportChain.ts';
import type { AnvilHardfork } from '../support/genesis.ts';
import { PROBE_RUNTIME } from '../support/probe.ts';
import { buildTraceWorkload, type TraceWorkload, type TraceWorkloadTx } from '../support/traceWorkload.ts';

/**
 * The trace workload checked against anvil's own traces (revm-inspectors): every category the
 * differential trace suite relies on must really be in the chain, or a diff that passes would
 * prove nothing about it. Also proves the chain exports and imports.
 */

interface TraceEntry {
  type: 'call' | 'create' | 'suicide';
  action: {
    callType?: string;
    creationMethod?: string;
    from?: Address;
    to?: Address;
    value?: Hex;
    address?: Address;
    refundAddress?: Address;
    balance?: Hex;
  };
  result?: Record<string, unknown> | null;
  error?: string;
  traceAddress: number[];
  subtraces: number;
}

interface StorageDiff {
  [slot: Hex]: '=' | { '+': Hex } | { '*': { from: Hex; to: Hex } } | { '-': Hex };
}

interface Replay {
  transactionHash: Hex;
  trace: TraceEntry[];
  stateDiff: Record<Address, { storage: StorageDiff }> | null;
}

interface Traced extends TraceWorkloadTx {
  status: Hex;
  trace: TraceEntry[];
  stateDiff: Record<Address, { storage: StorageDiff }>;
  logs: { address: Address; topics: Hex[]; data: Hex }[];
}

/** What must be in each labelled transaction's trace: kinds (callType, creationMethod, suicide) and errors. */
const EXPECTED: Record<string, { has?: string[]; errors?: string[]; depth?: number }> = {
  'create/tx-constructor-reverts': { errors: ['Reverted'] },
  'create/tx-constructor-out-of-gas': { errors: ['Out of gas'] },
  'create/create2-then-call-it-create': { has: ['create2', 'create', 'call'], depth: 2 },
  'create/create2-collision': { has: ['create2'], errors: ['CreateCollision'] },
  'create/create-with-value': { has: ['create'] },
  'create/constructor-reverts': { has: ['create'], errors: ['Reverted'] },
  'create/constructor-out-of-gas': { has: ['create'], errors: ['Out of gas'] },
  'create/create2-with-value-constructor-reverts': { has: ['create2'], errors: ['Reverted'] },
  'precompile/tx-bn256add-not-on-curve': { errors: ['Built-in failed'] },
  'precompile/tx-modexp-too-little-gas': { errors: ['Out of gas'] },
  'call/call-4-deep': { has: ['call'], depth: 3 },
  'call/delegatecall-3-deep': { has: ['delegatecall'], depth: 3 },
  'call/staticcall-3-deep': { has: ['staticcall'], depth: 3 },
  'call/callcode-with-value': { has: ['callcode'], depth: 2 },
  'call/delegatecall-inside-staticcall': { has: ['staticcall', 'delegatecall'], depth: 3 },
  'call/staticcall-inside-delegatecall-inside-callcode': {
    has: ['callcode', 'delegatecall', 'staticcall'],
    depth: 3,
  },
  'call/to-nonexistent': { has: ['call', 'staticcall', 'delegatecall', 'callcode'] },
  'call/insufficient-balance-in-subcall': { errors: ['Insufficient balance for transfer'], depth: 2 },
  'precompile/from-contract-no-value': { has: ['callcode'] },
  'precompile/bn256add-fails-with-value': { errors: ['Built-in failed'] },
  'precompile/modexp-too-little-gas': { errors: ['Out of gas'] },
  'transient/lost-on-revert': { errors: ['Reverted'] },
  'revert/tx-with-error-string': { errors: ['Reverted'] },
  'revert/tx-empty': { errors: ['Reverted'] },
  'revert/subcall-with-data': { errors: ['Reverted'] },
  'revert/subcall-empty': { errors: ['Reverted'] },
  'revert/bubbled-3-levels': { errors: ['Reverted'], depth: 3 },
  'oog/tx-gas-loop': { errors: ['Out of gas'] },
  'oog/tx-memory-expansion': { errors: ['Out of gas'] },
  'oog/subcall-gas-loop-63-64': { errors: ['Out of gas'] },
  'oog/subcall-explicit-gas': { errors: ['Out of gas'] },
  'oog/subcall-memory-expansion': { errors: ['Out of gas'] },
  'halt/tx-invalid-fe': { errors: ['Bad instruction'] },
  'halt/tx-undefined-0c': { errors: ['Bad instruction'] },
  'halt/tx-bad-jump': { errors: ['Bad jump destination'] },
  'halt/tx-stack-underflow': { errors: ['StackUnderflow'] },
  'halt/subcall-invalid-fe': { errors: ['Bad instruction'] },
  'halt/subcall-undefined-0c': { errors: ['Bad instruction'] },
  'halt/subcall-bad-jump': { errors: ['Bad jump destination'] },
  'halt/subcall-stack-underflow': { errors: ['StackUnderflow'] },
  'static/sstore': { has: ['staticcall'], errors: ['StateChangeDuringStaticCall'] },
  'static/log': { errors: ['StateChangeDuringStaticCall'] },
  'static/create': { errors: ['StateChangeDuringStaticCall'] },
  'static/create2': { errors: ['StateChangeDuringStaticCall'] },
  'static/call-with-value': { errors: ['CallNotAllowedInsideStatic'] },
  'static/tstore': { errors: ['StateChangeDuringStaticCall'] },
  'static/selfdestruct': { errors: ['StateChangeDuringStaticCall'] },
  'static/sstore-two-levels-down': { errors: ['StateChangeDuringStaticCall'], depth: 3 },
  'selfdestruct/same-tx-created-to-other': { has: ['create', 'suicide'] },
  'selfdestruct/same-tx-created-to-self': { has: ['create', 'suicide'] },
  'selfdestruct/in-constructor': { has: ['create', 'suicide'] },
  'selfdestruct/old-contract-to-other': { has: ['suicide'] },
  'selfdestruct/old-contract-to-self': { has: ['suicide'] },
  'selfdestruct/old-contract-to-self-in-subcall': { has: ['suicide'] },
  'selfdestruct/old-contract-in-subcall': { has: ['suicide'] },
  'constructor/tx-calls-creates-logs': {
    has: ['call', 'delegatecall', 'staticcall', 'create', 'create2'],
    depth: 4,
  },
  'constructor/tx-reverts-after-calls': { has: ['delegatecall', 'create'], errors: ['Reverted'], depth: 3 },
  'constructor/factory-product-creates': { has: ['create', 'delegatecall', 'call'], depth: 6 },
  'constructor/create2-calls-and-logs': { has: ['create2', 'delegatecall', 'call'], depth: 3 },
  'constructor/subcall-reverts-constructor-survives': { has: ['create'], errors: ['Reverted'], depth: 3 },
  'constructor/inner-constructor-reverts': { has: ['create'], errors: ['Reverted'], depth: 3 },
  'constructor/selfdestructs-after-call': { has: ['create', 'suicide'], depth: 3 },
  'constructor/halts-after-call': { has: ['create'], errors: ['Bad instruction', 'Reverted'], depth: 3 },
  '7702/delegate-and-call': { has: ['call'] },
  '7702/contract-calls-delegated': { has: ['call', 'delegatecall', 'staticcall'] },
  '7702/delegated-eoa-reverts': { errors: ['Reverted'] },
};

const kindOf = (e: TraceEntry): string =>
  e.type === 'call'
    ? (e.action.callType ?? '?')
    : e.type === 'create'
      ? (e.action.creationMethod ?? '?')
      : e.type;

const PRECOMPILES = ['0x01', '0x02', '0x04', '0x05', '0x06'].map((n) => numberToHex(BigInt(n), { size: 20 }));

for (const hardfork of ['osaka', 'prague'] as const satisfies readonly AnvilHardfork[]) {
  describe(`trace workload on anvil (${hardfork})`, () => {
    let anvil: Anvil;
    let workload: TraceWorkload;
    const byLabel = new Map<string, Traced>();
    const work = tempDir('ethtrace-trace-workload-');
    const tx = (label: string): Traced => {
      const found = byLabel.get(label);
      assert.ok(found, `no transaction labelled ${label}`);
      return found;
    };
    const all = (): Traced[] => [...byLabel.values()];

    before(async () => {
      anvil = await startAnvil({ hardfork });
      workload = await buildTraceWorkload(anvil);
      for (const block of workload.blocks) {
        const replays = await anvil.rpc<Replay[]>('trace_replayBlockTransactions', [
          numberToHex(block.number),
          ['trace', 'stateDiff'],
        ]);
        assert.equal(replays.length, block.txs.length, `block ${block.number}: one replay per tx`);
        block.txs.forEach((t, i) => {
          const replay = replays[i] as Replay;
          const receipt = block.receipts[i];
          assert.equal(replay.transactionHash, t.hash);
          assert.ok(receipt);
          byLabel.set(t.label, {
            ...t,
            status: receipt.status,
            trace: replay.trace,
            stateDiff: replay.stateDiff ?? {},
            logs: receipt.logs,
          });
        });
      }
      printTable(hardfork, all());
    });
    after(async () => {
      await anvil?.stop();
      work.cleanup();
    });

    it('mines every transaction with its planned outcome, several per block', () => {
      for (const t of all()) {
        assert.equal(t.status, t.expect === 'success' ? '0x1' : '0x0', t.label);
      }
      assert.ok(workload.blocks.length >= 8);
      assert.ok(workload.blocks.every((b) => b.txs.length >= 1));
      assert.ok(workload.blocks.filter((b) => b.txs.length >= 5).length >= 6);
      const failed = all().filter((t) => t.expect === 'reverted').length;
      assert.ok(failed >= 12, `${failed} failed transactions`);
    });

    it("shows each labelled case in anvil's trace", () => {
      for (const [label, want] of Object.entries(EXPECTED)) {
        if (label.startsWith('7702/') && !byLabel.has(label)) continue;
        const { trace } = tx(label);
        const kinds = new Set(trace.map(kindOf));
        for (const kind of want.has ?? [])
          assert.ok(kinds.has(kind), `${label}: no ${kind} in ${[...kinds]}`);
        const errors = new Set(trace.flatMap((e) => (e.error === undefined ? [] : [e.error])));
        for (const error of want.errors ?? []) {
          assert.ok(errors.has(error), `${label}: no error "${error}" in ${JSON.stringify([...errors])}`);
        }
        const depth = Math.max(...trace.map((e) => e.traceAddress.length));
        assert.ok(depth >= (want.depth ?? 0), `${label}: depth ${depth} < ${want.depth}`);
      }
    });

    it('fails only where planned: successful subcall cases leave the top frame without error', () => {
      for (const t of all()) {
        const top = t.trace[0];
        assert.ok(top, `${t.label}: empty trace`);
        assert.deepEqual(top.traceAddress, []);
        assert.equal(
          top.error === undefined,
          t.expect === 'success',
          `${t.label}: top-level error ${top.error}`,
        );
      }
    });

    it('covers every call kind, creation method and anvil error string somewhere', () => {
      const kinds = new Set(all().flatMap((t) => t.trace.map(kindOf)));
      for (const kind of ['call', 'delegatecall', 'staticcall', 'callcode', 'create', 'create2', 'suicide']) {
        assert.ok(kinds.has(kind), kind);
      }
      const errors = new Set(all().flatMap((t) => t.trace.flatMap((e) => (e.error ? [e.error] : []))));
      assert.deepEqual([...errors].sort(), [
        'Bad instruction',
        'Bad jump destination',
        'Built-in failed',
        'CallNotAllowedInsideStatic',
        'CreateCollision',
        'Insufficient balance for transfer',
        'Out of gas',
        'Reverted',
        'StackUnderflow',
        'StateChangeDuringStaticCall',
      ]);
      // anvil's quirk: a reverted frame keeps its result beside the error, a halted one has none.
      const reverted = all().flatMap((t) => t.trace.filter((e) => e.error === 'Reverted'));
      assert.ok(reverted.every((e) => e.result !== null && e.result !== undefined));
      const halted = all().flatMap((t) => t.trace.filter((e) => e.error === 'Out of gas'));
      assert.ok(halted.every((e) => e.result === null));
    });

    it('traces precompile calls at top level and with value, and omits zero-value ones below it', () => {
      const to = (t: Traced): string[] => t.trace.flatMap((e) => (e.action.to ? [e.action.to] : []));
      assert.equal(tx('precompile/tx-ecrecover').trace[0]?.action.to, PRECOMPILES[0]);
      assert.deepEqual(to(tx('precompile/from-contract-with-value')).slice(1), PRECOMPILES.slice(0, 4));
      // Of the zero-value CALL, STATICCALL, DELEGATECALL and the CALLCODE with value, only the last shows.
      assert.deepEqual(to(tx('precompile/from-contract-no-value')).slice(1), [PRECOMPILES[2]]);
      assert.deepEqual(to(tx('precompile/bn256add-fails-no-value')).slice(1), []);
      assert.equal(tx('precompile/from-contract-no-value').logs.length, 7, 'every precompile answered');
    });

    it('emits LOG0 through LOG4 and drops the logs of reverted frames', () => {
      const topics = tx('log/log0-to-log4').logs.map((l) => l.topics.length);
      assert.deepEqual(topics, [0, 1, 2, 3, 4]);
      assert.deepEqual(
        tx('log/in-reverted-subcall-dropped').logs.map((l) => l.topics),
        [[keccak256(stringToHex('two'))]],
      );
    });

    it('sets, changes, clears and restores storage, as anvil’s stateDiff shows', () => {
      const probe2 = (workload.contracts.probe2 ?? '').toLowerCase() as Address;
      const slot = (n: number): Hex => numberToHex(n, { size: 32 });
      const diff = (label: string): StorageDiff => tx(label).stateDiff[probe2]?.storage ?? {};
      const change = (from: number, to: number) => ({
        '*': { from: numberToHex(from, { size: 32 }), to: numberToHex(to, { size: 32 }) },
      });
      assert.deepEqual(diff('storage/set')[slot(1)], change(0, 0x11));
      assert.deepEqual(diff('storage/change')[slot(1)], change(0x11, 0x12));
      assert.deepEqual(diff('storage/clear')[slot(1)], change(0x12, 0));
      const restored = diff('storage/write-then-restore');
      assert.equal(restored[slot(2)], undefined, 'slot 2 written and restored');
      assert.equal(restored[slot(4)], undefined, 'slot 4 set and cleared');
      // The logged SLOADs show the intermediate values really were written.
      assert.deepEqual(
        tx('storage/write-then-restore').logs.map((l) => hexToBigInt(l.data)),
        [0x99n, 0n],
      );
    });

    it('shares transient storage with a reentrant call and rolls it back on revert', () => {
      const data = (label: string): bigint[] => tx(label).logs.map((l) => hexToBigInt(l.data));
      assert.deepEqual(data('transient/reentrant-call'), [0xabcn, 0xdefn, 0xdefn, 0n]);
      assert.deepEqual(data('transient/lost-on-revert').slice(0, 1), [1n]);
    });

    it('leaves the parent room to finish after a child burns its 63/64', () => {
      const t = tx('oog/subcall-gas-loop-63-64');
      assert.equal(t.trace[1]?.error, 'Out of gas');
      assert.equal(t.logs.length, 2);
    });

    it('opens frames inside constructors at every depth, each sent by the contract being made', () => {
      const key = (a: number[]) => a.join('.');
      let direct = 0;
      let inside = 0;
      let deepest = 0;
      for (const t of all().filter((t) => t.label.startsWith('constructor/'))) {
        const byAddress = new Map(t.trace.map((e) => [key(e.traceAddress), e]));
        for (const e of t.trace) {
          const ancestors = e.traceAddress.map((_, i) => byAddress.get(key(e.traceAddress.slice(0, i))));
          const creates = ancestors.filter((a) => a?.type === 'create').length;
          if (creates > 0) inside++;
          deepest = Math.max(deepest, creates);
          const parent = ancestors.at(-1);
          if (parent?.type !== 'create') continue;
          direct++;
          const creating = (parent.result as { address?: Address } | null | undefined)?.address;
          // A failed creation has no address in its result; anvil still names it as the sender.
          if (creating !== undefined) assert.equal(e.action.from, creating, `${t.label} ${e.traceAddress}`);
          assert.notEqual(e.action.from ?? e.action.address, `0x${'00'.repeat(20)}`, t.label);
        }
      }
      assert.ok(direct >= 12, `${direct} frames opened by constructors' own code`);
      assert.ok(inside >= 30, `${inside} frames below a constructor`);
      assert.ok(deepest >= 3, `constructors nested ${deepest} deep`);
    });

    it('records where its contracts are', async () => {
      for (const name of ['probe', 'probe2', 'victim', 'create2Probe']) {
        const address = workload.contracts[name];
        assert.ok(address, name);
        assert.equal(await anvil.rpc<Hex>('eth_getCode', [address, 'latest']), PROBE_RUNTIME, name);
      }
    });

    it('destroys only contracts created in the same transaction (EIP-6780)', async () => {
      const suicideOf = (label: string): TraceEntry | undefined =>
        tx(label).trace.find((e) => e.type === 'suicide');
      const created = suicideOf('selfdestruct/same-tx-created-to-other')?.action.address;
      assert.ok(created);
      assert.equal(await anvil.rpc<Hex>('eth_getCode', [created, 'latest']), '0x');
      const { victim } = workload.contracts;
      assert.equal(await anvil.rpc<Hex>('eth_getCode', [victim, 'latest']), PROBE_RUNTIME);
      const toSelf = suicideOf('selfdestruct/same-tx-created-to-self');
      assert.equal(toSelf?.action.address, toSelf?.action.refundAddress);
    });

    it('uses every transaction envelope', async () => {
      const seen = new Set<string>();
      for (const t of all()) {
        const got = await anvil.rpc<{ type: Hex; chainId?: Hex }>('eth_getTransactionByHash', [t.hash]);
        seen.add(got.type === '0x0' ? `0x0${got.chainId === undefined ? '' : '+155'}` : got.type);
      }
      const want = ['0x0', '0x0+155', '0x1', '0x2', '0x4'];
      assert.deepEqual([...seen].sort(), want.sort());
    });

    it('runs the delegate’s code in the delegated EOA (EIP-7702)', async () => {
      const eoa = workload.contracts.delegatedEoa;
      assert.ok(eoa);
      const code = await anvil.rpc<Hex>('eth_getCode', [eoa, 'latest']);
      assert.equal(code, `0xef0100${(workload.contracts.probe ?? '').slice(2).toLowerCase()}`);
      for (const label of [
        '7702/delegate-and-call',
        '7702/eoa-calls-delegated',
        '7702/delegated-eoa-sends-to-itself',
      ]) {
        assert.ok(
          tx(label).logs.some((l) => l.address.toLowerCase() === eoa.toLowerCase()),
          `${label}: a log from the EOA`,
        );
      }
    });

    it('exports, and imports with ethtrace import --no-verify-state-root', async () => {
      const chain = await exportChain(anvil, work.path);
      assert.equal(chain.blocks, workload.blocks.length + 1);
      const result = await runCli([
        'import',
        '--datadir',
        join(work.path, 'db'),
        '--genesis',
        chain.genesisPath,
        '--no-verify-state-root',
        chain.rlpPath,
      ]);
      assert.equal(result.code, 0, result.stderr);
      assert.match(result.stderr, new RegExp(`imported ${chain.blocks} blocks, ${all().length} txs`));
    });
  });
}

/** label → outcome, top frame's kind and error, entry count and the errors below the top. */
function printTable(hardfork: string, txs: readonly Traced[]): void {
  const rows = txs.map((t) => {
    const top = t.trace[0];
    const inner = t.trace
      .slice(1)
      .filter((e) => e.error !== undefined)
      .map((e) => `[${e.traceAddress.join(',')}] ${e.error}`);
    return [
      t.label,
      t.expect,
      `${top ? kindOf(top) : '-'}${top?.error ? `: ${top.error}` : ''}`,
      String(t.trace.length),
      inner.join('; '),
    ];
  });
  const widths = [0, 1, 2, 3].map((i) => Math.max(...rows.map((r) => (r[i] ?? '').length)));
  console.log(
    `\ntrace workload on anvil (${hardfork}): label | outcome | top frame | entries | inner errors`,
  );
  for (const row of rows) {
    console.log(row.map((cell, i) => (i < 4 ? cell.padEnd(widths[i] ?? 0) : cell)).join(' | '));
  }
}
