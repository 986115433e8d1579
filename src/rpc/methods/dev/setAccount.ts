import { address, data, hash, quantity, required } from '../../params.ts';
import { method } from '../define.ts';
import { devChain } from './params.ts';

// anvil's and Hardhat's names for the same calls; each change lands in a new block (DevService).
export const anvil_setBalance = method(
  [required(address), required(quantity)],
  async ([at, balance], { services }) => {
    await devChain(services).setAccount(at, { balance });
    return null;
  },
);

export const anvil_setNonce = method(
  [required(address), required(quantity)],
  async ([at, nonce], { services }) => {
    await devChain(services).setAccount(at, { nonce });
    return null;
  },
);

export const anvil_setCode = method([required(address), required(data)], async ([at, code], { services }) => {
  await devChain(services).setAccount(at, { code });
  return null;
});

export const anvil_setStorageAt = method(
  [required(address), required(hash), required(hash)],
  async ([at, slot, value], { services }) => {
    await devChain(services).setAccount(at, { slot: [slot, value] });
    return true;
  },
);
