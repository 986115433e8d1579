import assert from 'node:assert/strict';
import type { TypedTransaction } from '@ethereumjs/tx';
import { ChainReader } from '../../src/chain/reader.ts';
import { readStoredSpec } from '../../src/chain/storedSpec.ts';
import { type CallLimits, DEFAULT_LIMITS } from '../../src/config/limits.ts';
import type { BlockOverrides, CallRequest, TraceTypes } from '../../src/core/call.ts';
import type { GethTracerConfig } from '../../src/core/traceConfig.ts';
import { type CallManyJob, runCallMany, runCallManyPart } from '../../src/exec/jobs/callMany.ts';
import { type CallJob, callJobs } from '../../src/exec/jobs/calls.ts';
import { type DebugTraceBlockJob, type DebugTraceCallJob, debugJobs } from '../../src/exec/jobs/debug.ts';
import { replayJobs } from '../../src/exec/jobs/replay.ts';
import { partitionBySender, validPrefix } from '../../src/exec/speculation.ts';
import { openLmdbStore } from '../../src/store/lmdb/index.ts';
import type { ChainStore } from '../../src/store/types.ts';
import {
  oracleCallJobs,
  oracleDebugJobs,
  oracleReplayJobs,
  oracleRunCallMany,
} from './ethereumjsOracle/index.ts';

// The differential harness of issue 20's execution paths: the same jobs run on the ethereumjs
// oracle (test/support/ethereumjsOracle, the paths as they ran before src/evm) and on src/evm over
// one stored chain, answers compared byte for byte.

export const REPLAY_TYPES: readonly TraceTypes[] = [
  { trace: true, stateDiff: false, vmTrace: false },
  { trace: false, stateDiff: true, vmTrace: false },
  { trace: true, stateDiff: true, vmTrace: false },
  { trace: false, stateDiff: false, vmTrace: true },
  { trace: true, stateDiff: true, vmTrace: true },
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
 * `evmChain`, when given, is the same
 * chain read through another store for src/evm (upstream mode: each engine on a cache of its own).
 */
export async function diffReplays(
  { chain, store }: EngineChain,
  types: readonly TraceTypes[] = REPLAY_TYPES,
  evmChain: EngineChain = { chain, store, close: async () => {} },
): Promise<{ problems: string[]; compared: number; txs: number }> {
  const head = await store.getHead();
  assert.ok(head);
  const old = oracleReplayJobs(chain);
  const ours = replayJobs(evmChain.chain);
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
export async function diffCallMany(
  { chain, store }: EngineChain,
  evmChain: EngineChain = { chain, store, close: async () => {} },
): Promise<{ problems: string[]; compared: number }> {
  const head = await store.getHead();
  assert.ok(head);
  const problems: string[] = [];
  let compared = 0;
  const both: TraceTypes = { trace: true, stateDiff: true, vmTrace: false };
  const all: TraceTypes = { trace: true, stateDiff: true, vmTrace: true };
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
        'no fees, with vmTrace',
        { blockHash: parentHash, calls: plain.map((call) => ({ call, types: all })), single: false },
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
            types: { trace: i % 2 === 0, stateDiff: i % 3 !== 0, vmTrace: i % 2 === 1 },
          })),
          single: false,
        },
      ],
      [
        'overrides and an unaffordable value',
        {
          blockHash: parentHash,
          calls: [
            { call: { ...first, value: 10n ** 40n }, types: all },
            ...plain.map((call) => ({ call, types: all })),
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
      [
        "a state override of a whole account's storage",
        {
          blockHash: parentHash,
          calls: plain.map((call) => ({ call, types: both })),
          stateOverrides: [
            ...(first.to
              ? [
                  {
                    address: first.to,
                    override: {
                      state: [[new Uint8Array(32), Uint8Array.of(5)]] as Array<[Uint8Array, Uint8Array]>,
                    },
                  },
                ]
              : []),
            {
              address: Uint8Array.from({ length: 20 }, (_, i) => i + 1),
              override: { state: [], stateDiff: [[Uint8Array.of(1), Uint8Array.of(2)]] } as {
                state: Array<[Uint8Array, Uint8Array]>;
                stateDiff: Array<[Uint8Array, Uint8Array]>;
              },
            },
          ],
          single: false,
        },
      ],
      ['trace_call', { blockHash: parentHash, calls: [{ call: first, types: both }], single: true }],
      [
        'trace_call with vmTrace',
        { blockHash: parentHash, calls: [{ call: first, types: all }], single: true },
      ],
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
      const { a, b } = await onBoth(
        () => oracleRunCallMany(chain, LIMITS, job),
        () => runCallMany(evmChain.chain, LIMITS, job),
      );
      compared++;
      if (a !== b) problems.push(`block ${n} ${name} ${firstDifference(a, b)}`);
    }
  }
  return { problems, compared };
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
  const jobs = replayJobs(chain);
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
        await runCallMany(chain, LIMITS, { blockHash: parentHash, calls, single: false }),
      ).toString(),
    ) as unknown[];
    const callRuns = await Promise.all(
      parts.map((indices) =>
        runCallManyPart(chain, LIMITS, {
          blockHash: parentHash,
          calls: indices.map((i) => calls[i] as (typeof calls)[number]),
          indices,
        }),
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
export async function diffCalls(
  { chain, store }: EngineChain,
  evmChain: EngineChain = { chain, store, close: async () => {} },
): Promise<{ problems: string[]; compared: number }> {
  const head = await store.getHead();
  assert.ok(head);
  const problems: string[] = [];
  let compared = 0;
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
          [
            ' with a whole storage overridden',
            {
              blockHash: parentHash,
              // With its own gas: a contract whose storage the override took away may loop, and a
              // loop run with the whole gas cap costs seconds on ethereumjs.
              call,
              overrides: {
                stateOverrides: [
                  { address: call.from as Uint8Array, override: { balance: 10n ** 24n } },
                  ...(call.to
                    ? [
                        {
                          address: call.to,
                          override: {
                            state: [[Uint8Array.of(1), Uint8Array.of(9)]] as Array<[Uint8Array, Uint8Array]>,
                          },
                        },
                      ]
                    : []),
                ],
              },
            },
          ],
        ];
        for (const [name, job] of variants) {
          // An estimate of a call whose storage the override took away may run it a dozen times:
          // eth_call is enough there.
          for (const method of (withFees && name === '') || name.includes('whole storage')
            ? (['call'] as const)
            : (['call', 'estimateGas'] as const)) {
            const { a, b } = await onBoth(
              () => oracleCallJobs(chain, LIMITS)[method](job),
              () => callJobs(evmChain.chain, LIMITS)[method](job),
            );
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

/** A job's answer on the oracle (`a`) and on src/evm (`b`). */
async function onBoth(
  oracle: () => Promise<unknown>,
  ours: () => Promise<unknown>,
): Promise<{ a: string; b: string }> {
  return { a: await outcome(oracle), b: await outcome(ours) };
}

const hex = (text: string): Uint8Array => Buffer.from(text.replace(/\s/g, ''), 'hex');

// BALANCE of each precompile address there is in some fork (0x01–0x11, P-256's 0x100) and of two
// that are none (0x12, 0x101), SLOAD of slot 1, SSTORE of slot 2, a CALL to 0xbeef: what geth's
// access-list tracer records, less the precompiles of the call's fork.
const PROBED = [...Array.from({ length: 0x12 }, (_, i) => i + 1), 0x100, 0x101];
const ACCESS_PROBE = hex(
  `${PROBED.map((a) => `61${a.toString(16).padStart(4, '0')}3150`).join('')}` +
    `6001545060036002556000600060006000600061beef5af15000`,
);

/**
 * eth_createAccessList on both engines: each block's transactions on its parent, without fees and
 * with them, and a probe of the fork's precompiles, storage and calls from a contract an override
 * puts in place. Returns the differences and how many jobs fell back to ethereumjs on src/evm.
 */
export async function diffAccessLists({
  chain,
  store,
}: EngineChain): Promise<{ problems: string[]; compared: number }> {
  const head = await store.getHead();
  assert.ok(head);
  const problems: string[] = [];
  let compared = 0;
  const probe = Uint8Array.from({ length: 20 }, (_, i) => 0xa0 + i);
  const prober = Uint8Array.from({ length: 20 }, (_, i) => 0x30 + i);
  for (let n = 1n; n <= head.number; n++) {
    const blockHash = await store.getCanonicalHash(n);
    const parentHash = await store.getCanonicalHash(n - 1n);
    assert.ok(blockHash && parentHash);
    const block = await chain.block(blockHash);
    assert.ok(block);
    const jobs: Array<[string, CallJob]> = [
      [
        'probe',
        {
          blockHash: parentHash,
          call: { from: prober, to: probe, gas: 1_000_000n },
          overrides: { stateOverrides: [{ address: probe, override: { code: ACCESS_PROBE } }] },
        },
      ],
    ];
    for (const [i, tx] of block.transactions.entries()) {
      jobs.push([`tx ${i}`, { blockHash: parentHash, call: txAsCall(tx, false), overrides: {} }]);
      jobs.push([`tx ${i} with fees`, { blockHash: parentHash, call: txAsCall(tx, true), overrides: {} }]);
    }
    for (const [name, job] of jobs) {
      const { a, b } = await onBoth(
        () => oracleCallJobs(chain, LIMITS).createAccessList(job),
        () => callJobs(chain, LIMITS).createAccessList(job),
      );
      compared++;
      if (a !== b) problems.push(`block ${n} ${name} createAccessList ${firstDifference(a, b)}`);
    }
  }
  return { problems, compared };
}

/** A blob's versioned hash: the version byte (0x01 is KZG's), then 31 bytes. */
function blobHash(version: number, n: number): Uint8Array {
  const hash = new Uint8Array(32);
  hash[0] = version;
  hash[31] = n;
  return hash;
}

// BLOBBASEFEE, BLOBHASH(0), BLOBHASH(1), BASEFEE and BALANCE(CALLER), returned as words.
const BLOB_PROBE = hex('4a600052 600049602052 600149604052 48606052 3331608052 60a06000f3');
// The same but the balance, which a trace_call's pure simulation shows otherwise than ethereumjs
// did (see test/exec/evmEngine.test.ts).
const BLOB_PROBE_NO_BALANCE = hex('4a600052 600049602052 600149604052 48606052 60806000f3');

/**
 * Calls with blobs, and the blob base fee override, on both engines on every parent: eth_call,
 * eth_estimateGas, eth_createAccessList, trace_call and debug_traceCall, valid and not (too many
 * blobs for the transaction or the block, a bad version byte, a blob fee cap below the blob base
 * fee, too little balance for the blob fee; blobs before Cancun). Also a state override that gives
 * an account's whole storage. Returns the differences and how many jobs were compared.
 */
export async function diffBlobCalls({
  chain,
  store,
}: EngineChain): Promise<{ problems: string[]; compared: number }> {
  const head = await store.getHead();
  assert.ok(head);
  const problems: string[] = [];
  let compared = 0;
  const probe = Uint8Array.from({ length: 20 }, (_, i) => 0xc0 + i);
  const sender = Uint8Array.from({ length: 20 }, (_, i) => 0x60 + i);
  const hashes = (count: number, version = 1) =>
    Array.from({ length: count }, (_, i) => blobHash(version, i));
  for (let n = 0n; n < head.number; n++) {
    const blockHash = await store.getCanonicalHash(n);
    assert.ok(blockHash);
    const header = await chain.header(blockHash);
    assert.ok(header);
    const fees =
      header.baseFeePerGas === undefined
        ? { gasPrice: 10n ** 9n }
        : { maxFeePerGas: header.baseFeePerGas * 2n + 1n, maxPriorityFeePerGas: 1n };
    const blob = (count: number, extra: Partial<CallRequest> = {}): CallRequest => ({
      from: sender,
      to: probe,
      gas: 200_000n,
      blobVersionedHashes: hashes(count),
      ...extra,
    });
    const cases: Array<[string, CallRequest, BlockOverrides | undefined]> = [
      ['one blob, no blob fee cap', blob(1), undefined],
      ['two blobs, a blob fee cap', blob(2, { maxFeePerBlobGas: 10n ** 6n }), undefined],
      ['two blobs with fees', blob(2, { maxFeePerBlobGas: 10n ** 6n, ...fees }), undefined],
      ['six blobs', blob(6, { maxFeePerBlobGas: 10n ** 6n }), undefined],
      ['seven blobs', blob(7, { maxFeePerBlobGas: 10n ** 6n }), undefined],
      ['22 blobs', blob(22, { maxFeePerBlobGas: 10n ** 6n }), undefined],
      [
        'a bad version',
        { ...blob(1, { maxFeePerBlobGas: 10n ** 6n }), blobVersionedHashes: hashes(2, 2) },
        undefined,
      ],
      ['no blobs', blob(0, { maxFeePerBlobGas: 10n ** 6n }), undefined],
      ['a blob fee cap below the override', blob(1, { maxFeePerBlobGas: 999n }), { blobBaseFee: 1000n }],
      [
        'a blob fee cap below the override, with fees',
        blob(1, { maxFeePerBlobGas: 999n, ...fees }),
        { blobBaseFee: 1000n },
      ],
      ['a blob fee cap at the override', blob(1, { maxFeePerBlobGas: 1000n }), { blobBaseFee: 1000n }],
      ['no blob fee cap, an override', blob(1), { blobBaseFee: 1000n }],
      ['blob fees the sender cannot pay', blob(1, { maxFeePerBlobGas: 10n ** 20n, ...fees }), undefined],
      ['no blobs, an override', { from: sender, to: probe, gas: 200_000n }, { blobBaseFee: 1000n }],
    ];
    for (const [name, call, blockOverrides] of cases) {
      const stateOverrides = (code: Uint8Array) => [
        { address: sender, override: { balance: 10n ** 24n } },
        { address: probe, override: { code } },
      ];
      const job: CallJob = {
        blockHash,
        call,
        overrides: {
          stateOverrides: stateOverrides(BLOB_PROBE),
          ...(blockOverrides ? { blockOverrides } : {}),
        },
      };
      for (const method of ['call', 'estimateGas', 'createAccessList'] as const) {
        const { a, b } = await onBoth(
          () => oracleCallJobs(chain, LIMITS)[method](job),
          () => callJobs(chain, LIMITS)[method](job),
        );
        compared++;
        if (a !== b) problems.push(`block ${n} ${name} ${method} ${firstDifference(a, b)}`);
      }
      const traced: CallManyJob = {
        blockHash,
        calls: [{ call, types: { trace: true, stateDiff: true, vmTrace: false } }],
        stateOverrides: stateOverrides(BLOB_PROBE_NO_BALANCE),
        ...(blockOverrides ? { blockOverrides } : {}),
        single: true,
      };
      const { a, b } = await onBoth(
        () => oracleRunCallMany(chain, LIMITS, traced),
        () => runCallMany(chain, LIMITS, traced),
      );
      compared++;
      if (a !== b) problems.push(`block ${n} ${name} trace_call ${firstDifference(a, b)}`);
      // debug_traceCall with blobs: src/evm traces it too (the ethereumjs path once took it alone).
      for (const config of BLOB_TRACERS) {
        const job: DebugTraceCallJob = {
          blockHash,
          call,
          config,
          stateOverrides: stateOverrides(BLOB_PROBE),
          ...(blockOverrides ? { blockOverrides } : {}),
        };
        const { a, b } = await onBoth(
          () =>
            oracleDebugJobs(chain, LIMITS)
              .debugTraceCall(job)
              .then((x) => Buffer.from(x).toString()),
          () =>
            debugJobs(chain, LIMITS)
              .debugTraceCall(job)
              .then((x) => Buffer.from(x).toString()),
        );
        compared++;
        if (a !== b)
          problems.push(`block ${n} ${name} debug_traceCall ${config.tracer} ${firstDifference(a, b)}`);
      }
    }
  }
  return { problems, compared };
}

/** The geth tracers diffBlobCalls traces each blob call with. */
const BLOB_TRACERS: readonly GethTracerConfig[] = [
  { tracer: 'callTracer', onlyTopCall: false, withLog: true },
  {
    tracer: 'structLogger',
    options: {
      disableStack: false,
      disableStorage: false,
      enableMemory: true,
      enableReturnData: true,
      limit: 0,
    },
  },
  { tracer: 'prestateTracer', diffMode: true, disableCode: false, disableStorage: false },
];

/**
 * Calls of every shape a client may send (each transaction type, fee fields alone and together,
 * access lists, creations, amounts out of range, refusals), built from the first transaction of
 * each block and run on its parent by both engines: src/evm builds the plain ones itself and must
 * answer and refuse exactly as the ethereumjs transaction it stands in for.
 */
export async function diffCallShapes({
  chain,
  store,
}: EngineChain): Promise<{ problems: string[]; compared: number }> {
  const head = await store.getHead();
  assert.ok(head);
  const problems: string[] = [];
  let compared = 0;
  const old = oracleCallJobs(chain, LIMITS);
  const ours = callJobs(chain, LIMITS);
  for (let n = 1n; n <= head.number; n++) {
    const blockHash = await store.getCanonicalHash(n);
    const parentHash = await store.getCanonicalHash(n - 1n);
    assert.ok(blockHash && parentHash);
    const block = await chain.block(blockHash);
    assert.ok(block);
    const tx = block.transactions[0];
    if (!tx) continue;
    const base = block.header.baseFeePerGas ?? 0n;
    const from = tx.getSenderAddress().bytes;
    const to = tx.to?.bytes ?? new Uint8Array(20).fill(0x42);
    const key = new Uint8Array(32).fill(1);
    const list = [{ address: to, storageKeys: [key, new Uint8Array(32)] }];
    const shapes: Array<[string, CallRequest]> = [
      ['plain', { from, to, data: tx.data }],
      ['gas given', { from, to, gas: 100_000n, data: tx.data }],
      ['legacy price', { from, to, gas: 60_000n, gasPrice: base + 7n }],
      ['legacy price below base fee', { from, to, gasPrice: base > 0n ? base - 1n : 0n }],
      ['legacy price that overflows', { from, to, gas: 60_000n, gasPrice: 1n << 250n }],
      ['fee cap alone', { from, to, gas: 60_000n, maxFeePerGas: base + 10n }],
      ['tip alone', { from, to, gas: 60_000n, maxPriorityFeePerGas: 3n }],
      ['fee cap and tip', { from, to, gas: 60_000n, maxFeePerGas: base + 10n, maxPriorityFeePerGas: 2n }],
      ['tip above fee cap', { from, to, maxFeePerGas: base + 1n, maxPriorityFeePerGas: base + 2n }],
      ['fee cap that overflows', { from, to, gas: 60_000n, maxFeePerGas: 1n << 250n }],
      ['zero fee cap, type 2', { from, to, type: 2, maxFeePerGas: 0n }],
      ['type 2 named, legacy price', { from, to, type: 2, gasPrice: base + 5n }],
      ['access list', { from, to, accessList: list }],
      ['access list as type 2', { from, to, accessList: list, maxFeePerGas: base + 10n }],
      ['type 1 named, no list', { from, to, type: 1 }],
      [
        'access list address too short',
        { from, to, accessList: [{ address: to.subarray(1), storageKeys: [] }] },
      ],
      [
        'access list key too short',
        { from, to, accessList: [{ address: to, storageKeys: [key.subarray(1)] }] },
      ],
      ['value beyond any balance', { from, to, value: 1n << 255n }],
      ['value above 2^256', { from, to, value: 1n << 256n }],
      ['gas above 2^64', { from, to, gas: 1n << 65n }],
      ['intrinsic gas too low', { from, to, gas: 21_000n, data: new Uint8Array(64).fill(1) }],
      ['calldata floor', { from, to, gas: 30_000n, data: new Uint8Array(600).fill(1) }],
      [
        'creation',
        { from, data: new Uint8Array([0x60, 0x01, 0x60, 0x00, 0x52, 0x60, 0x20, 0x60, 0x00, 0xf3]) },
      ],
      ['creation past the initcode limit', { from, data: new Uint8Array(49_153) }],
      ['no sender', { to, data: tx.data }],
    ];
    for (const [name, call] of shapes) {
      const job: CallJob = { blockHash: parentHash, call, overrides: {} };
      for (const method of ['call', 'estimateGas'] as const) {
        const a = await outcome(() => old[method](job));
        const b = await outcome(() => ours[method](job));
        compared++;
        if (a !== b) problems.push(`block ${n} ${name} ${method} ${firstDifference(a, b)}`);
      }
    }
  }
  return { problems, compared };
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
 * block also with overrides, and with a value its sender cannot pay). Refusals are compared too.
 */
export async function diffDebugTraces(
  { chain, store }: EngineChain,
  blockTracers: readonly GethTracerConfig[] = BLOCK_TRACERS,
): Promise<{ problems: string[]; compared: number }> {
  const head = await store.getHead();
  assert.ok(head);
  const problems: string[] = [];
  let compared = 0;
  const old = oracleDebugJobs(chain, LIMITS);
  const ours = debugJobs(chain, LIMITS);
  const compare = async (
    name: string,
    a: () => Promise<Uint8Array>,
    b: () => Promise<Uint8Array>,
  ): Promise<void> => {
    const text = (answer: Uint8Array) => Buffer.from(answer).toString();
    const x = await outcome(() => a().then(text));
    const y = await outcome(() => b().then(text));
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
        () => ours.debugTraceBlock(job),
      );
    }
    for (const [txIndex, tx] of block.transactions.entries()) {
      const config = SINGLE_TRACERS[turn++ % SINGLE_TRACERS.length] as GethTracerConfig;
      const job: DebugTraceBlockJob = { blockHash, config, txIndex };
      await compare(
        `block ${n} tx ${txIndex} ${JSON.stringify(config)}`,
        () => old.debugTraceBlock(job),
        () => ours.debugTraceBlock(job),
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
          () => ours.debugTraceCall(call),
        );
      }
    }
  }
  return { problems, compared };
}

/**
 * Ops that fail (out of gas part-way, stack underflow, an undefined byte, a bad jump), each put at
 * an address by an override and called by debug_traceCall with the struct logger on the head block
 * at several gas limits, on both engines: the cost a struct log shows for an op that ran out of gas
 * is the whole cost ethereumjs worked out for it, which src/evm never charges in one piece.
 */
export async function diffFailingOps({
  chain,
  store,
}: EngineChain): Promise<{ problems: string[]; compared: number }> {
  const head = await store.getHead();
  assert.ok(head);
  const probe = Uint8Array.from({ length: 20 }, (_, i) => 0xb0 + i);
  const from = Uint8Array.from({ length: 20 }, (_, i) => 0x50 + i);
  const code: Record<string, string> = {
    'cold SLOAD': '600054',
    BALANCE: '6001310000',
    'MSTORE far out': '6001630100000052',
    CALLDATACOPY: '6120006000600037',
    LOG1: '61200060006000a1',
    SSTORE: '6001600055',
    CALL: '600060006000600060006001610100f1',
    CREATE: '61100060006000f0',
    KECCAK256: '612000600020',
    EXP: `7f${'ff'.repeat(32)}60020a`,
    'ADD underflow': '01',
    'SLOAD underflow': '54',
    'bad JUMP': '600356',
    INVALID: 'fe',
    'undefined byte': '0c',
    RETURN: '6210000060006000f3',
    SELFDESTRUCT: '61deadff',
    MCOPY: '61200060006000 5e'.replace(' ', ''),
    EXTCODECOPY: '612000600060006101005a3c',
  };
  const old = oracleDebugJobs(chain, LIMITS);
  const ours = debugJobs(chain, LIMITS);
  const config: GethTracerConfig = {
    tracer: 'structLogger',
    options: {
      disableStack: false,
      disableStorage: false,
      enableMemory: true,
      enableReturnData: true,
      limit: 0,
    },
  };
  const text = (answer: Uint8Array) => Buffer.from(answer).toString();
  const problems: string[] = [];
  let compared = 0;
  for (const [name, hex] of Object.entries(code)) {
    for (const gas of [30n, 200n, 2_000n, 30_000n]) {
      const job: DebugTraceCallJob = {
        blockHash: head.hash,
        call: { from, to: probe, gas: 21_000n + gas },
        config,
        stateOverrides: [
          { address: probe, override: { code: Buffer.from(hex, 'hex') } },
          { address: from, override: { balance: 10n ** 20n } },
        ],
      };
      const a = await outcome(() => old.debugTraceCall(job).then(text));
      const b = await outcome(() => ours.debugTraceCall(job).then(text));
      compared++;
      if (a !== b) problems.push(`${name} with ${gas} gas ${firstDifference(a, b)}`);
    }
  }
  return { problems, compared };
}
