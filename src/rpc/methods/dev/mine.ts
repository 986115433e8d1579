import { MAX_MINE_BLOCKS } from '../../../services/dev/index.ts';
import { optional, ParamProblem } from '../../params.ts';
import { method } from '../define.ts';
import { devChain, number } from './params.ts';

/** A count of blocks to mine, within the bound that keeps one request from mining for hours. */
function blockCount(value: unknown): bigint {
  const n = number(value);
  if (n > BigInt(MAX_MINE_BLOCKS))
    throw new ParamProblem(`at most ${MAX_MINE_BLOCKS} blocks can be mined at once`);
  return n;
}

/** evm_mine's parameter: a timestamp for the block (Hardhat), or anvil's `{timestamp, blocks}`. */
function mineOptions(value: unknown): { blocks: bigint; timestamp?: bigint } {
  if (typeof value !== 'object' || value === null) return { blocks: 1n, timestamp: number(value) };
  if (Array.isArray(value)) throw new ParamProblem('mine options must be a timestamp or an object');
  const o = value as Record<string, unknown>;
  return {
    blocks: o.blocks === undefined || o.blocks === null ? 1n : blockCount(o.blocks),
    ...(o.timestamp === undefined || o.timestamp === null ? {} : { timestamp: number(o.timestamp) }),
  };
}

/** Mines blocks of what the pool has ready (empty when nothing is); answers "0x0" as anvil does. */
export const evm_mine = method([optional(mineOptions)], async ([options], { services }) => {
  await devChain(services).mineBlocks(Number(options?.blocks ?? 1n), {
    ...(options?.timestamp !== undefined ? { first: options.timestamp } : {}),
  });
  return '0x0';
});

/** anvil_mine / hardhat_mine: `blocks` blocks (default 1), `interval` seconds apart if given. */
export const anvil_mine = method(
  [optional(blockCount), optional(number)],
  async ([blocks, interval], { services }) => {
    await devChain(services).mineBlocks(Number(blocks ?? 1n), interval !== undefined ? { interval } : {});
    return null;
  },
);
