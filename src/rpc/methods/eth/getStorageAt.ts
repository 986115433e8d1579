import { InvalidArgument } from '../../../core/errors.ts';
import { toHex } from '../../../primitives/hex.ts';
import { address, blockSelector, LATEST, optional, ParamProblem, quoted, required } from '../../params.ts';
import { method } from '../define.ts';

export interface StorageKey {
  /** The slot, left-padded to 32 bytes. */
  slot: Uint8Array;
  /** Bytes the caller wrote: eth_getProof echoes a 32-byte key as given, any other as a quantity. */
  inputLength: number;
}

const HEX_DIGITS = /^[0-9a-fA-F]*$/;

/**
 * A storage key as geth reads it (decodeStorageKey): lenient for old clients — optional 0x, odd
 * digit counts, fewer than 32 bytes — and rejected with -32602 naming the key as it was sent.
 */
export function storageKey(value: unknown): StorageKey {
  if (typeof value !== 'string') {
    throw new ParamProblem(`json: cannot unmarshal ${goJsonType(value)} into Go value of type string`);
  }
  let digits = value.startsWith('0x') || value.startsWith('0X') ? value.slice(2) : value;
  if (digits.length % 2 === 1) digits = `0${digits}`;
  if (digits.length > 64) {
    throw new InvalidArgument(`storage key too long (want at most 32 bytes): ${quoted(value)}`);
  }
  if (!HEX_DIGITS.test(digits)) throw new InvalidArgument(`invalid hex in storage key: ${quoted(value)}`);
  const slot = new Uint8Array(32);
  slot.set(Buffer.from(digits, 'hex'), 32 - digits.length / 2);
  return { slot, inputLength: digits.length / 2 };
}

/** The name encoding/json gives a JSON value's type in its unmarshal errors. */
export function goJsonType(value: unknown): string {
  if (Array.isArray(value)) return 'array';
  if (value === null) return 'null';
  if (typeof value === 'object') return 'object';
  return typeof value === 'boolean' ? 'bool' : typeof value;
}

/** The 32-byte word at a slot, read from the flat history (one lookup at any block). */
export const eth_getStorageAt = method(
  [required(address), required(storageKey), optional(blockSelector)],
  async ([who, key, block], { services }) => {
    const { number } = await services.chain.stateBlock(block ?? LATEST);
    return toHex(await services.state.storage(who, key.slot, number));
  },
);
