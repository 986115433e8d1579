import { address, data, hash, required } from '../../params.ts';
import { method } from '../define.ts';
import { balance, devChain, nonce } from './params.ts';

// anvil's and Hardhat's names for the same calls; each change lands in a new block (DevService).
export const anvil_setBalance = method(
  [required(address), required(balance)],
  async ([at, wei], { services }) => {
    await devChain(services).setAccount(at, { balance: wei });
    return null;
  },
);

export const anvil_setNonce = method(
  [required(address), required(nonce)],
  async ([at, next], { services }) => {
    await devChain(services).setAccount(at, { nonce: next });
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
