import { optional } from '../../params.ts';
import { method } from '../define.ts';
import { devChain, number } from './params.ts';

/** evm_mine / anvil_mine: mines empty blocks (one, or the count given). */
export const evm_mine = method([optional(number)], async ([blocks], { services }) => {
  await devChain(services).mineEmpty(Number(blocks ?? 1n));
  return '0x0';
});
