// A newcomer's mistakes and a damaged datadir, through the real CLI: each ends in one line on stderr
// saying what is wrong and what to do, exit status 2, no stack trace, and nothing made on the way.

import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { openLmdbStore } from '../../src/store/lmdb/index.ts';
import { type CliResult, CONFORMANCE, collect, runCli, startCli, tempDir } from '../support/cli.ts';
import { serveCli, serveDev, stopDev } from '../support/devServer.ts';
import { importConformanceChain } from '../support/server.ts';

const GENESIS = join(CONFORMANCE, 'genesis.json');
const CHAIN = join(CONFORMANCE, 'chain.rlp');

/** The failure shape every case must have: status 2, one line, no stack, nothing on stdout. */
function assertOneLine(result: CliResult, pattern: RegExp): void {
  assert.equal(result.code, 2, `exit ${result.code} ${result.signal ?? ''}: ${result.stderr}`);
  assert.equal(result.stdout, '', 'nothing may be printed (no key, no banner) for a failed command');
  const lines = result.stderr.trimEnd().split('\n');
  assert.equal(lines.length, 1, result.stderr);
  assert.match(lines[0] ?? '', pattern);
  assert.doesNotMatch(result.stderr, /\n\s+at |Error:/);
}

/** A tmpfs mounted at `path`, or null (and a printed reason) where this process cannot mount one. */
function mountTmpfs(path: string, options: string): (() => void) | null {
  mkdirSync(path, { recursive: true });
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', options, 'tmpfs', path], { stdio: 'pipe' });
  } catch (e) {
    console.log(`# skipped: cannot mount a tmpfs here (${(e as Error).message.split('\n')[0]})`);
    return null;
  }
  return () => execFileSync('umount', [path]);
}

function flipByte(file: string, offset: number): void {
  const bytes = readFileSync(file);
  bytes[offset] = (bytes[offset] ?? 0) ^ 0xff;
  writeFileSync(file, bytes);
}

describe('ethtrace help, version and usage errors', () => {
  it('prints help for the program and each command, and the version, exiting 0', async () => {
    for (const [args, usage] of [
      [['--help'], /^Usage: ethtrace \[options\] \[command\]/],
      [['start', '--help'], /^Usage: ethtrace start \[options\]/],
      [['import', '--help'], /^Usage: ethtrace import \[options\] <files\.\.\.>/],
      [['keys', '--help'], /^Usage: ethtrace keys \[options\] \[command\]/],
      [['keys', 'create', '--help'], /^Usage: ethtrace keys create \[options\]/],
    ] as const) {
      const result = await runCli([...args]);
      assert.equal(result.code, 0, `${args.join(' ')}: ${result.stderr}`);
      assert.match(result.stdout, usage);
      if (args.length > 1) assert.match(result.stdout, /--datadir <dir>/);
    }
    const version = await runCli(['--version']);
    assert.equal(version.code, 0);
    const { version: expected } = JSON.parse(
      readFileSync(join(import.meta.dirname, '../../package.json'), 'utf8'),
    );
    assert.equal(version.stdout, `ethtrace ${expected}\n`);
  });

  it('answers an unknown flag or a missing value with one line and the usage, exiting 2', async () => {
    for (const [args, line, usage] of [
      [['start', '--bogus'], "ethtrace start: unknown option '--bogus'", 'usage: ethtrace start [options]'],
      [
        ['start', '--port'],
        "ethtrace start: option '--port <port>' argument missing",
        'usage: ethtrace start',
      ],
      [
        ['import', CHAIN],
        "ethtrace import: required option '--genesis <file>' not specified",
        'usage: ethtrace import',
      ],
      [
        ['keys', 'create', '--nme', 'x'],
        "ethtrace keys create: unknown option '--nme' (did you mean --name?)",
        'usage: ethtrace keys create',
      ],
      [['serve'], "ethtrace: unknown command 'serve'", 'usage: ethtrace'],
    ] as const) {
      const result = await runCli([...args]);
      assert.equal(result.code, 2, `${args.join(' ')}: ${result.stderr}`);
      const [first, second] = result.stderr.split('\n');
      assert.equal(first, line);
      assert.ok(second?.startsWith(usage), result.stderr);
      assert.doesNotMatch(result.stderr, /\n\s+at /);
    }
    assertOneLine(
      await runCli(['start', '--port', '8x']),
      /^ethtrace start: --port 8x is not a port number$/,
    );
    assertOneLine(
      await runCli(['import', '--genesis', 'g.json', '--blocks-per-commit', '0', 'chain.rlp']),
      /^ethtrace import: --blocks-per-commit 0 is not a positive integer$/,
    );
  });
});

describe('ethtrace start and import on a bad port or datadir', () => {
  const dir = tempDir('ethtrace-errors-');
  let busy: Server;
  let busyPort: number;
  before(async () => {
    busy = createServer();
    await new Promise<void>((resolve) => busy.listen(0, '127.0.0.1', resolve));
    busyPort = (busy.address() as { port: number }).port;
  });
  after(() => {
    busy.close();
    dir.cleanup();
  });

  it('refuses a busy port before making a datadir, a chain or a key', async () => {
    const datadir = join(dir.path, 'busy');
    const result = await runCli(['start', '--port', String(busyPort), '--datadir', datadir]);
    assertOneLine(
      result,
      new RegExp(`^ethtrace start: port ${busyPort} on 127\\.0\\.0\\.1 is in use .* --port$`),
    );
    assert.equal(existsSync(datadir), false, 'the datadir was created for a server that could not listen');
  });

  it('refuses a datadir that is a file', async () => {
    const file = join(dir.path, 'a-file');
    writeFileSync(file, 'not a directory');
    const result = await runCli(['start', '--port', '0', '--datadir', file]);
    assertOneLine(result, /^ethtrace start: .*a-file is not a directory: give --datadir a directory/);
    const imported = await runCli(['import', '--genesis', GENESIS, '--datadir', file, CHAIN]);
    assertOneLine(imported, /^ethtrace import: .*a-file is not a directory/);
    assert.equal(readFileSync(file, 'utf8'), 'not a directory');
  });

  it('refuses a datadir that is not writable', async (t) => {
    const mount = join(dir.path, 'read-only');
    const unmount = mountTmpfs(mount, 'size=1m,ro');
    if (!unmount) return t.skip('cannot mount a tmpfs');
    try {
      assertOneLine(
        await runCli(['start', '--port', '0', '--datadir', mount]),
        /^ethtrace start: .*read-only is not writable: give a --datadir this user can write to$/,
      );
      assertOneLine(
        await runCli(['keys', 'create', '--datadir', mount]),
        /^ethtrace keys: .*read-only is not writable/,
      );
    } finally {
      unmount();
    }
  });

  it('checks the datadir of every keys subcommand as start does, making nothing on failure', async () => {
    const file = join(dir.path, 'keys-file');
    writeFileSync(file, 'not a directory');
    const missing = join(dir.path, 'keys-missing');
    const subcommands = [
      ['list'],
      ['show', 'alice'],
      ['usage'],
      ['create', '--name', 'alice'],
      ['update', 'alice', '--credits-per-day', '5'],
      ['revoke', 'alice'],
    ];
    const onFile = await Promise.all(subcommands.map((args) => runCli(['keys', ...args, '--datadir', file])));
    onFile.forEach((result, i) => {
      assert.equal(result.code, 2, `keys ${subcommands[i]?.join(' ')}: ${result.stdout}${result.stderr}`);
      assertOneLine(result, /^ethtrace keys: .*keys-file is not a directory: give --datadir a directory/);
    });
    assert.equal(readFileSync(file, 'utf8'), 'not a directory');
    // Only create makes a datadir: the others read or change keys that a missing one cannot hold.
    const readers = subcommands.filter(([name]) => name !== 'create');
    const onMissing = await Promise.all(
      readers.map((args) => runCli(['keys', ...args, '--datadir', missing])),
    );
    onMissing.forEach((result, i) => {
      assert.equal(result.code, 2, `keys ${readers[i]?.join(' ')}: ${result.stdout}${result.stderr}`);
      assertOneLine(result, /^ethtrace keys: .*keys-missing does not exist: give the --datadir that/);
    });
    assert.equal(existsSync(missing), false, 'a failed keys command created the datadir');
  });

  it('refuses keys update and revoke on a datadir that is not writable, and still lists its keys', async (t) => {
    const made = join(dir.path, 'keys-made');
    const created = await runCli(['keys', 'create', '--name', 'alice', '--datadir', made]);
    assert.equal(created.code, 0, created.stderr);
    const mount = join(dir.path, 'keys-read-only');
    mkdirSync(mount, { recursive: true });
    // The datadir with its key, then remounted read-only.
    const unmount = mountTmpfs(mount, 'size=1m');
    if (!unmount) return t.skip('cannot mount a tmpfs');
    try {
      cpSync(made, mount, { recursive: true });
      execFileSync('mount', ['-o', 'remount,ro', mount]);
      const [updated, revoked, listed] = await Promise.all([
        runCli(['keys', 'update', 'alice', '--credits-per-day', '5', '--datadir', mount]),
        runCli(['keys', 'revoke', 'alice', '--datadir', mount]),
        runCli(['keys', 'list', '--datadir', mount]),
      ]);
      assertOneLine(
        updated,
        /^ethtrace keys: .*keys-read-only is not writable: give a --datadir this user can write to$/,
      );
      assertOneLine(revoked, /^ethtrace keys: .*keys-read-only is not writable/);
      assert.equal(listed.code, 0, listed.stderr);
      assert.match(listed.stdout, /^alice\t/);
    } finally {
      unmount();
    }
  });

  it('stops an import on a full disk with one line, keeping the blocks stored before', async (t) => {
    const mount = join(dir.path, 'small-disk');
    // Larger than the free space the store keeps (src/store/errors.ts, MIN_FREE_DISK_BYTES), smaller
    // than the chain with it.
    const unmount = mountTmpfs(mount, 'size=24m');
    if (!unmount) return t.skip('cannot mount a tmpfs');
    try {
      const result = await runCli(['import', '--genesis', GENESIS, '--datadir', mount, CHAIN]);
      assertOneLine(result, /^ethtrace import: no space left on the disk of .*small-disk: free some space/);
      const store = await openLmdbStore(mount, { readOnly: true });
      try {
        const head = await store.getHead();
        assert.ok(head && head.number < 54n, `head ${head?.number}`);
      } finally {
        await store.close();
      }
    } finally {
      unmount();
    }
  });

  it('keeps a datadir whose name has a dot a directory (no single-file store)', async () => {
    const datadir = join(dir.path, 'dev.1');
    const server = await serveDev(datadir);
    assert.equal(await stopDev(server.child), 0);
    assert.ok(statSync(datadir).isDirectory());
    assert.ok(existsSync(join(datadir, 'data.mdb')));
    const again = await serveDev(datadir);
    assert.match(again.output, /serving dev chain 31337 \(head 0\)/);
    assert.equal(await stopDev(again.child), 0);
  });

  it('refuses dev-chain flags that disagree with the dev chain in the datadir', async () => {
    const datadir = join(dir.path, 'dev-flags');
    const made = await serveDev(datadir, ['--chain-id', '5', '--hardfork', 'cancun']);
    assert.equal(await stopDev(made.child), 0);
    const result = await runCli([
      'start',
      '--port',
      '0',
      '--datadir',
      datadir,
      '--chain-id',
      '6',
      '--mnemonic',
      'a b c',
    ]);
    assertOneLine(
      result,
      /^ethtrace start: the dev chain in .*dev-flags was made with other options: --chain-id 6 \(it has 5\), --mnemonic \(it was made with another\); leave these flags out/,
    );
    const same = await serveDev(datadir, ['--chain-id', '5', '--hardfork', 'cancun']);
    assert.match(same.output, /serving dev chain 5 /);
    assert.equal(await stopDev(same.child), 0);
  });
});

describe('ethtrace start on a damaged store', () => {
  let chain: { datadir: string; cleanup: () => void };
  let headHeader: Buffer;
  const dir = tempDir('ethtrace-damaged-');
  before(async () => {
    chain = await importConformanceChain();
    const store = await openLmdbStore(chain.datadir, { readOnly: true });
    try {
      const head = await store.getHead();
      assert.ok(head);
      headHeader = Buffer.from((await store.getHeader(head.hash)) ?? []);
    } finally {
      await store.close();
    }
  });
  after(() => {
    chain?.cleanup();
    dir.cleanup();
  });

  /** A copy of the conformance datadir with one byte of its data file flipped. */
  function damagedCopy(name: string, offsetIn: (data: Buffer) => number): string {
    const datadir = join(dir.path, name);
    cpSync(chain.datadir, datadir, { recursive: true });
    const file = join(datadir, 'data.mdb');
    const offset = offsetIn(readFileSync(file));
    assert.ok(offset >= 0);
    flipByte(file, offset);
    return datadir;
  }

  it('refuses a store whose head block header was altered', async () => {
    const datadir = damagedCopy('header', (data) => {
      const at = data.indexOf(headHeader);
      assert.equal(data.indexOf(headHeader, at + 1), -1, 'the head header is stored once');
      // A byte inside the extra data / gas fields, past the parent hash.
      return at + Math.floor(headHeader.length / 2);
    });
    const result = await runCli(['start', '--port', '0', '--no-auth', '--datadir', datadir]);
    assertOneLine(
      result,
      // The header's checksum catches it before its hash is compared with the block's.
      /^ethtrace start: the chain store in .*header is damaged \(its headers record under 0x[0-9a-f]{64} fails its checksum\): restore the datadir from a backup, or import the chain again/,
    );
  });

  it('answers a JSON-RPC error, not invalid JSON, for a damaged stored receipt', async () => {
    // A block before the head (the head's records are checked at start) with transactions.
    const store = await openLmdbStore(chain.datadir, { readOnly: true });
    let receipts: Buffer | undefined;
    let blockHash = '';
    try {
      for (let n = 1n; n < 54n && receipts === undefined; n++) {
        const hash = await store.getCanonicalHash(n);
        const json = hash && (await store.getBlockReceiptsJson(hash));
        if (hash && json && json.length > 2) {
          receipts = Buffer.from(json);
          blockHash = `0x${Buffer.from(hash).toString('hex')}`;
        }
      }
    } finally {
      await store.close();
    }
    assert.ok(receipts);
    const txHash = JSON.parse(receipts.toString('utf8'))[0].transactionHash;
    // The opening brace of the first receipt becomes 0x84: neither JSON nor UTF-8.
    const datadir = damagedCopy('receipt', (data) => data.indexOf(receipts) + 1);
    const server = await serveCli(['--no-auth', '--datadir', datadir]);
    try {
      for (const [method, params] of [
        ['eth_getTransactionReceipt', [txHash]],
        ['eth_getBlockReceipts', [blockHash]],
      ] as const) {
        const res = await fetch(server.url, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
        });
        const body = await res.text();
        assert.equal(res.status, 200);
        const answer = JSON.parse(body);
        assert.equal(answer.error?.code, -32603, `${method}: ${body}`);
      }
    } finally {
      await stopDev(server.child);
    }
  });

  it('records its store schema version in a new datadir, and refuses one of another version', async () => {
    const store = await openLmdbStore(chain.datadir, { readOnly: true });
    try {
      assert.equal(new TextDecoder().decode((await store.getMeta('schema')) ?? new Uint8Array()), '1');
    } finally {
      await store.close();
    }
    // A datadir written by a later ethtrace whose receipts have another shape.
    const datadir = join(dir.path, 'schema');
    cpSync(chain.datadir, datadir, { recursive: true });
    const later = await openLmdbStore(datadir);
    try {
      await later.putMeta('schema', new TextEncoder().encode('2'));
    } finally {
      await later.close();
    }
    const refusal =
      /holds a store of schema version "2", and this ethtrace reads version 1 only \(its receipts and history are kept in another shape\): run the ethtrace that made it, or import the chain again into a new --datadir$/;
    assertOneLine(await runCli(['start', '--port', '0', '--no-auth', '--datadir', datadir]), refusal);
    assertOneLine(await runCli(['import', '--genesis', GENESIS, '--datadir', datadir, CHAIN]), refusal);
  });

  it('refuses a store whose LMDB meta page was altered, instead of crashing', async () => {
    // The magic number of meta page 0 (after the 24-byte page header); lmdb-js crashes on it.
    const datadir = damagedCopy('meta', () => 24);
    const result = await runCli(['start', '--port', '0', '--no-auth', '--datadir', datadir]);
    assert.equal(result.signal, null);
    assertOneLine(
      result,
      /^ethtrace start: the chain store in .*meta is damaged \(meta page 0 has no LMDB magic number/,
    );
    const imported = await runCli(['import', '--genesis', GENESIS, '--datadir', datadir, CHAIN]);
    assertOneLine(imported, /^ethtrace import: the chain store in .*meta is damaged/);
  });
});

describe('ethtrace start and import initialising one empty datadir at once', () => {
  const dir = tempDir('ethtrace-race-');
  after(() => dir.cleanup());

  // Which process makes the chain is up to the scheduler; each round must end in one of the two
  // consistent outcomes, never in a refusal of the datadir's own chain.
  for (let round = 0; round < 3; round++) {
    it(`round ${round}: one of them makes the chain and the other agrees or says why not`, async () => {
      const datadir = join(dir.path, `race-${round}`);
      const importer = collect(startCli(['import', '--genesis', GENESIS, '--datadir', datadir, CHAIN]));
      const server = startCli(['start', '--port', '0', '--no-auth', '--datadir', datadir]);
      let output = '';
      const served = await new Promise<boolean>((resolve) => {
        server.stdout?.on('data', (d) => {
          output += d;
          if (/WebSocket\s+\S+/.test(output)) resolve(true);
        });
        server.once('exit', () => resolve(false));
      });
      const stopped = served ? stopDev(server) : collect(server).then((r) => r.code);
      const imported = await importer;
      assert.ok(served, `start failed: ${output}`);
      assert.doesNotMatch(imported.stderr, /different genesis/);
      if (/serving dev chain/.test(output)) {
        // start made a dev chain first: the import is refused, naming it (src/datadirWriter.ts).
        assertOneLine(
          imported,
          new RegExp(
            `^ethtrace import: .*race-${round} is already served by ethtrace start \\(pid ${server.pid}, (port \\d+|still starting)\\), which writes its dev chain`,
          ),
        );
      } else {
        assert.match(output, /serving chain 3503995874084926 /);
        assert.equal(imported.code, 0, imported.stderr);
      }
      assert.equal(await stopped, 0);
    });
  }
});
