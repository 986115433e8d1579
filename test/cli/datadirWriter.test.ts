import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { readRlpBlocks } from '../../src/ingest/rlpFile.ts';
import { type CliResult, CONFORMANCE, collect, runCli, startCli, tempDir } from '../support/cli.ts';
import { type CliServer, serveCli, serveDev, stopDev } from '../support/devServer.ts';
import { importConformanceChain, type RunningServer, startServer } from '../support/server.ts';
import { eventually } from '../support/wsClient.ts';

/**
 * One process writes a datadir at a time (src/datadirWriter.ts), through the real CLI: a second
 * `start` of a dev chain, a follower or an upstream cache, and an `import` beside one of them, are
 * refused with one line naming the first's pid and port; an imported chain is served read-only by
 * as many starts as wanted while an import adds to it; a writer killed with SIGKILL locks nothing.
 */

const GENESIS = join(CONFORMANCE, 'genesis.json');

/** `ethtrace start ARGS` run to its end, or, if it starts serving instead, stopped and reported so. */
async function startRefused(args: string[]): Promise<CliResult & { served: boolean }> {
  const child = startCli(['start', '--port', '0', ...args]);
  let stdout = '';
  child.stdout?.on('data', (d) => {
    stdout += d;
    if (/WebSocket\s+\S+/.test(stdout)) child.kill('SIGTERM');
  });
  const result = await collect(child);
  return { ...result, stdout, served: /WebSocket\s+\S+/.test(stdout) };
}

/** Status 2, one line on stderr matching `pattern`, nothing on stdout. */
function assertRefused(result: CliResult & { served?: boolean }, pattern: RegExp): void {
  assert.equal(result.served ?? false, false, `it served beside the other:\n${result.stdout}`);
  assert.equal(result.code, 2, `exit ${result.code}: ${result.stderr}`);
  assert.equal(result.stdout, '');
  const lines = result.stderr.trimEnd().split('\n');
  assert.equal(lines.length, 1, result.stderr);
  assert.match(lines[0] ?? '', pattern);
}

function portOf(server: CliServer): number {
  return Number(new URL(server.url).port);
}

async function rpc(url: string, method: string, params: unknown[] = []): Promise<unknown> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
  });
  const answer = (await res.json()) as { result?: unknown; error?: { message: string } };
  if (answer.error) throw new Error(`${method}: ${answer.error.message}`);
  return answer.result;
}

describe('one writer per datadir', () => {
  const dir = tempDir('ethtrace-writer-');
  after(() => dir.cleanup());

  it('refuses a second start and an import beside a dev chain, naming its pid and port; nothing is lost', async () => {
    const datadir = join(dir.path, 'dev');
    const first = await serveDev(datadir);
    const pid = first.child.pid;
    const port = portOf(first);
    let stopped = false;
    try {
      const named = new RegExp(
        `^ethtrace (start|import): .*dev is already served by ethtrace start \\(pid ${pid}, port ${port}\\), which writes its dev chain: stop that one first, or give another --datadir$`,
      );
      assertRefused(await startRefused(['--no-auth', '--datadir', datadir]), named);
      assertRefused(
        await runCli(['import', '--genesis', GENESIS, '--datadir', datadir, join(CONFORMANCE, 'chain.rlp')]),
        named,
      );
      // The first server mines what it is sent, and keeps it.
      const accounts = (await rpc(first.url, 'eth_accounts')) as string[];
      const hash = await rpc(first.url, 'eth_sendTransaction', [
        { from: accounts[0], to: accounts[1], value: '0x1' },
      ]);
      assert.equal(await stopDev(first.child), 0);
      stopped = true;
      const again = await serveDev(datadir);
      try {
        const receipt = (await rpc(again.url, 'eth_getTransactionReceipt', [hash])) as {
          blockNumber: string;
        };
        assert.equal(receipt.blockNumber, '0x1');
      } finally {
        assert.equal(await stopDev(again.child), 0);
      }
    } finally {
      if (!stopped) await stopDev(first.child);
    }
  });

  it('leaves nothing locked when the writer is killed with SIGKILL', async () => {
    const datadir = join(dir.path, 'killed');
    const first = await serveDev(datadir);
    const gone = collect(first.child);
    first.child.kill('SIGKILL');
    assert.equal((await gone).signal, 'SIGKILL');
    const next = await serveDev(datadir);
    try {
      assert.match(next.output, /serving dev chain 31337/);
      // And the new one holds it in turn.
      assertRefused(
        await startRefused(['--no-auth', '--datadir', datadir]),
        new RegExp(`already served by ethtrace start \\(pid ${next.child.pid}, port ${portOf(next)}\\)`),
      );
    } finally {
      assert.equal(await stopDev(next.child), 0);
    }
  });
});

describe('one writer per datadir, beside servers of an imported chain', () => {
  const dir = tempDir('ethtrace-writer-imported-');
  let upstream: RunningServer;
  let chain: { datadir: string; cleanup: () => void };
  before(async () => {
    chain = await importConformanceChain();
    upstream = await startServer(chain.datadir, { keys: null });
  });
  after(async () => {
    await upstream?.close();
    chain?.cleanup();
    dir.cleanup();
  });

  it('serves an imported chain from two starts while an import adds blocks to it', async () => {
    const blocks: Uint8Array[] = [];
    for await (const b of readRlpBlocks(join(CONFORMANCE, 'chain.rlp'))) blocks.push(b.rlp);
    const first = join(dir.path, 'first.rlp');
    const later = join(dir.path, 'later.rlp');
    writeFileSync(first, Buffer.concat(blocks.slice(0, 20)));
    writeFileSync(later, Buffer.concat(blocks.slice(20)));
    const datadir = join(dir.path, 'imported');
    const made = await runCli(['import', '--genesis', GENESIS, '--datadir', datadir, first]);
    assert.equal(made.code, 0, made.stderr);
    const one = await serveCli(['--no-auth', '--datadir', datadir]);
    const two = await serveCli(['--no-auth', '--datadir', datadir]);
    try {
      assert.match(one.output, /serving chain 3503995874084926 \(head 20\)/);
      assert.match(two.output, /serving chain 3503995874084926 \(head 20\)/);
      const added = await runCli(['import', '--genesis', GENESIS, '--datadir', datadir, later]);
      assert.equal(added.code, 0, added.stderr);
      for (const server of [one, two])
        await eventually(
          async () => (await rpc(server.url, 'eth_blockNumber')) === '0x36',
          'head 54',
          60_000,
        );
    } finally {
      assert.equal(await stopDev(one.child), 0);
      assert.equal(await stopDev(two.child), 0);
    }
  });

  it('refuses a second follower (of a --processes primary too) and an import, and serves the followed chain read-only', async () => {
    const datadir = join(dir.path, 'followed');
    const follow = ['--datadir', datadir, '--upstream', upstream.url, '--follow', '--genesis', GENESIS];
    const follower = await serveCli(['--no-auth', ...follow, '--processes', '2']);
    try {
      const named = new RegExp(
        `^ethtrace (start|import): .*followed is already served by ethtrace start \\(pid ${follower.child.pid}, port ${portOf(follower)}\\), which writes its followed chain: stop that one first`,
      );
      assertRefused(await startRefused(['--no-auth', ...follow]), named);
      assertRefused(
        await runCli(['import', '--genesis', GENESIS, '--datadir', datadir, join(CONFORMANCE, 'chain.rlp')]),
        named,
      );
      await eventually(
        async () => (await rpc(follower.url, 'eth_blockNumber')) === '0x36',
        'followed to 54',
        60_000,
      );
      const reader = await serveCli(['--no-auth', '--datadir', datadir]);
      try {
        assert.match(reader.output, /serving chain 3503995874084926 \(head 54\)/);
        assert.equal(await rpc(reader.url, 'eth_blockNumber'), '0x36');
      } finally {
        assert.equal(await stopDev(reader.child), 0);
      }
    } finally {
      assert.equal(await stopDev(follower.child), 0);
    }
  });

  it('refuses a second start of one upstream cache', async () => {
    const datadir = join(dir.path, 'cache');
    const first = await serveCli(['--no-auth', '--datadir', datadir, '--upstream', upstream.url]);
    try {
      assertRefused(
        await startRefused(['--no-auth', '--datadir', datadir, '--upstream', upstream.url]),
        new RegExp(
          `^ethtrace start: .*cache is already served by ethtrace start \\(pid ${first.child.pid}, port ${portOf(first)}\\), which writes its upstream cache`,
        ),
      );
    } finally {
      assert.equal(await stopDev(first.child), 0);
    }
  });
});
