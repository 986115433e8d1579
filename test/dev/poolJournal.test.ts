import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Hex } from 'viem';
import { collect, tempDir } from '../support/cli.ts';
import { devAccount } from '../support/devAccounts.ts';
import { type CliServer, serveDev, stopDev } from '../support/devServer.ts';
import { rpc } from '../support/rpcClient.ts';

const FIRST = devAccount(0);
const SECOND = devAccount(1);
const TO = '0x00000000000000000000000000000000000c0ffe';
// Long enough that no block is mined by the timer while the test runs: blocks come from evm_mine.
const BLOCK_TIME = ['--block-time', '3600'];

type Pool = Record<string, Record<string, { hash: string }>>;

/** The hashes of the pending pool, sorted. */
async function pending(url: string): Promise<string[]> {
  const { pending } = await rpc<{ pending: Pool }>(url, 'txpool_content');
  return Object.values(pending)
    .flatMap((byNonce) => Object.values(byNonce).map((tx) => tx.hash))
    .sort();
}

/**
 * The pending pool of a --block-time chain is journaled in the store (as geth journals its local
 * transactions) before a send is answered: what was acknowledged and not yet mined is back in the
 * pool after a restart, whether the server was stopped (SIGTERM) or killed (SIGKILL), and is mined
 * by the next block.
 */
describe('dev chain: pending transactions survive SIGTERM and kill -9', () => {
  it('restores the journaled pool after each and mines it', async () => {
    const dir = tempDir('ethtrace-dev-journal-');
    let server: CliServer = await serveDev(dir.path, BLOCK_TIME);
    try {
      const start = BigInt(await rpc<string>(server.url, 'eth_blockNumber'));
      const sent: string[] = [];
      sent.push(
        await rpc<Hex>(server.url, 'eth_sendTransaction', [{ from: FIRST.address, to: TO, value: '0x1' }]),
      );
      const raw = await SECOND.signTransaction({
        chainId: 31337,
        type: 'eip1559',
        nonce: 0,
        to: TO,
        value: 2n,
        gas: 21000n,
        maxFeePerGas: 10_000_000_000n,
        maxPriorityFeePerGas: 1_000_000_000n,
      });
      sent.push(await rpc<Hex>(server.url, 'eth_sendRawTransaction', [raw]));
      assert.deepEqual(await pending(server.url), [...sent].sort());

      // SIGTERM: a clean stop keeps the pool for the next start.
      assert.equal(await stopDev(server.child), 0);
      server = await serveDev(dir.path, BLOCK_TIME);
      assert.deepEqual(await pending(server.url), [...sent].sort());
      assert.equal(BigInt(await rpc<string>(server.url, 'eth_blockNumber')), start, 'nothing was mined');

      // kill -9 right after a send is acknowledged: the journal was written before the answer.
      sent.push(
        await rpc<Hex>(server.url, 'eth_sendTransaction', [{ from: FIRST.address, to: TO, value: '0x3' }]),
      );
      const killed = collect(server.child);
      server.child.kill('SIGKILL');
      assert.equal((await killed).signal, 'SIGKILL');
      server = await serveDev(dir.path, BLOCK_TIME);
      assert.deepEqual(await pending(server.url), [...sent].sort());

      // The next block mines them all, and the pool (and its journal) is then empty.
      await rpc(server.url, 'evm_mine');
      const block = await rpc<{ transactions: string[] }>(server.url, 'eth_getBlockByNumber', [
        'latest',
        false,
      ]);
      assert.deepEqual([...block.transactions].sort(), [...sent].sort());
      for (const hash of sent) {
        const receipt = await rpc<{ status: string }>(server.url, 'eth_getTransactionReceipt', [hash]);
        assert.equal(receipt.status, '0x1');
      }
      assert.equal(await rpc(server.url, 'eth_getBalance', [TO, 'latest']), '0x6');
      assert.equal(await stopDev(server.child), 0);
      server = await serveDev(dir.path, BLOCK_TIME);
      assert.deepEqual(await pending(server.url), []);
    } finally {
      if (server.child.exitCode === null && server.child.signalCode === null) await stopDev(server.child);
      dir.cleanup();
    }
  });
});
