import assert from 'node:assert/strict';
import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { once } from 'node:events';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { describe, it } from 'node:test';
import { setTimeout } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { openLmdbStore, storeExists } from '../../src/store/lmdb/index.ts';
import { assertChainBlock, assertNoChainBlock, block, blockHash, chainBlock } from './blocks.ts';
import { type StoreFixture, storeContract } from './contract.ts';

function tempDatadir(): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), 'ethtrace-lmdb-'));
}

async function openFixture(): Promise<StoreFixture> {
  const datadir = tempDatadir();
  const fixture: StoreFixture = {
    store: await openLmdbStore(datadir),
    async reopen() {
      await fixture.store.close();
      fixture.store = await openLmdbStore(datadir);
    },
    async cleanup() {
      await fixture.store.close();
      fs.rmSync(datadir, { recursive: true, force: true });
    },
  };
  return fixture;
}

storeContract('LMDB', openFixture);

describe('LMDB: opening', () => {
  it('refuses to open read-only where no store is, and creates nothing there', async (t) => {
    const parent = tempDatadir();
    t.after(() => fs.rmSync(parent, { recursive: true, force: true }));
    const datadir = path.join(parent, 'store');
    await assert.rejects(openLmdbStore(datadir, { readOnly: true }), /no chain store/);
    assert.equal(fs.existsSync(datadir), false);
    assert.equal(storeExists(datadir), false);
    await (await openLmdbStore(datadir)).close();
    assert.equal(storeExists(datadir), true);
  });

  it('refuses writes through a read-only store', async (t) => {
    const datadir = tempDatadir();
    await (await openLmdbStore(datadir)).close();
    const store = await openLmdbStore(datadir, { readOnly: true });
    t.after(async () => {
      await store.close();
      fs.rmSync(datadir, { recursive: true, force: true });
    });
    await assert.rejects(store.commitBlock(block(0n)));
    await assert.rejects(store.putMeta('chainId', Uint8Array.of(1)));
    assert.equal(await store.getHead(), null);
  });
});

/** Runs one of the helper scripts beside this file in its own Node process. */
function spawnScript(script: string, datadir: string): ChildProcessWithoutNullStreams {
  const child = spawn(
    process.execPath,
    ['--import', import.meta.resolve('tsx'), fileURLToPath(new URL(script, import.meta.url)), datadir],
    { stdio: 'pipe' },
  );
  child.stderr.pipe(process.stderr);
  return child;
}

function stdoutLines(child: ChildProcessWithoutNullStreams): AsyncIterator<string> {
  return createInterface({ input: child.stdout })[Symbol.asyncIterator]();
}

async function nextLine(lines: AsyncIterator<string>): Promise<string | undefined> {
  const { done, value } = await lines.next();
  return done ? undefined : value;
}

describe('LMDB: another process', () => {
  it('reads each block as soon as the writer commits it, the writer staying open', async (t) => {
    const datadir = tempDatadir();
    const writer = await openLmdbStore(datadir);
    let reader: ChildProcessWithoutNullStreams | undefined;
    t.after(async () => {
      reader?.kill();
      await writer.close();
      fs.rmSync(datadir, { recursive: true, force: true });
    });
    for (let number = 0n; number <= 2n; number++) await writer.commitBlock(chainBlock(number));
    reader = spawnScript('./lmdb-reader.ts', datadir);
    const replies = stdoutLines(reader);
    assert.equal(await nextLine(replies), 'head 2');
    for (let number = 3n; number <= 20n; number++) {
      await writer.commitBlock(chainBlock(number));
      reader.stdin.write(`${number}\n`);
      assert.equal(await nextLine(replies), `head ${number}`);
    }
    reader.stdin.end();
    const [code] = await once(reader, 'exit');
    assert.equal(code, 0);
  });
});

describe('LMDB: a writer killed mid-import', () => {
  it('leaves a head whose every block is complete, and the import can go on', async (t) => {
    const datadir = tempDatadir();
    let writer: ChildProcessWithoutNullStreams | undefined;
    t.after(() => {
      writer?.kill('SIGKILL');
      fs.rmSync(datadir, { recursive: true, force: true });
    });
    let reached = -1n;
    for (let round = 0; round < 5; round++) {
      const target = reached + 10n;
      writer = spawnScript('./lmdb-writer.ts', datadir);
      const exit = once(writer, 'exit');
      const committed = stdoutLines(writer);
      for (let line = await nextLine(committed); line !== undefined; line = await nextLine(committed)) {
        if (BigInt(line) >= target) break;
      }
      // The line arrives while the writer builds its next block; a random delay of a few blocks'
      // time lets the kill land anywhere in the loop, inside commits included.
      await setTimeout(Math.random() * 10);
      writer.kill('SIGKILL');
      const [, signal] = await exit;
      assert.equal(signal, 'SIGKILL');
      reached = await assertCompleteChain(datadir, target);
    }
  });
});

/** Opens the datadir, checks every block up to the head and that nothing of the next is there. */
async function assertCompleteChain(datadir: string, atLeast: bigint): Promise<bigint> {
  const store = await openLmdbStore(datadir);
  try {
    const head = await store.getHead();
    assert.ok(head !== null && head.number >= atLeast, `head ${head?.number}, expected at least ${atLeast}`);
    assert.deepEqual(head.hash, blockHash(head.number));
    for (let number = 0n; number <= head.number; number++) await assertChainBlock(store, number);
    await assertNoChainBlock(store, head.number + 1n);
    return head.number;
  } finally {
    await store.close();
  }
}
