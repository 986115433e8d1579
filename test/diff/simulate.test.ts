import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { asCall, serveTraceWorkload, type TraceWorkloadServers } from '../support/anvilTraces.ts';

/**
 * eth_simulateV1 against anvil's on the trace workload's chain (transfers, contract calls with logs,
 * reverts, creations, precompiles, self-destructs, 7702): each block's transactions simulated as
 * calls on its parent, without and with validation, and refusals. What is compared is what a client
 * reads of each call: status, returned data, gas used, logs, and whether it failed; block fields are
 * left out (anvil's state roots are not the canonical ones).
 *
 * Where anvil departs from geth, whose answers the conformance fixtures record (test/conformance),
 * the comparison leaves the field out, each for the reason below:
 * - a failed call: anvil answers its revert data as `returnData` and code -3200 for every failure;
 *   geth answers `0x` and code 3 (revert) or -32015 (other failures);
 * - transfer logs of a call where value moves in a frame that fails (geth drops a failed frame's
 *   logs, transfers included), by CALLCODE (geth's tracer leaves CALLCODE and DELEGATECALL out), or
 *   by SELFDESTRUCT (geth logs it, anvil does not): only the EVM's own logs are compared there;
 * - creations: anvil refuses a call without `to` (-32602, "missing keys: [to]"), so a block with one
 *   is only checked to be answered by us and refused by anvil;
 * - refusals: anvil's validation does not check nonces, it refuses a call short of funds with
 *   -32003 rather than the spec's -38014, and it simulates a block numbered as its base (-38020).
 */

const TRANSFER_LOGGER = '0xeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee';

interface Log {
  address: string;
  topics: string[];
  data: string;
}

interface CallResult {
  status: string;
  returnData: string;
  gasUsed: string;
  logs: Log[];
  error?: { code: number };
}

interface TraceEntry {
  type: string;
  action: { callType?: string; value?: string; balance?: string };
  error?: string;
  traceAddress: number[];
}

const hex = (n: bigint) => `0x${n.toString(16)}`;

/** The answer of one request: its blocks' calls, or its error. */
async function simulate(
  url: string,
  params: unknown[],
): Promise<{ calls?: CallResult[]; error?: { code: number; message: string } }> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'eth_simulateV1', params }),
  });
  const body = (await res.json()) as {
    result?: Array<{ calls: CallResult[] }>;
    error?: { code: number; message: string };
  };
  if (body.error) return { error: body.error };
  return { calls: (body.result ?? []).flatMap((b) => b.calls) };
}

/** Whether geth's and anvil's transfer logs differ by rule for this call (see the file comment). */
function transfersDiffer(trace: TraceEntry[]): boolean {
  const failed = trace.filter((e) => e.error !== undefined).map((e) => e.traceAddress.join('.'));
  const underFailure = (e: TraceEntry) => {
    const at = e.traceAddress.join('.');
    return failed.some((f) => f === '' || at === f || at.startsWith(`${f}.`));
  };
  return trace.some((e) => {
    const value = BigInt(e.action.value ?? e.action.balance ?? '0x0');
    if (value === 0n) return false;
    return e.type === 'suicide' || e.action.callType === 'callcode' || underFailure(e);
  });
}

/** A call as compared: lower-case, with the fields anvil departs in left out. */
function comparable(call: CallResult, keepTransfers: boolean): unknown {
  const failed = call.status !== '0x1';
  return {
    status: call.status,
    gasUsed: call.gasUsed,
    ...(failed ? { failed: call.error !== undefined } : { returnData: call.returnData.toLowerCase() }),
    logs: call.logs
      .filter((l) => keepTransfers || l.address.toLowerCase() !== TRANSFER_LOGGER)
      .map((l) => ({
        address: l.address.toLowerCase(),
        topics: l.topics.map((t) => t.toLowerCase()),
        data: l.data.toLowerCase(),
      })),
  };
}

describe('differential: eth_simulateV1 against anvil', () => {
  let servers: TraceWorkloadServers;
  before(async () => {
    servers = await serveTraceWorkload();
  });
  after(async () => {
    await servers?.close();
  });

  /** Each block's transactions as calls, with the fields `extra` adds, on the block's parent. */
  async function eachBlock(
    options: Record<string, unknown>,
    extra: (tx: Record<string, unknown>) => Record<string, unknown>,
  ): Promise<{ mismatches: string[]; compared: number }> {
    const { anvil, workload, server } = servers;
    const mismatches: string[] = [];
    let compared = 0;
    for (const block of workload.blocks) {
      const full = await anvil.rpc<{ transactions: Array<Record<string, unknown>> }>('eth_getBlockByNumber', [
        hex(block.number),
        true,
      ]);
      const calls = full.transactions.map((tx) => ({ ...asCall(tx), ...extra(tx) }));
      const parent = hex(block.number - 1n);
      const params = [{ blockStateCalls: [{ calls }], ...options }, parent];
      const [ours, theirs] = await Promise.all([simulate(server.url, params), simulate(anvil.url, params)]);
      assert.ok(ours.calls, `block ${block.number}: ${JSON.stringify(ours.error)}`);
      if (calls.some((c) => c.to === undefined)) {
        assert.equal(theirs.error?.code, -32602, `block ${block.number}: anvil simulates creations now`);
        continue;
      }
      assert.ok(theirs.calls, `block ${block.number}: anvil ${JSON.stringify(theirs.error)}`);
      const traces = await server.rpc<Array<{ trace: TraceEntry[] }>>('trace_callMany', [
        calls.map((c) => [c, ['trace']]),
        parent,
      ]);
      for (const [i, tx] of block.txs.entries()) {
        const ourCall: CallResult | undefined = ours.calls[i];
        const theirCall: CallResult | undefined = theirs.calls[i];
        assert.ok(ourCall && theirCall, `block ${block.number}: a call is missing`);
        const keep = !transfersDiffer(traces[i]?.trace ?? []);
        compared++;
        try {
          assert.deepEqual(comparable(ourCall, keep), comparable(theirCall, keep));
        } catch {
          mismatches.push(
            `${tx.label} (block ${block.number}, call ${i}):\n  ours:  ${JSON.stringify(ourCall)}\n  anvil: ${JSON.stringify(theirCall)}`,
          );
        }
      }
    }
    return { mismatches, compared };
  }

  it('gives the same calls for every block, transfers traced, without validation', async () => {
    const { mismatches, compared } = await eachBlock({ traceTransfers: true }, () => ({}));
    assert.deepEqual(mismatches, []);
    assert.ok(compared > 40, `only ${compared} calls compared`);
  });

  it('gives the same calls for every block with validation (nonces and fees as sent)', async () => {
    const { mismatches, compared } = await eachBlock({ validation: true }, (tx) => ({
      nonce: tx.nonce,
      ...(tx.type === '0x0' || tx.type === '0x1'
        ? { gasPrice: tx.gasPrice }
        : { maxFeePerGas: tx.maxFeePerGas, maxPriorityFeePerGas: tx.maxPriorityFeePerGas }),
    }));
    assert.deepEqual(mismatches, []);
    assert.ok(compared > 40, `only ${compared} calls compared`);
  });

  it('refuses with the same codes: a nonce too low, funds short, a block out of order', async () => {
    const { anvil, workload, server } = servers;
    const transfers = workload.blocks.find((b) => b.txs.some((t) => t.label.startsWith('transfer/')));
    assert.ok(transfers);
    const full = await anvil.rpc<{ transactions: Array<Record<string, unknown>> }>('eth_getBlockByNumber', [
      hex(transfers.number),
      true,
    ]);
    const tx = full.transactions[0] as Record<string, unknown>;
    const at = hex(transfers.number);
    const empty = '0x00000000000000000000000000000000000000c0';
    // [what, options, geth's code (the fixtures'), anvil's code or null when it runs the calls]
    const cases = [
      [
        'nonce too low',
        { validation: true, blockStateCalls: [{ calls: [{ ...asCall(tx), nonce: '0x0' }] }] },
        -38010,
        // anvil's validation checks fees and funds, not nonces.
        null,
      ],
      [
        'funds short',
        { blockStateCalls: [{ calls: [{ from: empty, to: empty, value: '0xde0b6b3a7640000' }] }] },
        -38014,
        // anvil answers its eth_sendTransaction refusal (-32003), not the spec's code.
        -32003,
      ],
      [
        'block out of order',
        { blockStateCalls: [{ blockOverrides: { number: at }, calls: [] }] },
        -38020,
        // anvil simulates a block numbered as its base.
        null,
      ],
    ] as const;
    for (const [label, options, code, anvilCode] of cases) {
      const [ours, theirs] = await Promise.all([
        simulate(server.url, [options, at]),
        simulate(anvil.url, [options, at]),
      ]);
      assert.equal(ours.error?.code, code, `${label}: ours ${JSON.stringify(ours)}`);
      assert.equal(theirs.error?.code ?? null, anvilCode, `${label}: anvil ${JSON.stringify(theirs)}`);
    }
  });
});
