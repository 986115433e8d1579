import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { buildMainnetChain } from '../../bench/lib/mainnetBlocks.ts';
import { readChainSpec } from '../../src/chain/genesis.ts';
import { importChain } from '../../src/ingest/importer.ts';
import { openLmdbStore } from '../../src/store/lmdb/index.ts';
import { serveTraceWorkload, type TraceWorkloadServers } from '../support/anvilTraces.ts';
import { tempDir } from '../support/cli.ts';
import {
  diffAccessLists,
  diffBlobCalls,
  diffCallMany,
  diffCalls,
  diffDebugTraces,
  diffParts,
  diffReplays,
  type EngineChain,
  openEngineChain,
} from '../support/engineDiff.ts';
import { exportChain } from '../support/exportChain.ts';

/**
 * The comparisons every chain here gets: `chain()` is the chain its describe opened in `before`;
 * the replay must have met at least `minTxs` transactions.
 */
function sameAnswers(chain: () => EngineChain, minTxs: number): void {
  it('replays every block byte for byte as ethereumjs does (vmTrace too)', async () => {
    const { problems, compared, txs } = await diffReplays(chain());
    assert.deepEqual(problems, [], `${problems.length} of ${compared} differ:\n${problems.join('\n')}`);
    assert.ok(txs >= minTxs, `${txs} transactions`);
  });

  it('answers trace_callMany and trace_call (vmTrace too) on every parent byte for byte as ethereumjs does', async () => {
    const { problems, compared } = await diffCallMany(chain());
    assert.deepEqual(problems, [], `${problems.length} of ${compared} differ:\n${problems.join('\n')}`);
  });

  it('speculates in parts on src/evm: every item accepted has its serial answer', async () => {
    const { problems, accepted, items } = await diffParts(chain());
    assert.deepEqual(problems, [], problems.join('\n'));
    assert.ok(accepted > 0 || items === 0, `${accepted} of ${items} accepted`);
  });

  it('answers eth_call and eth_estimateGas on every parent as ethereumjs does', async () => {
    const { problems, compared } = await diffCalls(chain());
    assert.deepEqual(problems, [], `${problems.length} of ${compared} differ:\n${problems.join('\n')}`);
  });

  it('answers eth_createAccessList on every parent as ethereumjs does, on src/evm', async () => {
    const { problems, compared } = await diffAccessLists(chain());
    assert.deepEqual(problems, [], `${problems.length} of ${compared} differ:\n${problems.join('\n')}`);
  });

  it('answers calls with blobs and a blob base fee override as ethereumjs does, on src/evm', async () => {
    const { problems, compared } = await diffBlobCalls(chain());
    assert.deepEqual(problems, [], `${problems.length} of ${compared} differ:\n${problems.join('\n')}`);
  });

  it('answers debug_trace* with every tracer and configuration byte for byte as ethereumjs does', async () => {
    const { problems, compared } = await diffDebugTraces(chain());
    assert.deepEqual(problems, [], `${problems.length} of ${compared} differ:\n${problems.join('\n')}`);
  });
}

/**
 * Issue 20's rule (test/exec/evmEngine.test.ts) on the chains built on anvil: the trace workload
 * (constructors that call, create, log, revert and self-destruct, nested) and the mainnet-like block
 * of bench:mainnet (swaps, tokens, EIP-7702 wallets, failures). A file of its own so that each half
 * stays well inside the test runner's per-file timeout on a busy machine.
 */
describe('src/evm against ethereumjs: replays and calls on chains built on anvil', () => {
  describe('the trace workload (anvil)', () => {
    let servers: TraceWorkloadServers;
    let chain: EngineChain;
    before(async () => {
      servers = await serveTraceWorkload();
      chain = await openEngineChain(servers.datadir);
    });
    after(async () => {
      await chain?.close();
      await servers?.close();
    });
    sameAnswers(() => chain, 90);
  });

  describe('the mainnet-like block (anvil)', () => {
    const work = tempDir('ethtrace-engine-mainnet-');
    let chain: EngineChain;
    before(async () => {
      const built = await buildMainnetChain(work.path, { blocks: 1, txsPerBlock: 60 });
      try {
        const exported = await exportChain(built.anvil, join(work.path, 'anvil'));
        const datadir = join(work.path, 'data');
        const store = await openLmdbStore(datadir);
        try {
          await importChain({
            store,
            spec: readChainSpec(exported.genesisPath),
            files: [exported.rlpPath],
            verifyStateRoot: false,
          });
        } finally {
          await store.close();
        }
        chain = await openEngineChain(datadir);
      } finally {
        await built.anvil.stop();
      }
    });
    after(async () => {
      await chain?.close();
      work.cleanup();
    });
    sameAnswers(() => chain, 60);
  });
});
