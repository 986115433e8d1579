import assert from 'node:assert/strict';
import { AsyncLocalStorage } from 'node:async_hooks';
import { availableParallelism } from 'node:os';
import { after, describe, it } from 'node:test';
import {
  DomainError,
  type DomainErrorKind,
  ExecutionTimeout,
  InvalidArgument,
  RequestFailed,
  Reverted,
  Unavailable,
} from '../../src/core/errors.ts';
import {
  BUSY_MESSAGE,
  PoolClosedError,
  TIMEOUT_MESSAGE,
  WorkerPool,
  type WorkerPoolOptions,
} from '../../src/exec/pool/pool.ts';
import type { FixtureData } from './fixtures/poolWorker.ts';

const FIXTURE = new URL('./fixtures/poolWorker.ts', import.meta.url);

interface Echo {
  label: string;
  payload: unknown;
  threadId: number;
  inits: number;
}

const pools: WorkerPool[] = [];
after(() => Promise.all(pools.map((pool) => pool.close())));

function makePool(
  options: Partial<WorkerPoolOptions> & { data?: FixtureData } = {},
): WorkerPool & { logged: string[] } {
  const logged: string[] = [];
  const { data, ...rest } = options;
  const pool = new WorkerPool({
    workerModule: FIXTURE,
    workerData: data ?? { label: 'fixture' },
    size: 1,
    log: (line) => logged.push(line),
    ...rest,
  });
  pools.push(pool);
  return Object.assign(pool, { logged });
}

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (e) {
    return e;
  }
  assert.fail('expected a rejection');
}

function assertDomainError(e: unknown, kind: DomainErrorKind, message: string): asserts e is DomainError {
  assert.ok(e instanceof DomainError, `expected a DomainError, got ${String(e)}`);
  assert.equal(e.kind, kind);
  assert.equal(e.message, message);
}

describe('WorkerPool', () => {
  it('starts workers when work arrives, not before', async () => {
    const pool = makePool({ size: 2 });
    assert.equal(pool.stats().workers, 0);
    await pool.run('echo', null);
    assert.equal(pool.stats().workers, 1);
    // Not warmed: a worker that dies is replaced only when work needs it.
    await rejection(pool.run('exit', null));
    assert.equal(pool.stats().workers, 0);
  });

  it('returns handler results, initialising each worker once with workerData', async (t) => {
    const pool = makePool({ data: { label: 'from workerData' } });
    await pool.warm();
    t.diagnostic(`worker start: ${pool.stats().lastStartMs} ms (tsx registration + fixture init)`);
    const first = await pool.run<Echo>('echo', { n: 1n, list: [1, 'two'] });
    const second = await pool.run<Echo>('echo', null);
    assert.equal(first.label, 'from workerData');
    assert.deepEqual(first.payload, { n: 1n, list: [1, 'two'] });
    assert.equal(second.threadId, first.threadId);
    assert.equal(second.inits, 1);
  });

  it('transfers Uint8Array results, copying views into shared buffers first', async () => {
    const pool = makePool();
    const big = await pool.run<Uint8Array>('bytes', 4 * 1024 * 1024);
    assert.ok(big instanceof Uint8Array);
    assert.equal(big.byteLength, 4 * 1024 * 1024);
    assert.equal(big[big.length - 1], 7);
    const small = await pool.run<Uint8Array>('pooledBuffer', 'hello');
    assert.equal(new TextDecoder().decode(small), 'hello');
    // Had the pooled 8 KiB slab been transferred or cloned, the view's buffer would be that big.
    assert.equal(small.buffer.byteLength, 5);
  });

  it('passes domain errors through with their class, message and data', async () => {
    const pool = makePool();
    const failed = await rejection(pool.run('serverError', null));
    assert.ok(failed instanceof RequestFailed);
    assertDomainError(failed, 'failed', 'execution reverted');
    assert.equal(failed.data, '0x08c379a0');

    const revert = await rejection(pool.run('revert', null));
    assert.ok(revert instanceof Reverted);
    assertDomainError(revert, 'reverted', 'execution reverted: nope');
    assert.deepEqual(revert.output, Uint8Array.of(0x08, 0xc3, 0x79, 0xa0));

    const invalid = await rejection(pool.run('invalidParams', null));
    assert.ok(invalid instanceof InvalidArgument);
    assertDomainError(invalid, 'invalid argument', 'invalid argument 0: hex string without 0x prefix');
    assert.deepEqual(pool.logged, []);
  });

  it('turns other errors into internal errors, logging the cause with its worker stack', async () => {
    const pool = makePool();
    const e = await rejection(pool.run('typeError', null));
    assertDomainError(e, 'internal', 'internal error');
    assert.ok(e.cause instanceof Error);
    assert.equal(e.cause.name, 'TypeError');
    assert.match(e.cause.stack ?? '', /poolWorker\.ts/);
    assert.equal(pool.logged.length, 1);
    assert.match(pool.logged[0] ?? '', /'typeError' failed in a worker: TypeError: cannot read properties/);

    assertDomainError(await rejection(pool.run('noSuchKind', null)), 'internal', 'internal error');
    assert.match(pool.logged[1] ?? '', /no handler for 'noSuchKind'/);
    // A DomainError whose data cannot cross threads still answers, as an internal error.
    assertDomainError(await rejection(pool.run('uncloneableData', null)), 'internal', 'internal error');
    assertDomainError(await rejection(pool.run('echo', () => 1)), 'internal', 'internal error');
    assert.equal((await pool.run<Echo>('echo', 'still serving')).payload, 'still serving');
  });

  it('times out a request that runs forever, terminating and replacing only its worker', async () => {
    const pool = makePool({ size: 2, deadlineMs: 300 });
    await pool.warm();
    const started = performance.now();
    const [forever, honest] = await Promise.allSettled([
      pool.run('spinForever', null),
      pool.run<{ ms: number }>('spin', 600, { deadlineMs: 5_000 }),
    ]);
    assert.equal(forever.status, 'rejected');
    const timeout = (forever as PromiseRejectedResult).reason;
    assert.ok(timeout instanceof ExecutionTimeout);
    assertDomainError(timeout, 'execution timeout', TIMEOUT_MESSAGE);
    // The other worker's request, running past the deadline of the first, was not disturbed.
    assert.equal(honest.status, 'fulfilled');
    assert.equal((honest as PromiseFulfilledResult<{ ms: number }>).value.ms, 600);
    assert.ok(performance.now() - started < 2_000);

    assert.equal(pool.stats().timeouts, 1);
    // A warmed pool starts the replacement at once.
    assert.equal(pool.stats().workers, 2);
    await pool.warm();
    const spins = await Promise.all([
      pool.run<{ threadId: number }>('spin', 100),
      pool.run<{ threadId: number }>('spin', 100),
    ]);
    assert.equal(new Set(spins.map((spin) => spin.threadId)).size, 2, 'two live workers again');
  });

  it('answers the timeout about when the deadline passes', async () => {
    const pool = makePool({ deadlineMs: 5_000 });
    await pool.warm();
    const started = performance.now();
    const e = await rejection(pool.run('spinForever', null, { deadlineMs: 250 }));
    const elapsed = performance.now() - started;
    assertDomainError(e, 'execution timeout', TIMEOUT_MESSAGE);
    assert.ok(elapsed >= 240 && elapsed < 1_000, `timed out after ${elapsed} ms`);
    assert.equal((await pool.run<Echo>('echo', 'after')).payload, 'after');
  });

  it("stops a job's deadline while it waits for the main thread's answer, given in the context of its run()", async () => {
    const requests = new AsyncLocalStorage<string>();
    const pool = makePool({
      deadlineMs: 800,
      // Slower than the deadline: only execution counts toward it.
      answer: async (question) => {
        await new Promise((resolve) => setTimeout(resolve, 1_200));
        return { question, request: requests.getStore() };
      },
    });
    await pool.warm();
    const answered = await requests.run('request 7', () =>
      pool.run('spinAskSpin', { before: 300, after: 300, question: 'q' }),
    );
    assert.deepEqual(answered, { answer: { question: 'q', request: 'request 7' } });
    // Execution on both sides of the wait still adds up against the deadline.
    const e = await rejection(pool.run('spinAskSpin', { before: 500, after: 500, question: 'q' }));
    assertDomainError(e, 'execution timeout', TIMEOUT_MESSAGE);
  });

  it("hands a worker the main thread's failure to answer, a domain error in its own class", async () => {
    const pool = makePool({
      answer: async () => {
        throw new Unavailable('upstream http://127.0.0.1:1 unavailable: connect ECONNREFUSED (1 attempt)');
      },
    });
    assert.deepEqual(await pool.run('ask', 'q'), {
      error: {
        name: 'Unavailable',
        kind: 'unavailable',
        message: 'upstream http://127.0.0.1:1 unavailable: connect ECONNREFUSED (1 attempt)',
      },
    });
  });

  it('counts time in the queue toward the deadline, without terminating the busy worker', async () => {
    const pool = makePool({ size: 1 });
    await pool.warm();
    const long = pool.run<{ threadId: number }>('spin', 700);
    const started = performance.now();
    const e = await rejection(pool.run('echo', 'late', { deadlineMs: 200 }));
    const waited = performance.now() - started;
    assertDomainError(e, 'execution timeout', TIMEOUT_MESSAGE);
    assert.ok(waited < 600, `queued request timed out after ${waited} ms`);
    const { threadId } = await long;
    assert.equal((await pool.run<Echo>('echo', null)).threadId, threadId);
  });

  it('fails only the request whose worker exits, and replaces the worker', async () => {
    const pool = makePool({ size: 2 });
    await pool.warm();
    const [exited, neighbour] = await Promise.allSettled([
      pool.run('exit', null),
      pool.run<{ ms: number }>('spin', 300),
    ]);
    assert.equal(exited.status, 'rejected');
    assertDomainError((exited as PromiseRejectedResult).reason, 'internal', 'internal error');
    assert.equal(neighbour.status, 'fulfilled');
    assert.match(pool.logged[0] ?? '', /worker crashed running 'exit'.*exited with code 3/s);
    assert.equal((await pool.run<Echo>('echo', 'after exit')).payload, 'after exit');
    assert.equal(pool.stats().crashes, 1);
  });

  it('fails only the request whose worker throws asynchronously', async () => {
    const pool = makePool({ size: 1 });
    const e = await rejection(pool.run('throwLater', null));
    assertDomainError(e, 'internal', 'internal error');
    assert.ok(e.cause instanceof Error);
    assert.equal(e.cause.message, 'thrown from a timer');
    assert.equal((await pool.run<Echo>('echo', 'after throw')).payload, 'after throw');
  });

  it('refuses at once beyond size + maxQueue requests', async () => {
    const pool = makePool({ size: 1, maxQueue: 2 });
    // Not warmed: a request waiting for its worker to start counts as running, not queued.
    const accepted = [pool.run('spin', 200), pool.run('spin', 200), pool.run('spin', 200)];
    const started = performance.now();
    const e = await rejection(pool.run('spin', 200));
    assert.ok(performance.now() - started < 50);
    assertDomainError(e, 'busy', BUSY_MESSAGE);
    assert.equal(pool.stats().queued + pool.stats().busy, 3);
    const results = await Promise.all(accepted);
    assert.equal(results.length, 3);
    await pool.run('echo', 'room again');
  });

  it('runs as many requests at once as it has workers', async (t) => {
    const pool = makePool({ size: 2 });
    await pool.warm();
    const started = performance.now();
    const results = await Promise.all([
      pool.run<{ threadId: number }>('spin', 500),
      pool.run<{ threadId: number }>('spin', 500),
    ]);
    const wall = performance.now() - started;
    assert.notEqual(results[0]?.threadId, results[1]?.threadId);
    t.diagnostic(`two 500 ms handlers on two workers: ${wall.toFixed(0)} ms`);
    // One after the other they would take 1,000 ms.
    assert.ok(wall < 900, `two 500 ms handlers took ${wall} ms`);
  });

  it('keeps the main event loop responsive while workers busy-loop', async (t) => {
    // A core left for the main thread: this checks that work leaves it, not how the OS shares cores.
    const pool = makePool({ size: Math.max(1, availableParallelism() - 1) });
    await pool.warm();
    const spins = Array.from({ length: pool.size * 2 }, () => pool.run('spin', 400));
    const busy = Promise.all(spins);
    let done = false;
    void busy.finally(() => {
      done = true;
    });
    const latencies: number[] = [];
    while (!done) {
      const before = performance.now();
      await new Promise<void>((resolve) => setImmediate(resolve));
      latencies.push(performance.now() - before);
    }
    await busy;
    latencies.sort((a, b) => a - b);
    const p99 = latencies[Math.floor(latencies.length * 0.99)] ?? Number.NaN;
    const worst = latencies[latencies.length - 1] ?? Number.NaN;
    t.diagnostic(
      `${latencies.length} turns in 800 ms of work; setImmediate p99 ${p99.toFixed(2)} ms, max ${worst.toFixed(1)} ms`,
    );
    assert.ok(latencies.length > 100, `only ${latencies.length} event-loop turns`);
    assert.ok(p99 < 100, `setImmediate p99 ${p99} ms`);
    // A handler run on the main thread would stall it for a whole 400 ms spin.
    assert.ok(worst < 300, `setImmediate took up to ${worst} ms`);
  });

  it('drops a waiting request, or terminates the running one, when its signal aborts', async () => {
    const pool = makePool({ size: 1 });
    await pool.warm();
    const running = new AbortController();
    const waiting = new AbortController();
    const first = pool.run('spinForever', null, { signal: running.signal });
    const second = pool.run('echo', 'never sent', { signal: waiting.signal });
    waiting.abort(new Error('client went away'));
    assert.equal(((await rejection(second)) as Error).message, 'client went away');
    running.abort();
    assert.equal(((await rejection(first)) as Error).name, 'AbortError');
    assert.equal((await pool.run<Echo>('echo', 'next')).payload, 'next');
    assert.equal(
      ((await rejection(pool.run('echo', 1, { signal: AbortSignal.abort() }))) as Error).name,
      'AbortError',
    );
  });

  it('fails waiting requests, and warm(), when a worker cannot start', async () => {
    const pool = makePool({ size: 2, data: { label: 'broken', failInit: true } });
    const e = await rejection(pool.run('echo', null));
    assertDomainError(e, 'internal', 'internal error');
    assert.match(pool.logged[0] ?? '', /failed to start: Error: no chain store at \/nowhere/);
    const warm = await rejection(pool.warm());
    assert.match((warm as Error).message, /no chain store at \/nowhere/);
  });

  it('gives up on a worker that does not start in time', async () => {
    const pool = makePool({ data: { label: 'hangs', hangInit: true }, startTimeoutMs: 300 });
    const started = performance.now();
    assertDomainError(await rejection(pool.run('echo', null)), 'internal', 'internal error');
    assert.ok(performance.now() - started < 2_000);
    assert.match(pool.logged[0] ?? '', /did not start within 300 ms/);
    assert.equal(pool.stats().workers, 0);
  });

  it('close() fails everything outstanding, ends every worker, and refuses later runs', async () => {
    const pool = makePool({ size: 2, maxQueue: 4 });
    await pool.warm();
    const outstanding = [
      pool.run('spinForever', null),
      pool.run('spinForever', null),
      pool.run('echo', 'queued'),
    ];
    const settled = Promise.allSettled(outstanding);
    assert.equal(pool.stats().busy, 2);
    await pool.close();
    for (const result of await settled) {
      assert.equal(result.status, 'rejected');
      assert.ok((result as PromiseRejectedResult).reason instanceof PoolClosedError);
    }
    assert.equal(pool.stats().workers, 0);
    assert.ok((await rejection(pool.run('echo', null))) instanceof PoolClosedError);
    await rejection(pool.warm());
    await pool.close();
  });

  it('keeps a batch to as many jobs in the pool as it has workers, so others are not refused', async () => {
    const pool = makePool({ size: 1, maxQueue: 1 });
    await pool.warm();
    const finished: string[] = [];
    const track = (label: string, promise: Promise<unknown>) =>
      promise.then(
        () => finished.push(label),
        (e: Error) => finished.push(`${label}: ${e.message}`),
      );
    const batch = pool.batch(async () => {
      const jobs = ['b1', 'b2', 'b3', 'b4', 'b5'].map((label) => track(label, pool.run('echo', label)));
      await Promise.all(jobs);
    });
    // Another client's request, made once the batch's five are started (batch() runs its work at once).
    const outside = track('outside', pool.run('echo', 'outside'));
    await batch;
    await outside;
    // Before batches were bounded, b3–b5 found the queue full (-32005) and so did the outside request.
    assert.deepEqual(finished, ['b1', 'outside', 'b2', 'b3', 'b4', 'b5']);
  });

  it('gives the jobs of a batch one deadline, counted from the start of the batch', async () => {
    const pool = makePool({ size: 1, deadlineMs: 3_000 });
    await pool.warm();
    const outcome = await pool.batch(async () => {
      await pool.run('spin', 2_000);
      // Alone this would fit its own deadline; in the batch at most 1 s is left.
      return rejection(pool.run('spin', 2_000));
    });
    assertDomainError(outcome, 'execution timeout', TIMEOUT_MESSAGE);
    // Outside a batch, the same job has the whole deadline (once the worker the timeout terminated
    // is replaced: its start would count against the deadline).
    await pool.warm();
    assert.equal((await pool.run<{ ms: number }>('spin', 2_000)).ms, 2_000);
  });

  it('refuses an answer larger than maxResultBytes', async () => {
    const pool = makePool({ maxResultBytes: 1_000 });
    assert.equal((await pool.run<Uint8Array>('bytes', 1_000)).byteLength, 1_000);
    const refused = await rejection(pool.run('bytes', 1_001));
    assert.ok(refused instanceof DomainError);
    assert.equal(refused.kind, 'response too large');
    assert.match(refused.message, /response too large: the answer would exceed 1000 bytes/);
  });
});
