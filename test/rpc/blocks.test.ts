import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Common, Hardfork, Mainnet } from '@ethereumjs/common';
import { MerklePatriciaTrie } from '@ethereumjs/mpt';
import { RLP } from '@ethereumjs/rlp';
import { createFeeMarket1559Tx } from '@ethereumjs/tx';
import { bytesToBigInt, bytesToHex, hexToBytes } from '@ethereumjs/util';
import { keccak_256 } from '@noble/hashes/sha3.js';
import { formatTransaction } from '../../src/wire/transaction.ts';
import { CONFORMANCE } from '../support/cli.ts';
import { HEADER_FIELDS } from '../support/exportChain.ts';
import { importConformanceChain, type RunningServer, startServer } from '../support/server.ts';

// Everything expected here is computed from the chain itself (raw RLP, hashes, tries, receipts) or
// read from the execution-apis fixtures; nothing is hard-coded.

type Hex = `0x${string}`;
type Json = Record<string, unknown>;
interface RpcTx extends Json {
  hash: Hex;
  type: Hex;
  gasPrice: Hex;
  from: Hex;
  to: Hex | null;
  chainId?: Hex;
}
interface RpcBlock extends Json {
  hash: Hex;
  number: Hex;
  size: Hex;
  timestamp: Hex;
  transactions: RpcTx[] | Hex[];
  uncles: Hex[];
}

const hex = (n: bigint | number): Hex => `0x${n.toString(16)}`;
const keccak = (b: Uint8Array): Hex => bytesToHex(keccak_256(b)) as Hex;

// HEADER_FIELDS (from the exporter): the header RLP position of every header key geth prints; each
// key appears only when its field does.

/** Every transaction object in the fixtures' expected responses (single ones and full blocks). */
function fixtureTransactions(): RpcTx[] {
  const found: RpcTx[] = [];
  for (const method of readdirSync(CONFORMANCE)) {
    if (!/^eth_get(TransactionBy|BlockBy)/.test(method)) continue;
    for (const file of readdirSync(join(CONFORMANCE, method))) {
      for (const line of readFileSync(join(CONFORMANCE, method, file), 'utf8').split('\n')) {
        if (!line.startsWith('<< ')) continue;
        const result = JSON.parse(line.slice(3)).result;
        if (!result || typeof result !== 'object') continue;
        if (Array.isArray(result.transactions)) {
          for (const tx of result.transactions) if (typeof tx === 'object') found.push(tx);
        } else if ('hash' in result && 'input' in result) found.push(result);
      }
    }
  }
  return found;
}

/** The key set geth emits for a transaction's kind: its type, and for legacy ones EIP-155 or not. */
const txKind = (tx: RpcTx) =>
  tx.type === '0x0' ? `0x0/${tx.chainId === undefined ? 'plain' : '155'}` : tx.type;
const keySet = (o: object) => Object.keys(o).sort().join(',');

async function rpcError(server: RunningServer, method: string, params: unknown[]) {
  try {
    await server.rpc(method, params);
  } catch (e) {
    return e as Error & { code: number };
  }
  assert.fail(`${method} ${JSON.stringify(params)} succeeded`);
}

async function trieRoot(values: Uint8Array[]): Promise<Hex> {
  const trie = new MerklePatriciaTrie();
  for (const [i, value] of values.entries()) await trie.put(RLP.encode(i), value);
  return bytesToHex(trie.root()) as Hex;
}

describe('block and transaction read methods', () => {
  let cleanup: () => void;
  let datadir: string;
  let server: RunningServer;
  let head: number;
  /** Full blocks 0..head, as eth_getBlockByNumber(n, true) returns them. */
  const blocks: RpcBlock[] = [];

  before(async () => {
    const chain = await importConformanceChain();
    cleanup = chain.cleanup;
    datadir = chain.datadir;
    server = await startServer(datadir);
    head = Number(await server.rpc<Hex>('eth_blockNumber'));
    for (let n = 0; n <= head; n++)
      blocks.push(await server.rpc<RpcBlock>('eth_getBlockByNumber', [hex(n), true]));
  });

  after(async () => {
    await server?.close();
    cleanup?.();
  });

  const blockAt = (n: number): RpcBlock => {
    const block = blocks[n];
    assert.ok(block, `block ${n}`);
    return block;
  };
  const fullTxs = (block: RpcBlock) => block.transactions as RpcTx[];
  const someBlock = () => {
    // A block with transactions and a predecessor, away from both ends of the chain.
    const n = blocks.findIndex((b, i) => i > 1 && i < head && b.transactions.length > 1);
    assert.ok(n > 0, 'the chain has a mid-chain block with several transactions');
    return blockAt(n);
  };

  it("web3_clientVersion names the package's version, as package.json has it", async () => {
    const { version } = JSON.parse(readFileSync(join(import.meta.dirname, '../../package.json'), 'utf8'));
    assert.equal(await server.rpc('web3_clientVersion'), `ethtrace/v${version}`);
  });

  describe('block parameters', () => {
    it('names the same block in every form: hex, upper-case hex, JSON integer, decimal, hash, EIP-1898', async () => {
      const block = someBlock();
      const n = Number(block.number);
      const forms: unknown[] = [
        hex(n),
        `0x${n.toString(16).toUpperCase()}`,
        n,
        String(n),
        block.hash,
        { blockNumber: hex(n) },
        { blockHash: block.hash },
        { blockHash: block.hash, requireCanonical: true },
        { blockHash: block.hash, requireCanonical: false },
      ];
      for (const form of forms) {
        const got = await server.rpc<RpcBlock>('eth_getBlockByNumber', [form, false]);
        assert.equal(got?.hash, block.hash, JSON.stringify(form));
        const count = await server.rpc<Hex>('eth_getBlockTransactionCountByNumber', [form]);
        assert.equal(count, hex(block.transactions.length), JSON.stringify(form));
        const tx = await server.rpc<RpcTx>('eth_getTransactionByBlockNumberAndIndex', [form, '0x1']);
        assert.deepEqual(tx, fullTxs(block)[1], JSON.stringify(form));
      }
    });

    it('resolves latest, pending, safe and finalized to the head, earliest to genesis', async () => {
      const headBlock = blockAt(head);
      for (const tag of ['latest', 'pending', 'safe', 'finalized']) {
        assert.deepEqual(await server.rpc('eth_getBlockByNumber', [tag, true]), headBlock, tag);
        assert.equal(
          (await server.rpc<RpcBlock>('eth_getBlockByNumber', [{ blockNumber: tag }, false])).hash,
          headBlock.hash,
        );
        assert.equal(
          await server.rpc('eth_getBlockTransactionCountByNumber', [tag]),
          hex(headBlock.transactions.length),
        );
      }
      assert.deepEqual(await server.rpc('eth_getBlockByNumber', ['earliest', true]), blockAt(0));
      assert.equal(
        await server.rpc('debug_getRawHeader', ['earliest']),
        await server.rpc('debug_getRawHeader', ['0x0']),
      );
    });

    it('debug_getRaw* take every form but the decimal string, which geth rejects there', async () => {
      const block = someBlock();
      const n = Number(block.number);
      const raw = await server.rpc<Hex>('debug_getRawBlock', [hex(n)]);
      for (const form of [
        n,
        block.hash,
        { blockNumber: hex(n) },
        { blockHash: block.hash, requireCanonical: true },
      ]) {
        assert.equal(await server.rpc('debug_getRawBlock', [form]), raw, JSON.stringify(form));
      }
      for (const method of ['debug_getRawHeader', 'debug_getRawBlock', 'debug_getRawReceipts']) {
        const e = await rpcError(server, method, [String(n)]);
        assert.equal(e.code, -32602);
        assert.equal(e.message, 'invalid argument 0: hex string without 0x prefix');
      }
    });
  });

  describe('not found is null', () => {
    it('for blocks past the head and unknown hashes', async () => {
      const past = head + 1;
      const unknown = keccak(new TextEncoder().encode('no such block'));
      for (const form of [
        hex(past),
        past,
        String(past),
        unknown,
        { blockHash: unknown },
        { blockNumber: hex(past) },
      ]) {
        const label = JSON.stringify(form);
        assert.equal(await server.rpc('eth_getBlockByNumber', [form, true]), null, label);
        assert.equal(await server.rpc('eth_getBlockTransactionCountByNumber', [form]), null, label);
        assert.equal(await server.rpc('eth_getTransactionByBlockNumberAndIndex', [form, '0x0']), null, label);
      }
      for (const method of ['debug_getRawHeader', 'debug_getRawBlock', 'debug_getRawReceipts']) {
        assert.equal(await server.rpc(method, [hex(past)]), null, method);
        assert.equal(await server.rpc(method, [unknown]), null, method);
      }
      assert.equal(await server.rpc('eth_getBlockByHash', [unknown, false]), null);
      assert.equal(await server.rpc('eth_getBlockTransactionCountByHash', [unknown]), null);
      assert.equal(await server.rpc('eth_getTransactionByBlockHashAndIndex', [unknown, '0x0']), null);
    });

    it('for unknown transactions and indices past the end of a block', async () => {
      const unknown = keccak(new TextEncoder().encode('no such transaction'));
      for (const method of [
        'eth_getTransactionByHash',
        'eth_getTransactionReceipt',
        'eth_getRawTransactionByHash',
        'debug_getRawTransaction',
      ]) {
        assert.equal(await server.rpc(method, [unknown]), null, method);
      }
      for (const block of [blockAt(0), someBlock(), blockAt(head)]) {
        const past = hex(block.transactions.length);
        assert.equal(await server.rpc('eth_getTransactionByBlockNumberAndIndex', [block.number, past]), null);
        assert.equal(await server.rpc('eth_getTransactionByBlockHashAndIndex', [block.hash, past]), null);
        assert.equal(
          await server.rpc('eth_getTransactionByBlockHashAndIndex', [block.hash, '0xffffffff']),
          null,
        );
      }
    });
  });

  describe('bad parameters are -32602 naming the argument', () => {
    const hashOf = () => someBlock().hash;
    const cases: Array<[string, () => unknown[], RegExp]> = [
      ['eth_getBlockByNumber', () => [], /^missing value for required argument 0$/],
      ['eth_getBlockByNumber', () => ['0x1'], /^missing value for required argument 1$/],
      ['eth_getBlockByNumber', () => ['0x1', 'true'], /^invalid argument 1: /],
      ['eth_getBlockByNumber', () => ['0x1', false, 'extra'], /^too many arguments, want at most 2$/],
      ['eth_getBlockByNumber', () => ['newest', false], /^invalid argument 0: /],
      ['eth_getBlockByNumber', () => ['0x', false], /^invalid argument 0: /],
      ['eth_getBlockByNumber', () => ['0x10000000000000000', false], /^invalid argument 0: /],
      ['eth_getBlockByNumber', () => [-1, false], /^invalid argument 0: /],
      ['eth_getBlockByNumber', () => [1.5, false], /^invalid argument 0: /],
      ['eth_getBlockByNumber', () => [{}, false], /^invalid argument 0: /],
      [
        'eth_getBlockByNumber',
        () => [{ blockHash: hashOf(), blockNumber: '0x1' }, false],
        /^invalid argument 0: /,
      ],
      [
        'eth_getBlockByNumber',
        () => [{ blockHash: hashOf(), requireCanonical: 'yes' }, false],
        /^invalid argument 0: /,
      ],
      [
        'eth_getBlockByHash',
        () => ['0x1234', false],
        /^invalid argument 0: hex string has length 4, want 64/,
      ],
      ['eth_getBlockByHash', () => [hashOf()], /^missing value for required argument 1$/],
      ['eth_getBlockByHash', () => ['latest', false], /^invalid argument 0: /],
      ['eth_getBlockTransactionCountByNumber', () => ['latest', 1], /^too many arguments, want at most 1$/],
      ['eth_getBlockTransactionCountByHash', () => [1], /^invalid argument 0: /],
      [
        'eth_getTransactionByBlockNumberAndIndex',
        () => ['0x1', '1'],
        /^invalid argument 1: hex string without 0x prefix$/,
      ],
      ['eth_getTransactionByBlockNumberAndIndex', () => ['0x1'], /^missing value for required argument 1$/],
      ['eth_getTransactionByBlockHashAndIndex', () => [hashOf(), 1], /^invalid argument 1: /],
      ['eth_getTransactionByBlockHashAndIndex', () => ['0x1', '0x0'], /^invalid argument 0: /],
      ['eth_getTransactionByHash', () => [hashOf().slice(0, 40)], /^invalid argument 0: /],
      ['eth_getTransactionReceipt', () => [hashOf().slice(2)], /^invalid argument 0: /],
      ['eth_getRawTransactionByHash', () => [], /^missing value for required argument 0$/],
      ['debug_getRawTransaction', () => [42], /^invalid argument 0: /],
      ['debug_getRawHeader', () => ['0xzz'], /^invalid argument 0: /],
    ];
    for (const [method, params, message] of cases) {
      it(`${method} ${message.source}`, async () => {
        const e = await rpcError(server, method, params());
        assert.equal(e.code, -32602);
        assert.match(e.message, message);
      });
    }
  });

  describe('consistency over every block of the chain', () => {
    it('a block without full transactions lists the full ones’ hashes; by hash equals by number', async () => {
      for (const block of blocks) {
        const light = await server.rpc<RpcBlock>('eth_getBlockByNumber', [block.number, false]);
        assert.deepEqual(light, { ...block, transactions: fullTxs(block).map((tx) => tx.hash) });
        assert.deepEqual(await server.rpc('eth_getBlockByHash', [block.hash, true]), block);
        assert.deepEqual(await server.rpc('eth_getBlockByHash', [block.hash, false]), light);
        for (const tx of fullTxs(block)) {
          assert.equal(tx.blockHash, block.hash);
          assert.equal(tx.blockNumber, block.number);
          assert.equal(tx.blockTimestamp, block.timestamp);
        }
      }
    });

    it('header fields equal the raw header, whose keccak is the hash; keys follow the fields present', async () => {
      for (const block of blocks) {
        const rawHeader = hexToBytes(await server.rpc<Hex>('debug_getRawHeader', [block.number]));
        assert.equal(keccak(rawHeader), block.hash);
        const fields = RLP.decode(rawHeader) as Uint8Array[];
        const expected: Json = {};
        for (const [i, [key, kind]] of HEADER_FIELDS.entries()) {
          const value = fields[i];
          if (value !== undefined)
            expected[key] = kind === 'data' ? bytesToHex(value) : hex(bytesToBigInt(value));
        }
        const { hash, size, transactions, uncles, withdrawals, ...headerKeys } = block;
        assert.deepEqual(headerKeys, expected, `block ${block.number}`);
      }
    });

    it('debug_getRawBlock is the header plus body: size, uncles, transactions, withdrawals and both roots agree', async () => {
      for (const block of blocks) {
        const raw = hexToBytes(await server.rpc<Hex>('debug_getRawBlock', [block.number]));
        assert.equal(block.size, hex(raw.length), `size of ${block.number}`);
        const [header, txs, uncles, withdrawals, ...rest] = RLP.decode(raw) as unknown as [
          Uint8Array[],
          Array<Uint8Array | Uint8Array[]>,
          Uint8Array[][],
          Uint8Array[][] | undefined,
        ];
        assert.deepEqual(rest, []);
        assert.equal(keccak(RLP.encode(header)), block.hash);
        assert.equal(bytesToHex(RLP.encode(header)), await server.rpc('debug_getRawHeader', [block.hash]));
        assert.deepEqual(
          block.uncles,
          uncles.map((u) => keccak(RLP.encode(u))),
        );
        // Typed transactions sit in the body as byte strings (their envelope); legacy ones as lists.
        const rawTxs = txs.map((t) => (t instanceof Uint8Array ? t : RLP.encode(t)));
        assert.deepEqual(
          fullTxs(block).map((tx) => tx.hash),
          rawTxs.map(keccak),
        );
        assert.equal(await trieRoot(rawTxs), block.transactionsRoot);
        for (const [i, tx] of fullTxs(block).entries()) {
          const rawTx = bytesToHex(rawTxs[i] as Uint8Array);
          assert.equal(await server.rpc('debug_getRawTransaction', [tx.hash]), rawTx);
          assert.equal(await server.rpc('eth_getRawTransactionByHash', [tx.hash]), rawTx);
        }
        if (withdrawals === undefined) {
          assert.equal('withdrawals' in block, false);
        } else {
          assert.deepEqual(
            block.withdrawals,
            withdrawals.map(([index, validatorIndex, address, amount]) => ({
              index: hex(bytesToBigInt(index as Uint8Array)),
              validatorIndex: hex(bytesToBigInt(validatorIndex as Uint8Array)),
              address: bytesToHex(address as Uint8Array),
              amount: hex(bytesToBigInt(amount as Uint8Array)),
            })),
          );
        }
        const rawReceipts = (await server.rpc<Hex[]>('debug_getRawReceipts', [block.hash])).map(hexToBytes);
        assert.equal(rawReceipts.length, txs.length);
        assert.equal(await trieRoot(rawReceipts), block.receiptsRoot);
      }
    });

    it('uncles: counts, and each uncle is its raw header from the block (fields, hash, header-only size)', async () => {
      let seen = 0;
      for (const block of blocks) {
        const count = hex(block.uncles.length);
        assert.equal(await server.rpc('eth_getUncleCountByBlockNumber', [block.number]), count);
        assert.equal(await server.rpc('eth_getUncleCountByBlockHash', [block.hash]), count);
        const raw = hexToBytes(await server.rpc<Hex>('debug_getRawBlock', [block.number]));
        const rawUncles = (RLP.decode(raw) as unknown as [unknown, unknown, Uint8Array[][]])[2];
        for (const [i, fields] of rawUncles.entries()) {
          seen++;
          const expected: Json = {};
          for (const [f, [key, kind]] of HEADER_FIELDS.entries()) {
            const value = fields[f];
            if (value !== undefined)
              expected[key] = kind === 'data' ? bytesToHex(value) : hex(bytesToBigInt(value));
          }
          const headerOnly = RLP.encode([fields, [], []]);
          const want = { ...expected, hash: block.uncles[i], size: hex(headerOnly.length), uncles: [] };
          assert.equal(keccak(RLP.encode(fields)), block.uncles[i]);
          assert.deepEqual(await server.rpc('eth_getUncleByBlockHashAndIndex', [block.hash, hex(i)]), want);
          assert.deepEqual(
            await server.rpc('eth_getUncleByBlockNumberAndIndex', [block.number, hex(i)]),
            want,
          );
        }
        const past = hex(block.uncles.length);
        assert.equal(await server.rpc('eth_getUncleByBlockHashAndIndex', [block.hash, past]), null);
        assert.equal(await server.rpc('eth_getUncleByBlockNumberAndIndex', [block.number, past]), null);
      }
      assert.ok(seen > 0, 'the chain has uncles');
      const unknown = keccak(new TextEncoder().encode('no such block'));
      assert.equal(await server.rpc('eth_getUncleCountByBlockHash', [unknown]), null);
      assert.equal(await server.rpc('eth_getUncleByBlockHashAndIndex', [unknown, '0x0']), null);
      assert.equal(await server.rpc('eth_getUncleCountByBlockNumber', [hex(head + 1)]), null);
    });

    it('transaction counts equal the lengths', async () => {
      for (const block of blocks) {
        const count = hex(block.transactions.length);
        assert.equal(await server.rpc('eth_getBlockTransactionCountByNumber', [block.number]), count);
        assert.equal(await server.rpc('eth_getBlockTransactionCountByHash', [block.hash]), count);
      }
    });

    it('every transaction by hash and by position equals its entry in the full block, cold and cached', async () => {
      // A fresh server has no block decoded, so its lookups decode single transactions; the shared
      // server has every block cached from `before`.
      const cold = await startServer(datadir);
      try {
        for (const block of blocks) {
          for (const [i, tx] of fullTxs(block).entries()) {
            for (const s of [cold, server]) {
              assert.deepEqual(await s.rpc('eth_getTransactionByHash', [tx.hash]), tx);
              assert.deepEqual(
                await s.rpc('eth_getTransactionByBlockHashAndIndex', [block.hash, hex(i)]),
                tx,
              );
              assert.deepEqual(
                await s.rpc('eth_getTransactionByBlockNumberAndIndex', [block.number, hex(i)]),
                tx,
              );
            }
          }
        }
      } finally {
        await cold.close();
      }
    });

    it('every receipt equals its element of eth_getBlockReceipts and agrees with its transaction', async () => {
      for (const block of blocks) {
        const receipts = await server.rpc<Json[]>('eth_getBlockReceipts', [block.number]);
        assert.equal(receipts.length, block.transactions.length);
        for (const [i, tx] of fullTxs(block).entries()) {
          const receipt = await server.rpc<Json>('eth_getTransactionReceipt', [tx.hash]);
          assert.deepEqual(receipt, receipts[i]);
          assert.equal(receipt.transactionHash, tx.hash);
          assert.equal(receipt.transactionIndex, hex(i));
          assert.equal(receipt.blockHash, block.hash);
          assert.equal(receipt.blockNumber, block.number);
          assert.equal(receipt.from, tx.from);
          assert.equal(receipt.to, tx.to);
          assert.equal(receipt.type, tx.type);
          // geth reports a mined fee-market transaction's gasPrice as the price it paid.
          assert.equal(receipt.effectiveGasPrice, tx.gasPrice);
        }
      }
    });

    it('every transaction carries exactly the keys geth emits for its kind, as the fixtures show them', async () => {
      const expected = new Map<string, string>();
      for (const tx of fixtureTransactions()) {
        const keys = keySet(tx);
        const known = expected.get(txKind(tx));
        assert.ok(known === undefined || known === keys, `fixtures agree on the keys of ${txKind(tx)}`);
        expected.set(txKind(tx), keys);
      }
      const seen = new Set<string>();
      for (const block of blocks) {
        for (const tx of fullTxs(block)) {
          const keys = expected.get(txKind(tx));
          assert.ok(keys, `the fixtures show a transaction of kind ${txKind(tx)}`);
          assert.equal(keySet(tx), keys, `${tx.hash} (${txKind(tx)})`);
          seen.add(txKind(tx));
        }
      }
      assert.deepEqual(
        [...seen].sort(),
        [...expected.keys()].sort(),
        'the chain has every kind the fixtures show',
      );
    });
  });
});

describe('formatTransaction', () => {
  // Every fee-market transaction of the conformance chain bids exactly base fee + tip, so its
  // effective price equals its fee cap; this one leaves headroom to tell the two apart.
  it('reports base fee + tip as a mined fee-market transaction’s gasPrice, the fee cap while unmined', () => {
    const common = new Common({ chain: Mainnet, hardfork: Hardfork.London });
    const [maxFeePerGas, maxPriorityFeePerGas, baseFee] = [1000n, 7n, 100n];
    const tx = createFeeMarket1559Tx(
      { maxFeePerGas, maxPriorityFeePerGas, gasLimit: 21000n, to: `0x${'11'.repeat(20)}`, chainId: 1n },
      { common },
    ).sign(keccak_256(new TextEncoder().encode('a throwaway key')));
    const position = {
      blockHash: new Uint8Array(32),
      blockNumber: 1n,
      blockTimestamp: 2n,
      index: 0,
      baseFee,
    };
    const mined = formatTransaction(tx, position);
    assert.equal(mined.gasPrice, hex(baseFee + maxPriorityFeePerGas));
    assert.equal(mined.maxFeePerGas, hex(maxFeePerGas));
    const pending = formatTransaction(tx, null);
    assert.equal(pending.gasPrice, hex(maxFeePerGas));
    assert.equal(pending.blockHash, null);
    assert.equal(pending.transactionIndex, null);
  });
});
