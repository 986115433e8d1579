// The block rules of src/evm/block.ts on a real chain: every block of the execution-apis conformance
// chain (../shared/conformance, Frontier → BPO2: proof-of-work rewards and ommers, pre-Byzantium
// receipts, every transaction type, withdrawals, the EIP-4788/2935 system calls and EIP-7685
// requests) runs on our EVM from the genesis alloc, and each block's state root, receipts root, logs
// bloom, gas used, blob gas used and requests hash must equal its header's.

import assert from 'node:assert/strict';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import type { Block } from '@ethereumjs/block';
import { createBlockFromRLP, createBlockHeader } from '@ethereumjs/block';
import { RLP } from '@ethereumjs/rlp';
import { bytesToBigInt } from '@ethereumjs/util';
import { Forks } from '../../src/chain/forks.ts';
import { readChainSpec } from '../../src/chain/genesis.ts';
import {
  applyBlock,
  encodeReceipt,
  encodeWithdrawal,
  logsBloom,
  nextBaseFee,
  nextExcessBlobGas,
  requestsHash,
} from '../../src/evm/block.ts';
import { type ForkRules, forkByName, forkRules, withBlobSchedule } from '../../src/evm/forks.ts';
import { precompilesFor } from '../../src/evm/precompiles/index.ts';
import { type AccountRecord, EMPTY_CODE_HASH, type StateReader, WorldState } from '../../src/evm/state.ts';
import { type AccountLeaf, orderedTrieRoot, stateRoot, storageRoot } from '../../src/evm/trie.ts';
// The import's conversion: this test checks blocks as import hands them to the EVM.
import { transactionOf } from '../../src/ingest/evmExecution.ts';
import { readRlpBlocks } from '../../src/ingest/rlpFile.ts';
import { toHex } from '../../src/primitives/hex.ts';
import { keccak256 } from '../../src/primitives/keccak.ts';
import { CONFORMANCE } from '../support/cli.ts';

interface FullAccount {
  nonce: bigint;
  balance: bigint;
  code: Uint8Array;
  codeHash: Uint8Array;
  storage: Map<bigint, bigint>;
  storageRoot: Uint8Array | null;
}

/** The genesis alloc, read by the world; everything later lives in the world itself. */
class GenesisState implements StateReader {
  constructor(private readonly accounts: ReadonlyMap<bigint, FullAccount>) {}
  account(address: bigint): AccountRecord | null {
    const a = this.accounts.get(address);
    if (!a) return null;
    return { nonce: a.nonce, balance: a.balance, codeHash: a.codeHash, hasStorage: a.storage.size > 0 };
  }
  code(_hash: Uint8Array, address: bigint): Uint8Array {
    return this.accounts.get(address)?.code ?? new Uint8Array(0);
  }
  storage(address: bigint, slot: bigint): bigint {
    return this.accounts.get(address)?.storage.get(slot) ?? 0n;
  }
}

/** ethereumjs gives some fields as bytes, others (blob hashes) as hex strings. */
function big(value: Uint8Array | string): bigint {
  return typeof value === 'string' ? BigInt(value) : bytesToBigInt(value);
}

describe('src/evm/block.ts on the conformance chain', () => {
  it('gives every block the roots, bloom, gas and requests of its header', async () => {
    const spec = readChainSpec(join(CONFORMANCE, 'genesis.json'));
    const forks = new Forks(spec);
    const schedule =
      (
        spec.json.config as {
          blobSchedule?: Record<string, { target: number; max: number; baseFeeUpdateFraction: number }>;
        }
      ).blobSchedule ?? {};
    const state = new Map<bigint, FullAccount>();
    for (const a of spec.alloc) {
      const storage = new Map<bigint, bigint>();
      for (const [slot, value] of a.storage) if (big(value) !== 0n) storage.set(big(slot), big(value));
      state.set(big(a.address), {
        nonce: a.nonce,
        balance: a.balance,
        code: a.code,
        codeHash: a.code.length === 0 ? EMPTY_CODE_HASH : keccak256(a.code),
        storage,
        storageRoot: null,
      });
    }
    const world = new WorldState(new GenesisState(new Map(state)));
    const leaves = (changes: ReturnType<WorldState['changes']>): Map<bigint, AccountLeaf> => {
      const merged = new Map<bigint, AccountLeaf>();
      for (const [address, a] of state) {
        a.storageRoot ??= storageRoot(a.storage);
        merged.set(address, {
          nonce: a.nonce,
          balance: a.balance,
          codeHash: a.codeHash,
          storageRoot: a.storageRoot,
        });
      }
      for (const c of changes) {
        if (c.account === null) {
          merged.delete(c.address);
          continue;
        }
        const before = state.get(c.address);
        const storage = new Map(c.storageCleared || !before ? [] : before.storage);
        for (const [slot, value] of c.slots) {
          if (value === 0n) storage.delete(slot);
          else storage.set(slot, value);
        }
        merged.set(c.address, { ...c.account, storageRoot: storageRoot(storage) });
      }
      return merged;
    };
    const commit = (changes: ReturnType<WorldState['changes']>) => {
      for (const c of changes) {
        if (c.account === null) {
          state.delete(c.address);
          continue;
        }
        const before = state.get(c.address);
        const storage = new Map(c.storageCleared || !before ? [] : before.storage);
        for (const [slot, value] of c.slots) {
          if (value === 0n) storage.delete(slot);
          else storage.set(slot, value);
        }
        state.set(c.address, { ...c.account, storage, storageRoot: null });
      }
    };
    const hashes = new Map<bigint, bigint>();
    let parent: { header: Block['header'] } | null = null;
    let blocks = 0;
    const seen = new Set<string>();
    for await (const raw of readRlpBlocks(join(CONFORMANCE, 'chain.rlp'))) {
      const header = (RLP.decode(raw.rlp) as unknown as Uint8Array[][])[0] as unknown as Uint8Array[];
      const number = big(header[8] as Uint8Array);
      const timestamp = big(header[11] as Uint8Array);
      const common = forks.commonAt(number, timestamp);
      const block: Block = createBlockFromRLP(raw.rlp, { common });
      const forkName = forkByName(common.hardfork());
      assert.ok(forkName, `no rules for ${common.hardfork()}`);
      seen.add(forkName);
      let rules: ForkRules = forkRules(forkName);
      const blob = schedule[common.hardfork()];
      if (blob)
        rules = withBlobSchedule(rules, {
          ...blob,
          baseFeeUpdateFraction: BigInt(blob.baseFeeUpdateFraction),
        });
      const h = block.header;
      hashes.set(number - 1n, big(h.parentHash));
      const result = applyBlock(
        world,
        rules,
        precompilesFor(rules.precompiles),
        {
          env: {
            number,
            timestamp,
            coinbase: big(h.coinbase.bytes),
            gasLimit: h.gasLimit,
            difficulty: h.difficulty,
            prevRandao: big(h.mixHash),
            baseFee: h.baseFeePerGas ?? 0n,
            excessBlobGas: h.excessBlobGas ?? 0n,
            chainId: spec.chainId,
            blockHash: (n) => hashes.get(n) ?? 0n,
          },
          parentHash: big(h.parentHash),
          parentBeaconBlockRoot: h.parentBeaconBlockRoot ? big(h.parentBeaconBlockRoot) : null,
          transactions: block.transactions.map(transactionOf),
          ommers: block.uncleHeaders.map((u) => ({ coinbase: big(u.coinbase.bytes), number: u.number })),
          withdrawals: block.withdrawals
            ? block.withdrawals.map((w) => ({
                index: w.index,
                validatorIndex: w.validatorIndex,
                address: big(w.address.bytes),
                amount: w.amount,
              }))
            : null,
        },
        { depositContract: 0n, stateRoot: () => stateRoot(leaves(world.changes())) },
      );
      const where = `block ${number} (${forkName})`;
      assert.equal(result.gasUsed, h.gasUsed, `${where}: gas used`);
      assert.equal(
        toHex(orderedTrieRoot(result.receipts.map(encodeReceipt))),
        toHex(h.receiptTrie),
        `${where}: receipts root`,
      );
      assert.equal(
        toHex(logsBloom(result.receipts.flatMap((r) => r.logs))),
        toHex(h.logsBloom),
        `${where}: logs bloom`,
      );
      if (h.blobGasUsed !== undefined)
        assert.equal(result.blobGasUsed, h.blobGasUsed, `${where}: blob gas used`);
      if (h.requestsHash !== undefined)
        assert.equal(
          toHex(requestsHash(result.requests ?? [])),
          toHex(h.requestsHash),
          `${where}: requests hash`,
        );
      if (h.withdrawalsRoot !== undefined)
        assert.equal(
          toHex(
            orderedTrieRoot(
              (block.withdrawals ?? []).map((w) =>
                encodeWithdrawal({
                  index: w.index,
                  validatorIndex: w.validatorIndex,
                  address: big(w.address.bytes),
                  amount: w.amount,
                }),
              ),
            ),
          ),
          toHex(h.withdrawalsRoot),
          `${where}: withdrawals root`,
        );
      const changes = world.takeChanges();
      assert.equal(toHex(stateRoot(leaves(changes))), toHex(h.stateRoot), `${where}: state root`);
      commit(changes);
      // The header fields the dev miner will compute: base fee and excess blob gas from the parent.
      if (parent && parent.header.baseFeePerGas !== undefined && h.baseFeePerGas !== undefined)
        assert.equal(
          h.baseFeePerGas,
          nextBaseFee(parent.header.gasLimit, parent.header.gasUsed, parent.header.baseFeePerGas),
          `${where}: base fee`,
        );
      if (parent && parent.header.excessBlobGas !== undefined && h.excessBlobGas !== undefined)
        assert.equal(
          h.excessBlobGas,
          nextExcessBlobGas(
            rules,
            parent.header.excessBlobGas,
            parent.header.blobGasUsed ?? 0n,
            parent.header.baseFeePerGas ?? 0n,
          ),
          `${where}: excess blob gas`,
        );
      parent = { header: h };
      hashes.set(number, big(block.hash()));
      blocks++;
    }
    assert.ok(blocks > 50, `${blocks} blocks`);
    for (const fork of [
      'Homestead',
      'EIP150',
      'EIP158',
      'Byzantium',
      'Istanbul',
      'Berlin',
      'London',
      'Paris',
      'Shanghai',
      'Cancun',
      'Prague',
      'Osaka',
      'BPO1',
      'BPO2',
    ])
      assert.ok(seen.has(fork as never), `no block of ${fork}: ${[...seen].join(', ')}`);
  });
});

describe('next base fee and excess blob gas against ethereumjs', () => {
  it('agree on a grid of parents, EIP-7918 included, for Cancun, Prague, Osaka and BPO1/2', () => {
    const spec = readChainSpec(join(CONFORMANCE, 'genesis.json'));
    const forks = new Forks(spec);
    const schedule =
      (
        spec.json.config as {
          blobSchedule?: Record<string, { target: number; max: number; baseFeeUpdateFraction: number }>;
        }
      ).blobSchedule ?? {};
    let compared = 0;
    let reserve = 0;
    for (const time of [430n, 460n, 490n, 520n, 550n]) {
      const common = forks.commonAt(100n, time);
      const fork = forkByName(common.hardfork());
      assert.ok(fork);
      const blob = schedule[common.hardfork()];
      assert.ok(blob, common.hardfork());
      const rules = withBlobSchedule(forkRules(fork), {
        ...blob,
        baseFeeUpdateFraction: BigInt(blob.baseFeeUpdateFraction),
      });
      for (const excess of [0n, 100_000n, 393_216n, 10_000_000n, 80_000_000n])
        for (const used of [0n, 131_072n, 786_432n, 1_179_648n, 2_752_512n])
          for (const baseFee of [7n, 1_000_000_000n, 100_000_000_000n]) {
            const header = createBlockHeader(
              {
                number: 99n,
                timestamp: time - 1n,
                excessBlobGas: excess,
                blobGasUsed: used,
                baseFeePerGas: baseFee,
                gasLimit: 30_000_000n,
                gasUsed: 10_000_000n,
              },
              { common, skipConsensusFormatValidation: true },
            );
            const ours = nextExcessBlobGas(rules, excess, used, baseFee);
            assert.equal(
              ours,
              header.calcNextExcessBlobGas(common),
              `${fork} excess ${excess} used ${used} base fee ${baseFee}`,
            );
            if (
              rules.blobReservePrice &&
              ours !== 0n &&
              ours !== excess + used - BigInt(rules.blobs?.target ?? 0) * 131_072n
            )
              reserve++;
            assert.equal(nextBaseFee(30_000_000n, 10_000_000n, baseFee), header.calcNextBaseFee());
            compared++;
          }
    }
    assert.equal(compared, 375);
    assert.ok(reserve > 0, 'no case took EIP-7918’s reserve-price branch');
  });
});
