import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { RLP } from '@ethereumjs/rlp';
import { bytesToHex, hexToBytes } from '@ethereumjs/util';
import { readRlpBlocks } from '../../src/ingest/rlpFile.ts';
import { openLmdbStore, storeExists } from '../../src/store/lmdb/index.ts';
import { CONFORMANCE, collect, runCli, startCli, tempDir } from '../support/cli.ts';

const GENESIS = join(CONFORMANCE, 'genesis.json');
const CHAIN = join(CONFORMANCE, 'chain.rlp');
const HEAD_HASH: string = JSON.parse(readFileSync(join(CONFORMANCE, 'headfcu.json'), 'utf8')).params[0]
  .headBlockHash;
const CHAIN_LENGTH = 54;
// chain.rlp holds blocks 1..54: blocks[i] is block i + 1.

async function chainBlocks(): Promise<Uint8Array[]> {
  const blocks: Uint8Array[] = [];
  for await (const b of readRlpBlocks(CHAIN)) blocks.push(b.rlp);
  return blocks;
}

function concat(parts: Uint8Array[]): Uint8Array {
  return Buffer.concat(parts);
}

/** The head of a datadir's store, null when it is empty or was never created. */
async function headOf(datadir: string): Promise<{ number: bigint; hash: string } | null> {
  if (!storeExists(datadir)) return null;
  const store = await openLmdbStore(datadir, { readOnly: true });
  try {
    const head = await store.getHead();
    return head && { number: head.number, hash: bytesToHex(head.hash) };
  } finally {
    await store.close();
  }
}

function importArgs(datadir: string, ...files: string[]): string[] {
  return ['import', '--datadir', datadir, '--genesis', GENESIS, ...files];
}

/** The block with one header field replaced, re-encoded (its hash changes with it). */
function withHeaderField(blockRlp: Uint8Array, index: number, value: Uint8Array): Uint8Array {
  const [header, ...rest] = RLP.decode(blockRlp) as unknown as [Uint8Array[], ...unknown[]];
  const copy = [...header];
  copy[index] = value;
  // biome-ignore lint/suspicious/noExplicitAny: re-encoding the decoded nested lists as they are
  return RLP.encode([copy, ...rest] as any);
}

describe('import of the execution-apis conformance chain', () => {
  let blocks: Uint8Array[];
  const dirs: Array<() => void> = [];
  const dir = () => {
    const d = tempDir();
    dirs.push(d.cleanup);
    return d.path;
  };
  before(async () => {
    blocks = await chainBlocks();
  });
  after(() => {
    for (const cleanup of dirs) cleanup();
  });

  it('verifies and stores all 54 blocks, ending at the forkchoice head', async () => {
    const datadir = dir();
    const result = await runCli(importArgs(datadir, CHAIN));
    assert.equal(result.code, 0, result.stderr);
    assert.match(result.stderr, /imported 54 blocks/);
    assert.match(result.stderr, /Mgas\/s/);
    assert.deepEqual(await headOf(datadir), { number: BigInt(CHAIN_LENGTH), hash: HEAD_HASH });

    const again = await runCli(importArgs(datadir, CHAIN));
    assert.equal(again.code, 0, again.stderr);
    assert.match(again.stderr, /imported 0 blocks \(54 already stored, skipped\)/);
  });

  it('takes the data directory from ETHTRACE_DATADIR when --datadir is absent', async () => {
    const datadir = dir();
    const result = await runCli(['import', '--genesis', GENESIS, CHAIN], {
      env: { ETHTRACE_DATADIR: datadir },
    });
    assert.equal(result.code, 0, result.stderr);
    assert.equal((await headOf(datadir))?.hash, HEAD_HASH);
  });

  it('imports a chain split over several files, also when they overlap', async () => {
    const datadir = dir();
    const first = join(dir(), 'a.rlp');
    const second = join(dir(), 'b.rlp');
    writeFileSync(first, concat(blocks.slice(0, 30)));
    writeFileSync(second, concat(blocks.slice(20)));
    const result = await runCli(importArgs(datadir, first, second));
    assert.equal(result.code, 0, result.stderr);
    assert.equal((await headOf(datadir))?.hash, HEAD_HASH);
  });

  it('resumes an import killed mid-way and reaches the same head', async () => {
    const datadir = dir();
    // A block per store transaction, so the kill finds a chain part stored (by default one group
    // of 64 blocks, or a second of work, holds the whole 54-block chain when the machine is fast).
    const child = startCli([...importArgs(datadir, CHAIN), '--blocks-per-commit', '1']);
    const done = collect(child);
    // Kill as soon as some blocks are stored, while the importer is busy with the next ones.
    for (let i = 0; i < 2000; i++) {
      const head = await headOf(datadir).catch(() => null);
      if (head && head.number >= 5n) break;
      await new Promise((r) => setTimeout(r, 5));
    }
    child.kill('SIGKILL');
    const killed = await done;
    assert.equal(killed.signal, 'SIGKILL', 'the import finished before it could be killed');
    const partial = await headOf(datadir);
    assert.ok(partial && partial.number >= 5n && partial.number < BigInt(CHAIN_LENGTH));

    const resumed = await runCli(importArgs(datadir, CHAIN));
    assert.equal(resumed.code, 0, resumed.stderr);
    assert.equal((await headOf(datadir))?.hash, HEAD_HASH);
  });

  it('stops at a truncated file, keeping the blocks before it', async () => {
    const datadir = dir();
    const file = join(dir(), 'truncated.rlp');
    const upTo30 = concat(blocks.slice(0, 30));
    const block30 = blocks[30] as Uint8Array;
    writeFileSync(file, concat([upTo30, block30.subarray(0, block30.length - 7)]));
    const result = await runCli(importArgs(datadir, file));
    assert.notEqual(result.code, 0);
    assert.match(result.stderr, /truncated block at byte \d+/);
    assert.equal((await headOf(datadir))?.number, 30n);
  });

  it('refuses a corrupt block, naming it and the failed check with both values', async () => {
    const datadir = dir();
    const file = join(dir(), 'bad-root.rlp');
    const badRoot = hexToBytes(`0x${'11'.repeat(32)}`);
    writeFileSync(
      file,
      concat([
        ...blocks.slice(0, 40),
        withHeaderField(blocks[40] as Uint8Array, 3, badRoot),
        ...blocks.slice(41),
      ]),
    );
    const result = await runCli(importArgs(datadir, file));
    assert.notEqual(result.code, 0);
    assert.match(
      result.stderr,
      /block 41 \(0x[0-9a-f]{64}\) failed the state root check: header has 0x(11){32}, expected 0x[0-9a-f]{64}/,
    );
    assert.equal((await headOf(datadir))?.number, 40n);

    const garbage = join(dir(), 'garbage.rlp');
    writeFileSync(garbage, concat([...blocks.slice(0, 3), Buffer.from('not rlp at all')]));
    const second = await runCli(importArgs(dir(), garbage));
    assert.notEqual(second.code, 0);
    assert.match(second.stderr, /does not start an RLP list/);
  });

  it('refuses a block whose parent is unknown and leaves the store as it was', async () => {
    const datadir = dir();
    const gap = join(dir(), 'gap.rlp');
    writeFileSync(gap, concat(blocks.slice(10, 20)));
    const empty = await runCli(importArgs(datadir, gap));
    assert.notEqual(empty.code, 0);
    assert.match(empty.stderr, /block 11 \(0x[0-9a-f]{64}\) has an unknown parent/);
    assert.equal(await headOf(datadir), null);

    const start = join(dir(), 'start.rlp');
    writeFileSync(start, concat(blocks.slice(0, 5)));
    assert.equal((await runCli(importArgs(datadir, start))).code, 0);
    const later = await runCli(importArgs(datadir, gap));
    assert.notEqual(later.code, 0);
    assert.match(later.stderr, /unknown parent .*the store ends at block 5/);
    assert.equal((await headOf(datadir))?.number, 5n);
  });

  it('refuses a block that conflicts with a stored one, and a datadir of another chain', async () => {
    const datadir = dir();
    assert.equal((await runCli(importArgs(datadir, CHAIN))).code, 0);
    const forked = join(dir(), 'forked.rlp');
    writeFileSync(forked, withHeaderField(blocks[12] as Uint8Array, 12, new TextEncoder().encode('fork')));
    const conflict = await runCli(importArgs(datadir, forked));
    assert.notEqual(conflict.code, 0);
    assert.match(conflict.stderr, /block 13 \(0x[0-9a-f]{64}\) conflicts with block 13 already stored/);

    const otherGenesis = join(dir(), 'other-genesis.json');
    const spec = JSON.parse(readFileSync(GENESIS, 'utf8'));
    spec.config.chainId = 7;
    writeFileSync(otherGenesis, JSON.stringify(spec));
    const other = await runCli(['import', '--datadir', datadir, '--genesis', otherGenesis, CHAIN]);
    assert.notEqual(other.code, 0);
    assert.match(other.stderr, /datadir holds another chain/);
    assert.equal((await headOf(datadir))?.hash, HEAD_HASH);
  });

  it('rejects a missing or malformed genesis file with a message, touching nothing', async () => {
    const datadir = dir();
    const missing = await runCli([
      'import',
      '--datadir',
      datadir,
      '--genesis',
      join(datadir, 'nope.json'),
      CHAIN,
    ]);
    assert.equal(missing.code, 2);
    assert.match(missing.stderr, /cannot read genesis file .*nope\.json/);

    const malformed = join(dir(), 'malformed.json');
    writeFileSync(malformed, '{"config": {"chainId": 1}, "alloc": ');
    const bad = await runCli(['import', '--datadir', datadir, '--genesis', malformed, CHAIN]);
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /is not valid JSON/);

    const noConfig = join(dir(), 'no-config.json');
    writeFileSync(noConfig, '{"alloc": {}, "gasLimit": "0x1", "difficulty": "0x1"}');
    const incomplete = await runCli(['import', '--datadir', datadir, '--genesis', noConfig, CHAIN]);
    assert.equal(incomplete.code, 2);
    assert.match(incomplete.stderr, /missing "config"/);
    assert.equal(await headOf(datadir), null);
  });

  it('rejects a genesis file whose genesis is not the parent of block 1', async () => {
    const otherGenesis = join(dir(), 'other-gas-limit.json');
    const spec = JSON.parse(readFileSync(GENESIS, 'utf8'));
    spec.gasLimit = '0x1234567';
    writeFileSync(otherGenesis, JSON.stringify(spec));
    const datadir = dir();
    const result = await runCli(['import', '--datadir', datadir, '--genesis', otherGenesis, CHAIN]);
    assert.notEqual(result.code, 0);
    assert.match(
      result.stderr,
      /block 1 \(0x[0-9a-f]{64}\) has parent 0x[0-9a-f]{64}, but the genesis file makes genesis/,
    );
    assert.equal(await headOf(datadir), null);
  });
});
