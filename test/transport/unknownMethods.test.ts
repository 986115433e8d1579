import assert from 'node:assert/strict';
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { creditsOf } from '../../src/transport/access/credits.ts';
import { USAGE_FLUSH_MS } from '../../src/transport/access/usage.ts';
import { runCli, tempDir } from '../support/cli.ts';
import { type CliServer, serveCli, stopDev } from '../support/devServer.ts';
import { postJson } from '../support/http.ts';

/**
 * Issue 19 item 7, scaled down: a key holder sends batches of a thousand distinct ~4 KB unknown
 * method names. The server runs with a 64 MiB heap and is sent 40 MB of names: kept as sent (in the
 * usage book, twice per name, and in the credits cache), they outgrew that heap and the server died;
 * counted as `other`, its heap stays where it was, the usage files stay small, and `keys usage`
 * and the dashboard show one `other` row with every call counted.
 */

const TOKEN = 'test-operator-token-unknown-methods';
const BODIES = 10;
const BATCH = 1000;
const NAME_BYTES = 4000;
const HEAP_LIMIT_MB = 64;

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** The value of one sample of the Prometheus text. */
function sample(text: string, series: string): number {
  for (const line of text.split('\n'))
    if (line.startsWith(`${series} `)) return Number(line.slice(series.length + 1));
  return Number.NaN;
}

describe('unknown method names sent by a key holder', () => {
  const dir = tempDir('ethtrace-unknown-methods-');
  let server: CliServer;
  let base = '';
  let url = '';
  let died = '';

  before(async () => {
    server = await serveCli(['--datadir', dir.path, '--operator-token', TOKEN, '--log-level', 'warn'], {
      NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ''} --max-old-space-size=${HEAP_LIMIT_MB}`,
    });
    let stderr = '';
    server.child.stderr?.on('data', (d) => {
      stderr = (stderr + d).slice(-400);
    });
    server.child.once('exit', (code, signal) => {
      died = `the server exited (${code ?? signal}): ${stderr}`;
    });
    base = server.url.replace(/\/v3\/[^/]+$/, '');
    const made = await runCli(['keys', 'create', '--name', 'attacker', '--datadir', dir.path]);
    assert.equal(made.code, 0, made.stderr);
    url = `${base}/v3/${made.stdout.trim()}`;
    for (let i = 0; i < 40 && (await postJson(url, [])).status === 401; i++) await sleep(100);
  });
  after(async () => {
    if (server) await stopDev(server.child);
    dir.cleanup();
  });

  const heapUsed = async () =>
    sample(await (await fetch(`${base}/metrics`)).text(), 'nodejs_heap_size_used_bytes');

  it('are counted as "other" in the usage book, its files and the dashboard, in bounded memory', async () => {
    assert.equal(
      (await postJson(url, { jsonrpc: '2.0', id: 1, method: 'eth_chainId', params: [] })).status,
      200,
    );
    const heapBefore = await heapUsed();
    const filler = 'x'.repeat(NAME_BYTES);
    for (let b = 0; b < BODIES; b++) {
      const body = `[${Array.from(
        { length: BATCH },
        (_, i) => `{"jsonrpc":"2.0","id":${i},"method":"m${b}_${i}_${filler}","params":[]}`,
      ).join(',')}]`;
      const res = await fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body,
      }).catch((e: unknown) => assert.fail(died || String(e)));
      const answers = (await res.json()) as Array<{ error?: { code: number } }>;
      assert.equal(answers.length, BATCH);
      assert.ok(answers.every((a) => a.error?.code === -32601));
    }
    const sent = BODIES * BATCH;
    // Alive, and answering.
    const chainId = await postJson(url, { jsonrpc: '2.0', id: 2, method: 'eth_chainId', params: [] });
    assert.equal(chainId.body.result, '0x7a69');
    // Generous: the names alone were 40 MB, and kept they took twice that.
    const grown = (await heapUsed()) - heapBefore;
    assert.ok(grown < 32 * 1024 * 1024, `heap used grew by ${(grown / 2 ** 20).toFixed(1)} MB`);

    // `keys usage`: one row for every name, with the calls and their credits.
    type Row = { method: string; status: string; requests: number; credits: number };
    let rows: Row[] = [];
    for (let i = 0; i < 20; i++) {
      const r = await runCli(['keys', 'usage', 'attacker', '--json', '--datadir', dir.path]);
      assert.equal(r.code, 0, r.stderr);
      rows = JSON.parse(r.stdout) as Row[];
      if (rows.reduce((n, row) => n + row.requests, 0) >= sent) break;
      await sleep(USAGE_FLUSH_MS / 2);
    }
    const other = rows.filter((r) => r.method === 'other');
    assert.deepEqual(
      other.map((r) => [r.status, r.requests, r.credits]),
      [['-32601', sent, sent * creditsOf('m_unknown')]],
    );
    assert.ok(rows.length <= 3, `${rows.length} usage rows`);
    // The usage files hold a few lines, not the names.
    let bytes = 0;
    for (const name of readdirSync(join(dir.path, 'usage')))
      bytes += statSync(join(dir.path, 'usage', name)).size;
    assert.ok(bytes < 16 * 1024, `${bytes} bytes of usage files`);

    // The dashboard's top methods: `other`, with every call and its failure.
    const view = (await (
      await fetch(`${base}/dashboard/data?range=15m`, { headers: { authorization: `Bearer ${TOKEN}` } })
    ).json()) as { methods: Array<{ name: string; requests: number; errors: number }> };
    assert.deepEqual(
      view.methods.find((m) => m.name === 'other'),
      { name: 'other', requests: sent, errors: sent, credits: sent * creditsOf('m_unknown'), refused: 0 },
    );
    assert.ok(view.methods.length <= 3, JSON.stringify(view.methods.map((m) => m.name.slice(0, 20))));
  });
});
