import { Op } from '../../evm/opcodes.ts';

/**
 * Per-opcode facts the vmTrace needs beyond what ethereumjs's opcode table says: how many stack
 * items an op leaves behind (OpenEthereum's `ret`, which is what `ex.push` shows) and which memory
 * window it writes (OpenEthereum's `mem_written`, plus MCOPY, which came after it).
 */

/** Items OpenEthereum reports as pushed: the op's outputs; DUPn and SWAPn report their whole window. */
export const PUSHED: Uint8Array = (() => {
  const table = new Uint8Array(256);
  const one = [
    ...range(0x01, 0x0b), // arithmetic
    ...range(0x10, 0x1e), // comparison, bitwise, CLZ
    Op.KECCAK256,
    ...range(0x30, 0x36), // ADDRESS … CALLDATASIZE
    Op.CODESIZE,
    Op.GASPRICE,
    Op.EXTCODESIZE,
    Op.RETURNDATASIZE,
    Op.EXTCODEHASH,
    ...range(0x40, 0x4b), // block environment
    Op.MLOAD,
    Op.SLOAD,
    Op.PC,
    Op.MSIZE,
    Op.GAS,
    Op.TLOAD,
    ...range(Op.PUSH0, Op.PUSH32),
    Op.CREATE, // the new address
    // The success flag, or CREATE2's address.
    Op.CALL,
    Op.CALLCODE,
    Op.DELEGATECALL,
    Op.CREATE2,
    Op.STATICCALL,
  ];
  for (const code of one) table[code] = 1;
  for (let n = 1; n <= 16; n++) {
    table[Op.DUP1 + n - 1] = n + 1; // DUPn
    table[Op.SWAP1 + n - 1] = n + 1; // SWAPn
  }
  return table;
})();

/**
 * Where the memory window an op writes is found on its stack before it runs: `off` and `len` are
 * positions from the top; `size` is a fixed length instead of `len`.
 */
export type MemWindow = { off: number; len: number } | { off: number; size: number };

export const MEM_WRITTEN: ReadonlyMap<number, MemWindow> = new Map<number, MemWindow>([
  [Op.MLOAD, { off: 0, size: 32 }], // OpenEthereum shows the word read
  [Op.MSTORE, { off: 0, size: 32 }],
  [Op.MSTORE8, { off: 0, size: 1 }],
  [Op.CALLDATACOPY, { off: 0, len: 2 }],
  [Op.CODECOPY, { off: 0, len: 2 }],
  [Op.RETURNDATACOPY, { off: 0, len: 2 }],
  [Op.MCOPY, { off: 0, len: 2 }], // the destination
  [Op.EXTCODECOPY, { off: 1, len: 3 }],
  [Op.CALL, { off: 5, len: 6 }], // the return buffer
  [Op.CALLCODE, { off: 5, len: 6 }],
  [Op.DELEGATECALL, { off: 4, len: 5 }],
  [Op.STATICCALL, { off: 4, len: 5 }],
]);

/** Ops whose OpenEthereum cost includes the gas handed to the frame they make. */
export const FORWARDS_GAS: ReadonlySet<number> = new Set([
  Op.CREATE,
  Op.CALL,
  Op.CALLCODE,
  Op.DELEGATECALL,
  Op.CREATE2,
  Op.STATICCALL,
]);

/** The `op` string: ethereumjs's mnemonic; undefined bytes named as Erigon (geth) names them. */
export function opName(code: number, fullName: string, isInvalid: boolean): string {
  if (!isInvalid) return fullName;
  return code === Op.INVALID ? 'INVALID' : `opcode 0x${code.toString(16)} not defined`;
}

function range(from: number, to: number): number[] {
  return Array.from({ length: to - from + 1 }, (_, i) => from + i);
}
