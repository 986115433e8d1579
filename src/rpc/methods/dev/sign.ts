import { toHex } from '../../../primitives/hex.ts';
import { address, data, required } from '../../params.ts';
import { method } from '../define.ts';
import { devChain } from './params.ts';

/** personal_sign(message, address): the EIP-191 signature by a dev account. */
export const personal_sign = method([required(data), required(address)], ([message, signer], { services }) =>
  toHex(devChain(services).signMessage(signer, message)),
);

/** eth_sign(address, message): the same signature, parameters the other way round. */
export const eth_sign = method([required(address), required(data)], ([signer, message], { services }) =>
  toHex(devChain(services).signMessage(signer, message)),
);
