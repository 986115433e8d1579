// The execution layer in process, without a server, pool or transport: `executionApi` over a store
// holding the execution-apis conformance chain, each job's answer checked against the expected
// response of the conformance case it answers (eth_call, eth_estimateGas, eth_createAccessList,
// debug_traceBlockByNumber), and replays and flat traces checked against the chain's own receipts.
// What a request adds around a job (parameter parsing, the envelope) is the rpc layer's: the cases'
// params are read with its parsers and errors rendered with its `toWireError`, as a server would.
import assert from 'node:assert/strict';
import { join, resolve } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { readChainSpec } from '../../src/chain/genesis.ts';
import { ChainReader } from '../../src/chain/reader.ts';
import { DEFAULT_LIMITS } from '../../src/config/limits.ts';
import { type ExecutionApi, executionApi } from '../../src/exec/api.ts';
import { importChain } from '../../src/ingest/importer.ts';
import { quantityToHex, toHex } from '../../src/primitives/hex.ts';
import { callObject } from '../../src/rpc/callObject.ts';
import { toWireError } from '../../src/rpc/errors.ts';
import { DEFAULT_TRACE_OPTIONS, traceConfig } from '../../src/rpc/methods/debug/traceConfig.ts';
import { openLmdbStore } from '../../src/store/lmdb/index.ts';
import type { ChainStore } from '../../src/store/types.ts';
import { type IoCase, loadIoCases } from '../conformance/ioFile.ts';
import { tempDir } from '../support/cli.ts';

const CONFORMANCE = resolve(import.meta.dirname, '..', '..', '..', 'shared', 'conformance', 'execution-apis');

interface Request {
  params: unknown[];
}
interface Response {
  result?: unknown;
  error?: { code: number; message: string; data?: unknown };
}

interface Case {
  name: string;
  /** hive checks only the answer's shape: a result where one is expected, an error where one is. */
  speconly: boolean;
  request: Request;
  response: Response;
}

/** The cases of `method`, one exchange each. */
function cases(method: string): Case[] {
  return loadIoCases(CONFORMANCE)
    .filter((c: IoCase) => c.method === method && c.invalid === undefined)
    .flatMap((c) =>
      c.exchanges.map((x) => ({
        name: c.name,
        speconly: c.speconly,
        request: JSON.parse(x.request) as Request,
        response: JSON.parse(x.response) as Response,
      })),
    );
}

/** `got` is the case's answer: equal to it, or of its kind (result or error) for a speconly case. */
function assertAnswers(got: Response, c: Case): void {
  if (!c.speconly) assert.deepEqual(got, expected(c.response), c.name);
  else assert.equal('result' in got, c.response.result !== undefined, `${c.name}: ${JSON.stringify(got)}`);
}

/** A job's answer as the wire has it: the result, or the error a server would send. */
async function answer(run: () => Promise<unknown>, render: (value: never) => unknown): Promise<Response> {
  try {
    return { result: render((await run()) as never) };
  } catch (e) {
    return { error: toWireError(e) };
  }
}

const json = (bytes: Uint8Array): unknown => JSON.parse(Buffer.from(bytes).toString('utf8'));

/** The expected response without its envelope. */
const expected = (r: Response): Response =>
  r.error === undefined ? { result: r.result } : { error: r.error };

describe('the execution layer in process, on the conformance chain', () => {
  const dir = tempDir('ethtrace-exec-api-');
  let store: ChainStore;
  let chain: ChainReader;
  let api: ExecutionApi;
  let head: Uint8Array;

  before(async () => {
    const spec = readChainSpec(join(CONFORMANCE, 'genesis.json'));
    store = await openLmdbStore(dir.path);
    await importChain({ store, spec, files: [join(CONFORMANCE, 'chain.rlp')], verifyStateRoot: true });
    chain = new ChainReader(store, spec);
    api = executionApi(chain, DEFAULT_LIMITS.calls);
    const top = await store.getHead();
    assert.ok(top);
    head = top.hash;
  });
  after(async () => {
    await store.close();
    dir.cleanup();
  });

  /** The block a case's block parameter names ("latest" or a number). */
  async function blockHash(selector: unknown): Promise<Uint8Array> {
    if (selector === undefined || selector === 'latest') return head;
    const hash = await store.getCanonicalHash(BigInt(selector as string));
    assert.ok(hash, `block ${String(selector)}`);
    return hash;
  }

  for (const [method, run] of [
    [
      'eth_call',
      (api: ExecutionApi, job: Parameters<ExecutionApi['call']>[0]) => answer(() => api.call(job), toHex),
    ],
    [
      'eth_estimateGas',
      (api: ExecutionApi, job: Parameters<ExecutionApi['call']>[0]) =>
        answer(() => api.estimateGas(job), quantityToHex),
    ],
    [
      'eth_createAccessList',
      (api: ExecutionApi, job: Parameters<ExecutionApi['call']>[0]) =>
        answer(
          () => api.createAccessList(job),
          (r: Awaited<ReturnType<ExecutionApi['createAccessList']>>) => ({
            accessList: r.accessList.map((e) => ({
              address: toHex(e.address),
              storageKeys: e.storageKeys.map(toHex),
            })),
            gasUsed: quantityToHex(r.gasUsed),
            ...(r.error === undefined ? {} : { error: r.error }),
          }),
        ),
    ],
  ] as const) {
    it(`${method}: every conformance case answered as expected`, async () => {
      const all = cases(method);
      assert.ok(all.length > 0, `no ${method} cases`);
      for (const c of all) {
        const [call, block] = c.request.params;
        const job = { blockHash: await blockHash(block), call: callObject(call), overrides: {} };
        assertAnswers(await run(api, job), c);
      }
    });
  }

  it('debugTraceBlock: every debug_traceBlockByNumber case answered as expected', async () => {
    // A block parameter that is not a hex quantity ("3") is the rpc layer's refusal, not a job.
    const all = cases('debug_traceBlockByNumber').filter((c) =>
      /^0x[0-9a-f]+$/.test(String(c.request.params[0])),
    );
    assert.ok(all.length > 0);
    for (const c of all) {
      const [block, config] = c.request.params;
      const options = config === undefined ? DEFAULT_TRACE_OPTIONS : traceConfig(config);
      const job = { blockHash: await blockHash(block), config: options.tracer };
      const got = await answer(() => api.debugTraceBlock(job), json);
      assertAnswers(got, c);
    }
  });

  it("replayBlock, its speculative parts and flatTraces: a trace per transaction, each the receipt's transaction, failed where it failed", async () => {
    const top = await store.getHead();
    assert.ok(top);
    let transactions = 0;
    let failures = 0;
    for (let n = 1n; n <= top.number; n++) {
      const hash = await blockHash(quantityToHex(n));
      const receiptsJson = await chain.blockReceiptsJson(hash);
      assert.ok(receiptsJson);
      const receipts = json(receiptsJson) as Array<{ transactionHash: string; status: string }>;
      const replayed = await api.replayBlock({
        blockHash: hash,
        types: { trace: true, stateDiff: false, vmTrace: false },
      });
      assert.equal(replayed.length, receipts.length, `block ${n}`);
      // A speculative part of every transaction is the block replayed; a part of the first alone
      // answers as the block's first (each sees the parent state), with what it read recorded.
      const types = { trace: true, stateDiff: true, vmTrace: false };
      const serial = (await api.replayBlock({ blockHash: hash, types })).map(json);
      const indices = receipts.map((_, i) => i);
      const whole = await api.replayBlockPart({ blockHash: hash, types, indices });
      assert.deepEqual(whole.results.map(json), serial, `block ${n}: a part of every transaction`);
      if (receipts.length > 1) {
        const first = await api.replayBlockPart({ blockHash: hash, types, indices: [0] });
        assert.deepEqual(first.results.map(json), serial.slice(0, 1), `block ${n}: a part of the first`);
        assert.ok(first.access.length > 0, `block ${n}: the first's reads recorded`);
      }
      const flat = await api.flatTraces({ blockHash: hash });
      assert.equal(flat.txStart.length, receipts.length + 1, `block ${n}`);
      for (const [i, receipt] of receipts.entries()) {
        const root = flat.entries[flat.txStart[i] ?? -1];
        assert.ok(root && root.tx === i && root.path === '', `block ${n} tx ${i}`);
        const trace = JSON.parse(root.json) as { transactionHash: string; error?: string };
        assert.equal(trace.transactionHash, receipt.transactionHash);
        assert.equal(
          trace.error !== undefined,
          receipt.status === '0x0',
          `block ${n} tx ${i}: ${trace.error}`,
        );
        const replay = json(replayed[i] as Uint8Array) as { trace: Array<{ error?: string }> };
        assert.equal(replay.trace[0]?.error, trace.error);
        transactions++;
        if (receipt.status === '0x0') failures++;
      }
    }
    assert.ok(transactions > 100 && failures > 0, `${transactions} transactions, ${failures} failed`);
  });
});
