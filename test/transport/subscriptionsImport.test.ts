import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { createPublicClient, http, webSocket } from 'viem';
import { readRlpBlocks } from '../../src/ingest/rlpFile.ts';
import { CONFORMANCE, runCli, tempDir } from '../support/cli.ts';
import { type RunningServer, startServer } from '../support/server.ts';

// A server reading a datadir while another process imports into it: subscribers and filters hear of
// each block the import commits, in order, without polling the server themselves.

const SPLIT = 20; // the first import stops at block 20; the second adds 21..54

/** `ethtrace import` of one chain file of the conformance chain into `datadir`. */
async function importInto(datadir: string, file: string): Promise<void> {
  const imported = await runCli([
    'import',
    '--datadir',
    datadir,
    '--genesis',
    join(CONFORMANCE, 'genesis.json'),
    file,
  ]);
  assert.equal(imported.code, 0, imported.stderr);
}

describe('subscriptions on an imported chain that another process extends', () => {
  const dir = tempDir('ethtrace-sub-import-');
  const datadir = join(dir.path, 'data');
  const later = join(dir.path, 'later.rlp');
  let server: RunningServer;
  before(async () => {
    const blocks: Uint8Array[] = [];
    for await (const b of readRlpBlocks(join(CONFORMANCE, 'chain.rlp'))) blocks.push(b.rlp);
    const first = join(dir.path, 'first.rlp');
    writeFileSync(first, Buffer.concat(blocks.slice(0, SPLIT)));
    writeFileSync(later, Buffer.concat(blocks.slice(SPLIT)));
    await importInto(datadir, first);
    server = await startServer(datadir);
  });
  after(async () => {
    await server?.close();
    dir.cleanup();
  });

  it('sends newHeads to viem and block hashes to a filter for every block the import adds', async () => {
    const ws = createPublicClient({ transport: webSocket(server.wsUrl) });
    const client = createPublicClient({ transport: http(server.url) });
    const heads: bigint[] = [];
    const unwatch = ws.watchBlocks({ onBlock: (b) => heads.push(b.number), emitMissed: false });
    const filter = await client.createBlockFilter();
    try {
      await new Promise((r) => setTimeout(r, 300));
      await importInto(datadir, later);
      const head = BigInt(54);
      const until = Date.now() + 10_000;
      while (!heads.includes(head) && Date.now() < until) await new Promise((r) => setTimeout(r, 50));
      const expected = Array.from({ length: 54 - SPLIT }, (_, i) => BigInt(SPLIT + 1 + i));
      assert.deepEqual(heads, expected);
      const hashes = await client.getFilterChanges({ filter });
      assert.equal(hashes.length, expected.length);
      assert.equal(hashes.at(-1), (await client.getBlock({ blockNumber: head })).hash);
    } finally {
      unwatch();
      await ws.transport.getRpcClient().then((c) => c.close());
    }
  });
});
