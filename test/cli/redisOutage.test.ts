import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { runCli, tempDir } from '../support/cli.ts';
import { type CliServer, serveCli, stopDev } from '../support/devServer.ts';
import { postJson } from '../support/http.ts';
import { type PrivateRedis, startRedis } from '../support/privateRedis.ts';

/**
 * Issue 19 item 13: `ethtrace start --redis` over a Redis of this test's own (a `redis-server` on a
 * free port: the machine's Redis is shared, and is never stopped), which the test kills and starts
 * again, then stops (SIGSTOP) and resumes. Each outage is told at warn once as it begins and once as
 * it ends, counted in the metrics and shown by `/ready` as degraded, while requests are still
 * answered (limits fail open) and then limited again.
 */

const CREDITS_PER_SECOND = 400;
/** eth_call's credits: each body spends a whole lease (src/transport/access/ledger.ts), so each asks Redis. */
const CALL_CREDITS = 80;
const DURING = 20;

let nextId = 0;
const ethCall = () => ({
  jsonrpc: '2.0',
  id: ++nextId,
  method: 'eth_call',
  params: [{ to: '0x70997970c51812dc3a010c7d01b50e0d17dc79c8', data: '0x' }, 'latest'],
});

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** The value of one sample of the Prometheus text, or null when the series is absent. */
function sample(text: string, series: string): number | null {
  for (const line of text.split('\n'))
    if (line.startsWith(`${series} `)) return Number(line.slice(series.length + 1));
  return null;
}

describe('a Redis outage under ethtrace start --redis', () => {
  const dir = tempDir('ethtrace-redis-outage-');
  let port = 0;
  let redis: PrivateRedis | undefined;
  let server: CliServer;
  let base = '';
  let url = '';
  let stderr = '';

  before(async () => {
    redis = await startRedis();
    port = redis.port;
    server = await serveCli([
      '--datadir',
      dir.path,
      '--redis',
      `redis://127.0.0.1:${port}/0`,
      '--log-level',
      'warn',
    ]);
    server.child.stderr?.on('data', (d) => {
      stderr += d;
    });
    base = server.url.replace(/\/v3\/[^/]+$/, '');
    const made = await runCli([
      'keys',
      'create',
      '--name',
      'limited',
      '--credits-per-second',
      String(CREDITS_PER_SECOND),
      '--datadir',
      dir.path,
    ]);
    assert.equal(made.code, 0, made.stderr);
    url = `${base}/v3/${made.stdout.trim()}`;
    for (let i = 0; i < 40 && (await postJson(url, [])).status === 401; i++) await sleep(100);
  });
  after(async () => {
    if (server) await stopDev(server.child);
    await redis?.kill();
    dir.cleanup();
  });

  const ready = async () => {
    const res = await fetch(`${base}/ready`);
    return { status: res.status, body: (await res.json()) as { status: string; degraded?: string[] } };
  };
  const metrics = async () => {
    const text = await (await fetch(`${base}/metrics`)).text();
    return {
      up: sample(text, 'ethtrace_shared_limits_up'),
      outages: sample(text, 'ethtrace_shared_limits_outages_total'),
      unchecked: sample(text, 'ethtrace_shared_limits_unchecked_total'),
    };
  };
  /** /ready until its status is `status` (the probe looks every second). */
  const readyUntil = async (status: string) => {
    let last = await ready();
    for (let i = 0; i < 100 && last.body.status !== status; i++) {
      await sleep(100);
      last = await ready();
    }
    assert.equal(last.body.status, status, JSON.stringify(last.body));
    return last;
  };
  /** The warn lines about the shared limits, as the JSON log has them. */
  const outageLines = () =>
    stderr
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as { level: number; msg: string })
      .filter((l) => /shared limits/.test(l.msg));
  /** The lines once there are `n` (the log is written every half second), and a moment more for any extra. */
  const outageLinesOnce = async (n: number) => {
    for (let i = 0; i < 100 && outageLines().length < n; i++) await sleep(100);
    await sleep(1000);
    return outageLines();
  };

  it('is told once as it begins and once as it ends, counted, and shown as degraded by /ready', async () => {
    assert.equal((await postJson(url, ethCall())).status, 200);
    assert.deepEqual((await ready()).body.status, 'ready');
    assert.deepEqual(await metrics(), { up: 1, outages: 0, unchecked: 0 });

    await redis?.kill();
    // Answered, all of them: the limits fail open (400 credits a second would admit five).
    for (let i = 0; i < DURING; i++) {
      const answer = await postJson(url, ethCall());
      assert.equal(answer.status, 200, answer.text);
      assert.equal(answer.body.result, '0x');
    }
    const degraded = await readyUntil('degraded');
    // Still ready (200): see src/observe/ready.ts on why an outage of the limits is no reason for 503.
    assert.equal(degraded.status, 200);
    assert.match(
      degraded.body.degraded?.[0] ?? '',
      new RegExp(`^the shared limits \\(redis redis://127\\.0\\.0\\.1:${port}/0\\) cannot be reached since `),
    );
    assert.deepEqual(await metrics(), { up: 0, outages: 1, unchecked: DURING });

    await redis?.restart();
    const back = await readyUntil('ready');
    assert.equal(back.status, 200);
    assert.equal(back.body.degraded, undefined);
    assert.deepEqual(await metrics(), { up: 1, outages: 1, unchecked: DURING });
    // Limited again: 400 credits a second admit five eth_calls at once, not twelve.
    const statuses = await Promise.all(
      Array.from({ length: 12 }, async () => (await postJson(url, ethCall())).status),
    );
    assert.ok(statuses.includes(429), `${statuses}`);
    assert.ok(statuses.filter((s) => s === 200).length <= (2 * CREDITS_PER_SECOND) / CALL_CREDITS);

    const lines = await outageLinesOnce(2);
    assert.equal(lines.length, 2, JSON.stringify(lines));
    const [began, ended] = lines;
    // pino's warn is 40.
    assert.equal(began?.level, 40);
    assert.match(
      began?.msg ?? '',
      /cannot be reached \(.+\): admitting requests without their rate and day limits/,
    );
    assert.equal(ended?.level, 40);
    assert.match(
      ended?.msg ?? '',
      new RegExp(
        `answer again after \\d+\\.\\d s; ${DURING} requests were admitted without their limits meanwhile$`,
      ),
    );
  });

  it('does not hold requests when Redis stops answering without closing its connections', async () => {
    const before = outageLines().length;
    redis?.signal('SIGSTOP');
    try {
      // Each answered, not held: a Redis that hangs fails an exchange after its command timeout.
      const answers = await Promise.race([
        Promise.all(Array.from({ length: 8 }, () => postJson(url, ethCall()))),
        sleep(15_000).then(() => assert.fail('requests held by a Redis that does not answer')),
      ]);
      assert.ok(answers.every((a) => a.status === 200));
      await readyUntil('degraded');
      assert.equal((await metrics()).up, 0);
    } finally {
      redis?.signal('SIGCONT');
    }
    await readyUntil('ready');
    const lines = (await outageLinesOnce(before + 2)).slice(before);
    assert.equal(lines.length, 2, JSON.stringify(lines));
    assert.match(lines[0]?.msg ?? '', /cannot be reached \(Command timed out\)/);
    assert.match(lines[1]?.msg ?? '', /answer again after/);
    assert.equal((await metrics()).outages, 2);
  });
});
