// `ethtrace statetest` through the real CLI: every case of the filled state tests in
// ../shared/ethereum-tests passes (the count is taken from the files themselves, so a case the runner
// skipped would show), and a case that fails is reported with its test, fork, index and both values.

import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { ROOT, runCli, tempDir } from '../support/cli.ts';

const TESTS = resolve(ROOT, '..', 'shared', 'ethereum-tests');
const EXAMPLE = join(TESTS, 'GeneralStateTests', 'stExample', 'add11.json');

interface PostEntry {
  hash: string;
  logs: string;
  expectException?: string;
}
type TestFile = Record<string, { post: Record<string, PostEntry[]> }>;

function jsonFiles(path: string): string[] {
  if (!statSync(path).isDirectory()) return path.endsWith('.json') ? [path] : [];
  return readdirSync(path)
    .sort()
    .flatMap((entry) => jsonFiles(join(path, entry)));
}

/** Cases (test × fork × post entry) in the files, optionally of one fork and matching names. */
function countCases(path: string, fork?: string, name?: RegExp): number {
  let n = 0;
  for (const file of jsonFiles(path)) {
    const tests = JSON.parse(readFileSync(file, 'utf8')) as TestFile;
    for (const [test, body] of Object.entries(tests)) {
      if (name && !name.test(test)) continue;
      for (const [key, entries] of Object.entries(body.post)) if (!fork || key === fork) n += entries.length;
    }
  }
  return n;
}

describe('ethtrace statetest', () => {
  let dir: { path: string; cleanup: () => void };
  before(() => {
    dir = tempDir('ethtrace-statetest-');
  });
  after(() => dir.cleanup());

  it('passes every case under ../shared/ethereum-tests', async () => {
    const expected = countCases(TESTS);
    assert.ok(expected > 20_000, `only ${expected} cases found under ${TESTS}`);
    const result = await runCli(['statetest', TESTS]);
    const lines = result.stdout.trimEnd().split('\n');
    assert.equal(lines.at(-1), `${expected} passed, 0 failed`, result.stdout.slice(0, 4000) + result.stderr);
    assert.equal(result.code, 0, result.stderr);
  });

  it('names the test, fork, index and both values of a failing case, and exits 1', async () => {
    const tests = JSON.parse(readFileSync(EXAMPLE, 'utf8')) as TestFile;
    const [name, body] = Object.entries(tests)[0] ?? [];
    assert.ok(name && body);
    const entry = body.post.Cancun?.[0];
    assert.ok(entry);
    const right = entry.hash;
    entry.hash = `0x${'11'.repeat(32)}`;
    const file = join(dir.path, 'broken.json');
    writeFileSync(file, JSON.stringify(tests));
    const result = await runCli(['statetest', file]);
    assert.equal(result.code, 1, result.stderr);
    const lines = result.stdout.trimEnd().split('\n');
    assert.equal(lines.length, 2, result.stdout);
    assert.match(
      lines[0] ?? '',
      new RegExp(`^FAIL \\S*broken\\.json ${name} Cancun #0 \\(data 0, gas 0, value 0\\)`),
    );
    // The root it computed is the one the unchanged file expects; the expected one is the file's.
    assert.match(lines[0] ?? '', new RegExp(`state root ${right}, expected ${entry.hash}$`));
    assert.equal(lines[1], '0 passed, 1 failed');
  });

  it('fails a case whose expected exception does not happen', async () => {
    const tests = JSON.parse(readFileSync(EXAMPLE, 'utf8')) as TestFile;
    const entry = Object.values(tests)[0]?.post.Cancun?.[0];
    assert.ok(entry);
    entry.expectException = 'TransactionException.INTRINSIC_GAS_TOO_LOW';
    const file = join(dir.path, 'exception.json');
    writeFileSync(file, JSON.stringify(tests));
    const result = await runCli(['statetest', '--jobs', '1', file]);
    assert.equal(result.code, 1, result.stderr);
    assert.match(
      result.stdout,
      /Cancun #0 .*expected TransactionException\.INTRINSIC_GAS_TOO_LOW, the transaction was accepted\n0 passed, 1 failed\n$/,
    );
  });

  it('runs only the fork and the tests asked for', async () => {
    const folder = join(TESTS, 'GeneralStateTests', 'Pyspecs', 'frontier');
    const cases = countCases(folder, 'Berlin', /dup/);
    assert.ok(cases > 0);
    const result = await runCli(['statetest', '--fork', 'Berlin', '--run', 'dup', folder]);
    assert.equal(result.code, 0, result.stderr);
    assert.equal(result.stdout, `${cases} passed, 0 failed\n`);
  });

  it('refuses a missing path, an unknown fork and a file that is not JSON, in one line, exit 2', async () => {
    const notJson = join(dir.path, 'notes.json');
    writeFileSync(notJson, 'not json');
    for (const [args, pattern] of [
      [['statetest', join(dir.path, 'absent')], /^ethtrace statetest: \S+absent: no such file or folder\n$/],
      [
        ['statetest', '--fork', 'Atlantis', EXAMPLE],
        /^ethtrace statetest: --fork Atlantis: one of Frontier, /,
      ],
      [['statetest', notJson], /^ethtrace statetest: \S+notes\.json: not a JSON file of state tests/],
    ] as const) {
      const result = await runCli([...args]);
      assert.equal(result.code, 2, `${args.join(' ')}: ${result.stderr}`);
      assert.match(result.stderr, pattern);
      assert.equal(result.stderr.trimEnd().split('\n').length, 1, result.stderr);
      assert.equal(result.stdout, '');
    }
  });
});
