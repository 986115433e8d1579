import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Hex } from 'viem';
import { Web3, WebSocketProvider } from 'web3';
import { devAccount } from '../support/devAccounts.ts';
import { devChainForSuite } from '../support/devServer.ts';
import { rpc } from '../support/rpcClient.ts';

/**
 * web3.js 4 against a dev chain over HTTP and WebSocket: reads, a transaction sent through the node's
 * dev signer, and (WebSocket) a newHeads subscription. web3.js parses every WebSocket message as text
 * and throws on a binary one, so this also guards the frame type. Answers are compared with the
 * server's raw JSON-RPC answers.
 */

const FROM = devAccount(6).address;
const TO = devAccount(7).address;

describe('web3.js 4', () => {
  const dev = devChainForSuite('ethtrace-web3-');

  for (const transport of ['HTTP', 'WebSocket'] as const) {
    describe(`over ${transport}`, () => {
      const connect = () =>
        transport === 'HTTP' ? new Web3(dev().url) : new Web3(new WebSocketProvider(dev().wsUrl));

      it('reads the chain as the server answers it and sends a transaction', async () => {
        const web3 = connect();
        try {
          assert.equal(await web3.eth.getChainId(), BigInt(await rpc<Hex>(dev().url, 'eth_chainId')));
          const receipt = await web3.eth.sendTransaction({ from: FROM, to: TO, value: 1000n, gas: 21_000n });
          assert.equal(receipt.status, 1n);
          const raw = await rpc<{ blockHash: Hex; blockNumber: Hex; gasUsed: Hex }>(
            dev().url,
            'eth_getTransactionReceipt',
            [receipt.transactionHash],
          );
          assert.deepEqual(
            { blockHash: receipt.blockHash, blockNumber: receipt.blockNumber, gasUsed: receipt.gasUsed },
            { blockHash: raw.blockHash, blockNumber: BigInt(raw.blockNumber), gasUsed: BigInt(raw.gasUsed) },
          );
          const block = await web3.eth.getBlock(receipt.blockNumber);
          assert.equal(block.hash, raw.blockHash);
          assert.deepEqual(block.transactions, [receipt.transactionHash]);
          assert.equal(await web3.eth.getBlockNumber(), BigInt(await rpc<Hex>(dev().url, 'eth_blockNumber')));
          assert.equal(
            await web3.eth.getBalance(TO),
            BigInt(await rpc<Hex>(dev().url, 'eth_getBalance', [TO, 'latest'])),
          );
        } finally {
          await closeWeb3(web3);
        }
      });
    });
  }

  it('over WebSocket, delivers a newHeads subscription for the block a transaction lands in', async () => {
    const web3 = new Web3(new WebSocketProvider(dev().wsUrl));
    try {
      const subscription = await web3.eth.subscribe('newBlockHeaders');
      const heads: Array<{ hash?: string; number?: bigint | number | string }> = [];
      const gotHead = new Promise<void>((resolve, reject) => {
        subscription.on('data', (head) => {
          heads.push(head as { hash?: string });
          resolve();
        });
        subscription.on('error', reject);
      });
      const receipt = await web3.eth.sendTransaction({ from: FROM, to: TO, value: 1n, gas: 21_000n });
      await gotHead;
      assert.ok(
        heads.some((h) => h.hash === receipt.blockHash),
        `a head for block ${receipt.blockHash} (got ${heads.map((h) => h.hash).join(', ')})`,
      );
      await subscription.unsubscribe();
    } finally {
      await closeWeb3(web3);
    }
  });
});

/** Closes a WebSocket provider's socket (an HTTP provider has none: its disconnect throws). */
async function closeWeb3(web3: Web3): Promise<void> {
  const provider = web3.currentProvider;
  if (provider instanceof WebSocketProvider) provider.disconnect();
}
