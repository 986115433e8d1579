import assert from 'node:assert/strict';
import { ChainReader } from '../../src/chain/reader.ts';
import { readStoredSpec } from '../../src/chain/storedSpec.ts';
import type { TraceTypes } from '../../src/core/call.ts';
import type { Engine } from '../../src/exec/evmEngine.ts';
import { replayOnEvm } from '../../src/exec/evmReplay.ts';
import { replayJobs } from '../../src/exec/jobs/replay.ts';
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
    if (Array.isArray(value) && value.every((v) => v instanceof Uint8Array))
      return `[${value.map((v) => Buffer.from(v).toString()).join(',')}]`;
    return JSON.stringify(value);
  } catch (e) {
    return `error ${(e as Error).name}: ${(e as Error).message}`;
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
