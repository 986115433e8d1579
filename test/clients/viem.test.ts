import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import {
  createPublicClient,
  formatBlock,
  formatLog,
  formatTransaction,
  formatTransactionReceipt,
  HttpRequestError,
  http,
  type PublicClient,
  webSocket,
} from 'viem';
import { CONFORMANCE } from '../support/cli.ts';
import { conformanceServerForSuite, type RunningServer } from '../support/server.ts';
import {
  big,
  type ChainFacts,
  chainFacts,
  type Hex,
  type RawLog,
  type RawReceipt,
  word,
} from './chainFacts.ts';

/**
 * viem, as a dapp uses it, against a real server over HTTP and WebSocket. Each answer is held to
 * the server's raw JSON-RPC answer put through viem's own formatters (so the client parsed what
 * the wire carried), and to the chain's own facts and consistency (see chainFacts.ts).
 */

const hex = (n: bigint): Hex => `0x${n.toString(16)}`;
const MAX_BODY_BYTES = 64 * 1024 * 1024;
const lower = (s: string) => s.toLowerCase();

/** viem's formatters are typed for their own RPC types; the raw answers here are plain JSON. */
// biome-ignore lint/suspicious/noExplicitAny: handing untyped wire JSON to viem's formatters
type Loose = any;

describe('viem against ethtrace', () => {
  const conformance = conformanceServerForSuite();
  let server: RunningServer;
  let facts: ChainFacts;
  before(async () => {
    server = conformance();
    facts = await chainFacts(server);
  });

  const transports = {
    // Block 2 of this chain has 21 MB of receipts; viem's HTTP default refuses bodies over 10 MiB.
    HTTP: () => http(server.url, { retryCount: 0, maxResponseBodySize: MAX_BODY_BYTES }),
    WebSocket: () => webSocket(server.wsUrl, { retryCount: 0, reconnect: false, keepAlive: false }),
  };

  for (const [name, transport] of Object.entries(transports)) {
    describe(`over ${name}`, () => {
      let client: PublicClient;
      before(() => {
        // cacheTime 0: a cached block number would hide what the server answers now.
        client = createPublicClient({ transport: transport(), cacheTime: 0 });
      });
      after(async () => {
        const value = client?.transport as { getRpcClient?: () => Promise<{ close(): void }> } | undefined;
        if (value?.getRpcClient) (await value.getRpcClient()).close();
      });

      it('getChainId: the genesis chain id', async () => {
        const genesis = JSON.parse(readFileSync(join(CONFORMANCE, 'genesis.json'), 'utf8'));
        const id = await client.getChainId();
        assert.equal(id, genesis.config.chainId);
        assert.equal(id, Number(await server.rpc<Hex>('eth_chainId')));
      });

      it('getBlockNumber: the head the fixtures name', async () => {
        assert.equal(await client.getBlockNumber(), facts.head.number);
        assert.equal(await client.getBlockNumber(), big(await server.rpc<Hex>('eth_blockNumber')));
      });

      it('getBlock by number, by hash, by tag, and with transactions', async () => {
        const { number, hash, receipts } = facts.busy;
        const byNumber = await client.getBlock({ blockNumber: number });
        assert.deepEqual(
          byNumber,
          formatBlock(await server.rpc<Loose>('eth_getBlockByNumber', [hex(number), false])),
        );
        assert.equal(byNumber.hash, hash);
        assert.equal(byNumber.number, number);
        assert.deepEqual(
          byNumber.transactions,
          receipts.map((r) => r.transactionHash),
        );
        assert.deepEqual(await client.getBlock({ blockHash: hash }), byNumber);

        const latest = await client.getBlock({ blockTag: 'latest' });
        assert.equal(latest.hash, facts.head.hash);
        assert.equal(latest.number, facts.head.number);
        const parent = await client.getBlock({ blockNumber: number - 1n });
        assert.equal(byNumber.parentHash, parent.hash);

        const full = await client.getBlock({ blockNumber: number, includeTransactions: true });
        assert.deepEqual(
          full,
          formatBlock(await server.rpc<Loose>('eth_getBlockByNumber', [hex(number), true])),
        );
        assert.deepEqual({ ...full, transactions: full.transactions.map((t) => t.hash) }, byNumber);
        for (const [i, tx] of full.transactions.entries()) {
          assert.equal(tx.transactionIndex, i);
          assert.equal(tx.blockHash, hash);
          assert.deepEqual(await client.getTransaction({ hash: tx.hash }), tx);
        }
      });

      it('getTransaction by hash and by block and index', async () => {
        const r = facts.loggingTx;
        const tx = await client.getTransaction({ hash: r.transactionHash });
        assert.deepEqual(
          tx,
          formatTransaction(await server.rpc<Loose>('eth_getTransactionByHash', [r.transactionHash])),
        );
        assert.equal(tx.blockHash, facts.busy.hash);
        assert.equal(tx.blockNumber, facts.busy.number);
        assert.equal(tx.transactionIndex, Number(r.transactionIndex));
        assert.equal(lower(tx.from), lower(r.from));
        assert.equal(tx.typeHex, r.type);
        const index = Number(r.transactionIndex);
        assert.deepEqual(await client.getTransaction({ blockNumber: facts.busy.number, index }), tx);
        assert.deepEqual(await client.getTransaction({ blockHash: facts.busy.hash, index }), tx);
      });

      it('getTransactionReceipt and getBlockReceipts agree with each other and the raw receipts', async () => {
        const raw = facts.busy.receipts;
        const blockReceipts = await client.getBlockReceipts({ blockNumber: facts.busy.number });
        assert.deepEqual(
          blockReceipts,
          raw.map((r) => formatTransactionReceipt(r as Loose)),
        );
        assert.deepEqual(await client.getBlockReceipts({ blockHash: facts.busy.hash }), blockReceipts);
        for (const [i, r] of raw.entries()) {
          const receipt = await client.getTransactionReceipt({ hash: r.transactionHash });
          assert.deepEqual(receipt, blockReceipts[i]);
          assert.deepEqual(await server.rpc<RawReceipt>('eth_getTransactionReceipt', [r.transactionHash]), r);
        }
        const creation = await client.getTransactionReceipt({ hash: facts.creation.receipt.transactionHash });
        assert.equal(creation.to, null);
        assert.equal(lower(creation.contractAddress ?? ''), lower(facts.creation.contract));
        // A block's receipts through the generic request too, as apps without the action call it.
        assert.deepEqual(
          await client.request({
            method: 'eth_getBlockReceipts' as Loose,
            params: [hex(facts.busy.number)] as Loose,
          }),
          raw,
        );
      });

      it('every block, transaction and receipt of the chain parses and matches the raw answers', async () => {
        for (let n = 0n; n <= facts.head.number; n++) {
          const block = await client.getBlock({ blockNumber: n, includeTransactions: true });
          assert.deepEqual(
            block,
            formatBlock(await server.rpc<Loose>('eth_getBlockByNumber', [hex(n), true])),
          );
          const receipts = await client.getBlockReceipts({ blockNumber: n });
          assert.deepEqual(
            receipts.map((r) => r.transactionHash),
            block.transactions.map((t) => t.hash),
          );
          for (const r of receipts) {
            assert.equal(r.blockHash, block.hash);
            assert.equal(r.blockNumber, n);
          }
        }
      });

      it('the largest block receipts arrive whole', async () => {
        const { number, hash, receipts } = facts.large;
        const got = await client.getBlockReceipts({ blockHash: hash });
        assert.equal(got.length, receipts);
        assert.equal(got[0]?.blockNumber, number);
        assert.deepEqual(
          got,
          (await server.rpc<RawReceipt[]>('eth_getBlockReceipts', [hash])).map((r) =>
            formatTransactionReceipt(r as Loose),
          ),
        );
      });

      it('getLogs: by block hash, by address, by topic, by both', async () => {
        const expect = (logs: RawLog[]) => logs.map((l) => formatLog(l as Loose));
        const range = { fromBlock: 0n, toBlock: facts.head.number };
        const busyLogs = facts.busy.receipts.flatMap((r) => r.logs);
        assert.ok(busyLogs.length > 0);
        assert.deepEqual(await client.getLogs({ blockHash: facts.busy.hash }), expect(busyLogs));

        const byAddress = facts.allLogs.filter((l) => lower(l.address) === lower(facts.logAddress));
        assert.deepEqual(await client.getLogs({ ...range, address: facts.logAddress }), expect(byAddress));

        const byTopic = facts.allLogs.filter((l) => l.topics[0] === facts.logTopic);
        const rawFilter = { fromBlock: '0x0', toBlock: hex(facts.head.number) } as const;
        assert.deepEqual(
          await client.request({
            method: 'eth_getLogs',
            params: [{ ...rawFilter, topics: [facts.logTopic] }],
          }),
          byTopic,
        );
        const both = byTopic.filter((l) => lower(l.address) === lower(facts.logAddress));
        assert.deepEqual(
          await client.request({
            method: 'eth_getLogs',
            params: [{ ...rawFilter, address: facts.logAddress, topics: [facts.logTopic] }],
          }),
          both,
        );
        assert.ok(both.length > 0 && both.length <= Math.min(byAddress.length, byTopic.length));
      });

      it('getBalance at genesis, at an old block and at latest', async () => {
        const { funded } = facts.genesis;
        assert.equal(
          await client.getBalance({ address: funded.address, blockNumber: 0n }),
          big(funded.balance),
        );
        const { address, block } = facts.sender;
        const before = await client.getBalance({ address, blockNumber: block - 1n });
        const after = await client.getBalance({ address, blockNumber: block });
        assert.notEqual(before, after, 'a sender pays for its transaction');
        const latest = await client.getBalance({ address });
        assert.equal(latest, big(await server.rpc<Hex>('eth_getBalance', [address, 'latest'])));
      });

      it('getTransactionCount at genesis, around a transaction and at latest', async () => {
        const { funded } = facts.genesis;
        const atGenesis = await client.getTransactionCount({ address: funded.address, blockNumber: 0n });
        assert.equal(atGenesis, Number(funded.nonce));
        const { address, block, receipt } = facts.sender;
        const { nonce } = await client.getTransaction({ hash: receipt.transactionHash });
        assert.ok((await client.getTransactionCount({ address, blockNumber: block - 1n })) <= nonce);
        const after = await client.getTransactionCount({ address, blockNumber: block });
        assert.equal(after, nonce + 1);
        assert.equal(await client.getTransactionCount({ address }), after);
        assert.equal(
          await client.getTransactionCount({ address, blockTag: 'latest' }),
          Number(await server.rpc<Hex>('eth_getTransactionCount', [address, 'latest'])),
        );
      });

      it('getCode at genesis, before and after a creation, and at latest', async () => {
        const { code } = facts.genesis;
        assert.equal(await client.getCode({ address: code.address, blockNumber: 0n }), lower(code.code));
        const { contract, block } = facts.creation;
        assert.equal(await client.getCode({ address: contract, blockNumber: block - 1n }), undefined);
        const deployed = await client.getCode({ address: contract, blockNumber: block });
        assert.ok(deployed !== undefined && deployed.length > 2, 'the creation left code');
        const raw = await server.rpc<Hex>('eth_getCode', [contract, 'latest']);
        assert.equal((await client.getCode({ address: contract })) ?? '0x', raw);
      });

      it('getStorageAt at genesis and at latest', async () => {
        const { address, slot, value } = facts.genesis.storage;
        assert.equal(await client.getStorageAt({ address, slot, blockNumber: 0n }), word(value));
        assert.equal(
          await client.getStorageAt({ address, slot }),
          await server.rpc<Hex>('eth_getStorageAt', [address, slot, 'latest']),
        );
      });
    });
  }

  it('refuses a wrong key with HTTP 401', async () => {
    const client = createPublicClient({ transport: http(`${server.base}/v3/not-a-key`, { retryCount: 0 }) });
    await assert.rejects(client.getBlockNumber(), (e: unknown) => {
      assert.ok(e instanceof HttpRequestError, String(e));
      assert.equal(e.status, 401);
      return true;
    });
  });

  it('refuses a wrong key at the WebSocket upgrade with HTTP 401', async () => {
    const transport = webSocket(`${server.wsBase}/ws/v3/not-a-key`, {
      retryCount: 0,
      reconnect: false,
      keepAlive: false,
    });
    const client = createPublicClient({ transport });
    // viem has no error class for a refused upgrade: it passes on the `ws` message naming the status.
    await assert.rejects(client.getBlockNumber(), /Unexpected server response: 401/);
  });
});
