import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { metElsewhere } from '../core/caught.ts';
import { isAlive, WriterLock } from './writerLock.ts';

/**
 * The write side of a datadir taken by several real processes at once: exactly one gets it, whether
 * the directory is new or holds the file of a writer that died, and the others name it.
 */

const LOCK = new URL('./writerLock.ts', import.meta.url).href;
// Says it is ready, claims when told to go (so that all claim at once), prints what it got, and holds
// it until its standard input closes.
const CLAIMER = `
import { WriterLock } from ${JSON.stringify(LOCK)};
process.stdout.write('ready\\n');
process.stdin.once('data', () => {
  const claim = WriterLock.claim(process.argv[1], { command: 'import', writes: 'imported chain' });
  process.stdout.write(JSON.stringify(claim.lock ? { got: true } : { got: false, holder: claim.holder.pid }) + '\\n');
  process.stdin.on('end', () => { claim.lock?.release(); process.exit(0); });
  process.stdin.resume();
});
`;

interface Outcome {
  pid: number;
  got: boolean;
  holder?: number;
}

/** `count` processes claiming `datadir` at once: what each got. */
async function race(datadir: string, count: number): Promise<Outcome[]> {
  const children = Array.from({ length: count }, () =>
    spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', CLAIMER, datadir], {
      stdio: ['pipe', 'pipe', 'inherit'],
    }),
  );
  const lines = children.map((child) => {
    const queue: string[] = [];
    const waiting: Array<(line: string) => void> = [];
    let out = '';
    child.stdout.on('data', (d) => {
      out += d;
      for (let i = out.indexOf('\n'); i >= 0; i = out.indexOf('\n')) {
        const line = out.slice(0, i);
        out = out.slice(i + 1);
        const next = waiting.shift();
        if (next) next(line);
        else queue.push(line);
      }
    });
    const exited = new Promise<never>((_, reject) =>
      child.once('exit', (code) => reject(new Error(`a claimer exited ${code} before answering`))),
    );
    // Raced below; a claimer that answers first leaves its exit unawaited.
    metElsewhere(exited);
    return () =>
      Promise.race([
        exited,
        new Promise<string>((resolve) => {
          const line = queue.shift();
          if (line !== undefined) resolve(line);
          else waiting.push(resolve);
        }),
      ]);
  });
  await Promise.all(lines.map((next) => next()));
  for (const child of children) child.stdin.write('go\n');
  const results = await Promise.all(
    lines.map(async (next, i) => ({
      pid: children[i]?.pid ?? 0,
      ...(JSON.parse(await next()) as Omit<Outcome, 'pid'>),
    })),
  );
  await Promise.all(
    children.map((child) => {
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.stdin.end();
      return exited;
    }),
  );
  return results;
}

describe('WriterLock', () => {
  const root = mkdtempSync(join(tmpdir(), 'ethtrace-writer-lock-'));
  after(() => rmSync(root, { recursive: true, force: true }));

  it('is taken by exactly one of several processes at once, and the others name it', async () => {
    for (let round = 0; round < 3; round++) {
      const datadir = join(root, `fresh-${round}`);
      mkdirSync(datadir);
      const results = await race(datadir, 6);
      const winners = results.filter((r) => r.got);
      assert.equal(winners.length, 1, JSON.stringify(results));
      for (const r of results.filter((r) => !r.got)) assert.equal(r.holder, winners[0]?.pid);
    }
  });

  it('is taken over from a writer that died, by exactly one of several processes at once', async () => {
    // A pid that no process has now: that of one that ran and exited.
    const dead = spawnSync(process.execPath, ['-e', '0']).pid;
    for (let round = 0; round < 3; round++) {
      const datadir = join(root, `stale-${round}`);
      mkdirSync(join(datadir, 'writers'), { recursive: true });
      writeFileSync(
        join(datadir, 'writers', '1.json'),
        JSON.stringify({
          pid: dead,
          command: 'start',
          writes: 'dev chain',
          port: 8545,
          since: '',
          boot: null,
          started: null,
        }),
      );
      const results = await race(datadir, 6);
      assert.equal(results.filter((r) => r.got).length, 1, JSON.stringify(results));
      // The dead writer's file is gone, and the winner's was given back.
      assert.deepEqual(readdirSync(join(datadir, 'writers')), []);
    }
  });

  it('takes a pid used again by another process for a holder that is gone', () => {
    const me = WriterLock.claim(mkdtempSync(join(root, 'self-')), {
      command: 'import',
      writes: 'imported chain',
    });
    assert.ok(me.lock);
    me.lock.release();
    const record = {
      pid: process.pid,
      command: 'start' as const,
      writes: 'dev chain',
      port: null,
      since: '',
    };
    assert.equal(isAlive({ ...record, boot: null, started: null }), true);
    // This process's pid, but another start time: the holder that had it is gone.
    const started = process.platform === 'linux' ? '1' : null;
    if (started !== null) assert.equal(isAlive({ ...record, boot: null, started }), false);
  });
});
