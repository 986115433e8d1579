// Block execution moved from @ethereumjs/vm onto src/evm (issue 20) must store what it stored before.
// Each chain here is imported (or mined) twice, with src/ingest/engines.ts's EVM and with the oracle
// (test/support/ethereumjsOracle/importEngine.ts), into
// two datadirs whose every LMDB table is then compared:
// - byte for byte: blocks, canonical hashes, state roots, transaction index, receipts (consensus and
//   JSON), code, meta;
// - the state history (accounts, slots, storage wipes): every entry the new engine wrote, ethereumjs
//   wrote the same, and every account and slot either store names reads the same at every block.
//   ethereumjs also writes entries that change nothing: an account called with no value written
//   again as it was, the system address "deleted" (it never exists) after each system call, a slot
//   written and then reverted (or written with the value it had), a storage wipe for every contract
//   creation (attempted ones too) whose storage is empty by EIP-7610's rules; the new engine writes
//   only what changed;
// - `blockChanges` (each block's undo record): the same transactions, its accounts, wipes and slots
//   among ethereumjs's (which come in the order it wrote them, and with the entries above);
// - `trieNodes`: ethereumjs's trie stores every node it makes on the way, also nodes of intermediate
//   tries no stored root reaches. The new engine must store exactly the nodes the stored state roots
//   reach (state trie and every storage trie), each also stored by ethereumjs with the same bytes.

import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { RLP } from '@ethereumjs/rlp';
import { createTxFromRLP, type TypedTransaction } from '@ethereumjs/tx';
import { Account, Address, bytesToHex, hexToBytes } from '@ethereumjs/util';
import { open, type RootDatabase } from 'lmdb';
import { type Hex, keccak256, type PrivateKeyAccount } from 'viem';
import { buildMainnetChain, type MainnetChain } from '../../bench/lib/mainnetBlocks.ts';
import { DEV_MNEMONIC, devGenesis } from '../../src/chain/devChain.ts';
import { Forks } from '../../src/chain/forks.ts';
import { type ChainSpec, parseChainSpec, readChainSpec } from '../../src/chain/genesis.ts';
import { ChainWriter } from '../../src/ingest/chainWriter.ts';
import { mineBlock } from '../../src/ingest/devMiner.ts';
import { importChain } from '../../src/ingest/importer.ts';
import { unseal } from '../../src/store/lmdb/checksum.ts';
import { openLmdbStore } from '../../src/store/lmdb/index.ts';
import { decodeBlockChanges } from '../../src/store/lmdb/values.ts';
import { type Anvil, startAnvil } from '../support/anvil.ts';
import { asm, deployCode } from '../support/asm.ts';
import { CONFORMANCE, tempDir } from '../support/cli.ts';
import {
  BALANCE_READER,
  CHILD_DAO,
  DAO,
  DAO_EXTRA_BALANCE,
  DAO_REFUND,
  mineDaoChain,
} from '../support/daoChain.ts';
import { devAccount } from '../support/devAccounts.ts';
import { type ImportEngine, importEngine } from '../support/ethereumjsOracle/importEngine.ts';
import { type ExportedChain, exportChain } from '../support/exportChain.ts';
import { buildBasicChain } from '../support/workload.ts';

const TABLES = [
  'headers',
  'bodies',
  'canonical',
  'blockNumbers',
  'stateRoots',
  'txIndex',
  'receipts',
  'receiptBoundaries',
  'receiptsJson',
  'trieNodes',
  'code',
  'accountHistory',
  'storageHistory',
  'storageWipes',
  'meta',
  'blockChanges',
] as const;

type Table = Map<string, Uint8Array>;

function readTables(datadir: string): Record<(typeof TABLES)[number], Table> {
  const env: RootDatabase = open(datadir, {
    readOnly: true,
    noSubdir: false,
    compression: false,
    maxDbs: 32,
  });
  try {
    const out = {} as Record<(typeof TABLES)[number], Table>;
    for (const name of TABLES) {
      const db = env.openDB<Uint8Array, Uint8Array>(name, { keyEncoding: 'binary', encoding: 'binary' });
      const table: Table = new Map();
      for (const { key, value } of db.getRange({})) {
        // Every value is stored with its checksum (src/store/lmdb/checksum.ts); compare what was written.
        const plain = unseal(key, value);
        assert.ok(plain, `${name} record under ${bytesToHex(key)} fails its checksum`);
        table.set(bytesToHex(key), Uint8Array.from(plain));
      }
      out[name] = table;
    }
    return out;
  } finally {
    env.close();
  }
}

const EMPTY_ROOT = bytesToHex(hexToBytes(keccak256('0x80')));

/** Every node the stored state roots reach (state trie, then each account's storage trie). */
function reachable(nodes: Table, roots: Iterable<Uint8Array>): Set<string> {
  const seen = new Set<string>();
  const visit = (hash: string, accounts: boolean) => {
    if (hash === EMPTY_ROOT || seen.has(hash)) return;
    const bytes = nodes.get(hash);
    assert.ok(bytes, `trie node ${hash} is missing`);
    seen.add(hash);
    walk(RLP.decode(bytes) as unknown as Decoded[], accounts);
  };
  type Decoded = Uint8Array | Decoded[];
  const child = (item: Decoded, accounts: boolean) => {
    if (item instanceof Uint8Array) {
      if (item.length === 32) visit(bytesToHex(item), accounts);
    } else walk(item as Decoded[], accounts);
  };
  const walk = (items: Decoded[], accounts: boolean) => {
    if (items.length === 17) {
      for (let i = 0; i < 16; i++) child(items[i] as Decoded, accounts);
      return;
    }
    const key = items[0] as Uint8Array;
    const isLeaf = (key[0] as number) >> 4 >= 2;
    if (!isLeaf) return child(items[1] as Decoded, accounts);
    if (!accounts) return;
    const account = RLP.decode(items[1] as Uint8Array) as Uint8Array[];
    visit(bytesToHex(account[2] as Uint8Array), false);
  };
  for (const root of roots) visit(bytesToHex(root), true);
  return seen;
}

function changesOf(value: Uint8Array) {
  const c = decodeBlockChanges(value);
  const hex = (list: Uint8Array[]) => list.map(bytesToHex).sort();
  return {
    txHashes: c.txHashes.map(bytesToHex),
    accounts: hex(c.accounts),
    wipes: hex(c.wipes),
    slots: c.slots.map(([a, s]) => bytesToHex(a) + bytesToHex(s).slice(2)).sort(),
  };
}

const BYTE_FOR_BYTE = TABLES.filter(
  (t) => !['trieNodes', 'blockChanges', 'accountHistory', 'storageHistory', 'storageWipes'].includes(t),
);
const HISTORY = ['accountHistory', 'storageHistory', 'storageWipes'] as const;

/** The comparison the header describes; `oracle` is the ethereumjs datadir. */
async function assertSameStore(oracle: string, ours: string, exactNodes = true): Promise<void> {
  const a = readTables(oracle);
  const b = readTables(ours);
  assert.ok(a.headers.size > 1, 'the oracle stored blocks');
  for (const name of BYTE_FOR_BYTE) {
    const x = a[name];
    const y = b[name];
    assert.deepEqual([...y.keys()], [...x.keys()], `table ${name}: keys`);
    for (const [key, value] of x) assert.deepEqual(y.get(key), value, `table ${name}: ${key}`);
  }
  for (const name of HISTORY)
    for (const [key, value] of b[name])
      assert.deepEqual(a[name].get(key), value, `table ${name}: ${key} only ours`);
  assert.deepEqual([...b.blockChanges.keys()], [...a.blockChanges.keys()], 'table blockChanges: keys');
  for (const [key, value] of a.blockChanges) {
    const theirs = changesOf(value);
    const mine = changesOf(b.blockChanges.get(key) as Uint8Array);
    assert.deepEqual(mine.txHashes, theirs.txHashes, `blockChanges ${key}: transactions`);
    for (const slot of mine.slots)
      assert.ok(theirs.slots.includes(slot), `blockChanges ${key}: slot ${slot} only ours`);
    for (const account of mine.accounts)
      assert.ok(theirs.accounts.includes(account), `blockChanges ${key}: account ${account} only ours`);
    for (const wipe of mine.wipes)
      assert.ok(theirs.wipes.includes(wipe), `blockChanges ${key}: wipe ${wipe} only ours`);
  }
  // Every account and slot named by either history, read at every block.
  const addresses = new Set<string>();
  for (const t of [a, b])
    for (const table of [t.accountHistory, t.storageWipes])
      for (const key of table.keys()) addresses.add(key.slice(0, 42));
  const slots = new Set<string>();
  for (const t of [a, b]) for (const key of t.storageHistory.keys()) slots.add(key.slice(0, 2 + 104));
  const head = BigInt(a.headers.size - 1);
  const x = await openLmdbStore(oracle, { readOnly: true });
  const y = await openLmdbStore(ours, { readOnly: true });
  try {
    for (let n = 0n; n <= head; n++) {
      for (const address of addresses) {
        const at = hexToBytes(address as Hex);
        assert.deepEqual(
          await y.getAccountAt(at, n),
          await x.getAccountAt(at, n),
          `account ${address} at ${n}`,
        );
      }
      for (const key of slots) {
        const address = hexToBytes(key.slice(0, 42) as Hex);
        const slot = hexToBytes(`0x${key.slice(42)}`);
        assert.deepEqual(
          await y.getStorageAt(address, slot, n),
          await x.getStorageAt(address, slot, n),
          `slot ${key} at ${n}`,
        );
      }
    }
  } finally {
    await x.close();
    await y.close();
  }
  for (const [key, value] of b.trieNodes) assert.deepEqual(a.trieNodes.get(key), value, `trie node ${key}`);
  const roots = [...a.stateRoots.values()];
  const reached = reachable(b.trieNodes, roots);
  // Blocks unwound keep their nodes (content-addressed records stay), and a block executed on
  // ethereumjs (the DAO fork's) stores its intermediate nodes: then the stored nodes are more than
  // the roots reach.
  if (exactNodes)
    assert.deepEqual(
      [...b.trieNodes.keys()].sort(),
      [...reached].sort(),
      'trie nodes stored = nodes the roots reach',
    );
  assert.deepEqual([...reachable(a.trieNodes, roots)].sort(), [...reached].sort());
}

async function importWith(
  engine: ImportEngine,
  datadir: string,
  spec: ChainSpec,
  file: string,
  verifyStateRoot: boolean,
): Promise<number> {
  const store = await openLmdbStore(datadir);
  try {
    const summary = await importChain({
      store,
      spec,
      files: [file],
      verifyStateRoot,
      engine: importEngine(engine),
    });
    return summary.imported;
  } finally {
    await store.close();
  }
}

describe('import on src/evm stores what import on @ethereumjs/vm stored', () => {
  const work = tempDir('ethtrace-evm-import-');
  after(() => work.cleanup());

  it('the conformance chain (Frontier → BPO2, every root checked)', async () => {
    const spec = readChainSpec(join(CONFORMANCE, 'genesis.json'));
    const file = join(CONFORMANCE, 'chain.rlp');
    const oracle = join(work.path, 'conformance-ethereumjs');
    const ours = join(work.path, 'conformance-evm');
    assert.equal(await importWith('ethereumjs', oracle, spec, file, true), 54);
    assert.equal(await importWith('evm', ours, spec, file, true), 54);
    await assertSameStore(oracle, ours);
  });

  describe('a chain built with anvil', () => {
    let anvil: Anvil;
    let chain: ExportedChain;
    before(async () => {
      anvil = await startAnvil();
      await buildBasicChain(anvil, { failedCreation: true });
      chain = await exportChain(anvil, join(work.path, 'anvil'));
    });
    after(async () => {
      await anvil?.stop();
    });

    it('imports the same, without state-root checks (anvil genesis roots are not canonical)', async () => {
      const spec = readChainSpec(chain.genesisPath);
      const oracle = join(work.path, 'anvil-ethereumjs');
      const ours = join(work.path, 'anvil-evm');
      const blocks = await importWith('ethereumjs', oracle, spec, chain.rlpPath, false);
      assert.equal(await importWith('evm', ours, spec, chain.rlpPath, false), blocks);
      assert.equal(blocks, chain.blocks);
      await assertSameStore(oracle, ours);
    });
  });

  describe('a mainnet-like chain (swaps, transfers, reverts, 7702 wallets) built with anvil', () => {
    let chain: MainnetChain;
    let exported: ExportedChain;
    before(async () => {
      chain = await buildMainnetChain(work.path, { blocks: 2, txsPerBlock: 60 });
      exported = await exportChain(chain.anvil, join(work.path, 'mainnet'));
    });
    after(async () => {
      await chain?.anvil.stop();
    });

    it('imports the same', async () => {
      const spec = readChainSpec(exported.genesisPath);
      const oracle = join(work.path, 'mainnet-ethereumjs');
      const ours = join(work.path, 'mainnet-evm');
      const blocks = await importWith('ethereumjs', oracle, spec, exported.rlpPath, false);
      assert.equal(await importWith('evm', ours, spec, exported.rlpPath, false), blocks);
      assert.equal(blocks, exported.blocks);
      await assertSameStore(oracle, ours);
    });
  });

  it('the DAO fork block (its irregular state change on src/evm) and the blocks around it', async () => {
    const heads: Record<string, string[]> = {};
    for (const engine of ['ethereumjs', 'evm'] as const) {
      const datadir = join(work.path, `dao-${engine}`);
      heads[engine] = await mineDaoChain(engine, datadir);
      const store = await openLmdbStore(datadir, { readOnly: true });
      try {
        const balance = async (address: string, n: bigint) =>
          (await store.getAccountAt(hexToBytes(address as Hex), n))?.balance;
        // The drained balances (the DAO's 1,000 wei and block 1's 1, its extraBalance's 7, the child's
        // 5) went to the refund contract at the start of block 2, before its transactions: the
        // reader stored that balance, and the DAO was paid 1 wei again.
        assert.equal(await balance(DAO_REFUND, 2n), 1013n);
        assert.equal(
          bytesToHex(await store.getStorageAt(hexToBytes(BALANCE_READER as Hex), new Uint8Array(32), 2n)),
          '0x03f5',
        );
        assert.equal(await balance(DAO, 2n), 1n);
        assert.equal(await balance(DAO_EXTRA_BALANCE, 2n), 0n);
        assert.equal(await balance(CHILD_DAO, 3n), 3n);
      } finally {
        await store.close();
      }
    }
    assert.deepEqual(heads.evm, heads.ethereumjs);
    // Same state roots as ethereumjs's runBlock (which also makes every drained account it lists), and
    // the EVM engine stored only the nodes its roots reach: it ran the fork block itself.
    await assertSameStore(join(work.path, 'dao-ethereumjs'), join(work.path, 'dao-evm'));
  });

  it('a dev chain mined with every transaction type, a refused block and a rewind', async () => {
    const spec = parseChainSpec(
      devGenesis({ chainId: 31337n, hardfork: 'osaka', mnemonic: DEV_MNEMONIC }),
      'dev genesis',
    );
    const oracle = join(work.path, 'dev-ethereumjs');
    const ours = join(work.path, 'dev-evm');
    const headsOracle = await mineDevChain('ethereumjs', oracle, spec);
    const headsOurs = await mineDevChain('evm', ours, spec);
    assert.deepEqual(headsOurs, headsOracle);
    await assertSameStore(oracle, ours, false);
  });
});

// Reads storage[calldata 0] := calldata 32, logs calldata 0, and self-destructs to the caller when
// calldata 64 is non-zero.
const RUNTIME = asm(`
  PUSH 32 CALLDATALOAD PUSH0 CALLDATALOAD SSTORE
  PUSH0 CALLDATALOAD PUSH0 PUSH0 LOG1
  PUSH 64 CALLDATALOAD @destroy JUMPI
  STOP
  destroy: JUMPDEST CALLER SELFDESTRUCT
`);
const word = (n: bigint) => n.toString(16).padStart(64, '0');
const call = (key: bigint, value: bigint, destroy = false): Hex =>
  `0x${word(key)}${word(value)}${word(destroy ? 1n : 0n)}`;

/** Mines the same blocks on a fresh datadir with `engine`; the head hash after each step. */
async function mineDevChain(engine: ImportEngine, datadir: string, spec: ChainSpec): Promise<string[]> {
  const store = await openLmdbStore(datadir);
  const heads: string[] = [];
  try {
    const writer = await ChainWriter.open(store, spec, importEngine(engine));
    await writer.initGenesis();
    const forks = new Forks(spec);
    const genesisTime = BigInt(spec.json.timestamp ?? 0);
    const nonces = new Map<string, number>();
    const [a, b, c, d] = [devAccount(1), devAccount(2), devAccount(3), devAccount(4)];
    const nonce = (who: PrivateKeyAccount) => {
      const n = nonces.get(who.address) ?? 0;
      nonces.set(who.address, n + 1);
      return n;
    };
    const fees = { maxFeePerGas: 100_000_000_000n, maxPriorityFeePerGas: 1_000_000_000n };
    const decode = (raw: Hex, number: bigint): TypedTransaction =>
      createTxFromRLP(hexToBytes(raw), { common: forks.commonAt(number, genesisTime + 12n * number) });
    const mine = async (number: bigint, raws: Hex[]) => {
      const txs = raws.map((raw) => decode(raw, number));
      const block = await mineBlock(writer, txs, genesisTime + 12n * number);
      heads.push(bytesToHex(block.hash()));
    };
    // The address of a's first creation: keccak(rlp([a, 0])).
    const contract = bytesToHex(hexToBytes(keccak256(`0xd694${a.address.slice(2)}80`)).subarray(12)) as Hex;
    const fresh = '0x00000000000000000000000000000000000fee01' as Hex;
    await mine(1n, [
      await a.signTransaction({
        type: 'eip1559',
        chainId: 31337,
        nonce: nonce(a),
        gas: 300_000n,
        data: deployCode(RUNTIME),
        ...fees,
      }),
      await b.signTransaction({
        type: 'legacy',
        chainId: 31337,
        nonce: nonce(b),
        gas: 21_000n,
        to: fresh,
        value: 5n,
        gasPrice: 10_000_000_000n,
      }),
    ]);
    await mine(2n, [
      await c.signTransaction({
        type: 'eip2930',
        chainId: 31337,
        nonce: nonce(c),
        gas: 100_000n,
        to: contract as Hex,
        data: call(1n, 5n),
        gasPrice: 10_000_000_000n,
        accessList: [{ address: contract as Hex, storageKeys: [`0x${word(1n)}`] }],
      }),
      await b.signTransaction({
        type: 'legacy',
        nonce: nonce(b),
        gas: 21_000n,
        to: fresh,
        value: 1n,
        gasPrice: 10_000_000_000n,
      }),
      await a.signTransaction({
        type: 'eip1559',
        chainId: 31337,
        nonce: nonce(a),
        gas: 100_000n,
        to: contract as Hex,
        data: call(2n, 7n),
        ...fees,
      }),
      await a.signTransaction({
        type: 'eip1559',
        chainId: 31337,
        nonce: nonce(a),
        gas: 100_000n,
        data: asm('CALLER SELFDESTRUCT'),
        ...fees,
      }),
    ]);
    const authorization = await d.signAuthorization({ chainId: 31337, address: contract as Hex, nonce: 0 });
    nonces.set(d.address, 1);
    await mine(3n, [
      await a.signTransaction({
        type: 'eip7702',
        chainId: 31337,
        nonce: nonce(a),
        gas: 200_000n,
        to: d.address,
        data: call(3n, 9n),
        authorizationList: [authorization],
        ...fees,
      }),
      await c.signTransaction({
        type: 'eip1559',
        chainId: 31337,
        nonce: nonce(c),
        gas: 100_000n,
        to: contract as Hex,
        data: call(1n, 0n),
        ...fees,
      }),
    ]);
    await mine(4n, [
      await c.signTransaction({
        type: 'eip4844',
        chainId: 31337,
        nonce: nonce(c),
        gas: 21_000n,
        to: fresh,
        blobVersionedHashes: [`0x01${'ab'.repeat(31)}`, `0x01${'cd'.repeat(31)}`],
        maxFeePerBlobGas: 10_000_000_000n,
        ...fees,
      }),
      await b.signTransaction({
        type: 'eip1559',
        chainId: 31337,
        nonce: nonce(b),
        gas: 100_000n,
        to: contract as Hex,
        data: call(4n, 1n, true),
        ...fees,
      }),
    ]);
    await mine(5n, []);
    // A block that cannot be mined (a nonce from the future) leaves the chain as it was.
    await assert.rejects(
      mine(6n, [
        await a.signTransaction({
          type: 'eip1559',
          chainId: 31337,
          nonce: 99,
          gas: 21_000n,
          to: fresh,
          ...fees,
        }),
      ]),
    );
    heads.push(bytesToHex((await store.getHead())?.hash ?? new Uint8Array()));
    await mine(6n, [
      await a.signTransaction({
        type: 'eip1559',
        chainId: 31337,
        nonce: nonce(a),
        gas: 21_000n,
        to: fresh,
        value: 3n,
        ...fees,
      }),
    ]);
    // evm_revert: back to block 4, and a different block 5.
    await writer.rewindTo(4n);
    await mine(5n, [
      await a.signTransaction({
        type: 'eip1559',
        chainId: 31337,
        nonce: nonce(a) - 1,
        gas: 100_000n,
        to: contract as Hex,
        data: call(2n, 0n),
        ...fees,
      }),
    ]);
    await mine(6n, []);
  } finally {
    await store.close();
  }
  return heads;
}

describe('the dev chain on src/evm', () => {
  const work = tempDir('ethtrace-evm-dev-');
  after(() => work.cleanup());

  // The ethereumjs engine lost these writes from its trie (runBlock started from its own view of the
  // head state): the block's state root left them out while the flat history had them, so after a
  // restart the account was gone. Not compared with the oracle for that reason.
  it('keeps anvil_set* writes in the state trie: they are there after a restart', async () => {
    const spec = parseChainSpec(
      devGenesis({ chainId: 31337n, hardfork: 'osaka', mnemonic: DEV_MNEMONIC }),
      'dev genesis',
    );
    const datadir = join(work.path, 'dev');
    const e = new Address(hexToBytes('0x00000000000000000000000000000000000fee02'));
    const slot = hexToBytes(`0x${word(8n)}`);
    let store = await openLmdbStore(datadir);
    try {
      const writer = await ChainWriter.open(store, spec);
      await writer.initGenesis();
      await writer.headState.putAccount(e, new Account(3n, 1234n));
      await writer.headState.putCode(e, hexToBytes(RUNTIME));
      await writer.headState.putStorage(e, slot, hexToBytes('0x2a'));
      await mineBlock(writer, [], BigInt(spec.json.timestamp ?? 0) + 12n);
    } finally {
      await store.close();
    }
    store = await openLmdbStore(datadir);
    try {
      const writer = await ChainWriter.open(store, spec);
      const account = await writer.headState.getAccount(e);
      assert.equal(account?.nonce, 3n);
      assert.equal(account?.balance, 1234n);
      assert.equal(bytesToHex(await writer.headState.getCode(e)), RUNTIME);
      // The storage is in the trie: a call reading it through the EVM sees it.
      const stored = await store.getStorageAt(e.bytes, slot, 1n);
      assert.equal(bytesToHex(stored), '0x2a');
      const roots = [(await store.getStateRoot((await store.getHead())?.hash as Uint8Array)) as Uint8Array];
      const nodes = readTables(datadir).trieNodes;
      assert.ok(reachable(nodes, roots).size > 0);
    } finally {
      await store.close();
    }
  });
});
