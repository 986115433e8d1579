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
    0x20, // KECCAK256
    ...range(0x30, 0x36), // ADDRESS … CALLDATASIZE
    0x38, // CODESIZE
    0x3a, // GASPRICE
    0x3b, // EXTCODESIZE
    0x3d, // RETURNDATASIZE
    0x3f, // EXTCODEHASH
    ...range(0x40, 0x4b), // block environment
    0x51, // MLOAD
    0x54, // SLOAD
    0x58, // PC
    0x59, // MSIZE
    0x5a, // GAS
    0x5c, // TLOAD
    ...range(0x5f, 0x7f), // PUSH0 … PUSH32
    0xf0, // CREATE: the new address
    0xf1, // CALL, CALLCODE, DELEGATECALL, STATICCALL, CREATE2: the success flag / address
    0xf2,
    0xf4,
    0xf5,
    0xfa,
  ];
  for (const code of one) table[code] = 1;
  for (let n = 1; n <= 16; n++) {
    table[0x7f + n] = n + 1; // DUPn
    table[0x8f + n] = n + 1; // SWAPn
  }
  return table;
})();

/**
 * Where the memory window an op writes is found on its stack before it runs: `off` and `len` are
 * positions from the top; `size` is a fixed length instead of `len`.
 */
export type MemWindow = { off: number; len: number } | { off: number; size: number };

export const MEM_WRITTEN: ReadonlyMap<number, MemWindow> = new Map<number, MemWindow>([
  [0x51, { off: 0, size: 32 }], // MLOAD: OpenEthereum shows the word read
  [0x52, { off: 0, size: 32 }], // MSTORE
  [0x53, { off: 0, size: 1 }], // MSTORE8
  [0x37, { off: 0, len: 2 }], // CALLDATACOPY
  [0x39, { off: 0, len: 2 }], // CODECOPY
  [0x3e, { off: 0, len: 2 }], // RETURNDATACOPY
  [0x5e, { off: 0, len: 2 }], // MCOPY (destination)
  [0x3c, { off: 1, len: 3 }], // EXTCODECOPY
  [0xf1, { off: 5, len: 6 }], // CALL: the return buffer
  [0xf2, { off: 5, len: 6 }], // CALLCODE
  [0xf4, { off: 4, len: 5 }], // DELEGATECALL
  [0xfa, { off: 4, len: 5 }], // STATICCALL
]);

/** Ops whose OpenEthereum cost includes the gas handed to the frame they make. */
export const FORWARDS_GAS: ReadonlySet<number> = new Set([0xf0, 0xf1, 0xf2, 0xf4, 0xf5, 0xfa]);

export const SSTORE = 0x55;

/** The `op` string: ethereumjs's mnemonic; undefined bytes named as Erigon (geth) names them. */
export function opName(code: number, fullName: string, isInvalid: boolean): string {
  if (!isInvalid) return fullName;
  return code === 0xfe ? 'INVALID' : `opcode 0x${code.toString(16)} not defined`;
}

function range(from: number, to: number): number[] {
  return Array.from({ length: to - from + 1 }, (_, i) => from + i);
}
