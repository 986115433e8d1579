import type { Common } from '@ethereumjs/common';
import type { BlockOverrides, CallRequest, StateOverrides } from '../core/call.ts';
import { metElsewhere } from '../core/caught.ts';
import { forkByName, forkRules } from '../evm/forks.ts';
import { precompilesFor } from '../evm/precompiles/index.ts';
import { addressBytes } from '../evm/words.ts';
import { bytesKey } from '../primitives/hex.ts';
import { LruCache } from '../primitives/lru.ts';
import type { JobKind, JobPayload, JobResult } from './api.ts';
import { type ExecutionClient, type RunOptions, WrappingClient } from './client.ts';

/** Accounts every run on a block's rules reads, whatever it runs (read ahead with the rest). */
export type AlsoRead = (common: Common) => readonly Uint8Array[];

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
    alsoRead?: AlsoRead,
  ): Promise<void>;
  /** The state a replay of the block reads (its parent's). */
  block(blockHash: Uint8Array, alsoRead?: AlsoRead): Promise<void>;
}

const precompileLists = new Map<string, readonly Uint8Array[]>();

/**
 * The precompiles' accounts, which src/evm reads at the start of every transaction from Berlin on
 * (it warms them): no prestateTracer names them, and a run that met them missing would stop for
 * them (src/exec/fetchingState.ts), once per worker whose cache had not seen them yet.
 */
export function evmAlsoRead(common: Common): readonly Uint8Array[] {
  const hardfork = common.hardfork();
  let list = precompileLists.get(hardfork);
  if (list === undefined) {
    const name = forkByName(hardfork);
    const rules = name ? forkRules(name) : null;
    list =
      rules?.accessLists === true
        ? [...precompilesFor(rules.precompiles).keys()].map((n) => addressBytes(BigInt(n)))
        : [];
    precompileLists.set(hardfork, list);
  }
  return list;
}

// Calls and blocks read ahead lately: a speculated request that falls back to serial, or a block
// replayed for several methods, does not ask the upstream twice.
const REMEMBERED = 4096;

/**
 * An execution client that reads ahead each job's state before running it: the calls of call jobs,
 * the parent state of replay jobs. Which state a kind of job needs is known here, from its payload,
 * so the services that make the jobs need not know where state comes from. A read-ahead under way
 * is shared by the jobs that need it (the speculative parts of one replay, the replays of one block
 * for several methods), and the job's deadline starts after it: it bounds execution, and the
 * upstream's wait has its own bound (src/upstream/budget.ts).
 */
export class PrefetchingClient extends WrappingClient {
  private readonly done = new LruCache<string, true>(REMEMBERED);
  private readonly running = new Map<string, Promise<void>>();

  constructor(
    inner: ExecutionClient,
    private readonly prefetcher: Prefetcher,
    /** What the EVM the jobs run on reads besides what the calls touch. */
    private readonly alsoRead: AlsoRead = evmAlsoRead,
  ) {
    super(inner);
  }

  async run<K extends JobKind>(kind: K, payload: JobPayload<K>, options?: RunOptions): Promise<JobResult<K>> {
    await this.readAhead(kind, payload);
    return this.inner.run(kind, payload, options);
  }

  override prepare<K extends JobKind>(kind: K, payload: JobPayload<K>): Promise<void> {
    return this.readAhead(kind, payload);
  }

  /** `work` once for `key` while it runs, then remembered as done (a failure is not remembered). */
  private once(key: string, work: () => Promise<void>): Promise<void> {
    if (this.done.get(key)) return Promise.resolve();
    const under = this.running.get(key);
    if (under !== undefined) return under;
    const started = work().then(
      () => {
        this.running.delete(key);
        this.done.set(key, true);
      },
      (e: unknown) => {
        this.running.delete(key);
        throw e;
      },
    );
    this.running.set(key, started);
    return started;
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
      case 'simulate': {
        // Each block's calls read ahead on the base state with its overrides: what later blocks read
        // of earlier ones' writes is fetched when the run meets it.
        const j = job as JobPayload<'simulate'>;
        await Promise.all(
          j.blocks.map((b) =>
            this.calls(j.blockHash, b.calls, {
              ...(b.stateOverrides ? { stateOverrides: b.stateOverrides } : {}),
            }),
          ),
        );
        return;
      }
      case 'debugTraceCall': {
        const j = job as JobPayload<'debugTraceCall'>;
        return this.calls(j.blockHash, [j.call], overridesOf(j));
      }
      case 'callBundles': {
        // With `before`, the calls run on the parent's state after some of the block's
        // transactions: the replay's state is read ahead, and the calls' on the parent's.
        const j = job as JobPayload<'callBundles'>;
        const calls = j.bundles.flatMap((bundle) => bundle.calls);
        const overrides = j.stateOverrides ? { stateOverrides: j.stateOverrides } : {};
        if (!j.before) return this.calls(j.blockHash, calls, overrides);
        const { parentHash } = j.before;
        await this.once(`block:${bytesKey(j.blockHash)}`, () =>
          this.prefetcher.block(j.blockHash, this.alsoRead),
        );
        return this.calls(parentHash, calls, overrides);
      }
      case 'signedBundle': {
        const j = job as JobPayload<'signedBundle'>;
        return this.calls(j.blockHash, j.calls, {});
      }
      case 'replayBlock':
      case 'replayBlockPart':
      case 'flatTraces':
      case 'debugTraceBlock': {
        const { blockHash } = job as { blockHash: Uint8Array };
        return this.once(`block:${bytesKey(blockHash)}`, () =>
          this.prefetcher.block(blockHash, this.alsoRead),
        );
      }
      default:
        // A kind added to ExecutionApi without a read-ahead here fails the type check: in upstream
        // mode it would run with nothing read ahead, one round trip per account it touches.
        return unhandledKind(kind);
    }
  }

  private async calls(
    blockHash: Uint8Array,
    calls: readonly CallRequest[],
    overrides: { stateOverrides?: StateOverrides; blockOverrides?: BlockOverrides },
  ): Promise<void> {
    const prefix = `${bytesKey(blockHash)}:${keyOf(overrides)}`;
    const keys = calls.map((call) => `${prefix}:${keyOf(call)}`);
    // Calls another job is reading ahead now are waited for, not asked for again.
    const waits: Array<Promise<void>> = [];
    const fresh: CallRequest[] = [];
    const freshKeys = new Set<string>();
    calls.forEach((call, i) => {
      const key = keys[i] as string;
      if (this.done.get(key)) return;
      const under = this.running.get(key);
      if (under !== undefined) waits.push(under);
      else if (!freshKeys.has(key)) {
        fresh.push(call);
        freshKeys.add(key);
      }
    });
    if (fresh.length > 0) {
      const reading = this.prefetcher.calls(
        blockHash,
        fresh,
        {
          ...(overrides.stateOverrides ? { stateOverrides: overrides.stateOverrides } : {}),
          ...(overrides.blockOverrides ? { blockOverrides: overrides.blockOverrides } : {}),
        },
        this.alsoRead,
      );
      const settled = reading.then(
        () => {
          for (const key of freshKeys) {
            this.running.delete(key);
            this.done.set(key, true);
          }
        },
        (e: unknown) => {
          for (const key of freshKeys) this.running.delete(key);
          throw e;
        },
      );
      // Each waiter hears the failure; nobody waiting is no unhandled rejection.
      metElsewhere(settled);
      for (const key of freshKeys) this.running.set(key, settled);
      waits.push(settled);
    }
    await Promise.all(waits);
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

function unhandledKind(kind: never): never {
  throw new Error(`no read-ahead for execution job kind ${String(kind)}`);
}
