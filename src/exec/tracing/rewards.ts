import type { Block } from '@ethereumjs/block';
import type { Common } from '@ethereumjs/common';

// Block subsidies of Ethereum's proof of work, by fork: EIP-649 (Byzantium) and EIP-1234
// (Constantinople) each lowered it. Written out rather than read from the VM's parameter table
// because the values are consensus constants the reward traces must show whatever the VM does.
const FRONTIER_REWARD = 5_000_000_000_000_000_000n;
const BYZANTIUM_REWARD = 3_000_000_000_000_000_000n;
const CONSTANTINOPLE_REWARD = 2_000_000_000_000_000_000n;

export interface BlockReward {
  author: Uint8Array;
  rewardType: 'block' | 'uncle';
  value: bigint;
}

/** The subsidy of a proof-of-work block at this fork. */
export function baseBlockReward(common: Common): bigint {
  if (common.gteHardfork('constantinople')) return CONSTANTINOPLE_REWARD;
  if (common.gteHardfork('byzantium')) return BYZANTIUM_REWARD;
  return FRONTIER_REWARD;
}

/**
 * The rewards a block pays outside its transactions, in OpenEthereum's order (the block's author
 * first, then each uncle's): the author gets the subsidy plus 1/32 of it per uncle included, an
 * uncle's author (8 + uncle.number − block.number)/8 of it. Proof-of-stake blocks (and clique ones)
 * pay none: their `common` says so, and their difficulty is zero.
 */
export function blockRewards(block: Block, common: Common): BlockReward[] {
  const { header } = block;
  if (common.consensusType() !== 'pow' || header.difficulty === 0n || header.number === 0n) return [];
  const base = baseBlockReward(common);
  const uncles = block.uncleHeaders;
  const rewards: BlockReward[] = [
    {
      author: header.coinbase.bytes,
      rewardType: 'block',
      value: base + (base / 32n) * BigInt(uncles.length),
    },
  ];
  for (const uncle of uncles) {
    rewards.push({
      author: uncle.coinbase.bytes,
      rewardType: 'uncle',
      value: ((8n + uncle.number - header.number) * base) / 8n,
    });
  }
  return rewards;
}
