import type { FrameEnd, FrameError } from '../frames.ts';
import { opName } from '../vmTraceOps.ts';

// geth's EVM error texts (core/vm/errors.go), by failure kind. Where geth adds the failing op or
// the stack size, `gethErrorText` adds them from the frame's end.
const TEXTS: Record<FrameError, string> = {
  revert: 'execution reverted',
  'out of gas': 'out of gas',
  'code store out of gas': 'contract creation code storage out of gas',
  'invalid jump': 'invalid jump destination',
  'invalid opcode': 'invalid opcode',
  'stack underflow': 'stack underflow',
  'stack overflow': 'stack limit reached 1024 (1023)',
  'static state change': 'write protection',
  'insufficient balance': 'insufficient balance for transfer',
  'call depth': 'max call depth exceeded',
  'create collision': 'contract address collision',
  'code size': 'max code size exceeded',
  'initcode size': 'max initcode size exceeded',
  'invalid code': 'invalid code: must not begin with 0xef',
  'precompile failed': 'precompile failed',
  'return data out of bounds': 'return data out of bounds',
  'nonce overflow': 'nonce uint64 overflow',
  other: 'execution failed',
};

/**
 * The error text geth gives a failed frame: `invalid opcode: SHL`, `stack underflow (1 <=> 2)`, for
 * EIP-2200's SSTORE sentry the out-of-gas error wrapping its gas function's reason, and for a failed
 * precompile the precompile's own error.
 */
export function gethErrorText(
  error: FrameError,
  failedOp?: FrameEnd['failedOp'],
  precompileError?: string,
): string {
  if (error === 'precompile failed' && precompileError) return precompileError;
  if (failedOp && error === 'invalid opcode') return `invalid opcode: ${gethOpName(failedOp.opcode, null)}`;
  if (failedOp && error === 'stack underflow') {
    return `stack underflow (${failedOp.stackLength} <=> ${stackInputs(failedOp.opcode)})`;
  }
  if (failedOp?.sentry && error === 'out of gas') return 'out of gas: not enough gas for reentrancy sentry';
  if (failedOp && error === 'stack overflow') {
    return `stack limit reached ${failedOp.stackLength} (${1024 - stackGrowth(failedOp.opcode)})`;
  }
  return TEXTS[error];
}

/**
 * geth's name of an op: the mnemonic, `DIFFICULTY` for 0x44, `INVALID` for 0xfe, and `opcode 0x…
 * not defined` for a byte no fork defines. `known` is the EVM's own mnemonic when it has one.
 */
export function gethOpName(code: number, known: string | null): string {
  if (code === 0x44) return 'DIFFICULTY';
  const name = known ?? MNEMONICS.get(code) ?? null;
  return opName(code, name ?? 'INVALID', name === null || name === 'INVALID');
}

/** How many stack items an op takes (geth's minimum stack). */
function stackInputs(code: number): number {
  if (code >= 0x80 && code <= 0x8f) return code - 0x7f; // DUPn
  if (code >= 0x90 && code <= 0x9f) return code - 0x8e; // SWAPn
  if (code >= 0xa0 && code <= 0xa4) return code - 0x9e; // LOGn
  return INPUTS.get(code) ?? 0;
}

/** Items an op leaves on the stack beyond what it takes (pushes − pops), for geth's overflow limit. */
function stackGrowth(code: number): number {
  if ((code >= 0x5f && code <= 0x7f) || (code >= 0x80 && code <= 0x8f)) return 1; // PUSHn, DUPn
  if (ZERO_INPUT_PUSHERS.has(code)) return 1;
  return 0;
}

const INPUTS = new Map<number, number>([
  ...[0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x0a, 0x0b].map((c): [number, number] => [c, 2]),
  [0x08, 3],
  [0x09, 3],
  ...[0x10, 0x11, 0x12, 0x13, 0x14, 0x16, 0x17, 0x18, 0x1a, 0x1b, 0x1c, 0x1d].map((c): [number, number] => [
    c,
    2,
  ]),
  [0x15, 1],
  [0x19, 1],
  [0x1e, 1],
  [0x20, 2],
  [0x31, 1],
  [0x35, 1],
  [0x37, 3],
  [0x39, 3],
  [0x3b, 1],
  [0x3c, 4],
  [0x3e, 3],
  [0x3f, 1],
  [0x40, 1],
  [0x49, 1],
  [0x50, 1],
  [0x51, 1],
  [0x52, 2],
  [0x53, 2],
  [0x54, 1],
  [0x55, 2],
  [0x56, 1],
  [0x57, 2],
  [0x5c, 1],
  [0x5d, 2],
  [0x5e, 3],
  [0xf0, 3],
  [0xf1, 7],
  [0xf2, 7],
  [0xf3, 2],
  [0xf4, 6],
  [0xf5, 4],
  [0xfa, 6],
  [0xfd, 2],
  [0xff, 1],
]);

// Ops that take nothing and push one value (ADDRESS, CALLER, GAS, …).
const ZERO_INPUT_PUSHERS = new Set([
  0x30, 0x32, 0x33, 0x34, 0x36, 0x38, 0x3a, 0x3d, 0x41, 0x42, 0x43, 0x44, 0x45, 0x46, 0x47, 0x48, 0x4a, 0x58,
  0x59, 0x5a,
]);

// Mnemonics of ops that a fork may lack (so the EVM of an earlier fork does not name them), as geth
// names them in every fork.
const MNEMONICS = new Map<number, string>([
  [0x1b, 'SHL'],
  [0x1c, 'SHR'],
  [0x1d, 'SAR'],
  [0x1e, 'CLZ'],
  [0x3d, 'RETURNDATASIZE'],
  [0x3e, 'RETURNDATACOPY'],
  [0x3f, 'EXTCODEHASH'],
  [0x46, 'CHAINID'],
  [0x47, 'SELFBALANCE'],
  [0x48, 'BASEFEE'],
  [0x49, 'BLOBHASH'],
  [0x4a, 'BLOBBASEFEE'],
  [0x5c, 'TLOAD'],
  [0x5d, 'TSTORE'],
  [0x5e, 'MCOPY'],
  [0x5f, 'PUSH0'],
  [0xf4, 'DELEGATECALL'],
  [0xf5, 'CREATE2'],
  [0xfa, 'STATICCALL'],
  [0xfd, 'REVERT'],
]);
