import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { describe, it } from 'node:test';
import { createLogger, lineLogger } from '../observe/log.ts';
import {
  ChainRewound,
  HeaderNotFound,
  NotFound,
  reviveDomainError,
  serializeDomainError,
  Unavailable,
  UpstreamAnswerInvalid,
} from './errors.ts';

describe('errors with a class per case', () => {
  it('keep their case across a thread boundary (structured clone), message as sent', () => {
    for (const error of [
      HeaderNotFound.by('hash'),
      ChainRewound.during('0x01'),
      new UpstreamAnswerInvalid('x'),
    ]) {
      const revived = reviveDomainError(structuredClone(serializeDomainError(error)));
      assert.equal(revived.constructor, error.constructor);
      assert.equal(revived.message, error.message);
      assert.equal(revived.kind, error.kind);
    }
    // A plain kind stays its kind's class, and is not taken for a case.
    const plain = reviveDomainError(structuredClone(serializeDomainError(new Unavailable('upstream down'))));
    assert.ok(plain instanceof Unavailable && !(plain instanceof UpstreamAnswerInvalid));
    assert.ok(reviveDomainError(serializeDomainError(HeaderNotFound.by('number'))) instanceof NotFound);
  });

  it('are never told apart by their text in src/', () => {
    // What a branch on an error's or a line's words looks like; the words are for people.
    const byText = /\.message\.(startsWith|endsWith|includes|match)\(|\.test\((line|message|e\.message)\)/;
    const found: string[] = [];
    const walk = (dir: string): void => {
      for (const entry of readdirSync(dir, { withFileTypes: true })) {
        const path = join(dir, entry.name);
        if (entry.isDirectory()) walk(path);
        else if (path.endsWith('.ts') && !path.endsWith('.test.ts'))
          for (const [i, line] of readFileSync(path, 'utf8').split('\n').entries())
            if (byText.test(line)) found.push(`${path}:${i + 1}: ${line.trim()}`);
      }
    };
    walk(join(import.meta.dirname, '..'));
    assert.deepEqual(found, []);
  });
});

describe('log lines', () => {
  it('are written at the level the caller gives, whatever their words', () => {
    const lines: Array<{ level: number; msg: string }> = [];
    const out = new Writable({
      write(chunk: Buffer, _encoding, done) {
        for (const text of chunk.toString().split('\n').filter(Boolean)) lines.push(JSON.parse(text));
        done();
      },
    });
    const log = lineLogger(createLogger({ destination: out }));
    log('mining failed: out of gas', 'warn');
    log('following: catching up from block 1 (none failed so far)');
    // pino: info is 30, warn 40.
    assert.deepEqual(
      lines.map((l) => [l.level, l.msg]),
      [
        [40, 'mining failed: out of gas'],
        [30, 'following: catching up from block 1 (none failed so far)'],
      ],
    );
  });
});
