import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { Forks } from '../../src/chain/forks.ts';
import { readChainSpec } from '../../src/chain/genesis.ts';
import { EvmForks } from '../../src/exec/evmRules.ts';

const GENESIS = new URL('../../../shared/conformance/execution-apis/genesis.json', import.meta.url).pathname;

// Blocks of the conformance chain (its genesis config): one in each fork, Frontier rules at 0 aside.
const POINTS: Array<[number, number, string]> = [
  [0, 0, 'Homestead'],
  [3, 0, 'EIP150'],
  [6, 0, 'EIP158'],
  [9, 0, 'Byzantium'],
  [12, 0, 'Constantinople'],
  [15, 0, 'ConstantinopleFix'],
  [18, 0, 'Istanbul'],
  [21, 0, 'Istanbul'],
  [24, 0, 'Berlin'],
  [27, 0, 'London'],
  [33, 0, 'London'],
  [36, 0, 'Paris'],
  [40, 390, 'Shanghai'],
  [41, 420, 'Cancun'],
  [42, 450, 'Prague'],
  [43, 480, 'Osaka'],
  [44, 510, 'BPO1'],
  [45, 540, 'BPO2'],
];

describe("EvmForks: a chain spec's forks as the EVM's rule rows", () => {
  const spec = readChainSpec(GENESIS);
  const forks = new Forks(spec);
  const evm = new EvmForks(spec);

  it('maps the hardfork of every block of the conformance chain to its row', () => {
    for (const [number, time, name] of POINTS) {
      const fork = evm.of(forks.commonAt(BigInt(number), BigInt(time)));
      assert.equal(fork.rules.name, name, `block ${number} at ${time}`);
      assert.equal(fork.chainId, spec.chainId);
    }
  });

  it("applies the chain's blob schedule (the genesis file's blobSchedule, EIP-7840)", () => {
    const raw = JSON.parse(readFileSync(GENESIS, 'utf8')) as {
      config: {
        blobSchedule: Record<string, { target: number; max: number; baseFeeUpdateFraction: number }>;
      };
    };
    for (const [number, time] of POINTS.filter(([, t]) => t >= 420)) {
      const common = forks.commonAt(BigInt(number), BigInt(time));
      const want = raw.config.blobSchedule[common.hardfork()];
      assert.ok(want, `the genesis schedules ${common.hardfork()}`);
      const blobs = evm.of(common).rules.blobs;
      assert.deepEqual(
        blobs && { target: blobs.target, max: blobs.max, fraction: blobs.baseFeeUpdateFraction },
        { target: want.target, max: want.max, fraction: BigInt(want.baseFeeUpdateFraction) },
        `blob rules at ${time}`,
      );
    }
  });

  it('makes one row per fork and shares it', () => {
    const a = evm.of(forks.commonAt(44n, 510n));
    assert.equal(evm.of(forks.commonAt(44n, 515n)), a);
    assert.equal(a.precompiles.has(0x100), true);
  });
});
