// Block execution moved from @ethereumjs/vm onto src/evm (issue 20) must store what it stored before.
// Each chain here is imported (or mined) twice, once with each engine of src/ingest/engines.ts, into
// two datadirs whose every LMDB table is then compared:
// - byte for byte: blocks, canonical hashes, state roots, transaction index, receipts (consensus and
//   JSON), code, storage history, meta;
// - the account history and storage wipes by what they answer: every account and every slot either
//   store names reads the same at every block. ethereumjs also writes entries that change nothing:
//   an account called with no value written again as it was, the system address "deleted" (it never
//   exists) after each system call, and a storage wipe for every contract creation (attempted ones
//   too), whose storage is empty by EIP-7610's rules; the new engine writes only what changed;
// - `blockChanges` (each block's undo record): the same transactions and slots, its accounts and
//   wipes among ethereumjs's (which come in the order it wrote them, and with the entries above);
// - `trieNodes`: ethereumjs's trie stores every node it makes on the way, also nodes of intermediate
//   tries no stored root reaches. The new engine must store exactly the nodes the stored state roots
//   reach (state trie and every storage trie), each also stored by ethereumjs with the same bytes.

import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { RLP } from '@ethereumjs/rlp';
import { bytesToHex, hexToBytes } from '@ethereumjs/util';
import { open, type RootDatabase } from 'lmdb';
import { type Hex, keccak256 } from 'viem';
import { type ChainSpec, readChainSpec } from '../../src/chain/genesis.ts';
import type { EngineName } from '../../src/ingest/engines.ts';
import { importChain } from '../../src/ingest/importer.ts';
import { openLmdbStore } from '../../src/store/lmdb/index.ts';
import { decodeBlockChanges } from '../../src/store/lmdb/values.ts';
import { type Anvil, startAnvil } from '../support/anvil.ts';
import { CONFORMANCE, tempDir } from '../support/cli.ts';
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
      for (const { key, value } of db.getRange({})) table.set(bytesToHex(key), Uint8Array.from(value));
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
  (t) => !['trieNodes', 'blockChanges', 'accountHistory', 'storageWipes'].includes(t),
);

/** The comparison the header describes; `oracle` is the ethereumjs datadir. */
async function assertSameStore(oracle: string, ours: string): Promise<void> {
  const a = readTables(oracle);
  const b = readTables(ours);
  assert.ok(a.headers.size > 1, 'the oracle stored blocks');
  for (const name of BYTE_FOR_BYTE) {
    const x = a[name];
    const y = b[name];
    assert.deepEqual([...y.keys()], [...x.keys()], `table ${name}: keys`);
    for (const [key, value] of x) assert.deepEqual(y.get(key), value, `table ${name}: ${key}`);
  }
  assert.deepEqual([...b.blockChanges.keys()], [...a.blockChanges.keys()], 'table blockChanges: keys');
  for (const [key, value] of a.blockChanges) {
    const theirs = changesOf(value);
    const mine = changesOf(b.blockChanges.get(key) as Uint8Array);
    assert.deepEqual(mine.txHashes, theirs.txHashes, `blockChanges ${key}: transactions`);
    assert.deepEqual(mine.slots, theirs.slots, `blockChanges ${key}: slots`);
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
  for (const key of a.storageHistory.keys()) slots.add(key.slice(0, 2 + 104));
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
  assert.deepEqual(
    [...b.trieNodes.keys()].sort(),
    [...reached].sort(),
    'trie nodes stored = nodes the roots reach',
  );
  assert.deepEqual([...reachable(a.trieNodes, roots)].sort(), [...reached].sort());
}

async function importWith(
  engine: EngineName,
  datadir: string,
  spec: ChainSpec,
  file: string,
  verifyStateRoot: boolean,
): Promise<number> {
  const store = await openLmdbStore(datadir);
  try {
    const summary = await importChain({ store, spec, files: [file], verifyStateRoot, engine });
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
});
