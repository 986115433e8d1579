import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { METHODS } from '../../src/rpc/methods/index.ts';
import { CONFORMANCE } from '../support/cli.ts';
import { importConformanceChain, type RunningServer, startServer } from '../support/server.ts';
import { compareResponse } from './compare.ts';
import { type IoCase, loadIoCases } from './ioFile.ts';
import { KNOWN_DIFFERENCES, NOT_OFFERED } from './known-differences.ts';

/**
 * Replays the execution-apis `.io` fixtures, unchanged and in hive's order, against one real
 * server over HTTP that imported the fixtures' chain: every case of every method in METHODS.
 * Methods join the run by being added to the table; the others are listed once as not offered.
 */

/** hive allows 5 s; our EVM is slower than geth's and a cold first call compiles code paths. */
const REQUEST_TIMEOUT_MS = 30_000;
/** Import (every root verified) plus server start; ~2 s here, bounded so a hang fails the run. */
const SETUP_TIMEOUT_MS = 120_000;

const ALL_CASES = loadIoCases(CONFORMANCE);
const offered = new Set(Object.keys(METHODS));
const fixtureMethods = [...new Set(ALL_CASES.map((c) => c.method))];
const notOffered = fixtureMethods.filter((m) => !offered.has(m));
const withoutFixtures = [...offered].filter((m) => !fixtureMethods.includes(m)).sort();
/** CONFORMANCE_METHODS=a,b runs only those methods' cases (while working on them). */
const only = process.env.CONFORMANCE_METHODS?.split(',').filter((m) => m !== '');
const runnable = ALL_CASES.filter(
  (c) => offered.has(c.method) && (only === undefined || only.length === 0 || only.includes(c.method)),
);

type Outcome = 'pass' | 'fail' | 'known difference';
const outcomes = new Map<string, Outcome>();

async function post(url: string, body: string): Promise<unknown> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body,
    signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
  });
  const text = await res.text();
  // JSON-RPC errors travel with HTTP 200 (our profile and geth alike): any other status is a failure.
  if (res.status !== 200) throw new Error(`HTTP ${res.status}: ${text.slice(0, 500)}`);
  try {
    return JSON.parse(text);
  } catch {
    throw new Error(`the answer is not JSON: ${text.slice(0, 500)}`);
  }
}

/** The differences of every exchange in the file, each headed by its request; empty when all agree. */
async function replay(url: string, c: IoCase): Promise<string[]> {
  if (c.invalid !== undefined) throw new Error(`${c.path}: ${c.invalid}`);
  const report: string[] = [];
  for (const [i, { request, response }] of c.exchanges.entries()) {
    const got = await post(url, request);
    const differences = compareResponse(got, JSON.parse(response), c.speconly);
    if (differences.length === 0) continue;
    const head = request.length > 300 ? `${request.slice(0, 300)}…` : request;
    report.push(
      `exchange ${i + 1} of ${c.exchanges.length}, >> ${head}`,
      ...differences.map((d) => `  ${d}`),
    );
  }
  return report;
}

describe('execution-apis conformance', () => {
  let chain: { datadir: string; cleanup: () => void } | undefined;
  let server: RunningServer | undefined;
  before(
    async () => {
      chain = await importConformanceChain();
      server = await startServer(chain.datadir);
    },
    { timeout: SETUP_TIMEOUT_MS },
  );
  after(async () => {
    await server?.close();
    chain?.cleanup();
  });

  test('the known-differences list names only existing cases, each with a reason', () => {
    const names = new Set(ALL_CASES.map((c) => c.name));
    const stale = Object.keys(KNOWN_DIFFERENCES).filter((name) => !names.has(name));
    assert.deepEqual(stale, [], `no fixture file for: ${stale.join(', ')}`);
    const unexplained = Object.entries(KNOWN_DIFFERENCES).filter(([, why]) => why.trim() === '');
    assert.deepEqual(unexplained, [], 'every known difference needs its reason');
  });

  test(`not offered: ${notOffered.length} of ${fixtureMethods.length} methods with fixtures, each for a reason`, (t) => {
    assert.deepEqual(
      notOffered.sort(),
      Object.keys(NOT_OFFERED).sort(),
      'NOT_OFFERED lists exactly the methods with fixtures not in METHODS',
    );
    for (const [method, why] of Object.entries(NOT_OFFERED))
      assert.ok(why.trim() !== '', `${method} needs its reason`);
    if (withoutFixtures.length > 0) t.diagnostic(`offered without fixtures: ${withoutFixtures.join(', ')}`);
  });

  for (const c of runnable) {
    const known = KNOWN_DIFFERENCES[c.name];
    test(c.name, { timeout: REQUEST_TIMEOUT_MS * Math.max(1, c.exchanges.length) + 5_000 }, async (t) => {
      assert.ok(server, 'the server did not start');
      let report: string[];
      try {
        report = await replay(server.url, c);
      } catch (e) {
        outcomes.set(c.name, 'fail');
        throw e;
      }
      if (known !== undefined) {
        if (report.length === 0) {
          outcomes.set(c.name, 'fail');
          assert.fail(`listed in known-differences.ts (${known}) but passes now: remove it from the list`);
        }
        outcomes.set(c.name, 'known difference');
        t.diagnostic(`known difference: ${known}`);
        for (const line of report) t.diagnostic(line);
        return;
      }
      outcomes.set(c.name, report.length === 0 ? 'pass' : 'fail');
      if (report.length > 0) assert.fail(`${c.path}\n${report.join('\n')}`);
    });
  }

  test('summary per method', (t) => {
    for (const method of fixtureMethods.filter((m) => offered.has(m))) {
      const cases = runnable.filter((c) => c.method === method);
      const count = (o: Outcome) => cases.filter((c) => outcomes.get(c.name) === o).length;
      const known = count('known difference');
      t.diagnostic(
        `${method}: ${count('pass')}/${cases.length} pass, ${count('fail')} fail` +
          (known > 0 ? `, ${known} known differences` : ''),
      );
    }
    // Guards the path the runner reads: an empty run must not look like a green one.
    assert.ok(existsSync(join(CONFORMANCE, 'chain.rlp')), `no conformance chain at ${CONFORMANCE}`);
    assert.ok(runnable.length > 0, 'no case ran: METHODS offers none of the fixture methods');
  });
});
