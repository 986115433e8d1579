import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createBlock } from '@ethereumjs/block';
import { RLP } from '@ethereumjs/rlp';
import { Forks } from './forks.ts';
import { parseChainSpec } from './genesis.ts';
import {
  decodeStoredBlock,
  decodeStoredHeader,
  headerFields,
  numberAndTime,
  type RulesAt,
} from './header.ts';

// A chain whose forks change by time, so a block's fork is found only from its number and time.
const spec = parseChainSpec({
  config: {
    chainId: 1337,
    homesteadBlock: 0,
    eip150Block: 0,
    eip155Block: 0,
    eip158Block: 0,
    byzantiumBlock: 0,
    constantinopleBlock: 0,
    petersburgBlock: 0,
    istanbulBlock: 0,
    berlinBlock: 0,
    londonBlock: 0,
    mergeNetsplitBlock: 0,
    terminalTotalDifficulty: 0,
    shanghaiTime: 100,
    cancunTime: 200,
  },
  nonce: '0x0',
  timestamp: '0x0',
  extraData: '0x',
  gasLimit: '0x1c9c380',
  difficulty: '0x0',
  alloc: {},
});
const forks = new Forks(spec);
const rulesAt: RulesAt = (number, timestamp) => forks.commonAt(number, timestamp);

/** A block of the chain at `number` and `timestamp`, as the store keeps it: header and body records. */
function stored(number: bigint, timestamp: bigint) {
  const block = createBlock(
    { header: { number, timestamp, gasLimit: 30_000_000n, baseFeePerGas: 7n } },
    { common: forks.commonAt(number, timestamp) },
  );
  return { block, header: block.header.serialize(), body: RLP.encode(block.raw().slice(1)) };
}

describe('stored headers and blocks', () => {
  it("read a header's number and time from its fields", () => {
    const { header } = stored(7n, 250n);
    assert.deepEqual(numberAndTime(headerFields(header)), { number: 7n, timestamp: 250n });
  });

  it('decode each block with the rules of its own fork', () => {
    for (const [number, timestamp, fork] of [
      [3n, 50n, 'mergeNetsplitBlock'], // ethereumjs's name for the merge set by block
      [5n, 150n, 'shanghai'],
      [7n, 250n, 'cancun'],
    ] as const) {
      const { block, header, body } = stored(number, timestamp);
      const decoded = decodeStoredBlock(header, body, rulesAt);
      assert.equal(decoded.common.hardfork(), fork);
      assert.deepEqual(decoded.hash(), block.hash());
      assert.ok(Object.isFrozen(decoded), 'frozen unless asked otherwise');
      const alone = decodeStoredHeader(header, rulesAt);
      assert.equal(alone.common.hardfork(), fork);
      assert.deepEqual(alone.hash(), block.hash());
    }
  });

  it('leave a block unfrozen when asked', () => {
    const { header, body } = stored(7n, 250n);
    assert.equal(Object.isFrozen(decodeStoredBlock(header, body, rulesAt, { freeze: false })), false);
  });
});
