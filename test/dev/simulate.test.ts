import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import {
  createPublicClient,
  createWalletClient,
  getContractAddress,
  type Hex,
  http,
  parseEther,
  publicActions,
} from 'viem';
import { tempDir } from '../support/cli.ts';
import { LOG_STORE_INITCODE, logStoreCalldata } from '../support/contracts.ts';
import { type CliServer, serveDev, stopDev } from '../support/devServer.ts';
import { rpc } from '../support/rpcClient.ts';

/**
 * eth_simulateV1 through viem's simulateBlocks on the dev chain, held to the chain itself: a block
 * simulated on the head with validation, then the same transactions mined at the same time, must
 * agree on everything the transactions' signatures do not change: the state root (of the first
 * block: see below), receipts root, bloom, gas used, base fee and each call's gas and logs.
 */

const FIRST = '0xf39fd6e51aad88f6f4ce6ab8827279cfffb92266';
const SECOND = '0x70997970c51812dc3a010c7d01b50e0d17dc79c8';

describe('eth_simulateV1 on the dev chain, against the blocks the chain then mines', () => {
  const dir = tempDir('ethtrace-simulate-');
  let server: CliServer;
  before(async () => {
    server = await serveDev(dir.path);
  });
  after(async () => {
    if (server) await stopDev(server.child);
    dir.cleanup();
  });

  it('simulates a deployment, a call with logs and a transfer in three blocks as the chain mines them', async () => {
    const wallet = createWalletClient({ account: FIRST, transport: http(server.url) }).extend(publicActions);
    const client = createPublicClient({ transport: http(server.url) });
    const head = await client.getBlock();
    const nonce = await client.getTransactionCount({ address: FIRST });
    const fees = { maxFeePerGas: 10n ** 10n, maxPriorityFeePerGas: 10n ** 9n };
    // The deployment's address follows from the sender's nonce; the call after it uses it.
    const deployed = getContractAddress({ from: FIRST, nonce: BigInt(nonce) });
    const calls: Array<{ to?: Hex; data?: Hex; value?: bigint; nonce: number; gas: bigint }> = [
      { data: LOG_STORE_INITCODE, nonce, gas: 300_000n },
      {
        to: deployed,
        data: logStoreCalldata({ key: 1n, value: 7n, logs: 2 }),
        nonce: nonce + 1,
        gas: 200_000n,
      },
      { to: SECOND, value: parseEther('1'), nonce: nonce + 2, gas: 21_000n },
    ];
    const times = calls.map((_, i) => head.timestamp + 100n * BigInt(i + 1));
    const simulated = await client.simulateBlocks({
      blocks: calls.map((c, i) => ({
        blockOverrides: { time: times[i] as bigint },
        // viem types a call as one with `to`; a creation is one without (eth_simulateV1's own).
        calls: [{ account: FIRST, ...fees, ...c } as { to: Hex }],
      })),
      validation: true,
    });
    assert.equal(simulated.length, 3);
    assert.equal(simulated[0]?.parentHash, head.hash);
    assert.deepEqual(
      simulated.map((b) => b.calls.map((c) => c.status)),
      [['success'], ['success'], ['success']],
    );

    // The same transactions, each mined into its block at the same time.
    for (const [i, c] of calls.entries()) {
      await rpc(server.url, 'evm_setNextBlockTimestamp', [`0x${(times[i] as bigint).toString(16)}`]);
      await wallet.sendTransaction({ account: FIRST, chain: null, ...fees, ...c, to: c.to ?? null });
    }
    for (const [i, sim] of simulated.entries()) {
      const number = head.number + 1n + BigInt(i);
      const mined = await client.getBlock({ blockNumber: number });
      assert.equal(sim.number, number);
      for (const field of ['receiptsRoot', 'logsBloom', 'gasUsed', 'baseFeePerGas', 'timestamp'] as const)
        assert.equal(sim[field], mined[field], `block ${number} ${field}`);
      // After the first block the parents differ (a simulated transaction is unsigned, so its block's
      // hash is another), and EIP-2935's system call stores the parent's hash in the state.
      if (i === 0) assert.equal(sim.stateRoot, mined.stateRoot, `block ${number} stateRoot`);
      const receipts = await client.getBlockReceipts({ blockNumber: number });
      assert.deepEqual(
        sim.calls.map((c) => [c.gasUsed, c.logs?.map((l) => [l.address, l.topics, l.data])]),
        receipts.map((r) => [r.gasUsed, r.logs.map((l) => [l.address, l.topics, l.data])]),
        `block ${number} calls`,
      );
    }
  });
});
