import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { runCli, tempDir } from '../support/cli.ts';
import { serveCli, stopDev } from '../support/devServer.ts';
import { importConformanceChain } from '../support/server.ts';

async function chainId(url: string): Promise<{ status: number; body: string }> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: '{"jsonrpc":"2.0","id":1,"method":"eth_chainId","params":[]}',
  });
  return { status: res.status, body: await res.text() };
}

describe('ethtrace start and ethtrace keys', () => {
  let chain: { datadir: string; cleanup: () => void };
  before(async () => {
    chain = await importConformanceChain();
  });
  after(() => chain?.cleanup());

  it('creates and prints a key on first start, serves it, and stops cleanly on SIGTERM', async () => {
    const { child, output, url: http, wsUrl: ws } = await serveCli(['--datadir', chain.datadir]);
    try {
      const created = /created API key "default" .*: ([0-9a-f]{32})/.exec(output)?.[1];
      assert.ok(created, output);
      assert.ok(http.endsWith(`/v3/${created}`), http);
      assert.ok(ws.endsWith(`/ws/v3/${created}`), ws);
      assert.match(output, /serving chain 3503995874084926 \(head 54\)/);
      const answer = await chainId(http);
      assert.equal(answer.status, 200);
      assert.equal(JSON.parse(answer.body).result, '0xc72dd9d5e883e');
      const stored = readFileSync(join(chain.datadir, 'keys.json'), 'utf8');
      assert.ok(!stored.includes(created), 'the keys file must not hold the key in clear');
    } finally {
      assert.equal(await stopDev(child), 0);
    }
  });

  it('manages datadir keys with keys create / list / revoke, and a running server follows', async () => {
    const created = await runCli(['keys', 'create', '--name', 'alice', '--datadir', chain.datadir]);
    assert.equal(created.code, 0, created.stderr);
    const key = created.stdout.trim();
    assert.match(key, /^[0-9a-f]{32}$/);
    const listed = await runCli(['keys', 'list', '--datadir', chain.datadir]);
    assert.match(listed.stdout, new RegExp(`alice\\t${key.slice(0, 6)}…`));
    assert.ok(!listed.stdout.includes(key));

    const { child, url: http } = await serveCli(['--datadir', chain.datadir]);
    try {
      const url = http.replace(/\/v3\/[^/]+$/, `/v3/${key}`);
      assert.equal((await chainId(url)).status, 200);
      const revoked = await runCli(['keys', 'revoke', 'alice', '--datadir', chain.datadir]);
      assert.equal(revoked.code, 0, revoked.stderr);
      assert.match((await runCli(['keys', 'list', '--datadir', chain.datadir])).stdout, /alice\t.*revoked/);
      // The server re-reads the keys file at most once a second.
      let status = 200;
      for (let i = 0; i < 40 && status === 200; i++) {
        await new Promise((r) => setTimeout(r, 100));
        status = (await chainId(url)).status;
      }
      assert.equal(status, 401);
    } finally {
      await stopDev(child);
    }
    const again = await runCli(['keys', 'revoke', 'alice', '--datadir', chain.datadir]);
    assert.equal(again.code, 2);
    assert.match(again.stderr, /no active key matches "alice"/);
  });

  it('takes keys from --api-key and ETHTRACE_API_KEYS, and serves any key and / with --no-auth', async () => {
    const withKeys = await serveCli(['--datadir', chain.datadir, '--api-key', 'flag-key'], {
      ETHTRACE_API_KEYS: 'env-a, env-b',
    });
    try {
      const base = withKeys.url.replace(/\/v3\/[^/]+$/, '');
      assert.ok(withKeys.url.endsWith('/v3/flag-key'));
      for (const key of ['flag-key', 'env-a', 'env-b'])
        assert.equal((await chainId(`${base}/v3/${key}`)).status, 200);
      assert.equal((await chainId(`${base}/v3/other`)).status, 401);
      assert.equal((await chainId(`${base}/`)).status, 404);
    } finally {
      await stopDev(withKeys.child);
    }
    const open = await serveCli(['--datadir', chain.datadir, '--no-auth']);
    try {
      const base = open.url.replace(/\/v3\/[^/]+$/, '');
      assert.equal((await chainId(`${base}/v3/anything`)).status, 200);
      assert.equal((await chainId(`${base}/`)).status, 200);
    } finally {
      await stopDev(open.child);
    }
  });

  it('refuses a dev-chain option it does not know, saying which ones it takes', async () => {
    const empty = tempDir();
    try {
      const result = await runCli([
        'start',
        '--port',
        '0',
        '--datadir',
        empty.path,
        '--hardfork',
        'frontier',
      ]);
      assert.equal(result.code, 2);
      assert.match(result.stderr, /--hardfork frontier: one of shanghai, cancun, prague, osaka/);
    } finally {
      empty.cleanup();
    }
  });
});
