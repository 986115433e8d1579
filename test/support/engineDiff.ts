import assert from 'node:assert/strict';
import type { TypedTransaction } from '@ethereumjs/tx';
import { ChainReader } from '../../src/chain/reader.ts';
import { readStoredSpec } from '../../src/chain/storedSpec.ts';
import { type CallLimits, DEFAULT_LIMITS } from '../../src/config/limits.ts';
import type { CallRequest, TraceTypes } from '../../src/core/call.ts';
import type { GethTracerConfig } from '../../src/core/traceConfig.ts';
import type { Engine } from '../../src/exec/evmEngine.ts';
import { replayOnEvm } from '../../src/exec/evmReplay.ts';
import { EvmCallSession } from '../../src/exec/evmSession.ts';
import { type CallManyJob, runCallMany, runCallManyPart } from '../../src/exec/jobs/callMany.ts';
import { type CallJob, callJobs } from '../../src/exec/jobs/calls.ts';
import {
  type DebugTraceBlockJob,
  type DebugTraceCallJob,
  debugJobs,
  traceBlockOnEvm,
  traceCallOnEvm,
} from '../../src/exec/jobs/debug.ts';
import { replayJobs } from '../../src/exec/jobs/replay.ts';
import { partitionBySender, validPrefix } from '../../src/exec/speculation.ts';
import { openLmdbStore } from '../../src/store/lmdb/index.ts';
import type { ChainStore } from '../../src/store/types.ts';

// The differential harness of issue 20's execution paths: the same jobs run on the ethereumjs path
// and on src/evm over one stored chain, answers compared byte for byte.

export const REPLAY_TYPES: readonly TraceTypes[] = [
  { trace: true, stateDiff: false, vmTrace: false },
  { trace: false, stateDiff: true, vmTrace: false },
  { trace: true, stateDiff: true, vmTrace: false },
];

export interface EngineChain {
  chain: ChainReader;
  store: ChainStore;
  close(): Promise<void>;
}

export async function openEngineChain(datadir: string): Promise<EngineChain> {
  const store = await openLmdbStore(datadir, { readOnly: true });
  const spec = await readStoredSpec(store);
  assert.ok(spec, `no chain in ${datadir}`);
  return { chain: new ChainReader(store, spec), store, close: () => store.close() };
}

/** What a job answered, or the error it failed with, as text to compare. */
async function outcome(run: () => Promise<unknown>): Promise<string> {
  try {
    const value = await run();
    if (typeof value === 'bigint') return `0x${value.toString(16)}`;
    if (value instanceof Uint8Array) return Buffer.from(value).toString('hex');
    if (Array.isArray(value) && value.every((v) => v instanceof Uint8Array))
      return `[${value.map((v) => Buffer.from(v).toString()).join(',')}]`;
    return JSON.stringify(value);
  } catch (e) {
    const data = (e as { data?: unknown }).data;
    const shown = data instanceof Uint8Array ? Buffer.from(data).toString('hex') : JSON.stringify(data);
    return `error ${(e as Error).name}: ${(e as Error).message} ${shown}`;
  }
}

/** Where two texts first differ, with some context. */
export function firstDifference(a: string, b: string): string {
  let i = 0;
  while (i < a.length && i < b.length && a[i] === b[i]) i++;
  const from = Math.max(0, i - 200);
  return `at ${i}:\n  ethereumjs: …${a.slice(from, i + 200)}\n  evm:        …${b.slice(from, i + 200)}`;
}

/**
 * Replays every block from 1 to the head with each of `types` and as flat traces on both engines;
 * returns the differences (empty when every answer is the same) and how many answers were compared.
 * Each block must run on src/evm, not fall back to ethereumjs.
 */
export async function diffReplays(
  { chain, store }: EngineChain,
  types: readonly TraceTypes[] = REPLAY_TYPES,
): Promise<{ problems: string[]; compared: number; txs: number }> {
  const head = await store.getHead();
  assert.ok(head);
  const jobs = (engine: Engine) => replayJobs(chain, engine);
  const old = jobs('ethereumjs');
  const ours = jobs('evm');
  const problems: string[] = [];
  let compared = 0;
  let txs = 0;
  for (let n = 1n; n <= head.number; n++) {
    const blockHash = await store.getCanonicalHash(n);
    assert.ok(blockHash);
    const block = await chain.block(blockHash);
    assert.ok(block);
    txs += block.transactions.length;
    for (const t of types) {
      assert.ok(replayOnEvm(chain, block, t), `block ${n} fell back to ethereumjs`);
      const a = await outcome(() => old.replayBlock({ blockHash, types: t }));
      const b = await outcome(() => ours.replayBlock({ blockHash, types: t }));
      compared++;
      if (a !== b) problems.push(`block ${n} ${JSON.stringify(t)} ${firstDifference(a, b)}`);
    }
    const a = await outcome(() => old.flatTraces({ blockHash }));
    const b = await outcome(() => ours.flatTraces({ blockHash }));
    compared++;
    if (a !== b) problems.push(`block ${n} flat traces ${firstDifference(a, b)}`);
  }
  return { problems, compared, txs };
}

/** A mined transaction as a call request, with its fee fields or without. */
export function txAsCall(tx: TypedTransaction, withFees: boolean): CallRequest {
  const t = tx as TypedTransaction & {
    gasPrice?: bigint;
    maxFeePerGas?: bigint;
    maxPriorityFeePerGas?: bigint;
    accessList?: Array<[Uint8Array, Uint8Array[]]>;
    authorizationList?: Uint8Array[][];
  };
  const call: CallRequest = {
    from: tx.getSenderAddress().bytes,
    to: tx.to?.bytes ?? null,
    gas: tx.gasLimit,
    value: tx.value,
    data: tx.data,
  };
  if (t.accessList && t.accessList.length > 0)
    call.accessList = t.accessList.map(([address, keys]) => ({ address, storageKeys: keys }));
  if (t.authorizationList) {
    call.authorizationList = t.authorizationList.map((a) => {
      const [chainId, address, nonce, yParity, r, s] = a as Uint8Array[];
      const big = (b: Uint8Array | undefined) =>
        b && b.length > 0 ? BigInt(`0x${Buffer.from(b).toString('hex')}`) : 0n;
      return {
        chainId: big(chainId),
        address: address ?? new Uint8Array(20),
        nonce: big(nonce),
        yParity: big(yParity),
        r: big(r),
        s: big(s),
      };
    });
  }
  if (withFees) {
    call.type = tx.type;
    if (t.gasPrice !== undefined) call.gasPrice = t.gasPrice;
    if (t.maxFeePerGas !== undefined) call.maxFeePerGas = t.maxFeePerGas;
    if (t.maxPriorityFeePerGas !== undefined) call.maxPriorityFeePerGas = t.maxPriorityFeePerGas;
  }
  return call;
}

const LIMITS: CallLimits = DEFAULT_LIMITS.calls;

/**
 * Runs each block's transactions as one trace_callMany on its parent (without fees, with them, with
 * state overrides, traced and diffed), and trace_call of each, on both engines.
 */
export async function diffCallMany({
  chain,
  store,
}: EngineChain): Promise<{ problems: string[]; compared: number; onEvm: number }> {
  const head = await store.getHead();
  assert.ok(head);
  const problems: string[] = [];
  let compared = 0;
  let onEvm = 0;
  const both: TraceTypes = { trace: true, stateDiff: true, vmTrace: false };
  for (let n = 1n; n <= head.number; n++) {
    const blockHash = await store.getCanonicalHash(n);
    const parentHash = await store.getCanonicalHash(n - 1n);
    assert.ok(blockHash && parentHash);
    const block = await chain.block(blockHash);
    assert.ok(block);
    if (block.transactions.length === 0) continue;
    const plain = block.transactions.map((tx) => txAsCall(tx, false));
    const first = plain[0] as CallRequest;
    const jobs: Array<[string, CallManyJob]> = [
      [
        'no fees',
        { blockHash: parentHash, calls: plain.map((call) => ({ call, types: both })), single: false },
      ],
      [
        'fees',
        {
          blockHash: parentHash,
          calls: block.transactions.map((tx) => ({ call: txAsCall(tx, true), types: both })),
          single: false,
        },
      ],
      [
        'mixed types',
        {
          blockHash: parentHash,
          calls: plain.map((call, i) => ({
            call,
            types: { trace: i % 2 === 0, stateDiff: i % 3 !== 0, vmTrace: false },
          })),
          single: false,
        },
      ],
      [
        'overrides and an unaffordable value',
        {
          blockHash: parentHash,
          calls: [
            { call: { ...first, value: 10n ** 40n }, types: both },
            ...plain.map((call) => ({ call, types: both })),
          ],
          stateOverrides: [
            { address: first.from as Uint8Array, override: { balance: 10n ** 30n, nonce: 7n } },
            ...(first.to
              ? [
                  {
                    address: first.to,
                    override: {
                      stateDiff: [[new Uint8Array(32), Uint8Array.of(5)]] as Array<[Uint8Array, Uint8Array]>,
                    },
                  },
                ]
              : []),
            { address: Uint8Array.from({ length: 20 }, (_, i) => i + 1), override: { balance: 0n } },
          ],
          single: false,
        },
      ],
      ['trace_call', { blockHash: parentHash, calls: [{ call: first, types: both }], single: true }],
      [
        "block overrides (the block's own environment, as bench:mainnet asks)",
        {
          blockHash: parentHash,
          calls: plain.map((call) => ({ call, types: both })),
          blockOverrides: {
            number: block.header.number,
            time: block.header.timestamp,
            prevRandao: block.header.mixHash,
            feeRecipient: block.header.coinbase.bytes,
            gasLimit: block.header.gasLimit + 1n,
          },
          single: false,
        },
      ],
    ];
    for (const [name, job] of jobs) {
      const a = await outcome(() => runCallMany(chain, LIMITS, job, 'ethereumjs'));
      const b = await outcome(() => runCallMany(chain, LIMITS, job, 'evm'));
      compared++;
      const session = await EvmCallSession.openAt(chain, job.blockHash, {
        gasCap: LIMITS.gasCap,
        ...(job.stateOverrides ? { stateOverrides: job.stateOverrides } : {}),
        ...(job.blockOverrides ? { blockOverrides: job.blockOverrides } : {}),
      }).catch(() => null);
      if (session && !job.calls.some((c) => c.call.blobVersionedHashes)) onEvm++;
      if (a !== b) problems.push(`block ${n} ${name} ${firstDifference(a, b)}`);
    }
  }
  return { problems, compared, onEvm };
}

/**
 * Speculation on src/evm: each block's transactions split by sender into two parts, each replayed
 * alone as a speculative part; every transaction that `validPrefix` accepts (nothing it read was
 * changed before it by the other part, as the parts noted) must have exactly its serial answer, and
 * the parts must not all fail. The same for each block's transactions as trace_callMany parts on
 * its parent. Returns the problems and how many items speculation accepted.
 */
export async function diffParts({
  chain,
  store,
}: EngineChain): Promise<{ problems: string[]; accepted: number; items: number }> {
  const head = await store.getHead();
  assert.ok(head);
  const problems: string[] = [];
  let accepted = 0;
  let items = 0;
  const types: TraceTypes = { trace: true, stateDiff: false, vmTrace: false };
  const jobs = replayJobs(chain, 'evm');
  for (let n = 1n; n <= head.number; n++) {
    const blockHash = await store.getCanonicalHash(n);
    const parentHash = await store.getCanonicalHash(n - 1n);
    assert.ok(blockHash && parentHash);
    const block = await chain.block(blockHash);
    assert.ok(block);
    const senders = block.transactions.map((tx) => tx.getSenderAddress().toString());
    const parts = partitionBySender(senders, 2);
    if (!parts) continue;
    items += senders.length * 2;
    // Replay parts.
    const serial = (await jobs.replayBlock({ blockHash, types })).map((b) => Buffer.from(b).toString());
    const runs = await Promise.all(
      parts.map((indices) => jobs.replayBlockPart({ blockHash, types, indices })),
    );
    const prefix = validPrefix(
      runs.map((r, p) => ({ indices: parts[p] as number[], access: r.access })),
      senders.length,
    );
    accepted += prefix;
    for (const [p, run] of runs.entries()) {
      for (const [i, result] of run.results.entries()) {
        const index = (parts[p] as number[])[i] as number;
        if (index < prefix && Buffer.from(result).toString() !== serial[index])
          problems.push(
            `block ${n} replay part: transaction ${index} accepted with a result not its serial one`,
          );
      }
    }
    // trace_callMany parts on the parent.
    const calls = block.transactions.map((tx) => ({ call: txAsCall(tx, false), types }));
    const whole = JSON.parse(
      Buffer.from(
        await runCallMany(chain, LIMITS, { blockHash: parentHash, calls, single: false }, 'evm'),
      ).toString(),
    ) as unknown[];
    const callRuns = await Promise.all(
      parts.map((indices) =>
        runCallManyPart(
          chain,
          LIMITS,
          { blockHash: parentHash, calls: indices.map((i) => calls[i] as (typeof calls)[number]), indices },
          'evm',
        ),
      ),
    );
    const callPrefix = validPrefix(
      callRuns.map((r, p) => ({ indices: parts[p] as number[], access: r.access })),
      senders.length,
    );
    accepted += callPrefix;
    for (const [p, run] of callRuns.entries()) {
      for (const [i, result] of run.results.entries()) {
        const index = (parts[p] as number[])[i] as number;
        if (index < callPrefix && Buffer.from(result).toString() !== JSON.stringify(whole[index]))
          problems.push(`block ${n} callMany part: call ${index} accepted with a result not its serial one`);
      }
    }
  }
  return { problems, accepted, items };
}

/**
 * geth's call methods on both engines: each block's transactions as eth_call and eth_estimateGas on
 * its parent, without fees and with them, and with a state override.
 */
export async function diffCalls({
  chain,
  store,
}: EngineChain): Promise<{ problems: string[]; compared: number }> {
  const head = await store.getHead();
  assert.ok(head);
  const problems: string[] = [];
  let compared = 0;
  const old = callJobs(chain, LIMITS, 'ethereumjs');
  const ours = callJobs(chain, LIMITS, 'evm');
  for (let n = 1n; n <= head.number; n++) {
    const blockHash = await store.getCanonicalHash(n);
    const parentHash = await store.getCanonicalHash(n - 1n);
    assert.ok(blockHash && parentHash);
    const block = await chain.block(blockHash);
    assert.ok(block);
    // Estimates run a call a dozen times, and a looping transaction with the whole gas cap costs
    // seconds: the first transaction of each block is enough.
    for (const [i, tx] of block.transactions.slice(0, 1).entries()) {
      for (const withFees of [false, true]) {
        const call = txAsCall(tx, withFees);
        const variants: Array<[string, CallJob]> = [
          ['', { blockHash: parentHash, call, overrides: {} }],
          [
            ' overridden',
            {
              blockHash: parentHash,
              call: withoutGas(call),
              overrides: {
                stateOverrides: [{ address: call.from as Uint8Array, override: { balance: 10n ** 24n } }],
              },
            },
          ],
        ];
        for (const [name, job] of variants) {
          for (const method of withFees && name === ''
            ? (['call'] as const)
            : (['call', 'estimateGas'] as const)) {
            const a = await outcome(() => old[method](job));
            const b = await outcome(() => ours[method](job));
            compared++;
            if (a !== b)
              problems.push(
                `block ${n} tx ${i}${withFees ? ' with fees' : ''}${name} ${method} ${firstDifference(a, b)}`,
              );
          }
        }
      }
    }
  }
  return { problems, compared };
}

function withoutGas(call: CallRequest): CallRequest {
  const { gas: _, ...rest } = call;
  return rest;
}

const STRUCT_DEFAULTS = {
  disableStack: false,
  disableStorage: false,
  enableMemory: false,
  enableReturnData: false,
  limit: 0,
};

/** Each geth tracer in each of its configurations, traced over whole blocks. */
export const BLOCK_TRACERS: readonly GethTracerConfig[] = [
  { tracer: 'structLogger', options: STRUCT_DEFAULTS },
  {
    tracer: 'structLogger',
    options: { ...STRUCT_DEFAULTS, disableStack: true, disableStorage: true, enableReturnData: true },
  },
  { tracer: 'callTracer', onlyTopCall: false, withLog: false },
  { tracer: 'callTracer', onlyTopCall: false, withLog: true },
  { tracer: 'callTracer', onlyTopCall: true, withLog: true },
  { tracer: 'prestateTracer', diffMode: false, disableCode: false, disableStorage: false },
  { tracer: 'prestateTracer', diffMode: true, disableCode: false, disableStorage: false },
  { tracer: 'prestateTracer', diffMode: true, disableCode: true, disableStorage: true },
  { tracer: 'noopTracer' },
];

/** Also for single transactions and calls, where memory (large on a whole block) stays small. */
export const SINGLE_TRACERS: readonly GethTracerConfig[] = [
  ...BLOCK_TRACERS,
  { tracer: 'structLogger', options: { ...STRUCT_DEFAULTS, enableMemory: true, enableReturnData: true } },
  { tracer: 'structLogger', options: { ...STRUCT_DEFAULTS, enableMemory: true, limit: 40 } },
  { tracer: 'callTracer', onlyTopCall: true, withLog: false },
  { tracer: 'prestateTracer', diffMode: false, disableCode: true, disableStorage: true },
];

/**
 * geth's debug tracers on both engines: every block with each of BLOCK_TRACERS
 * (debug_traceBlockByHash), each transaction alone (debug_traceTransaction) with SINGLE_TRACERS in
 * turn, and each transaction as a debug_traceCall on its parent (with its fees; the first of each
 * block also with overrides, and with a value its sender cannot pay). Each must run on src/evm:
 * `onEvm` counts the answers (or refusals) src/evm gave; null from traceBlockOnEvm or traceCallOnEvm
 * is a fall-back to ethereumjs, and is not counted.
 */
export async function diffDebugTraces(
  { chain, store }: EngineChain,
  blockTracers: readonly GethTracerConfig[] = BLOCK_TRACERS,
): Promise<{ problems: string[]; compared: number; onEvm: number }> {
  const head = await store.getHead();
  assert.ok(head);
  const problems: string[] = [];
  let compared = 0;
  let onEvm = 0;
  const old = debugJobs(chain, LIMITS, 'ethereumjs');
  const evmAnswer = async (run: () => Promise<Uint8Array | null>): Promise<Uint8Array> => {
    let answer: Uint8Array | null;
    try {
      answer = await run();
    } catch (e) {
      // Refused on src/evm (a call's sender cannot pay): its words are compared too.
      onEvm++;
      throw e;
    }
    if (answer === null) throw new Error('fell back to ethereumjs');
    onEvm++;
    return answer;
  };
  const compare = async (
    name: string,
    a: () => Promise<Uint8Array>,
    b: () => Promise<Uint8Array | null>,
  ): Promise<void> => {
    const text = (answer: Uint8Array) => Buffer.from(answer).toString();
    const x = await outcome(() => a().then(text));
    const y = await outcome(() => evmAnswer(b).then(text));
    compared++;
    if (x !== y) problems.push(`${name} ${firstDifference(x, y)}`);
  };
  let turn = 0;
  for (let n = 1n; n <= head.number; n++) {
    const blockHash = await store.getCanonicalHash(n);
    const parentHash = await store.getCanonicalHash(n - 1n);
    assert.ok(blockHash && parentHash);
    const block = await chain.block(blockHash);
    assert.ok(block);
    for (const config of blockTracers) {
      const job: DebugTraceBlockJob = { blockHash, config };
      await compare(
        `block ${n} ${JSON.stringify(config)}`,
        () => old.debugTraceBlock(job),
        () => traceBlockOnEvm(chain, job),
      );
    }
    for (const [txIndex, tx] of block.transactions.entries()) {
      const config = SINGLE_TRACERS[turn++ % SINGLE_TRACERS.length] as GethTracerConfig;
      const job: DebugTraceBlockJob = { blockHash, config, txIndex };
      await compare(
        `block ${n} tx ${txIndex} ${JSON.stringify(config)}`,
        () => old.debugTraceBlock(job),
        () => traceBlockOnEvm(chain, job),
      );
      const calls: Array<[string, DebugTraceCallJob]> = [
        ['call', { blockHash: parentHash, call: txAsCall(tx, true), config }],
      ];
      if (txIndex === 0) {
        const plain = txAsCall(tx, false);
        for (const each of SINGLE_TRACERS) {
          calls.push(
            [
              'call overridden',
              {
                blockHash: parentHash,
                call: plain,
                config: each,
                stateOverrides: [
                  { address: plain.from as Uint8Array, override: { balance: 10n ** 30n, nonce: 3n } },
                ],
                blockOverrides: {
                  number: block.header.number,
                  time: block.header.timestamp,
                  feeRecipient: Uint8Array.from({ length: 20 }, (_, i) => 0xc0 + i),
                },
              },
            ],
            [
              'call unaffordable',
              { blockHash: parentHash, call: { ...plain, value: 10n ** 40n }, config: each },
            ],
          );
        }
      }
      for (const [name, call] of calls) {
        await compare(
          `block ${n} tx ${txIndex} ${name} ${JSON.stringify(call.config)}`,
          () => old.debugTraceCall(call),
          () => traceCallOnEvm(chain, LIMITS, call),
        );
      }
    }
  }
  return { problems, compared, onEvm };
}
