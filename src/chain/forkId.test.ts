import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { hexToBytes } from '@ethereumjs/util';
import { forkId } from './forkId.ts';
import { KNOWN_NETWORKS, type KnownNetwork } from './networks.ts';

function network(name: string): KnownNetwork {
  const found = KNOWN_NETWORKS.find((n) => n.name === name);
  if (!found) throw new Error(`no network ${name}`);
  return found;
}

// [head block, head time, fork hash, next fork]
type Vector = readonly [number, number, string, number];

function check(name: string, genesisTime: number, vectors: readonly Vector[]) {
  const net = network(name);
  const genesis = { hash: hexToBytes(net.genesisHash as `0x${string}`), timestamp: BigInt(genesisTime) };
  for (const [number, timestamp, hash, next] of vectors) {
    const id = forkId(net.config, genesis, { number: BigInt(number), timestamp: BigInt(timestamp) });
    assert.deepEqual(
      { hash: Buffer.from(id.hash).toString('hex'), next: id.next },
      { hash, next: BigInt(next) },
      `${name} at block ${number}, time ${timestamp}`,
    );
  }
}

describe('forkId (EIP-2124)', () => {
  it("gives EIP-2124's mainnet vectors, Frontier to Petersburg", () => {
    // The EIP's test cases: mainnet's ids at each fork boundary up to the Petersburg cap it was
    // written at (its `next` then was 0; today Istanbul follows at 9069000).
    check('mainnet', 0, [
      [0, 0, 'fc64ec04', 1150000],
      [1149999, 0, 'fc64ec04', 1150000],
      [1150000, 0, '97c2c34c', 1920000],
      [1919999, 0, '97c2c34c', 1920000],
      [1920000, 0, '91d1f948', 2463000],
      [2462999, 0, '91d1f948', 2463000],
      [2463000, 0, '7a64da13', 2675000],
      [2674999, 0, '7a64da13', 2675000],
      [2675000, 0, '3edd5b10', 4370000],
      [4369999, 0, '3edd5b10', 4370000],
      [4370000, 0, 'a00bc324', 7280000],
      [7279999, 0, 'a00bc324', 7280000],
      [7280000, 0, '668db0af', 9069000],
    ]);
  });

  it("gives the clients' published mainnet ids after Petersburg, block forks then timestamp forks", () => {
    // The ids mainnet's nodes announce, as the clients' fork id tests publish them.
    check('mainnet', 0, [
      [9069000, 0, '879d6e30', 9200000],
      [9200000, 0, 'e029e991', 12244000],
      [12244000, 0, '0eb440f6', 12965000],
      [12965000, 0, 'b715077d', 13773000],
      [13773000, 0, '20c327fc', 15050000],
      [15050000, 0, 'f0afd0e3', 1681338455],
      [20000000, 1681338454, 'f0afd0e3', 1681338455],
      [20000000, 1681338455, 'dce96c2d', 1710338135],
      [30000000, 1710338135, '9f3d2254', 1746612311],
      [30000000, 1746612311, 'c376cf8b', 1764798551],
      [30000000, 1764798551, '5167e2a6', 1765290071],
      [30000000, 1765290071, 'cba2a1c0', 1767747671],
      [30000000, 1767747671, '07c9462e', 0],
      [50000000, 2000000000, '07c9462e', 0],
    ]);
  });

  it('counts a testnet merge-netsplit block, and skips forks at genesis (Sepolia, Holesky, Hoodi)', () => {
    check('sepolia', 1633267481, [
      [0, 0, 'fe3366e7', 1735371],
      [1735371, 0, 'b96cbd13', 1677557088],
      [1735372, 1677557088, 'f7f9bc08', 1706655072],
      [1735372, 1706655072, '88cf81d9', 1741159776],
      [1735372, 1741159776, 'ed88b5fd', 1760427360],
      [1735372, 1761607008, '268956b6', 0],
    ]);
    check('holesky', 1695902100, [
      [0, 0, 'c61a6098', 1696000704],
      [123, 1696000704, 'fd4f016b', 1707305664],
      [123, 1740434112, 'dfbd9bed', 1759308480],
      [123, 1760389824, '9bc6cb31', 0],
    ]);
    check('hoodi', 1742212800, [
      [0, 0, 'bef71d30', 1742999832],
      [123, 1742999832, '0929e24e', 1761677592],
      [123, 1761677592, 'e7e0e7ff', 1762365720],
      [123, 1762955544, '23aa1351', 0],
    ]);
  });
});
