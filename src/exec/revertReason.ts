import { bytesToBigInt } from '@ethereumjs/util';
import { quantityToHex } from '../primitives/hex.ts';

// Solidity's Panic(uint256) codes, worded as geth (after ethers) words them.
const PANIC_REASONS: ReadonlyMap<bigint, string> = new Map([
  [0x00n, 'generic panic'],
  [0x01n, 'assert(false)'],
  [0x11n, 'arithmetic underflow or overflow'],
  [0x12n, 'division or modulo by zero'],
  [0x21n, 'enum overflow'],
  [0x22n, 'invalid encoded storage byte array accessed'],
  [0x31n, 'out-of-bounds array access; popping on an empty array'],
  [0x32n, 'out-of-bounds access of an array or bytesN'],
  [0x41n, 'out of memory'],
  [0x51n, 'uninitialized function'],
]);

const ERROR_SELECTOR = '08c379a0';
const PANIC_SELECTOR = '4e487b71';

/**
 * The reason in revert data, as geth's abi.UnpackRevert reads it: `Error(string)` gives the string,
 * `Panic(uint256)` its meaning; anything else, or data that does not decode, gives null.
 */
export function revertReason(data: Uint8Array): string | null {
  if (data.length < 4) return null;
  const selector = Buffer.from(data.subarray(0, 4)).toString('hex');
  const body = data.subarray(4);
  if (body.length < 32) return null;
  if (selector === PANIC_SELECTOR) {
    const code = bytesToBigInt(body.subarray(0, 32));
    return PANIC_REASONS.get(code) ?? `unknown panic code: ${quantityToHex(code)}`;
  }
  if (selector !== ERROR_SELECTOR) return null;
  const start = bytesToBigInt(body.subarray(0, 32)) + 32n;
  if (start > BigInt(body.length)) return null;
  const length = bytesToBigInt(body.subarray(Number(start) - 32, Number(start)));
  if (start + length > BigInt(body.length)) return null;
  return new TextDecoder().decode(body.subarray(Number(start), Number(start + length)));
}
