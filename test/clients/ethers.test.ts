import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import {
  type Block,
  type JsonRpcApiProvider,
  JsonRpcProvider,
  type Log,
  type TransactionReceipt,
  type TransactionResponse,
  WebSocketProvider,
} from 'ethers';
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
 * ethers v6, as a dapp uses it, against a real server over HTTP (where it batches requests) and
 * WebSocket. ethers renames and retypes fields, so each answer is checked field by field against
 * the server's raw JSON-RPC answer, and against the chain's own facts (see chainFacts.ts).
 */

const hex = (n: bigint | number): Hex => `0x${n.toString(16)}`;
const lower = (s: string | null | undefined) => s?.toLowerCase() ?? null;
const num = (q: unknown) => (q === undefined || q === null ? null : Number(q as string));
const bigOrNull = (q: unknown) => (q === undefined || q === null ? null : BigInt(q as string));

interface RawTx {
  hash: Hex;
  blockHash: Hex;
  blockNumber: Hex;
  transactionIndex: Hex;
  type: Hex;
  from: Hex;
  to: Hex | null;
  nonce: Hex;
  gas: Hex;
  gasPrice?: Hex;
  maxFeePerGas?: Hex;
  maxPriorityFeePerGas?: Hex;
  maxFeePerBlobGas?: Hex;
  input: Hex;
  value: Hex;
  chainId?: Hex;
  r: Hex;
  s: Hex;
  blobVersionedHashes?: Hex[];
  authorizationList?: unknown[];
}

interface RawBlock {
  hash: Hex;
  number: Hex;
  timestamp: Hex;
  parentHash: Hex;
  parentBeaconBlockRoot?: Hex;
  nonce: Hex;
  difficulty: Hex;
  gasLimit: Hex;
  gasUsed: Hex;
  blobGasUsed?: Hex;
  excessBlobGas?: Hex;
  miner: Hex;
  mixHash: Hex;
  extraData: Hex;
  baseFeePerGas?: Hex;
  stateRoot: Hex;
  receiptsRoot: Hex;
  transactions: Array<Hex | RawTx>;
}

function assertLog(log: Log, raw: RawLog): void {
  assert.deepEqual(
    {
      address: lower(log.address),
      topics: log.topics,
      data: log.data,
      blockHash: log.blockHash,
      blockNumber: log.blockNumber,
      transactionHash: log.transactionHash,
      transactionIndex: log.transactionIndex,
      index: log.index,
      // ethers drops `removed` from receipt logs whatever the wire says; eth_getLogs logs keep it.
      removed: log.removed ?? raw.removed,
    },
    {
      address: lower(raw.address),
      topics: raw.topics,
      data: raw.data,
      blockHash: raw.blockHash,
      blockNumber: Number(raw.blockNumber),
      transactionHash: raw.transactionHash,
      transactionIndex: Number(raw.transactionIndex),
      index: Number(raw.logIndex),
      removed: raw.removed,
    },
  );
}

function assertReceipt(receipt: TransactionReceipt, raw: RawReceipt): void {
  assert.deepEqual(
    {
      hash: receipt.hash,
      blockHash: receipt.blockHash,
      blockNumber: receipt.blockNumber,
      index: receipt.index,
      from: lower(receipt.from),
      to: lower(receipt.to),
      contractAddress: lower(receipt.contractAddress),
      gasUsed: receipt.gasUsed,
      cumulativeGasUsed: receipt.cumulativeGasUsed,
      gasPrice: receipt.gasPrice,
      blobGasUsed: receipt.blobGasUsed,
      blobGasPrice: receipt.blobGasPrice,
      logsBloom: receipt.logsBloom,
      type: receipt.type,
      // ethers leaves these undefined, not null, when the answer has no such field.
      status: receipt.status ?? null,
      root: receipt.root ?? null,
      logs: receipt.logs.length,
    },
    {
      hash: raw.transactionHash,
      blockHash: raw.blockHash,
      blockNumber: Number(raw.blockNumber),
      index: Number(raw.transactionIndex),
      from: lower(raw.from),
      to: lower(raw.to),
      contractAddress: lower(raw.contractAddress),
      gasUsed: BigInt(raw.gasUsed as string),
      cumulativeGasUsed: BigInt(raw.cumulativeGasUsed as string),
      gasPrice: BigInt(raw.effectiveGasPrice as string),
      blobGasUsed: bigOrNull(raw.blobGasUsed),
      blobGasPrice: bigOrNull(raw.blobGasPrice),
      logsBloom: raw.logsBloom,
      type: Number(raw.type),
      status: num(raw.status),
      root: (raw.root as string | undefined) ?? null,
      logs: raw.logs.length,
    },
  );
  for (const [i, log] of receipt.logs.entries()) assertLog(log, raw.logs[i] as RawLog);
}

function assertTransaction(tx: TransactionResponse, raw: RawTx): void {
  assert.deepEqual(
    {
      hash: tx.hash,
      blockHash: tx.blockHash,
      blockNumber: tx.blockNumber,
      index: tx.index,
      type: tx.type,
      from: lower(tx.from),
      to: lower(tx.to),
      nonce: tx.nonce,
      gasLimit: tx.gasLimit,
      maxFeePerGas: tx.maxFeePerGas,
      maxPriorityFeePerGas: tx.maxPriorityFeePerGas,
      maxFeePerBlobGas: tx.maxFeePerBlobGas,
      data: tx.data,
      value: tx.value,
      r: tx.signature.r,
      s: tx.signature.s,
      blobVersionedHashes: tx.blobVersionedHashes,
      authorizations: tx.authorizationList?.length ?? 0,
    },
    {
      hash: raw.hash,
      blockHash: raw.blockHash,
      blockNumber: Number(raw.blockNumber),
      index: Number(raw.transactionIndex),
      type: Number(raw.type),
      from: lower(raw.from),
      to: lower(raw.to),
      nonce: Number(raw.nonce),
      gasLimit: BigInt(raw.gas),
      maxFeePerGas: bigOrNull(raw.maxFeePerGas),
      maxPriorityFeePerGas: bigOrNull(raw.maxPriorityFeePerGas),
      maxFeePerBlobGas: bigOrNull(raw.maxFeePerBlobGas),
      data: raw.input,
      value: BigInt(raw.value),
      r: word(raw.r),
      s: word(raw.s),
      blobVersionedHashes: raw.blobVersionedHashes ?? null,
      authorizations: raw.authorizationList?.length ?? 0,
    },
  );
  if (raw.gasPrice !== undefined) assert.equal(tx.gasPrice, BigInt(raw.gasPrice));
  if (raw.chainId !== undefined) assert.equal(tx.chainId, BigInt(raw.chainId));
}

function assertBlock(block: Block, raw: RawBlock): void {
  assert.deepEqual(
    {
      hash: block.hash,
      number: block.number,
      timestamp: block.timestamp,
      parentHash: block.parentHash,
      parentBeaconBlockRoot: block.parentBeaconBlockRoot,
      nonce: block.nonce,
      difficulty: block.difficulty,
      gasLimit: block.gasLimit,
      gasUsed: block.gasUsed,
      blobGasUsed: block.blobGasUsed,
      excessBlobGas: block.excessBlobGas,
      miner: lower(block.miner),
      prevRandao: block.prevRandao,
      extraData: block.extraData,
      baseFeePerGas: block.baseFeePerGas,
      stateRoot: block.stateRoot,
      receiptsRoot: block.receiptsRoot,
      transactions: block.transactions,
    },
    {
      hash: raw.hash,
      number: Number(raw.number),
      timestamp: Number(raw.timestamp),
      parentHash: raw.parentHash,
      parentBeaconBlockRoot: raw.parentBeaconBlockRoot ?? null,
      nonce: raw.nonce,
      difficulty: BigInt(raw.difficulty),
      gasLimit: BigInt(raw.gasLimit),
      gasUsed: BigInt(raw.gasUsed),
      blobGasUsed: bigOrNull(raw.blobGasUsed),
      excessBlobGas: bigOrNull(raw.excessBlobGas),
      miner: lower(raw.miner),
      prevRandao: raw.mixHash,
      extraData: raw.extraData,
      baseFeePerGas: bigOrNull(raw.baseFeePerGas),
      stateRoot: raw.stateRoot,
      receiptsRoot: raw.receiptsRoot,
      transactions: raw.transactions.map((t) => (typeof t === 'string' ? t : t.hash)),
    },
  );
}

describe('ethers against ethtrace', () => {
  const conformance = conformanceServerForSuite();
  let server: RunningServer;
  let facts: ChainFacts;
  let chainId: bigint;
  before(async () => {
    server = conformance();
    facts = await chainFacts(server);
    chainId = BigInt(JSON.parse(readFileSync(join(CONFORMANCE, 'genesis.json'), 'utf8')).config.chainId);
  });

  const providers: Record<string, () => JsonRpcApiProvider> = {
    HTTP: () => new JsonRpcProvider(server.url),
    WebSocket: () => new WebSocketProvider(server.wsUrl),
  };

  for (const [name, makeProvider] of Object.entries(providers)) {
    describe(`over ${name}`, () => {
      let provider: JsonRpcApiProvider;
      before(() => {
        provider = makeProvider();
      });
      after(async () => {
        await provider?.destroy();
      });

      it('getNetwork: the genesis chain id', async () => {
        const network = await provider.getNetwork();
        assert.equal(network.chainId, chainId);
        assert.equal(network.chainId, BigInt(await server.rpc<Hex>('eth_chainId')));
      });

      it('getBlockNumber: the head the fixtures name', async () => {
        assert.equal(await provider.getBlockNumber(), Number(facts.head.number));
      });

      it('getBlock by number, by hash, by tag, and with transactions', async () => {
        const { number, hash, receipts } = facts.busy;
        const byNumber = await provider.getBlock(number);
        assert.ok(byNumber);
        assertBlock(byNumber, await server.rpc<RawBlock>('eth_getBlockByNumber', [hex(number), false]));
        assert.equal(byNumber.hash, hash);
        assert.deepEqual(
          byNumber.transactions,
          receipts.map((r) => r.transactionHash),
        );
        assert.deepEqual((await provider.getBlock(hash))?.toJSON(), byNumber.toJSON());
        const latest = await provider.getBlock('latest');
        assert.equal(latest?.hash, facts.head.hash);
        assert.equal((await provider.getBlock(number - 1n))?.hash, byNumber.parentHash);

        const full = await provider.getBlock(number, true);
        assert.ok(full);
        assert.deepEqual(full.toJSON(), byNumber.toJSON());
        const raw = await server.rpc<RawBlock>('eth_getBlockByNumber', [hex(number), true]);
        assert.equal(full.prefetchedTransactions.length, raw.transactions.length);
        for (const [i, tx] of full.prefetchedTransactions.entries()) {
          assertTransaction(tx, raw.transactions[i] as RawTx);
          assert.deepEqual((await provider.getTransaction(tx.hash))?.toJSON(), tx.toJSON());
        }
      });

      it('getTransaction', async () => {
        const r = facts.loggingTx;
        const tx = await provider.getTransaction(r.transactionHash);
        assert.ok(tx);
        assertTransaction(tx, await server.rpc<RawTx>('eth_getTransactionByHash', [r.transactionHash]));
        assert.equal(tx.blockHash, facts.busy.hash);
        assert.equal(tx.index, Number(r.transactionIndex));
        assert.equal(lower(tx.from), lower(r.from));
      });

      it('getTransactionReceipt agrees with eth_getBlockReceipts', async () => {
        const raw = await provider.send('eth_getBlockReceipts', [hex(facts.busy.number)]);
        assert.deepEqual(raw, facts.busy.receipts);
        assert.deepEqual(await provider.send('eth_getBlockReceipts', [facts.busy.hash]), raw);
        for (const r of facts.busy.receipts) {
          const receipt = await provider.getTransactionReceipt(r.transactionHash);
          assert.ok(receipt);
          assertReceipt(receipt, r);
        }
        const creation = await provider.getTransactionReceipt(facts.creation.receipt.transactionHash);
        assert.equal(creation?.to, null);
        assert.equal(lower(creation?.contractAddress), lower(facts.creation.contract));
      });

      it('every block, transaction and receipt of the chain parses and matches the raw answers', async () => {
        for (let n = 0n; n <= facts.head.number; n++) {
          const [block, raw] = await Promise.all([
            provider.getBlock(n, true),
            server.rpc<RawBlock>('eth_getBlockByNumber', [hex(n), true]),
          ]);
          assert.ok(block);
          assertBlock(block, raw);
          for (const [i, tx] of block.prefetchedTransactions.entries())
            assertTransaction(tx, raw.transactions[i] as RawTx);
          const receipts = (await provider.send('eth_getBlockReceipts', [hex(n)])) as RawReceipt[];
          assert.deepEqual(
            receipts.map((r) => r.transactionHash),
            block.transactions,
          );
        }
      });

      it('the largest block receipts arrive whole', async () => {
        const receipts = (await provider.send('eth_getBlockReceipts', [facts.large.hash])) as RawReceipt[];
        assert.equal(receipts.length, facts.large.receipts);
        assert.equal(JSON.stringify(receipts).length, facts.large.bytes);
        const last = receipts.at(-1);
        assert.ok(last);
        const receipt = await provider.getTransactionReceipt(last.transactionHash);
        assert.ok(receipt);
        assertReceipt(receipt, last);
      });

      it('getLogs: by block hash, by address, by topic, by both', async () => {
        const check = (got: Log[], want: RawLog[]) => {
          assert.equal(got.length, want.length);
          for (const [i, log] of got.entries()) assertLog(log, want[i] as RawLog);
        };
        const range = { fromBlock: 0, toBlock: Number(facts.head.number) };
        check(
          await provider.getLogs({ blockHash: facts.busy.hash }),
          facts.busy.receipts.flatMap((r) => r.logs),
        );
        const byAddress = facts.allLogs.filter((l) => lower(l.address) === lower(facts.logAddress));
        check(await provider.getLogs({ ...range, address: facts.logAddress }), byAddress);
        const byTopic = facts.allLogs.filter((l) => l.topics[0] === facts.logTopic);
        check(await provider.getLogs({ ...range, topics: [facts.logTopic] }), byTopic);
        const both = byTopic.filter((l) => lower(l.address) === lower(facts.logAddress));
        assert.ok(both.length > 0);
        check(
          await provider.getLogs({ ...range, address: facts.logAddress, topics: [facts.logTopic] }),
          both,
        );
      });

      it('getBalance at genesis, at an old block and at latest', async () => {
        const { funded } = facts.genesis;
        assert.equal(await provider.getBalance(funded.address, 0), big(funded.balance));
        const { address, block } = facts.sender;
        const before = await provider.getBalance(address, block - 1n);
        assert.notEqual(
          before,
          await provider.getBalance(address, block),
          'a sender pays for its transaction',
        );
        assert.equal(
          await provider.getBalance(address),
          big(await server.rpc<Hex>('eth_getBalance', [address, 'latest'])),
        );
      });

      it('getTransactionCount at genesis, around a transaction and at latest', async () => {
        const { funded } = facts.genesis;
        assert.equal(await provider.getTransactionCount(funded.address, 0), Number(funded.nonce));
        const { address, block, receipt } = facts.sender;
        const tx = await provider.getTransaction(receipt.transactionHash);
        assert.ok(tx);
        assert.ok((await provider.getTransactionCount(address, block - 1n)) <= tx.nonce);
        assert.equal(await provider.getTransactionCount(address, block), tx.nonce + 1);
        assert.equal(
          await provider.getTransactionCount(address, 'latest'),
          Number(await server.rpc<Hex>('eth_getTransactionCount', [address, 'latest'])),
        );
      });

      it('getCode at genesis, before and after a creation, and at latest', async () => {
        const { code } = facts.genesis;
        assert.equal(await provider.getCode(code.address, 0), lower(code.code));
        const { contract, block } = facts.creation;
        assert.equal(await provider.getCode(contract, block - 1n), '0x');
        assert.ok((await provider.getCode(contract, block)).length > 2, 'the creation left code');
        assert.equal(
          await provider.getCode(contract),
          await server.rpc<Hex>('eth_getCode', [contract, 'latest']),
        );
      });

      it('getStorage at genesis and at latest', async () => {
        const { address, slot, value } = facts.genesis.storage;
        assert.equal(await provider.getStorage(address, slot, 0), word(value));
        assert.equal(
          await provider.getStorage(address, slot),
          await server.rpc<Hex>('eth_getStorageAt', [address, slot, 'latest']),
        );
      });
    });
  }

  it('refuses a wrong key with HTTP 401', async () => {
    // A known network and staticNetwork: ethers would otherwise retry network detection forever.
    const provider = new JsonRpcProvider(`${server.base}/v3/not-a-key`, chainId, { staticNetwork: true });
    try {
      await assert.rejects(provider.getBlockNumber(), (e: unknown) => {
        const info = (e as { info?: { responseStatus?: string } }).info;
        assert.match(info?.responseStatus ?? String(e), /^401\b/);
        return true;
      });
    } finally {
      provider.destroy();
    }
  });
});
