import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { bytesToHex } from '@ethereumjs/util';
import { openLmdbStore, storeExists } from '../../src/store/lmdb/index.ts';
import { type Anvil, startAnvil } from '../support/anvil.ts';
import { runCli, tempDir } from '../support/cli.ts';
import { type ExportedChain, exportChain } from '../support/exportChain.ts';
import { buildBasicChain } from '../support/workload.ts';

// A chain made by anvil from real signed transactions: transfers, all tx types, a contract with logs,
// a revert, a failed creation and an EIP-7702 delegation. anvil's genesis header carries the
// empty-trie state root whatever the alloc, so its chain only imports without state-root checks.
describe('import of a chain built with anvil', () => {
  let anvil: Anvil;
  let chain: ExportedChain;
  const work = tempDir();
  before(async () => {
    anvil = await startAnvil();
    await buildBasicChain(anvil, { failedCreation: true });
    chain = await exportChain(anvil, work.path);
  });
  after(async () => {
    await anvil?.stop();
    work.cleanup();
  });

  it('imports with --no-verify-state-root, every other check passing, receipts as anvil has them', async () => {
    const datadir = join(work.path, 'lenient');
    const result = await runCli([
      'import',
      '--datadir',
      datadir,
      '--genesis',
      chain.genesisPath,
      '--no-verify-state-root',
      chain.rlpPath,
    ]);
    assert.equal(result.code, 0, result.stderr);
    assert.match(result.stderr, new RegExp(`imported ${chain.blocks} blocks`));
    const store = await openLmdbStore(datadir, { readOnly: true });
    try {
      const head = await store.getHead();
      assert.equal(head && bytesToHex(head.hash), chain.headHash);
      // Each stored receipt agrees with anvil's on the fields both define the same way.
      for (let n = 1n; n <= (head?.number ?? 0n); n++) {
        const hash = await store.getCanonicalHash(n);
        assert.ok(hash);
        const ours = JSON.parse(
          new TextDecoder().decode((await store.getBlockReceiptsJson(hash)) ?? new Uint8Array()) || 'null',
        ) as Record<string, unknown>[];
        const theirs = await anvil.rpc<Record<string, unknown>[]>('eth_getBlockReceipts', [
          `0x${n.toString(16)}`,
        ]);
        assert.equal(ours.length, theirs.length);
        ours.forEach((receipt, i) => {
          const other = theirs[i] as Record<string, unknown>;
          for (const key of [
            'transactionHash',
            'status',
            'gasUsed',
            'cumulativeGasUsed',
            'effectiveGasPrice',
            'from',
            'to',
            'contractAddress',
            'logsBloom',
            'type',
          ]) {
            assert.deepEqual(receipt[key], other[key], `block ${n} receipt ${i} ${key}`);
          }
          assert.deepEqual(
            (receipt.logs as Record<string, unknown>[]).map(({ blockTimestamp, ...log }) => log),
            (other.logs as Record<string, unknown>[]).map(({ blockTimestamp, ...log }) => log),
          );
        });
      }
    } finally {
      await store.close();
    }
  });

  it('is refused without --no-verify-state-root at block 0, naming the root that differs', async () => {
    const datadir = join(work.path, 'strict');
    const result = await runCli([
      'import',
      '--datadir',
      datadir,
      '--genesis',
      chain.genesisPath,
      chain.rlpPath,
    ]);
    assert.notEqual(result.code, 0);
    assert.match(result.stderr, /block 0 \(0x[0-9a-f]{64}\) is not the genesis of the given genesis file/);
    assert.match(
      result.stderr,
      /stateRoot 0x56e81f171bcc55a6ff8345e692c0f86e5b48e01b996cadc001622fb5e363b421 vs 0x[0-9a-f]{64}/,
    );
    assert.ok(!storeExists(datadir) || (await headOf(datadir)) === null);
  });
});

async function headOf(datadir: string) {
  const store = await openLmdbStore(datadir, { readOnly: true });
  try {
    return await store.getHead();
  } finally {
    await store.close();
  }
}
