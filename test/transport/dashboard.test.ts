import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { type BrowserContext, chromium, type Page } from 'playwright-core';
import { METHODS } from '../../src/rpc/methods/index.ts';
import { creditsOf } from '../../src/transport/access/credits.ts';
import { ROOT, runCli, tempDir } from '../support/cli.ts';
import { type CliServer, serveCli, stopDev } from '../support/devServer.ts';
import { type JsonAnswer, postJson } from '../support/http.ts';

/**
 * The operator dashboard end to end: a real `ethtrace start` with keys, limits and an operator
 * token; real traffic (several methods, errors, 429s of a rate and of a day quota, two EVM jobs
 * that hold the one worker); then the page in a real headless Chromium, whose charts must hold
 * exactly the traffic the test saw answered. A screenshot is kept as .tmp/artifacts/dashboard.png.
 */

const TOKEN = 'test-operator-token-0123456789';
const CHROMIUM = '/usr/bin/chromium';
const ARTIFACT = join(ROOT, '.tmp', 'artifacts', 'dashboard.png');
/** A contract that loops until it runs out of gas: with a large gas cap, until the exec deadline. */
const LOOP = '0x1000000000000000000000000000000000000001';
const LOOP_CODE = '0x5b600056'; // JUMPDEST PUSH1 0 JUMP

let nextId = 0;
const req = (method: string, params: unknown[] = []) => ({ jsonrpc: '2.0', id: ++nextId, method, params });

const post = postJson;

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** What the test saw answered, as the dashboard should count it. */
class Sent {
  readonly methods = new Map<string, number>();
  readonly failures = new Map<string, number>();
  readonly keys = new Map<string, { requests: number; credits: number; refused: number }>();
  requests = 0;
  credits = 0;
  errors = 0;
  refused = 0;

  /** Counts one single-call answer of `method` sent with the key named `key`. */
  count(key: string, method: string, answer: JsonAnswer): void {
    const k = this.keys.get(key) ?? { requests: 0, credits: 0, refused: 0 };
    this.keys.set(key, k);
    this.requests++;
    k.requests++;
    // The server keeps a name it does not serve as `other` (a client choosing the names must not
    // choose how much the dashboard keeps).
    const shown = Object.hasOwn(METHODS, method) ? method : 'other';
    this.methods.set(shown, (this.methods.get(shown) ?? 0) + 1);
    let status = 'ok';
    if (answer.status === 429)
      status = String(answer.body?.error?.message).startsWith('daily') ? 'refused-day' : 'refused-rate';
    else if (answer.body?.error) status = String(answer.body.error.code);
    if (status.startsWith('refused-')) {
      this.refused++;
      k.refused++;
    } else {
      // Answered calls cost their credits, errors included; refusals cost nothing.
      this.credits += creditsOf(method);
      k.credits += creditsOf(method);
      if (status !== 'ok') this.errors++;
    }
    if (status !== 'ok') this.failures.set(status, (this.failures.get(status) ?? 0) + 1);
  }

  async call(key: string, url: string, method: string, params: unknown[] = []): Promise<JsonAnswer> {
    const answer = await post(url, req(method, params));
    this.count(key, method, answer);
    return answer;
  }
}

const sum = (xs: ReadonlyArray<number | null>) => xs.reduce<number>((a, b) => a + (b ?? 0), 0);

describe('the operator dashboard, on a running ethtrace start', () => {
  const dir = tempDir('ethtrace-dashboard-');
  let server: CliServer;
  let base = '';
  let adminUrl = '';

  before(async () => {
    server = await serveCli([
      '--datadir',
      dir.path,
      '--operator-token',
      TOKEN,
      // One worker, so that two long EVM jobs make one busy and one queued.
      '--workers',
      '1',
      '--exec-timeout',
      '3000',
      // Far more gas than the loop below can burn before the deadline: the EVM steps it ~10⁸ times
      // a second, and a billion gas (83 million turns) once ran out before 3 s on a quiet machine.
      '--gas-cap',
      '100000000000',
    ]);
    adminUrl = server.url;
    base = server.url.replace(/\/v3\/[^/]+$/, '');
  });
  after(async () => {
    if (server) await stopDev(server.child);
    dir.cleanup();
  });

  /** A key made with `ethtrace keys create --name NAME ARGS`, once the server serves it. */
  async function created(name: string, ...args: string[]): Promise<string> {
    const r = await runCli(['keys', 'create', '--name', name, ...args, '--datadir', dir.path]);
    assert.equal(r.code, 0, r.stderr);
    const url = `${base}/v3/${r.stdout.trim().split('\n')[0]}`;
    // Polled with an empty batch, which is answered without running (or counting) anything.
    for (let i = 0; i < 50 && (await post(url, [])).status === 401; i++) await sleep(100);
    return url;
  }

  it('answers 401 without the token or with a wrong one, and logs in with it by a cookie that is not the token', async () => {
    const page = await fetch(`${base}/dashboard`, { redirect: 'manual' });
    assert.equal(page.status, 401);
    assert.match(await page.text(), /<form method="post" action="\/dashboard"/);
    assert.equal(
      (await fetch(`${base}/dashboard?token=wrong-token-0123456789`, { redirect: 'manual' })).status,
      401,
    );
    assert.equal((await fetch(`${base}/dashboard/data`)).status, 401);
    const wrongBearer = await fetch(`${base}/dashboard/data`, { headers: { authorization: 'Bearer nope' } });
    assert.equal(wrongBearer.status, 401);
    const bearer = await fetch(`${base}/dashboard/data?range=15m`, {
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    assert.equal(bearer.status, 200);
    assert.equal(((await bearer.json()) as { range: string }).range, '15m');

    const login = await fetch(`${base}/dashboard?token=${TOKEN}`, { redirect: 'manual' });
    assert.equal(login.status, 303);
    assert.equal(login.headers.get('location'), '/dashboard');
    const cookie = login.headers.get('set-cookie') ?? '';
    assert.match(cookie, /^ethtrace_dashboard=[^;]+; Path=\/dashboard; HttpOnly; SameSite=Strict/);
    assert.ok(!cookie.includes(TOKEN), 'the cookie is not the token');
    const session = cookie.split(';')[0] ?? '';
    const withCookie = await fetch(`${base}/dashboard/data`, { headers: { cookie: session } });
    assert.equal(withCookie.status, 200);
    const html = await fetch(`${base}/dashboard`, { headers: { cookie: session } });
    assert.equal(html.status, 200);
    assert.match(await html.text(), /uPlot\.iife\.min\.js/);
    // A forged cookie is no session.
    const forged = await fetch(`${base}/dashboard/data`, {
      headers: { cookie: `ethtrace_dashboard=${TOKEN}` },
    });
    assert.equal(forged.status, 401);

    // The login form posts the token in the body; a wrong one gets the form again.
    const form = (token: string) =>
      fetch(`${base}/dashboard`, {
        method: 'POST',
        redirect: 'manual',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ token }).toString(),
      });
    assert.equal((await form(TOKEN)).status, 303);
    assert.equal((await form('not-the-token-0123456789')).status, 401);

    // The charts' library and the page's files are served. (No JSON-RPC call here: the next test
    // counts every call the server saw.)
    const uplot = await fetch(`${base}/dashboard/assets/uPlot.iife.min.js`);
    assert.equal(uplot.status, 200);
    assert.match(uplot.headers.get('content-type') ?? '', /javascript/);
    assert.equal((await fetch(`${base}/dashboard/assets/nothing.js`)).status, 404);
  });

  it('draws in a real browser exactly the traffic it was sent', async (t) => {
    if (!existsSync(CHROMIUM)) {
      t.skip(`${CHROMIUM} is missing: install Debian's chromium (apt-get install chromium) to run this test`);
      return;
    }
    const sent = new Sent();
    const limitedUrl = await created('limited', '--credits-per-second', '400');
    const quotaUrl = await created('quota', '--credits-per-day', '100');
    const admin = 'default';

    // Several methods, and failures of two kinds.
    for (let i = 0; i < 12; i++) await sent.call(admin, adminUrl, 'eth_chainId');
    for (let i = 0; i < 7; i++) await sent.call(admin, adminUrl, 'eth_blockNumber');
    for (let i = 0; i < 4; i++) await sent.call(admin, adminUrl, 'eth_getBalance', [LOOP, 'latest']);
    for (let i = 0; i < 3; i++) await sent.call(admin, adminUrl, 'dash_noSuchMethod');
    for (let i = 0; i < 2; i++)
      await sent.call(admin, adminUrl, 'eth_getBalance', ['not an address', 'latest']);
    const mined = await sent.call(admin, adminUrl, 'evm_mine');
    assert.equal(mined.body.result, '0x0');

    // 429s of a rate: eight eth_calls (80 credits each) at once on a key allowed 400 a second.
    const call = [{ to: LOOP, data: '0x' }, 'latest'];
    const burst = await Promise.all(Array.from({ length: 8 }, () => post(limitedUrl, req('eth_call', call))));
    for (const answer of burst) sent.count('limited', 'eth_call', answer);
    const admitted = burst.filter((a) => a.status === 200).length;
    assert.ok(admitted >= 1 && admitted < 8, `admitted ${admitted} of 8`);

    // 429s of a day: 5 credits each against a quota of 100.
    for (let i = 0; i < 25; i++) await sent.call('quota', quotaUrl, 'eth_chainId');
    assert.equal(sent.keys.get('quota')?.refused, 5);

    // Two EVM jobs that run until the deadline: with one worker, one runs and one waits. The data is
    // asked for (which samples the pool) until it has seen both.
    const loop = [{ to: LOOP }, 'latest', { [LOOP]: { code: LOOP_CODE } }];
    const heavy = Promise.all([0, 1].map(() => sent.call(admin, adminUrl, 'eth_call', loop)));
    let answered = false;
    void heavy.then(() => {
      answered = true;
    });
    const bearer = { authorization: `Bearer ${TOKEN}` };
    let seen = false;
    while (!seen && !answered) {
      const view = (await (await fetch(`${base}/dashboard/data?range=15m`, { headers: bearer })).json()) as {
        pool: { busy: number[]; queued: number[] };
      };
      seen = Math.max(...view.pool.busy) >= 1 && Math.max(...view.pool.queued) >= 1;
      await sleep(50);
    }
    assert.ok(seen, 'the pool was seen with a job running and one waiting');
    for (const answer of await heavy) assert.equal(answer.body.error?.message, 'execution timeout');

    const profile = mkdtempSync(join(tmpdir(), 'ethtrace-chromium-'));
    let context: BrowserContext | undefined;
    try {
      context = await chromium.launchPersistentContext(profile, {
        executablePath: CHROMIUM,
        headless: true,
        viewport: { width: 1400, height: 900 },
        args: [
          '--headless',
          '--no-sandbox',
          '--disable-gpu',
          '--disable-quic',
          '--no-first-run',
          '--disable-background-networking',
          '--disable-component-update',
          '--disable-sync',
        ],
      });
      const page = await context.newPage();
      const errors: string[] = [];
      page.on('pageerror', (e) => errors.push(e.message));
      // Console errors include what the Content-Security-Policy blocked, and failed loads.
      page.on('console', (m) => {
        if (m.type() === 'error') errors.push(m.text());
      });
      await page.goto(`${base}/dashboard?token=${TOKEN}`);
      await page.waitForSelector('body[data-draws]');
      // The token left the URL at once (a redirect), and the session is a cookie scripts cannot read.
      assert.ok(!page.url().includes(TOKEN), page.url());
      assert.equal(new URL(page.url()).pathname, '/dashboard');
      assert.equal(await page.evaluate('document.cookie'), '');
      const [cookie] = await context.cookies(`${base}/dashboard`);
      assert.equal(cookie?.httpOnly, true);
      assert.equal(cookie?.sameSite, 'Strict');

      // The range selector: 15 minutes.
      const draws = Number(await page.getAttribute('body', 'data-draws'));
      await page.click('#ranges button[data-range="15m"]');
      await page.waitForFunction((n) => {
        // biome-ignore lint/suspicious/noExplicitAny: the page's globals (the tests' TypeScript has no DOM types)
        const g = globalThis as any;
        return Number(g.document.body.dataset.draws) > n && g.ethtraceDashboard.view.range === '15m';
      }, draws);
      assert.equal(new URL(page.url()).hash, '#15m');
      await checkCharts(page, sent, admitted);
      assert.deepEqual(errors, []);

      mkdirSync(join(ROOT, '.tmp', 'artifacts'), { recursive: true });
      await page.screenshot({ path: ARTIFACT, fullPage: true });
      assert.ok(existsSync(ARTIFACT));
    } finally {
      await context?.close();
      rmSync(profile, { recursive: true, force: true });
    }
  });
});

/** Every chart against what was sent: the numbers uPlot was given, and those the bars show. */
async function checkCharts(page: Page, sent: Sent, admitted: number): Promise<void> {
  // biome-ignore lint/suspicious/noExplicitAny: the page's data, as JSON
  const plotData = (id: string): Promise<any[]> =>
    page.evaluate(`window.ethtraceDashboard.plots[${JSON.stringify(id)}].plot.data`);
  // biome-ignore lint/suspicious/noExplicitAny: the page's data, as JSON
  const values = async (id: string): Promise<any> =>
    JSON.parse((await page.getAttribute(`#${id}`, 'data-values')) ?? 'null');

  // Requests and credits over time: [time, requests, failed, refused, credits].
  const [, requests = [], failed = [], refused = [], credits = []] = await plotData('chart-traffic');
  assert.equal(sum(requests), sent.requests, 'requests');
  assert.equal(sum(failed), sent.errors + sent.refused, 'failed or refused');
  assert.equal(sum(refused), sent.refused, 'refused');
  assert.equal(sum(credits), sent.credits, 'credits');

  // Top methods: every method sent, with its count.
  const methods: Array<{ name: string; requests: number }> = await values('chart-methods');
  assert.deepEqual(
    Object.fromEntries(methods.map((m) => [m.name, m.requests])),
    Object.fromEntries(sent.methods),
  );
  for (const name of sent.methods.keys())
    assert.equal(await page.locator(`#chart-methods .bar[data-name="${name}"]`).count(), 1, name);

  // Failures by code: the totals as bars, and per minute as uPlot series (one per code).
  const totals: Array<{ status: string; total: number }> = await values('chart-failure-totals');
  assert.deepEqual(
    Object.fromEntries(totals.map((f) => [f.status, f.total])),
    Object.fromEntries(sent.failures),
  );
  assert.deepEqual(
    new Set(totals.map((f) => f.status)),
    new Set(['-32601', '-32602', '-32000', 'refused-rate', 'refused-day']),
  );
  // Per minute the codes are drawn stacked, each code's own counts in data-values; the top of the
  // stack (drawn first) is the minute's failures.
  const perCode: Array<{ status: string; counts: number[] }> = await values('chart-failures');
  assert.deepEqual(
    perCode.map((f) => [f.status, sum(f.counts)]),
    totals.slice(0, 6).map((f) => [f.status, f.total]),
  );
  const [, stackTop = []] = await plotData('chart-failures');
  assert.equal(sum(stackTop), sent.errors + sent.refused);

  // Keys against their limits.
  const keys: Array<{
    name: string;
    requests: number;
    refused: number;
    credits: number;
    creditsToday: number;
    peakCreditsPerSecond: number;
    limits: { creditsPerSecond: number | null; creditsPerDay: number | null };
  }> = await values('chart-keys');
  const byName = new Map(keys.map((k) => [k.name, k]));
  for (const [name, k] of sent.keys) {
    const shown = byName.get(name);
    assert.ok(shown, name);
    assert.equal(shown.requests, k.requests, `${name} requests`);
    assert.equal(shown.refused, k.refused, `${name} refused`);
    assert.equal(shown.creditsToday, k.credits, `${name} credits today`);
  }
  const limited = byName.get('limited');
  assert.equal(limited?.limits.creditsPerSecond, 400);
  // Its busiest second holds at least one admitted call and at most all of them.
  assert.ok(
    (limited?.peakCreditsPerSecond ?? 0) >= 80 && (limited?.peakCreditsPerSecond ?? 0) <= admitted * 80,
    `peak ${limited?.peakCreditsPerSecond}`,
  );
  assert.equal(byName.get('quota')?.limits.creditsPerDay, 100);
  assert.equal(byName.get('quota')?.creditsToday, 100);
  // Bars with their limit line: the limited key's rate and the quota key's day.
  assert.equal(await page.locator('#chart-keys .key[data-name="limited"] .limit').count(), 1);
  assert.equal(await page.locator('#chart-keys .key[data-name="quota"] .limit').count(), 1);

  // Latency: one observation per answered call; percentiles ordered; the two jobs that ran to the
  // 3 s deadline put some minute's p99 past 2.5 s.
  // biome-ignore lint/suspicious/noExplicitAny: the page's data, as JSON
  const view: any = await page.evaluate('window.ethtraceDashboard.view');
  assert.equal(sum(view.latency.count), sent.requests - sent.refused);
  const [, p50 = [], p90 = [], p99 = []] = await plotData('chart-latency');
  for (let i = 0; i < p50.length; i++) {
    if (p50[i] === null) continue;
    assert.ok(p50[i] <= p90[i] && p90[i] <= p99[i], `minute ${i}: ${p50[i]} ${p90[i]} ${p99[i]}`);
  }
  assert.ok(Math.max(...p99.filter((x: number | null) => x !== null)) >= 2500);

  // The pool: one worker, seen busy with one job and another waiting.
  // Drawn as busy and busy + queued (the queue stacked on the running jobs).
  const pool: { busy: number[]; queued: number[]; size: number[] } = await values('chart-pool');
  const [, busyLine = [], stackedLine = []] = await plotData('chart-pool');
  assert.deepEqual(busyLine, pool.busy);
  assert.deepEqual(
    stackedLine,
    pool.busy.map((b, i) => b + (pool.queued[i] ?? 0)),
  );
  assert.ok(Math.max(...pool.busy) >= 1);
  assert.ok(Math.max(...pool.queued) >= 1);
  assert.ok(pool.size.every((s) => s === 1));

  // The head: the block evm_mine made, and its age.
  assert.equal(view.head.number, 1);
  assert.equal((await page.textContent('#stat-head strong'))?.trim(), '#1');
  assert.match((await page.textContent('#stat-head small')) ?? '', /\d+ (s|min) old/);
}

describe('the dashboard without an operator token', () => {
  const dir = tempDir('ethtrace-dashboard-off-');
  let server: CliServer;
  before(async () => {
    server = await serveCli(['--datadir', dir.path]);
  });
  after(async () => {
    if (server) await stopDev(server.child);
    dir.cleanup();
  });

  it('is not served at all (404), whatever is given', async () => {
    const base = server.url.replace(/\/v3\/[^/]+$/, '');
    for (const path of [
      '/dashboard',
      '/dashboard/data',
      `/dashboard?token=${TOKEN}`,
      '/dashboard/assets/dashboard.js',
    ])
      assert.equal(
        (await fetch(`${base}${path}`, { headers: { authorization: `Bearer ${TOKEN}` } })).status,
        404,
        path,
      );
  });

  it('refuses a token too short to be safe (exit status 2, one line)', async () => {
    const r = await runCli(['start', '--port', '0', '--datadir', dir.path, '--operator-token', 'short']);
    assert.equal(r.code, 2);
    assert.match(r.stderr, /^ethtrace start: --operator-token must be at least 16 characters/);
  });
});
