// Every hardfork a chain spec can name reaches a rule row: the exec and ingest layers map the
// chain's Common hardfork (ethereumjs's names) to src/evm/forks.ts with forkByName, and a name
// without a row stops block execution of every block of that fork.

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Common, Mainnet } from '@ethereumjs/common';
import { forkByName } from '../../src/evm/forks.ts';

describe('forkByName', () => {
  it("names a row for every hardfork of ethereumjs's mainnet the project serves (to BPO2)", () => {
    const all = new Common({ chain: Mainnet }).hardforks().map((h) => h.name);
    // Later ones (Amsterdam) are not served yet.
    const names = all.slice(0, all.indexOf('bpo2') + 1);
    assert.ok(names.includes('dao') && names.includes('osaka'), names.join(', '));
    const rows = names.map((name) => {
      const row = forkByName(name);
      assert.ok(row, `no rules for ${name}`);
      return row;
    });
    // The DAO fork changed state once, not the EVM: Homestead's rules.
    assert.equal(forkByName('dao'), 'Homestead');
    assert.equal(rows[0], 'Frontier');
  });
});
