import type { ForkRules } from './forks.ts';

/**
 * Opcode values the interpreter and the tracers name: the one place they are spelled out (the
 * tracers under src/exec/tracing take theirs from here).
 */
export const Op = {
  STOP: 0x00,
  EXP: 0x0a,
  KECCAK256: 0x20,
  ADDRESS: 0x30,
  BALANCE: 0x31,
  CALLDATACOPY: 0x37,
  CODESIZE: 0x38,
  CODECOPY: 0x39,
  GASPRICE: 0x3a,
  EXTCODESIZE: 0x3b,
  EXTCODECOPY: 0x3c,
  RETURNDATASIZE: 0x3d,
  RETURNDATACOPY: 0x3e,
  EXTCODEHASH: 0x3f,
  PREVRANDAO: 0x44,
  MLOAD: 0x51,
  MSTORE: 0x52,
  MSTORE8: 0x53,
  SLOAD: 0x54,
  SSTORE: 0x55,
  JUMP: 0x56,
  JUMPI: 0x57,
  PC: 0x58,
  MSIZE: 0x59,
  GAS: 0x5a,
  JUMPDEST: 0x5b,
  TLOAD: 0x5c,
  MCOPY: 0x5e,
  PUSH0: 0x5f,
  PUSH1: 0x60,
  PUSH32: 0x7f,
  DUP1: 0x80,
  SWAP1: 0x90,
  LOG0: 0xa0,
  LOG4: 0xa4,
  CREATE: 0xf0,
  CALL: 0xf1,
  CALLCODE: 0xf2,
  RETURN: 0xf3,
  DELEGATECALL: 0xf4,
  CREATE2: 0xf5,
  STATICCALL: 0xfa,
  REVERT: 0xfd,
  INVALID: 0xfe,
  SELFDESTRUCT: 0xff,
} as const;

interface OpInfo {
  name: string;
  pops: number;
  pushes: number;
  /** Gas charged before the op runs (what geth calls constant gas), from the fork's rules. */
  gas: (rules: ForkRules) => number;
}

const fixed = (n: number) => () => n;

function info(): Array<OpInfo | undefined> {
  const t: Array<OpInfo | undefined> = new Array(256).fill(undefined);
  const def = (op: number, name: string, pops: number, pushes: number, gas: (r: ForkRules) => number) => {
    t[op] = { name, pops, pushes, gas };
  };
  def(0x00, 'STOP', 0, 0, fixed(0));
  const arith: Array<[string, number, number]> = [
    ['ADD', 2, 3],
    ['MUL', 2, 5],
    ['SUB', 2, 3],
    ['DIV', 2, 5],
    ['SDIV', 2, 5],
    ['MOD', 2, 5],
    ['SMOD', 2, 5],
    ['ADDMOD', 3, 8],
    ['MULMOD', 3, 8],
    ['EXP', 2, 10],
    ['SIGNEXTEND', 2, 5],
  ];
  for (const [i, [name, pops, gas]] of arith.entries()) def(0x01 + i, name, pops, 1, fixed(gas));
  const logic: Array<[string, number]> = [
    ['LT', 2],
    ['GT', 2],
    ['SLT', 2],
    ['SGT', 2],
    ['EQ', 2],
    ['ISZERO', 1],
    ['AND', 2],
    ['OR', 2],
    ['XOR', 2],
    ['NOT', 1],
    ['BYTE', 2],
    ['SHL', 2],
    ['SHR', 2],
    ['SAR', 2],
  ];
  for (const [i, [name, pops]] of logic.entries()) def(0x10 + i, name, pops, 1, fixed(3));
  def(0x1e, 'CLZ', 1, 1, fixed(5));
  def(0x20, 'KECCAK256', 2, 1, fixed(30));
  def(0x30, 'ADDRESS', 0, 1, fixed(2));
  def(0x31, 'BALANCE', 1, 1, (r) => r.balanceGas);
  def(0x32, 'ORIGIN', 0, 1, fixed(2));
  def(0x33, 'CALLER', 0, 1, fixed(2));
  def(0x34, 'CALLVALUE', 0, 1, fixed(2));
  def(0x35, 'CALLDATALOAD', 1, 1, fixed(3));
  def(0x36, 'CALLDATASIZE', 0, 1, fixed(2));
  def(0x37, 'CALLDATACOPY', 3, 0, fixed(3));
  def(0x38, 'CODESIZE', 0, 1, fixed(2));
  def(0x39, 'CODECOPY', 3, 0, fixed(3));
  def(0x3a, 'GASPRICE', 0, 1, fixed(2));
  def(0x3b, 'EXTCODESIZE', 1, 1, (r) => r.extCodeGas);
  def(0x3c, 'EXTCODECOPY', 4, 0, (r) => r.extCodeGas);
  def(0x3d, 'RETURNDATASIZE', 0, 1, fixed(2));
  def(0x3e, 'RETURNDATACOPY', 3, 0, fixed(3));
  def(0x3f, 'EXTCODEHASH', 1, 1, (r) => r.extCodeHashGas);
  def(0x40, 'BLOCKHASH', 1, 1, fixed(20));
  def(0x41, 'COINBASE', 0, 1, fixed(2));
  def(0x42, 'TIMESTAMP', 0, 1, fixed(2));
  def(0x43, 'NUMBER', 0, 1, fixed(2));
  def(0x44, 'DIFFICULTY', 0, 1, fixed(2));
  def(0x45, 'GASLIMIT', 0, 1, fixed(2));
  def(0x46, 'CHAINID', 0, 1, fixed(2));
  def(0x47, 'SELFBALANCE', 0, 1, fixed(5));
  def(0x48, 'BASEFEE', 0, 1, fixed(2));
  def(0x49, 'BLOBHASH', 1, 1, fixed(3));
  def(0x4a, 'BLOBBASEFEE', 0, 1, fixed(2));
  def(0x50, 'POP', 1, 0, fixed(2));
  def(0x51, 'MLOAD', 1, 1, fixed(3));
  def(0x52, 'MSTORE', 2, 0, fixed(3));
  def(0x53, 'MSTORE8', 2, 0, fixed(3));
  def(0x54, 'SLOAD', 1, 1, (r) => r.sloadGas);
  def(0x55, 'SSTORE', 2, 0, fixed(0));
  def(0x56, 'JUMP', 1, 0, fixed(8));
  def(0x57, 'JUMPI', 2, 0, fixed(10));
  def(0x58, 'PC', 0, 1, fixed(2));
  def(0x59, 'MSIZE', 0, 1, fixed(2));
  def(0x5a, 'GAS', 0, 1, fixed(2));
  def(0x5b, 'JUMPDEST', 0, 0, fixed(1));
  def(0x5c, 'TLOAD', 1, 1, fixed(100));
  def(0x5d, 'TSTORE', 2, 0, fixed(100));
  def(0x5e, 'MCOPY', 3, 0, fixed(3));
  def(0x5f, 'PUSH0', 0, 1, fixed(2));
  for (let n = 1; n <= 32; n++) def(0x5f + n, `PUSH${n}`, 0, 1, fixed(3));
  for (let n = 1; n <= 16; n++) def(0x7f + n, `DUP${n}`, n, n + 1, fixed(3));
  for (let n = 1; n <= 16; n++) def(0x8f + n, `SWAP${n}`, n + 1, n + 1, fixed(3));
  for (let n = 0; n <= 4; n++) def(0xa0 + n, `LOG${n}`, n + 2, 0, fixed(375 * (n + 1)));
  def(0xf0, 'CREATE', 3, 1, fixed(32000));
  def(0xf1, 'CALL', 7, 1, (r) => r.callGas);
  def(0xf2, 'CALLCODE', 7, 1, (r) => r.callGas);
  def(0xf3, 'RETURN', 2, 0, fixed(0));
  def(0xf4, 'DELEGATECALL', 6, 1, (r) => r.callGas);
  def(0xf5, 'CREATE2', 4, 1, fixed(32000));
  def(0xfa, 'STATICCALL', 6, 1, (r) => r.callGas);
  def(0xfd, 'REVERT', 2, 0, fixed(0));
  def(0xff, 'SELFDESTRUCT', 1, 0, (r) => r.selfDestructGas);
  return t;
}

const INFO = info();

/** geth's name of an opcode (the later name where one was renamed), or null for an undefined byte. */
export function opcodeName(op: number): string | null {
  if (op === 0x44) return 'DIFFICULTY';
  if (op === 0xfe) return 'INVALID';
  return INFO[op]?.name ?? null;
}

/**
 * The per-opcode tables one fork's interpreter loop reads before each op: the constant gas
 * (Infinity for an opcode the fork does not define, so the one gas comparison also catches it), the
 * least stack the op needs and the most it may find without overflowing 1024.
 */
export interface OpTables {
  readonly gas: Float64Array;
  readonly minStack: Uint16Array;
  readonly maxStack: Uint16Array;
}

const STACK_LIMIT = 1024;
const tablesCache = new WeakMap<ForkRules, OpTables>();

export function opTables(rules: ForkRules): OpTables {
  const cached = tablesCache.get(rules);
  if (cached) return cached;
  const gas = new Float64Array(256).fill(Number.POSITIVE_INFINITY);
  const minStack = new Uint16Array(256);
  const maxStack = new Uint16Array(256).fill(STACK_LIMIT);
  for (let op = 0; op < 256; op++) {
    const i = INFO[op];
    if (!i || rules.opcodes[op] !== 1) continue;
    gas[op] = i.gas(rules);
    minStack[op] = i.pops;
    maxStack[op] = STACK_LIMIT - Math.max(0, i.pushes - i.pops);
  }
  const tables = { gas, minStack, maxStack };
  tablesCache.set(rules, tables);
  return tables;
}
