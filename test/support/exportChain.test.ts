import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { createCommonFromGethGenesis } from '@ethereumjs/common';
import { RLP } from '@ethereumjs/rlp';
import { bytesToBigInt } from '@ethereumjs/util';
import { type Hex, hexToBigInt, numberToHex } from 'viem';
import { type Anvil, startAnvil } from './anvil.ts';
import { type ExportedChain, exportChain } from './exportChain.ts';
import type { GethGenesis } from './genesis.ts';
import type { RpcBlock } from './rpcTypes.ts';
import { type BasicChain, buildBasicChain, buildBigBlock } from './workload.ts';

/** Splits a `geth export` file back into its blocks' RLP lists. */
function decodeChain(bytes: Uint8Array): Uint8Array[][][] {
  const blocks: Uint8Array[][][] = [];
  let rest = bytes;
  while (rest.length > 0) {
    const { data, remainder } = RLP.decode(rest, true);
    blocks.push(data as unknown as Uint8Array[][]);
    rest = remainder;
  }
  return blocks;
}

describe('exportChain on the basic workload', () => {
  let anvil: Anvil;
  let outDir: string;
  let chain: BasicChain;
  let exported: ExportedChain;

  before(async () => {
    anvil = await startAnvil();
    outDir = await mkdtemp(join(tmpdir(), 'ethtrace-export-'));
    // With the failed creation too: an export must be faithful whatever anvil's state does.
    chain = await buildBasicChain(anvil, { failedCreation: true });
    exported = await exportChain(anvil, outDir);
  });
  after(async () => {
    await anvil?.stop();
    if (outDir) await rm(outDir, { recursive: true, force: true });
  });

  it('exports genesis plus every mined block, ending at anvil head', async () => {
    assert.equal(exported.blocks, chain.blocks.length + 1);
    const head = await anvil.rpc<{ hash: Hex; number: Hex }>('eth_getBlockByNumber', ['latest', false]);
    assert.equal(exported.blocks, Number(hexToBigInt(head.number)) + 1);
    assert.equal(exported.headHash, head.hash);
  });

  it('writes a chain.rlp that decodes into the same blocks and transaction counts', async () => {
    const blocks = decodeChain(await readFile(exported.rlpPath));
    assert.equal(blocks.length, exported.blocks);
    for (const [n, [header, txs]] of blocks.entries()) {
      assert.equal(bytesToBigInt(header?.[8] ?? new Uint8Array()), BigInt(n), 'block number');
      const count = await anvil.rpc<Hex>('eth_getBlockTransactionCountByNumber', [numberToHex(n)]);
      assert.equal(txs?.length, Number(count), `tx count of block ${n}`);
    }
  });

  it('covers what the workload promises', () => {
    const statuses = new Set(chain.blocks.flatMap((b) => b.receipts.map((r) => r.status)));
    assert.deepEqual([...statuses].sort(), ['0x0', '0x1']);
    assert.ok(chain.delegatedEoa, 'the default hardfork has EIP-7702');
    assert.ok(
      chain.blocks.some((b) => b.receipts.length === 0),
      'an empty block',
    );
  });

  it('fails loudly when what it rebuilds is not what anvil committed to', async () => {
    const tampered = (edit: (block: RpcBlock) => void): Anvil => ({
      ...anvil,
      rpc: async <T>(method: string, params?: readonly unknown[]): Promise<T> => {
        const result = await anvil.rpc<T>(method, params);
        if (method === 'eth_getBlockByNumber' && params?.[0] === '0x1') edit(result as RpcBlock);
        return result;
      },
    });
    const scratch = join(outDir, 'tampered');
    await assert.rejects(
      exportChain(
        tampered((b) => {
          b.extraData = '0x01';
        }),
        scratch,
      ),
      /block 1: rebuilt header hashes to/,
    );
    await assert.rejects(
      exportChain(
        tampered((b) => {
          b.transactions.pop();
        }),
        scratch,
      ),
      /block 1 transactionsRoot: computed/,
    );
  });

  it('copies a genesis that ethereumjs reads as the hardfork anvil ran', async () => {
    const genesis = JSON.parse(await readFile(exported.genesisPath, 'utf8')) as GethGenesis;
    assert.deepEqual(genesis, anvil.genesis);
    const common = createCommonFromGethGenesis(genesis as never, { chain: 'anvil' });
    assert.equal(common.getHardforkBy({ blockNumber: 0n, timestamp: 0n }), anvil.hardfork);
    assert.equal(common.chainId(), BigInt(genesis.config.chainId));
  });
});

describe('buildBigBlock', () => {
  let anvil: Anvil;

  before(async () => {
    anvil = await startAnvil();
  });
  after(async () => {
    await anvil?.stop();
  });

  it('mines one block of 200 transactions and 440 logs that exports faithfully', async () => {
    const block = await buildBigBlock(anvil);
    assert.equal(block.receipts.length, 200);
    assert.equal(block.logCount, 440);
    const outDir = await mkdtemp(join(tmpdir(), 'ethtrace-export-'));
    try {
      const exported = await exportChain(anvil, outDir);
      assert.equal(exported.headHash, block.hash);
    } finally {
      await rm(outDir, { recursive: true, force: true });
    }
  });
});
