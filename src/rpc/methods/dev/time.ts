import { required } from '../../params.ts';
import { method } from '../define.ts';
import { devChain, number } from './params.ts';

/** Moves the clock of later blocks forward; answers the total offset in seconds (as anvil). */
export const evm_increaseTime = method([required(number)], ([seconds], { services }) =>
  Number(devChain(services).increaseTime(seconds)),
);

/** The timestamp of the next block. */
export const evm_setNextBlockTimestamp = method([required(number)], ([timestamp], { services }) => {
  devChain(services).setNextBlockTimestamp(timestamp);
  return null;
});
