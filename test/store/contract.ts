// The behaviour every ChainStore implementation owes the service, written once. An implementation's
// test file calls `storeContract` with a way to open a fresh store; the suite never looks inside.

import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { CommitRejectedError } from '../../src/store/errors.ts';
import type { BlockWrite, ChainStore, FlatAccount } from '../../src/store/types.ts';
import {
  account,
  address,
  ascii,
  assertChainBlock,
  block,
  blockHash,
  chainBlock,
  fakeHash,
  slot,
  textOf,
  transactions,
  txHash,
} from './blocks.ts';

export interface StoreFixture {
  /** The open store; `reopen` replaces it. */
  store: ChainStore;
  /** Closes the store and opens the same data again, as a restarted process would. */
  reopen(): Promise<void>;
  /** Closes the store and removes its data. */
  cleanup(): Promise<void>;
}

type OpenStore = () => Promise<StoreFixture>;

export function storeContract(name: string, open: OpenStore): void {
  describe(`${name}: ChainStore contract`, () => {
    emptyStore(open);
    blocksAndReceipts(open);
    accountHistory(open);
    storageHistory(open);
    commitOrder(open);
    unwinding(open);
    meta(open);
    reopening(open);
  });
}

const ZERO = new Uint8Array(0);
const UNKNOWN = fakeHash(0xee, 0n);

/** One store for the enclosing describe, seeded once, removed after its tests. */
function storeForGroup(open: OpenStore, seed: (store: ChainStore) => Promise<void> = async () => {}) {
  let fixture: StoreFixture | undefined;
  before(async () => {
    fixture = await open();
    await seed(fixture.store);
  });
  after(async () => {
    await fixture?.cleanup();
  });
  return (): StoreFixture => {
    if (fixture === undefined) throw new Error('the store of this group is not open');
    return fixture;
  };
}

async function commitAll(store: ChainStore, blocks: BlockWrite[]): Promise<void> {
  for (const write of blocks) await store.commitBlock(write);
}

/** Blocks 0..head with `changes[n]` merged into block n. */
function chainOf(head: bigint, changes: Record<string, Partial<BlockWrite>>): BlockWrite[] {
  return Array.from({ length: Number(head) + 1 }, (_, n) => block(BigInt(n), changes[n] ?? {}));
}

function emptyStore(open: OpenStore): void {
  describe('an empty store', () => {
    const fixture = storeForGroup(open);

    it('has no head', async () => {
      assert.equal(await fixture().store.getHead(), null);
    });

    it('answers null for every block, transaction, trie, code and meta lookup', async () => {
      const { store } = fixture();
      assert.equal(await store.getCanonicalHash(0n), null);
      assert.equal(await store.getBlockNumber(UNKNOWN), null);
      assert.equal(await store.getHeader(UNKNOWN), null);
      assert.equal(await store.getBody(UNKNOWN), null);
      assert.equal(await store.getStateRoot(UNKNOWN), null);
      assert.equal(await store.getTxLocation(UNKNOWN), null);
      assert.equal(await store.getReceipts(UNKNOWN), null);
      assert.equal(textOf(await store.getBlockReceiptsJson(UNKNOWN)), null);
      assert.equal(textOf(await store.getReceiptJson(UNKNOWN, 0)), null);
      assert.equal(await store.getTrieNode(UNKNOWN), null);
      assert.equal(await store.getCode(UNKNOWN), null);
      assert.equal(await store.getMeta('anything'), null);
    });

    it('has no accounts and reads every storage slot as zero', async () => {
      const { store } = fixture();
      assert.equal(await store.getAccountAt(address(1), 0n), null);
      assert.deepEqual(await store.getStorageAt(address(1), slot(1), 0n), ZERO);
    });
  });
}

function blocksAndReceipts(open: OpenStore): void {
  const chain = [
    block(0n, {
      trieNodes: [[fakeHash(0x70, 0n), ascii('genesis node')]],
      accounts: [{ address: address(1), account: account(0n, 10n ** 18n) }],
    }),
    block(1n, {
      ...transactions(1n, 2),
      trieNodes: [
        [fakeHash(0x70, 1n, 0), ascii('node a')],
        [fakeHash(0x70, 1n, 1), ascii('node b')],
      ],
      code: [[fakeHash(0xc0, 1n), ascii('contract code')]],
      accounts: [{ address: address(2), account: account(1n, 5n, fakeHash(0xc0, 1n)) }],
      storage: [{ address: address(2), slot: slot(0), value: Uint8Array.of(0x99) }],
    }),
    block(2n, transactions(2n, 1)),
    block(3n, transactions(3n, 3)),
  ];

  describe('blocks, transactions and receipts', () => {
    const fixture = storeForGroup(open, (store) => commitAll(store, chain));

    it('makes the last committed block the head', async () => {
      assert.deepEqual(await fixture().store.getHead(), { number: 3n, hash: blockHash(3n) });
    });

    it('maps canonical numbers to hashes and hashes to numbers', async () => {
      const { store } = fixture();
      for (const { number, hash } of chain) {
        assert.deepEqual(await store.getCanonicalHash(number), hash);
        assert.equal(await store.getBlockNumber(hash), number);
      }
      assert.equal(await store.getCanonicalHash(4n), null);
      assert.equal(await store.getBlockNumber(UNKNOWN), null);
    });

    it('returns the header, body and state root of each block', async () => {
      const { store } = fixture();
      for (const { hash, header, body, stateRoot } of chain) {
        assert.deepEqual(await store.getHeader(hash), header);
        assert.deepEqual(await store.getBody(hash), body);
        assert.deepEqual(await store.getStateRoot(hash), stateRoot);
      }
      assert.equal(await store.getHeader(UNKNOWN), null);
      assert.equal(await store.getBody(UNKNOWN), null);
      assert.equal(await store.getStateRoot(UNKNOWN), null);
    });

    it('locates every transaction by hash', async () => {
      const { store } = fixture();
      for (const { number, hash, txHashes } of chain) {
        for (const [index, tx] of txHashes.entries()) {
          assert.deepEqual(await store.getTxLocation(tx), { blockHash: hash, blockNumber: number, index });
        }
      }
      assert.equal(await store.getTxLocation(txHash(1n, 2)), null);
    });

    it('returns the consensus receipts as committed, none for an empty block', async () => {
      const { store } = fixture();
      for (const { hash, receipts } of chain) assert.deepEqual(await store.getReceipts(hash), receipts);
      assert.deepEqual(await store.getReceipts(blockHash(0n)), []);
      assert.equal(await store.getReceipts(UNKNOWN), null);
    });

    it('serves a block’s receipts as exactly the JSON array of the committed texts', async () => {
      const { store } = fixture();
      for (const { hash, receiptsJson } of chain) {
        assert.equal(textOf(await store.getBlockReceiptsJson(hash)), `[${receiptsJson.join(',')}]`);
      }
      assert.equal(textOf(await store.getBlockReceiptsJson(blockHash(0n))), '[]');
      assert.equal(textOf(await store.getBlockReceiptsJson(UNKNOWN)), null);
    });

    it('serves one receipt’s JSON by its index in the block', async () => {
      const { store } = fixture();
      for (const { hash, receiptsJson } of chain) {
        for (const [index, json] of receiptsJson.entries()) {
          assert.equal(textOf(await store.getReceiptJson(hash, index)), json);
        }
      }
    });

    it('answers null for a receipt index outside the block', async () => {
      const { store } = fixture();
      const three = blockHash(3n);
      for (const index of [-1, 3, 1.5, 2 ** 32, Number.NaN]) {
        assert.equal(textOf(await store.getReceiptJson(three, index)), null, `index ${index}`);
      }
      assert.equal(textOf(await store.getReceiptJson(blockHash(0n), 0)), null);
      assert.equal(textOf(await store.getReceiptJson(UNKNOWN, 0)), null);
    });

    it('returns trie nodes and code by hash', async () => {
      const { store } = fixture();
      for (const { trieNodes, code } of chain) {
        for (const [hash, node] of trieNodes) assert.deepEqual(await store.getTrieNode(hash), node);
        for (const [hash, bytes] of code) assert.deepEqual(await store.getCode(hash), bytes);
      }
      assert.equal(await store.getTrieNode(UNKNOWN), null);
      assert.equal(await store.getCode(UNKNOWN), null);
    });

    it('returns the accounts and storage the blocks wrote', async () => {
      const { store } = fixture();
      for (const at of [0n, 1n, 3n]) {
        assert.deepEqual(await store.getAccountAt(address(1), at), account(0n, 10n ** 18n));
      }
      assert.equal(await store.getAccountAt(address(2), 0n), null);
      assert.deepEqual(await store.getAccountAt(address(2), 3n), account(1n, 5n, fakeHash(0xc0, 1n)));
      assert.deepEqual(await store.getStorageAt(address(2), slot(0), 0n), ZERO);
      assert.deepEqual(await store.getStorageAt(address(2), slot(0), 3n), Uint8Array.of(0x99));
    });

    it('returns plain Uint8Arrays that the caller may keep and modify', async () => {
      const { store } = fixture();
      const header = await store.getHeader(blockHash(1n));
      const receipts = await store.getReceipts(blockHash(1n));
      assert.ok(header !== null && receipts !== null);
      // Buffer is a Uint8Array whose slice() shares memory; callers must not meet it by surprise.
      assert.equal(Object.getPrototypeOf(header), Uint8Array.prototype);
      header.fill(0);
      for (const receipt of receipts) receipt.fill(0);
      await store.getHeader(blockHash(2n)); // a read in between, in case buffers are recycled
      assert.deepEqual(await store.getHeader(blockHash(1n)), chain[1]?.header);
      assert.deepEqual(await store.getReceipts(blockHash(1n)), chain[1]?.receipts);
    });
  });
}

function accountHistory(open: OpenStore): void {
  // `low` and `high` differ from `target` only in the last address byte, so a range lookup that
  // overruns its address prefix reads them. Writes at 255 and 256 catch little-endian numbers.
  const target = address(0x10);
  const low = address(0x0f);
  const high = address(0x11);
  const v1 = account(1n, 100n);
  const v2 = account(2n, 200n);
  const v3 = account(3n, 300n, fakeHash(0xc0, 256n));
  const recreated = account(0n, 7n);
  const chain = chainOf(261n, {
    1: { accounts: [{ address: low, account: account(1n, 1n) }] },
    3: { accounts: [{ address: target, account: v1 }] },
    5: { accounts: [{ address: high, account: account(5n, 5n) }] },
    255: { accounts: [{ address: target, account: v2 }] },
    256: { accounts: [{ address: target, account: v3 }] },
    258: { accounts: [{ address: target, account: null }], storageWipes: [target] },
    260: { accounts: [{ address: target, account: recreated }] },
  });

  describe('account history', () => {
    const fixture = storeForGroup(open, (store) => commitAll(store, chain));
    const expectAccount = async (at: bigint, expected: FlatAccount | null, who = target) => {
      assert.deepEqual(await fixture().store.getAccountAt(who, at), expected, `at block ${at}`);
    };

    it('has no account before its first write', async () => {
      for (const at of [0n, 1n, 2n]) await expectAccount(at, null);
    });

    it('keeps the written account from its block until the next write', async () => {
      for (const at of [3n, 4n, 254n]) await expectAccount(at, v1);
      await expectAccount(255n, v2);
    });

    it('orders block numbers past 255 numerically', async () => {
      await expectAccount(256n, v3);
      await expectAccount(257n, v3);
    });

    it('has no account from its deletion until it is created again', async () => {
      await expectAccount(258n, null);
      await expectAccount(259n, null);
      await expectAccount(260n, recreated);
      await expectAccount(261n, recreated);
    });

    it('never reads a neighbouring address', async () => {
      await expectAccount(2n, null, target);
      await expectAccount(4n, null, high);
      await expectAccount(5n, account(5n, 5n), high);
      await expectAccount(261n, account(1n, 1n), low);
      await expectAccount(261n, null, address(0x12));
    });
  });
}

function storageHistory(open: OpenStore): void {
  const target = address(0x10);
  const low = address(0x0f);
  const high = address(0x11);
  const write = (who: Uint8Array, key: Uint8Array, value: Uint8Array) => ({ address: who, slot: key, value });
  const chain = chainOf(265n, {
    1: { storage: [write(low, slot(1), Uint8Array.of(0x0f))] },
    3: {
      storage: [
        write(target, slot(1), Uint8Array.of(0x2a)),
        write(target, slot(0xff, 0xff), Uint8Array.of(0xee)),
      ],
    },
    5: {
      storage: [
        write(target, Uint8Array.of(4), Uint8Array.of(0x44)),
        write(high, slot(1), Uint8Array.of(0x0b)),
      ],
    },
    256: { storage: [write(target, slot(1), Uint8Array.of(1, 0))] },
    257: { storage: [write(target, slot(1), slot(7))] }, // a 32-byte padded 7
    258: { accounts: [{ address: target, account: null }], storageWipes: [target] },
    259: { storage: [write(target, slot(2), Uint8Array.of(3))] },
    260: { storageWipes: [low, high] },
    261: { storage: [write(target, slot(1), Uint8Array.of(9))] },
    262: { storageWipes: [target], storage: [write(target, slot(2), Uint8Array.of(5))] },
    263: { storage: [write(target, slot(3), Uint8Array.of(1))] },
    264: { storage: [write(target, slot(3), Uint8Array.of(0)), write(target, slot(2), ZERO)] },
  });

  describe('storage history', () => {
    const fixture = storeForGroup(open, (store) => commitAll(store, chain));
    const expectValue = async (at: bigint, key: Uint8Array, expected: number[], who = target) => {
      const actual = await fixture().store.getStorageAt(who, key, at);
      assert.deepEqual(
        actual,
        Uint8Array.from(expected),
        `slot ${Buffer.from(key).toString('hex')} at ${at}`,
      );
    };

    it('reads zero before the first write', async () => {
      await expectValue(2n, slot(1), []);
    });

    it('reads the last value written at or before the block', async () => {
      for (const at of [3n, 4n, 255n]) await expectValue(at, slot(1), [0x2a]);
      await expectValue(256n, slot(1), [1, 0]);
    });

    it('keeps values minimal, so a padded value reads without its leading zeros', async () => {
      await expectValue(257n, slot(1), [7]);
    });

    it('left-pads short slot keys to 32 bytes, on write and on read', async () => {
      await expectValue(5n, slot(4), [0x44]);
      await expectValue(3n, Uint8Array.of(1), [0x2a]);
    });

    it('reads zero after a wipe until the slot is written again', async () => {
      for (const at of [258n, 259n, 260n]) await expectValue(at, slot(1), []);
      await expectValue(261n, slot(1), [9]);
    });

    it('lets a write in the block of a wipe win over the wipe', async () => {
      await expectValue(261n, slot(2), [3]);
      await expectValue(262n, slot(2), [5]);
      await expectValue(262n, slot(1), []);
    });

    it('reads a written zero as empty', async () => {
      await expectValue(263n, slot(3), [1]);
      await expectValue(264n, slot(3), []);
      await expectValue(264n, slot(2), []);
    });

    it('never reads a neighbouring slot or address', async () => {
      await expectValue(5n, slot(2), []); // slot 1 of the same address is written
      await expectValue(5n, slot(0), [], high); // slot ff…ff of the address below is written
      await expectValue(5n, slot(1), [0x0b], high);
      await expectValue(3n, slot(0xff, 0xff), [0xee]);
    });

    it('never applies a neighbouring address’s wipe', async () => {
      await expectValue(260n, slot(2), [3]); // both neighbours are wiped in 260
      await expectValue(259n, slot(1), [0x0f], low);
      await expectValue(260n, slot(1), [], low);
      await expectValue(259n, slot(1), [0x0b], high);
      await expectValue(260n, slot(1), [], high);
    });
  });
}

function commitOrder(open: OpenStore): void {
  const touched = address(0x99);
  const seed = [
    block(0n),
    block(1n, transactions(1n, 1)),
    block(2n, {
      ...transactions(2n, 1),
      accounts: [{ address: touched, account: account(1n, 1n) }],
      storage: [{ address: touched, slot: slot(1), value: Uint8Array.of(1) }],
    }),
  ];
  /** A block of every kind of record, none of which may appear when its commit is refused. */
  const refused = (number: bigint, tag: number, hash = fakeHash(tag, number)): BlockWrite =>
    block(number, {
      hash,
      header: ascii(`refused header ${tag}`),
      txHashes: [fakeHash(tag, number, 1)],
      receipts: [ascii('refused receipt')],
      receiptsJson: ['{"refused":true}'],
      trieNodes: [[fakeHash(tag, number, 2), ascii('refused node')]],
      code: [[fakeHash(tag, number, 3), ascii('refused code')]],
      accounts: [{ address: touched, account: account(9n, 9n) }],
      storageWipes: [touched],
      storage: [{ address: touched, slot: slot(2), value: Uint8Array.of(9) }],
    });

  async function assertUnchangedBy(store: ChainStore, write: BlockWrite): Promise<void> {
    await assert.rejects(store.commitBlock(write), CommitRejectedError);
    assert.deepEqual(await store.getHead(), { number: 2n, hash: blockHash(2n) });
    for (const { number, hash, header } of seed) {
      assert.deepEqual(await store.getCanonicalHash(number), hash);
      assert.deepEqual(await store.getHeader(hash), header);
    }
    assert.equal(await store.getCanonicalHash(3n), null);
    assert.deepEqual(await store.getTxLocation(txHash(2n, 0)), {
      blockHash: blockHash(2n),
      blockNumber: 2n,
      index: 0,
    });
    for (const [hash] of write.trieNodes) assert.equal(await store.getTrieNode(hash), null);
    for (const [hash] of write.code) assert.equal(await store.getCode(hash), null);
    for (const tx of write.txHashes) assert.equal(await store.getTxLocation(tx), null);
    assert.equal(await store.getAccountAt(touched, 1n), null);
    for (const at of [2n, 3n, 4n]) {
      assert.deepEqual(await store.getAccountAt(touched, at), account(1n, 1n));
      assert.deepEqual(await store.getStorageAt(touched, slot(1), at), Uint8Array.of(1));
      assert.deepEqual(await store.getStorageAt(touched, slot(2), at), ZERO);
    }
  }

  describe('commit order', () => {
    describe('on an empty store', () => {
      const fixture = storeForGroup(open);

      it('refuses any first block but 0', async () => {
        const { store } = fixture();
        await assert.rejects(store.commitBlock(refused(1n, 0xa1)), CommitRejectedError);
        assert.equal(await store.getHead(), null);
        assert.equal(await store.getBlockNumber(fakeHash(0xa1, 1n)), null);
        assert.equal(await store.getTxLocation(fakeHash(0xa1, 1n, 1)), null);
        assert.equal(await store.getAccountAt(touched, 1n), null);
      });
    });

    describe('on a store at block 2', () => {
      const fixture = storeForGroup(open, (store) => commitAll(store, seed));

      it('refuses a gap and writes nothing of it', async () => {
        await assertUnchangedBy(fixture().store, refused(4n, 0xa2));
      });

      it('refuses the head’s number again', async () => {
        await assertUnchangedBy(fixture().store, refused(2n, 0xa3));
      });

      it('refuses an older number', async () => {
        await assertUnchangedBy(fixture().store, refused(1n, 0xa4));
      });

      it('refuses a block whose hash is already stored', async () => {
        await assertUnchangedBy(fixture().store, refused(3n, 0xa5, blockHash(1n)));
      });

      it('still accepts the next block after refusals', async () => {
        const { store } = fixture();
        await store.commitBlock(block(3n));
        assert.deepEqual(await store.getHead(), { number: 3n, hash: blockHash(3n) });
      });
    });

    describe('a group of blocks (commitBlocks)', () => {
      const fixture = storeForGroup(open, (store) => commitAll(store, seed));

      it('stores none of a group with a gap in it', async (t) => {
        const { store } = fixture();
        if (!store.commitBlocks) return t.skip('the store commits one block at a time');
        await assert.rejects(store.commitBlocks([block(3n), block(5n)]), CommitRejectedError);
        assert.deepEqual(await store.getHead(), { number: 2n, hash: blockHash(2n) });
        assert.equal(await store.getBlockNumber(blockHash(3n)), null);
      });

      it('stores a group of consecutive blocks, each as commitBlock would', async (t) => {
        const { store } = fixture();
        if (!store.commitBlocks) return t.skip('the store commits one block at a time');
        await store.commitBlocks([block(3n), block(4n), block(5n)]);
        assert.deepEqual(await store.getHead(), { number: 5n, hash: blockHash(5n) });
        for (const n of [3n, 4n, 5n]) assert.equal(await store.getBlockNumber(blockHash(n)), n);
        await store.unwindTo(3n);
        assert.deepEqual(await store.getHead(), { number: 3n, hash: blockHash(3n) });
      });
    });
  });
}

function unwinding(open: OpenStore): void {
  describe('unwindTo', () => {
    const who = address(0x42);
    // Block n (1..4) writes the account, slot 1, a transaction; block 3 also wipes the storage.
    const blocks = chainOf(4n, {});
    for (let n = 1n; n <= 4n; n++) {
      blocks[Number(n)] = block(n, {
        ...transactions(n, 1),
        accounts: [{ address: who, account: account(n, n * 10n) }],
        storage: [{ address: who, slot: slot(1), value: Uint8Array.of(Number(n)) }],
        storageWipes: n === 3n ? [who] : [],
      });
    }
    const fixture = storeForGroup(open, (store) => commitAll(store, blocks));

    it('removes the later blocks and all they wrote, keeping the earlier ones whole', async () => {
      const { store } = fixture();
      await store.unwindTo(2n);
      assert.deepEqual(await store.getHead(), { number: 2n, hash: blockHash(2n) });
      for (const n of [3n, 4n]) {
        assert.equal(await store.getCanonicalHash(n), null);
        assert.equal(await store.getBlockNumber(blockHash(n)), null);
        assert.equal(await store.getHeader(blockHash(n)), null);
        assert.equal(await store.getBody(blockHash(n)), null);
        assert.equal(await store.getReceipts(blockHash(n)), null);
        assert.equal(await store.getBlockReceiptsJson(blockHash(n)), null);
        assert.equal(await store.getTxLocation(txHash(n, 0)), null);
      }
      // State at any later block now reads as block 2 left it (the wipe of block 3 is gone too).
      assert.deepEqual(await store.getAccountAt(who, 9n), account(2n, 20n));
      assert.deepEqual(await store.getStorageAt(who, slot(1), 9n), Uint8Array.of(2));
      assert.deepEqual(await store.getAccountAt(who, 1n), account(1n, 10n));
      assert.ok(await store.getTxLocation(txHash(2n, 0)));
    });

    it('accepts new blocks after the new head, also with the numbers it removed', async () => {
      const { store } = fixture();
      await store.commitBlock(block(3n, { header: ascii('another 3'), hash: fakeHash(0x33, 3n) }));
      assert.deepEqual(await store.getHead(), { number: 3n, hash: fakeHash(0x33, 3n) });
      assert.deepEqual(await store.getStorageAt(who, slot(1), 3n), Uint8Array.of(2));
    });

    it('keeps its changes across a reopen, and does nothing when the head is not past the target', async () => {
      const f = fixture();
      await f.reopen();
      await f.store.unwindTo(7n);
      assert.deepEqual(await f.store.getHead(), { number: 3n, hash: fakeHash(0x33, 3n) });
      await f.store.unwindTo(0n);
      assert.deepEqual(await f.store.getHead(), { number: 0n, hash: blockHash(0n) });
      assert.equal(await f.store.getAccountAt(who, 5n), null);
    });
  });
}

function meta(open: OpenStore): void {
  describe('meta', () => {
    const fixture = storeForGroup(open);

    it('returns what was put, null for other keys', async () => {
      const { store } = fixture();
      await store.putMeta('chainId', Uint8Array.of(1));
      assert.deepEqual(await store.getMeta('chainId'), Uint8Array.of(1));
      assert.equal(await store.getMeta('chainid'), null);
    });

    it('replaces a value', async () => {
      const { store } = fixture();
      await store.putMeta('genesis', ascii('first'));
      await store.putMeta('genesis', ascii('second'));
      assert.deepEqual(await store.getMeta('genesis'), ascii('second'));
    });

    it('keeps an empty value apart from an absent one', async () => {
      const { store } = fixture();
      await store.putMeta('empty', ZERO);
      assert.deepEqual(await store.getMeta('empty'), ZERO);
    });
  });
}

function reopening(open: OpenStore): void {
  describe('close and reopen', () => {
    const fixture = storeForGroup(open, async (store) => {
      await commitAll(store, [chainBlock(0n), chainBlock(1n), chainBlock(2n)]);
      await store.putMeta('chainId', Uint8Array.of(7));
    });

    it('keeps every block, state entry, receipt and meta value', async () => {
      await fixture().reopen();
      const { store } = fixture();
      assert.deepEqual(await store.getHead(), { number: 2n, hash: blockHash(2n) });
      for (const number of [0n, 1n, 2n]) await assertChainBlock(store, number);
      assert.deepEqual(await store.getMeta('chainId'), Uint8Array.of(7));
    });

    it('continues from the stored head', async () => {
      const { store } = fixture();
      await store.commitBlock(chainBlock(3n));
      await assertChainBlock(store, 3n);
      await assert.rejects(store.commitBlock(chainBlock(3n)), CommitRejectedError);
    });
  });
}
