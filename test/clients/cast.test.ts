import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { before, describe, it } from 'node:test';
import { type Hex, toHex } from 'viem';
import { mnemonicToAccount } from 'viem/accounts';
import { ROOT } from '../support/cli.ts';
import { LOG_STORE_INITCODE, logStoreCalldata } from '../support/contracts.ts';
import { DEV_MNEMONIC, devAccount } from '../support/devAccounts.ts';
import { devChainForSuite } from '../support/devServer.ts';
import { rpc } from '../support/rpcClient.ts';

/**
 * Foundry's cast (the npm build, pinned in package.json) against a dev chain, over HTTP and over
 * WebSocket: cast is built on alloy, which refuses binary WebSocket frames and reconnects in a loop,
 * so this is the suite that catches a transport that answers in the wrong frame type. Each answer cast
 * prints is compared with the server's own raw JSON-RPC answer.
 */

const CAST = join(ROOT, 'node_modules', '@foundry-rs', 'cast-linux-amd64', 'bin', 'cast');
// Only a guard against a hang: cast reconnects forever to a server whose WebSocket frames it refuses.
const CAST_HANG_GUARD_MS = 60_000;
const SENDER = devAccount(3);
const RECIPIENT = devAccount(4).address.toLowerCase() as Hex;

/** A dev account's private key, as cast takes it on its command line (published with the mnemonic). */
function devPrivateKey(index: number): Hex {
  const key = mnemonicToAccount(DEV_MNEMONIC, { addressIndex: index }).getHdKey().privateKey;
  if (key === null) throw new Error(`dev account ${index} has no private key`);
  return toHex(key);
}

function cast(args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(
      CAST,
      args,
      { maxBuffer: 64 * 1024 * 1024, timeout: CAST_HANG_GUARD_MS },
      (error, stdout, stderr) =>
        error
          ? reject(new Error(`cast ${args.join(' ')}: ${stderr || error.message}`))
          : resolve(stdout.trim()),
    );
  });
}

const castJson = async <T>(args: string[]): Promise<T> => JSON.parse(await cast([...args, '--json'])) as T;

interface Receipt {
  transactionHash: Hex;
  blockHash: Hex;
  blockNumber: Hex;
  status: Hex;
  contractAddress: Hex | null;
  gasUsed: Hex;
  logs: Array<{ address: Hex; topics: Hex[]; data: Hex; logIndex: Hex }>;
}

describe("Foundry's cast over HTTP and WebSocket", () => {
  const dev = devChainForSuite('ethtrace-cast-');
  const key = devPrivateKey(3);
  let store: Hex;

  before(async () => {
    // Deployed with cast itself, over HTTP: a LogStore whose calls write storage and emit logs.
    const deployed = await castJson<Receipt>([
      'send',
      '--rpc-url',
      dev().url,
      '--private-key',
      key,
      '--create',
      LOG_STORE_INITCODE,
    ]);
    assert.equal(deployed.status, '0x1');
    store = deployed.contractAddress as Hex;
  });

  for (const transport of ['HTTP', 'WebSocket'] as const) {
    describe(`over ${transport}`, () => {
      const url = () => (transport === 'HTTP' ? dev().url : dev().wsUrl);

      it('sends a transaction and reads its receipt as the server stored it', async () => {
        const sent = await castJson<Receipt>([
          'send',
          '--rpc-url',
          url(),
          '--private-key',
          key,
          RECIPIENT,
          '--value',
          '12345',
        ]);
        assert.equal(sent.status, '0x1');
        const read = await castJson<Receipt>(['receipt', '--rpc-url', url(), sent.transactionHash]);
        const raw = await rpc<Receipt>(dev().url, 'eth_getTransactionReceipt', [sent.transactionHash]);
        assert.deepEqual(
          {
            hash: read.transactionHash,
            block: read.blockHash,
            gasUsed: BigInt(read.gasUsed),
            status: read.status,
          },
          {
            hash: raw.transactionHash,
            block: raw.blockHash,
            gasUsed: BigInt(raw.gasUsed),
            status: raw.status,
          },
        );
        const balance = await cast(['balance', '--rpc-url', url(), RECIPIENT]);
        assert.equal(
          BigInt(balance),
          BigInt(await rpc<Hex>(dev().url, 'eth_getBalance', [RECIPIENT, 'latest'])),
        );
      });

      it('reads blocks, calls a contract and finds its logs', async () => {
        const sent = await castJson<Receipt>([
          'send',
          '--rpc-url',
          url(),
          '--private-key',
          key,
          store,
          '--data',
          logStoreCalldata({ key: 7n, value: 99n, logs: 3 }),
        ]);
        assert.equal(sent.logs.length, 3);
        const block = await castJson<{ hash: Hex; number: Hex; transactions: Hex[] }>([
          'block',
          '--rpc-url',
          url(),
          BigInt(sent.blockNumber).toString(),
        ]);
        const rawBlock = await rpc<{ hash: Hex; number: Hex; transactions: Hex[] }>(
          dev().url,
          'eth_getBlockByNumber',
          [sent.blockNumber, false],
        );
        assert.deepEqual(
          { hash: block.hash, number: BigInt(block.number), transactions: block.transactions },
          { hash: rawBlock.hash, number: BigInt(rawBlock.number), transactions: rawBlock.transactions },
        );
        // A call with value 0 reverts with the key; a non-zero one returns the value.
        const returned = await cast([
          'call',
          '--rpc-url',
          url(),
          store,
          '--data',
          logStoreCalldata({ key: 8n, value: 5n, logs: 0 }),
        ]);
        assert.equal(BigInt(returned), 5n);
        const logs = await castJson<Receipt['logs']>([
          'logs',
          '--rpc-url',
          url(),
          '--from-block',
          BigInt(sent.blockNumber).toString(),
          '--to-block',
          BigInt(sent.blockNumber).toString(),
          '--address',
          store,
        ]);
        assert.deepEqual(
          logs.map((l) => [l.address.toLowerCase(), l.topics, l.data]),
          sent.logs.map((l) => [l.address.toLowerCase(), l.topics, l.data]),
        );
      });

      it('runs trace_callMany through `cast rpc` and gets the same answer as a raw request', async () => {
        const calls = [
          [
            { from: SENDER.address, to: store, data: logStoreCalldata({ key: 1n, value: 2n, logs: 1 }) },
            ['trace'],
          ],
          [
            { from: SENDER.address, to: store, data: logStoreCalldata({ key: 1n, value: 0n, logs: 0 }) },
            ['trace'],
          ],
        ];
        const viaCast = JSON.parse(
          await cast([
            'rpc',
            '--rpc-url',
            url(),
            '--raw',
            'trace_callMany',
            JSON.stringify([calls, 'latest']),
          ]),
        );
        const raw = await rpc<Array<{ trace: Array<{ error?: string }> }>>(dev().url, 'trace_callMany', [
          calls,
          'latest',
        ]);
        assert.deepEqual(viaCast, raw);
        assert.equal(raw[1]?.trace[0]?.error, 'Reverted');
      });
    });
  }
});
