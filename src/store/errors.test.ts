import assert from 'node:assert/strict';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { caughtCounts, onCaught } from '../core/caught.ts';
import { checkFreeSpace, freeDiskBytes } from './errors.ts';

describe('free disk space that cannot be told', () => {
  it('is null, logged once while it lasts and counted each time, and writes go ahead', () => {
    // statfs of a directory that does not exist fails as it would on a disk that cannot be asked.
    const dir = join(import.meta.dirname, 'no-such-directory');
    const lines: string[] = [];
    const stop = onCaught((site, line) => lines.push(`${site}: ${line}`));
    const before = caughtCounts().get('disk-free-space') ?? 0;
    try {
      assert.equal(freeDiskBytes(dir), null);
      checkFreeSpace(dir, 1024);
    } finally {
      stop();
    }
    assert.equal((caughtCounts().get('disk-free-space') ?? 0) - before, 2);
    assert.equal(lines.length, 1);
    assert.match(
      lines[0] ?? '',
      /^disk-free-space: the free space on the disk of .*no-such-directory cannot be told \(ENOENT.*\): the store writes without checking it$/,
    );
  });
});
