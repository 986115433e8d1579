import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { limitRows, README, readmeRows } from '../../scripts/limits-table.ts';
import { DEFAULT_LIMITS, LIMIT_NAMES, LIMIT_SETTINGS, limitValue } from '../../src/config/limits.ts';

describe("README's limits table", () => {
  it('says what src/config/limits.ts says (else: node --import tsx scripts/limits-table.ts --write)', () => {
    assert.deepEqual(readmeRows(readFileSync(README, 'utf8')), limitRows());
  });

  it('names every limit once, each with a positive default, a refusal and a reason', () => {
    assert.equal(new Set(LIMIT_NAMES).size, LIMIT_NAMES.length);
    for (const name of LIMIT_NAMES) {
      const value = limitValue(DEFAULT_LIMITS, name);
      assert.ok(Number.isFinite(value) && value > 0, `${name}: ${value}`);
      assert.ok(LIMIT_SETTINGS[name].refusal.length > 0 && LIMIT_SETTINGS[name].reason.length > 0, name);
      assert.ok(!`${LIMIT_SETTINGS[name].refusal}${LIMIT_SETTINGS[name].reason}`.includes('|'), name);
    }
  });

  it('fails when a default changes and the README does not', () => {
    const readme = readFileSync(README, 'utf8').replace('| 5 MiB ', '| 6 MiB ');
    assert.notDeepEqual(readmeRows(readme), limitRows());
  });
});
