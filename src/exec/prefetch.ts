import type { BlockOverrides, CallRequest, StateOverrides } from '../core/call.ts';
import { bytesKey } from '../primitives/hex.ts';
import { LruCache } from '../primitives/lru.ts';
import type { JobKind, JobPayload, JobResult } from './api.ts';
import type { ExecutionClient, RunOptions } from './client.ts';

/**
 * Reads ahead the state a job will need, where state comes from far away (upstream mode:
 * src/upstream/prefetch.ts), so the job does not wait on one round trip per account or slot.
 */
export interface Prefetcher {
  /** The state calls on top of block `blockHash` read. */
  calls(
    blockHash: Uint8Array,
    calls: readonly CallRequest[],
    overrides: { stateOverrides?: StateOverrides; blockOverrides?: BlockOverrides },
  ): Promise<void>;
  /** The state a replay of the block reads (its parent's). */
  block(blockHash: Uint8Array): Promise<void>;
}

// Calls and blocks read ahead lately: a speculated request that falls back to serial, or a block
// replayed for several methods, does not ask the upstream twice.
const REMEMBERED = 4096;

/**
 * An execution client that reads ahead each job's state before running it: the calls of call jobs,
 * the parent state of replay jobs. Which state a kind of job needs is known here, from its payload,
 * so the services that make the jobs need not know where state comes from.
 */
export class PrefetchingClient implements ExecutionClient {
  private readonly done = new LruCache<string, true>(REMEMBERED);

  constructor(
    private readonly inner: ExecutionClient,
    private readonly prefetcher: Prefetcher,
  ) {}

  async run<K extends JobKind>(kind: K, payload: JobPayload<K>, options?: RunOptions): Promise<JobResult<K>> {
    await this.readAhead(kind, payload);
    return this.inner.run(kind, payload, options);
  }

  private async readAhead<K extends JobKind>(kind: K, payload: JobPayload<K>): Promise<void> {
    const job = payload as JobPayload<JobKind>;
    switch (kind) {
      case 'callMany':
      case 'callManyPart': {
        const j = job as JobPayload<'callMany'>;
        return this.calls(
          j.blockHash,
          j.calls.map((c) => c.call),
          overridesOf(j),
        );
      }
      case 'call':
      case 'estimateGas':
      case 'createAccessList': {
        const j = job as JobPayload<'call'>;
        return this.calls(j.blockHash, [j.call], j.overrides);
      }
      case 'debugTraceCall': {
        const j = job as JobPayload<'debugTraceCall'>;
        return this.calls(j.blockHash, [j.call], overridesOf(j));
      }
      case 'replayBlock':
      case 'replayBlockPart':
      case 'flatTraces':
      case 'debugTraceBlock': {
        const key = `block:${bytesKey((job as { blockHash: Uint8Array }).blockHash)}`;
        if (this.done.get(key)) return;
        await this.prefetcher.block((job as { blockHash: Uint8Array }).blockHash);
        this.done.set(key, true);
        return;
      }
    }
  }

  private async calls(
    blockHash: Uint8Array,
    calls: readonly CallRequest[],
    overrides: { stateOverrides?: StateOverrides; blockOverrides?: BlockOverrides },
  ): Promise<void> {
    const prefix = `${bytesKey(blockHash)}:${keyOf(overrides)}`;
    const fresh = calls.filter((call) => !this.done.get(`${prefix}:${keyOf(call)}`));
    if (fresh.length === 0) return;
    await this.prefetcher.calls(blockHash, fresh, {
      ...(overrides.stateOverrides ? { stateOverrides: overrides.stateOverrides } : {}),
      ...(overrides.blockOverrides ? { blockOverrides: overrides.blockOverrides } : {}),
    });
    for (const call of fresh) this.done.set(`${prefix}:${keyOf(call)}`, true);
  }

  get size(): number {
    return this.inner.size;
  }

  get deadlineMs(): number {
    return this.inner.deadlineMs;
  }

  spareWorkers(): number {
    return this.inner.spareWorkers();
  }

  batch<T>(work: () => Promise<T>): Promise<T> {
    return this.inner.batch(work);
  }

  stats() {
    return this.inner.stats();
  }

  warm(): Promise<void> {
    return this.inner.warm();
  }

  close(): Promise<void> {
    return this.inner.close();
  }
}

/**
 * Only the overrides of a job: the job itself holds every call (and a part its indices), which would
 * make each remembered key as long as the request (tens of KB for 200 calls: V8 hashes such strings
 * by length alone, so lookups compare them whole) and differ between a request's parts and its
 * serial run.
 */
function overridesOf(job: { stateOverrides?: StateOverrides; blockOverrides?: BlockOverrides }): {
  stateOverrides?: StateOverrides;
  blockOverrides?: BlockOverrides;
} {
  return {
    ...(job.stateOverrides ? { stateOverrides: job.stateOverrides } : {}),
    ...(job.blockOverrides ? { blockOverrides: job.blockOverrides } : {}),
  };
}

/** A stable text of plain data with bytes and bigints (a call, overrides), to remember it by. */
function keyOf(value: unknown): string {
  return JSON.stringify(value, (_k, v) =>
    typeof v === 'bigint' ? `n${v}` : v instanceof Uint8Array ? `b${bytesKey(v)}` : v,
  );
}
