import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type App, type AppListening, buildApp, DEFAULT_CONFIG } from '../../src/app.ts';
import { openLmdbStore } from '../../src/store/lmdb/index.ts';
import type { ChainStore } from '../../src/store/types.ts';
import { type Anvil, startAnvil } from '../support/anvil.ts';
import { runCli, tempDir } from '../support/cli.ts';
import { type CliServer, serveCli, stopDev } from '../support/devServer.ts';
import { type FaultProxy, startFaultProxy } from '../support/faultProxy.ts';
import { postJson } from '../support/http.ts';
import { importConformanceChain } from '../support/server.ts';
import { startUpstreamServer, type UpstreamServer } from '../support/upstream.ts';

/**
 * Metrics, logs, health and readiness of a real `ethtrace start` (and of upstream mode in this
 * process): what an operator scrapes and reads after real traffic.
 */

const post = postJson;

let nextId = 0;
const req = (method: string, params: unknown[] = []) => ({ jsonrpc: '2.0', id: ++nextId, method, params });

/** The value of one sample of the Prometheus text, or null when the series is absent. */
function sample(text: string, series: string): number | null {
  for (const line of text.split('\n')) {
    if (line.startsWith(`${series} `)) return Number(line.slice(series.length + 1));
  }
  return null;
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

describe('observability of a running ethtrace start', () => {
  const dir = tempDir('ethtrace-observe-');
  let server: CliServer;
  let base = '';
  let adminKey = '';
  let stderr = '';

  before(async () => {
    server = await serveCli(['--datadir', dir.path]);
    server.child.stderr?.on('data', (d) => {
      stderr += d;
    });
    base = server.url.replace(/\/v3\/[^/]+$/, '');
    adminKey = /\/v3\/([^/]+)$/.exec(server.url)?.[1] ?? '';
  });
  after(async () => {
    if (server) await stopDev(server.child);
    dir.cleanup();
  });

  /** A key made with `keys create --name NAME ARGS`, once the server serves it. */
  async function created(name: string, ...args: string[]): Promise<{ key: string; url: string }> {
    const r = await runCli(['keys', 'create', '--name', name, ...args, '--datadir', dir.path]);
    assert.equal(r.code, 0, r.stderr);
    const key = r.stdout.trim().split('\n')[0] ?? '';
    const url = `${base}/v3/${key}`;
    for (let i = 0; i < 40 && (await post(url, [])).status === 401; i++) await sleep(100);
    return { key, url };
  }

  it('GET /health is 200 with JSON, and needs no key', async () => {
    const res = await fetch(`${base}/health`);
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type') ?? '', /application\/json/);
    const body = (await res.json()) as { status: string; uptimeSeconds: number };
    assert.equal(body.status, 'ok');
    assert.equal(typeof body.uptimeSeconds, 'number');
  });

  it('GET /ready is 200 on a dev chain that mines on demand, with its head', async () => {
    const res = await fetch(`${base}/ready`);
    const body = (await res.json()) as { status: string; head: number };
    assert.equal(res.status, 200, JSON.stringify(body));
    assert.equal(body.status, 'ready');
    assert.equal(body.head, 0);
  });

  it('/metrics counts calls per method after traffic, unknown methods as "other"', async () => {
    const url = server.url;
    for (let i = 0; i < 3; i++) assert.equal((await post(url, req('eth_chainId'))).status, 200);
    await post(url, [req('eth_blockNumber'), req('eth_chainId')]);
    const unknown = await post(url, req('nobody_knowsThisMethod'));
    assert.match(unknown.text, /-32601/);
    const res = await fetch(`${base}/metrics`);
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type') ?? '', /text\/plain/);
    const text = await res.text();
    assert.equal(sample(text, 'ethtrace_rpc_calls_started_total{method="eth_chainId"}'), 4);
    assert.equal(sample(text, 'ethtrace_rpc_successful_calls_total{method="eth_chainId"}'), 4);
    assert.equal(sample(text, 'ethtrace_rpc_successful_calls_total{method="eth_blockNumber"}'), 1);
    assert.equal(sample(text, 'ethtrace_rpc_failed_calls_total{method="other",code="-32601"}'), 1);
    assert.equal(sample(text, 'ethtrace_rpc_call_duration_seconds_count{method="eth_chainId"}'), 4);
    assert.ok(!text.includes('nobody_knowsThisMethod'), 'a method outside the table is no label');
    assert.equal(sample(text, 'ethtrace_head_number'), 0);
    assert.ok((sample(text, 'ethtrace_connections_opened_total{transport="http"}') ?? 0) >= 1);
    assert.notEqual(sample(text, 'ethtrace_pool_busy'), null);
    assert.notEqual(sample(text, 'process_cpu_seconds_total'), null, "Node's process metrics");
    assert.equal(sample(text, 'ethtrace_limit_refusals_total{limit="batch_size"}'), 0);
  });

  it('counts refusals per key name after a 429, credits per key name, and never shows a key', async () => {
    const { key, url } = await created('metered', '--credits-per-second', '400');
    const answers = await Promise.all(
      [1, 2, 3, 4, 5, 6].map(() => post(url, req('eth_call', [{ to: `0x${'11'.repeat(20)}` }, 'latest']))),
    );
    const refused = answers.filter((a) => a.status === 429);
    assert.equal(refused.length, 1, answers.map((a) => a.status).join(' '));
    const text = await (await fetch(`${base}/metrics`)).text();
    assert.equal(sample(text, 'ethtrace_key_refusals_total{key="metered",kind="rate"}'), 1);
    assert.equal(sample(text, 'ethtrace_key_credits_total{key="metered"}'), 400);
    assert.equal(sample(text, 'ethtrace_rpc_failed_calls_total{method="eth_call",code="-32005"}'), 1);
    assert.ok(!text.includes(key), 'the key is in no label');
    assert.ok(!text.includes(adminKey), 'the printed key is in no label');
    // Each request got its line before its answer went out; the last one is on stderr by now.
    for (let i = 0; i < 50 && !stderr.includes('"key":"metered"'); i++) await sleep(50);
    assert.ok(!stderr.includes(key), 'the key is in no log line');
    assert.ok(!stderr.includes(adminKey), 'the printed key is in no log line');
  });

  it('logs one JSON line per request with its id, the key name, methods, status and duration', async () => {
    const mine = await post(server.url, req('eth_chainId'), { 'x-request-id': 'trace-me-42' });
    assert.equal(mine.headers.get('x-request-id'), 'trace-me-42');
    const forged = await post(server.url, req('eth_blockNumber'), { 'x-request-id': 'a"b c' });
    const replaced = forged.headers.get('x-request-id') ?? '';
    assert.match(replaced, /^[0-9a-f-]{36}$/, 'an id that is not a plain token is replaced');
    const lines = async () => {
      for (let i = 0; i < 50 && !stderr.includes(replaced); i++) await sleep(50);
      return stderr
        .split('\n')
        .filter((l) => l.startsWith('{'))
        .map((l) => JSON.parse(l) as Record<string, unknown>);
    };
    const all = await lines();
    const line = all.find((l) => l.reqId === 'trace-me-42');
    assert.ok(line, stderr.slice(-2000));
    assert.equal(line.msg, 'request');
    assert.equal(line.key, 'default');
    assert.deepEqual(line.methods, ['eth_chainId']);
    assert.equal(line.status, 200);
    assert.equal(line.transport, 'http');
    assert.equal(line.address, '127.0.0.1');
    assert.equal(typeof line.ms, 'number');
    assert.equal(typeof line.time, 'string');
    assert.ok(all.some((l) => l.reqId === replaced));
    // A refused request says so too.
    const rate = all.find((l) => l.key === 'metered' && l.status === 429);
    assert.ok(rate, 'the 429 has its line');
    assert.deepEqual(rate.codes, [-32005]);
  });
});

describe('/ready in upstream mode', () => {
  let anvil: Anvil;
  let proxy: FaultProxy;
  let upstream: UpstreamServer;

  before(async () => {
    anvil = await startAnvil();
    proxy = await startFaultProxy(anvil.url);
    upstream = await startUpstreamServer([proxy.url], { pollMs: 100, upstream: { retries: 0 } });
  });
  after(async () => {
    await upstream?.close();
    await proxy?.close();
    await anvil?.stop();
  });

  const base = () => upstream.url.replace(/\/v3\/.*$|\/$/, '');

  it('is 200 while the upstream answers, 503 with the reason once it is down, 200 again when it is back', async () => {
    const ready = await fetch(`${base()}/ready`);
    assert.equal(ready.status, 200, await ready.text());
    await proxy.stop();
    let last: { status: number; body: { status: string; reasons?: string[] } } | null = null;
    for (let i = 0; i < 100; i++) {
      const res = await fetch(`${base()}/ready`);
      last = { status: res.status, body: (await res.json()) as { status: string; reasons?: string[] } };
      if (last.status === 503) break;
      await sleep(100);
    }
    assert.equal(last?.status, 503, JSON.stringify(last));
    assert.equal(last?.body.status, 'not ready');
    assert.match(last?.body.reasons?.join(' ') ?? '', /upstream cannot be reached/);
    // /health only says the process answers.
    assert.equal((await fetch(`${base()}/health`)).status, 200);
    await proxy.restart();
    let status = 0;
    for (let i = 0; i < 100 && status !== 200; i++) {
      status = (await fetch(`${base()}/ready`)).status;
      if (status !== 200) await sleep(100);
    }
    assert.equal(status, 200);
  });
});

describe('--metrics-port', () => {
  let chain: { datadir: string; cleanup: () => void };
  let app: App;
  let store: ChainStore;
  let listening: AppListening;

  before(async () => {
    chain = await importConformanceChain();
    store = await openLmdbStore(chain.datadir, { readOnly: true });
    app = await buildApp(
      { ...DEFAULT_CONFIG, port: 0, keys: null, metricsPort: 0 },
      { store, datadir: chain.datadir, log: () => {} },
    );
    listening = await app.listen();
  });
  after(async () => {
    await app?.close();
    await store?.close();
    chain?.cleanup();
  });

  it('serves /metrics on its own port only; /health and /ready on both', async () => {
    assert.ok(listening.metricsUrl);
    assert.notEqual(new URL(listening.metricsUrl).port, String(listening.address.port));
    await post(`${listening.httpUrl}/`, req('eth_chainId'));
    const metrics = await fetch(`${listening.metricsUrl}/metrics`);
    assert.equal(metrics.status, 200);
    assert.equal(
      sample(await metrics.text(), 'ethtrace_rpc_successful_calls_total{method="eth_chainId"}'),
      1,
    );
    const onApi = await fetch(`${listening.httpUrl}/metrics`);
    await onApi.arrayBuffer();
    assert.notEqual(onApi.status, 200, 'the API port does not show the metrics');
    for (const url of [listening.httpUrl, listening.metricsUrl]) {
      assert.equal((await fetch(`${url}/health`)).status, 200);
      assert.equal((await fetch(`${url}/ready`)).status, 200);
    }
  });
});

describe('--no-metrics', () => {
  it('keeps no metrics and serves no /metrics; the service answers as before', async () => {
    const chain = await importConformanceChain();
    const store = await openLmdbStore(chain.datadir, { readOnly: true });
    const app = await buildApp(
      { ...DEFAULT_CONFIG, port: 0, keys: null, metrics: false },
      { store, datadir: chain.datadir, log: () => {} },
    );
    try {
      const listening = await app.listen();
      const answer = await post(`${listening.httpUrl}/`, req('eth_chainId'));
      assert.match(answer.text, /"result":"0x/);
      const metrics = await fetch(`${listening.httpUrl}/metrics`);
      await metrics.arrayBuffer();
      assert.notEqual(metrics.status, 200);
      // Nothing was counted, though the call was answered.
      assert.equal(
        sample(await app.metrics.text(), 'ethtrace_rpc_successful_calls_total{method="eth_chainId"}'),
        null,
      );
      assert.equal((await fetch(`${listening.httpUrl}/health`)).status, 200);
    } finally {
      await app.close();
      await store.close();
      chain.cleanup();
    }
  });
});
