import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { buildMainnetChain, type MainnetChain } from '../../bench/lib/mainnetBlocks.ts';
import { readChainSpec } from '../../src/chain/genesis.ts';
import { importChain } from '../../src/ingest/importer.ts';
import { openLmdbStore } from '../../src/store/lmdb/index.ts';
import { tempDir } from '../support/cli.ts';
import { exportChain } from '../support/exportChain.ts';
import { compareWithAnvil } from '../support/mainnetDiff.ts';
import { type RunningServer, startServer } from '../support/server.ts';

/**
 * The mainnet-like block of bench/mainnet.ts, smaller (60 transactions: swaps through a router and
 * pairs, token transfers and approvals, mints, call chains, storage writers, reverts, out of gas,
 * EIP-7702 wallets, legacy/2930/1559/7702 envelopes), built on anvil and served by us: our
 * trace replay, trace_callMany on the parent and callTracer block trace answer what anvil does,
 * with anvil's known deviations normalised (test/support/mainnetDiff.ts). Run with the worker pool
 * of a real server, so both the parallel speculation and its serial fallback are exercised.
 */
describe('differential: a mainnet-like block against anvil', () => {
  const work = tempDir('ethtrace-diff-mainnet-');
  let chain: MainnetChain;
  let server: RunningServer;

  before(async () => {
    chain = await buildMainnetChain(work.path, { blocks: 1, txsPerBlock: 60 });
    const exported = await exportChain(chain.anvil, join(work.path, 'anvil'));
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
    server = await startServer(datadir, { limits: { replay: { cacheBytes: 0 } } });
  });
  after(async () => {
    await server?.close();
    await chain?.anvil.stop();
    work.cleanup();
  });

  it('replays, calls and callTraces every transaction as anvil does', async () => {
    const [block] = chain.blocks;
    assert.ok(block);
    assert.ok(block.receipts.length >= 60, `only ${block.receipts.length} transactions`);
    assert.ok(block.failed >= 3 && block.senders >= 40, JSON.stringify(block.kinds));
    const { problems, summary, sentries } = await compareWithAnvil(server.url, chain.anvil.url, block.number);
    assert.deepEqual(problems, [], `${problems.length} differences:\n${problems.join('\n')}`);
    // The seed's block has a transaction whose frame stops at EIP-2200's SSTORE sentry, worded as
    // anvil (and geth) word it.
    assert.ok(sentries >= 1, summary);
    assert.match(summary, /^6\d trace replays/);
  });
});
