import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import {
  asCall,
  normaliseAnvilEntry,
  serveTraceWorkload,
  type TraceEntry,
  type TraceWorkloadServers,
} from '../support/anvilTraces.ts';

/**
 * The differential trace suite (issue 4): for every block of a chain built with anvil from real
 * transactions, the block's transactions sent as calls to our trace_callMany on the parent block give
 * the same Parity trace entries as anvil's trace_replayBlockTransactions of that block.
 *
 * Every difference that remains must be explained by one of the rules of docs/tracing.md
 * (normaliseAnvilEntry), each an anvil (revm-inspectors) deviation listed in docs/tracing.md or observed.
 */

describe('differential: trace_callMany against anvil trace_replayBlockTransactions', () => {
  let servers: TraceWorkloadServers;
  before(async () => {
    servers = await serveTraceWorkload();
  });
  after(async () => {
    await servers?.close();
  });

  it('gives the same trace entries for every transaction of every block', async () => {
    const { anvil, workload, server } = servers;
    const mismatches: string[] = [];
    let compared = 0;
    for (const block of workload.blocks) {
      const full = await anvil.rpc<{ transactions: Array<Record<string, unknown>> }>('eth_getBlockByNumber', [
        `0x${block.number.toString(16)}`,
        true,
      ]);
      const replay = await anvil.rpc<Array<{ trace: TraceEntry[]; transactionHash: string }>>(
        'trace_replayBlockTransactions',
        [`0x${block.number.toString(16)}`, ['trace']],
      );
      const calls = full.transactions.map((tx) => [asCall(tx), ['trace']]);
      const ours = await server.rpc<Array<{ trace: TraceEntry[] }>>('trace_callMany', [
        calls,
        `0x${(block.number - 1n).toString(16)}`,
      ]);
      assert.equal(ours.length, replay.length);
      for (const [i, tx] of block.txs.entries()) {
        compared++;
        const ourTrace = ours[i]?.trace ?? [];
        const byAddress = new Map(ourTrace.map((e) => [e.traceAddress.join('.'), e]));
        const theirs = (replay[i]?.trace ?? []).map((e) =>
          normaliseAnvilEntry(e, byAddress.get(e.traceAddress.join('.'))),
        );
        try {
          assert.deepEqual(ourTrace, theirs);
        } catch {
          mismatches.push(
            `${tx.label} (block ${block.number}, tx ${i}):\n  ours:  ${JSON.stringify(ourTrace)}\n  anvil: ${JSON.stringify(theirs)}`,
          );
        }
      }
    }
    assert.ok(compared >= 80, `compared only ${compared} transactions`);
    assert.deepEqual(
      mismatches,
      [],
      `${mismatches.length} of ${compared} transactions differ:\n${mismatches.join('\n')}`,
    );
  });
});
