import { TypedDataError, typedDataDigest, typedDataOf } from '../../../primitives/eip712.ts';
import { toHex } from '../../../primitives/hex.ts';
import { address, data, ParamProblem, required } from '../../params.ts';
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

/**
 * Typed data as a JSON string (what wallets send) or as the object itself, checked and hashed here
 * so that every fault in it is a parameter error naming the field: its EIP-712 digest.
 */
function typedDataHash(value: unknown): Uint8Array {
  let parsed: unknown = value;
  if (typeof value === 'string') {
    try {
      parsed = JSON.parse(value);
    } catch {
      throw new ParamProblem('typed data is not valid JSON');
    }
  }
  try {
    return typedDataDigest(typedDataOf(parsed));
  } catch (e) {
    if (e instanceof TypedDataError) throw new ParamProblem(`invalid typed data: ${e.message}`);
    throw e;
  }
}

/** eth_signTypedData_v4(address, typedData): the EIP-712 signature by a dev account. */
export const eth_signTypedData_v4 = method(
  [required(address), required(typedDataHash)],
  ([signer, digest], { services }) => toHex(devChain(services).signTypedData(signer, digest)),
);
