import type { Hex } from 'viem';

/**
 * A tiny EVM assembler, so test contracts can be written as readable mnemonics with named jump
 * targets instead of hex whose jump offsets must be recounted by hand after every edit.
 *
 * Source is whitespace-separated tokens; `;` comments out the rest of a line.
 * - `MNEMONIC`: any opcode up to Osaka (`PUSH1`…`PUSH32` take the next token as their operand).
 * - `PUSH <n>`: the shortest push of `n` (`PUSH0` for zero).
 * - `name:` marks the current offset; it emits nothing (write `JUMPDEST` yourself).
 * - `@name`, or `@end-@start` for a length: a `PUSH2` of that offset; also usable as an operand
 *   of `PUSHn`, which then must fit.
 * - `.data 0x…`: raw bytes, e.g. the runtime code an initcode returns, or an undefined opcode.
 * Numbers are decimal or 0x-hex. A label pushed right before a `JUMP`/`JUMPI` must mark a
 * `JUMPDEST`: that mistake would otherwise only show up as a failing transaction.
 */
export function asm(source: string): Hex {
  const items = parse(source);
  const labels = layout(items);
  const bytes: number[] = [];
  for (const item of items) {
    if (item.kind === 'raw') bytes.push(...item.bytes);
    else if (item.kind === 'push') bytes.push(0x5f + item.size, ...operandBytes(item, labels));
  }
  checkJumpTargets(items, labels, bytes);
  return `0x${bytes.map((b) => b.toString(16).padStart(2, '0')).join('')}`;
}

type Operand = { kind: 'number'; value: bigint } | { kind: 'label'; name: string; minus?: string };

type Item =
  | { kind: 'raw'; bytes: number[]; token: string }
  | { kind: 'push'; size: number; operand: Operand; token: string }
  | { kind: 'label'; name: string };

const OPCODES: Readonly<Record<string, number>> = {
  STOP: 0x00,
  ADD: 0x01,
  MUL: 0x02,
  SUB: 0x03,
  DIV: 0x04,
  SDIV: 0x05,
  MOD: 0x06,
  SMOD: 0x07,
  ADDMOD: 0x08,
  MULMOD: 0x09,
  EXP: 0x0a,
  SIGNEXTEND: 0x0b,
  LT: 0x10,
  GT: 0x11,
  SLT: 0x12,
  SGT: 0x13,
  EQ: 0x14,
  ISZERO: 0x15,
  AND: 0x16,
  OR: 0x17,
  XOR: 0x18,
  NOT: 0x19,
  BYTE: 0x1a,
  SHL: 0x1b,
  SHR: 0x1c,
  SAR: 0x1d,
  CLZ: 0x1e,
  KECCAK256: 0x20,
  ADDRESS: 0x30,
  BALANCE: 0x31,
  ORIGIN: 0x32,
  CALLER: 0x33,
  CALLVALUE: 0x34,
  CALLDATALOAD: 0x35,
  CALLDATASIZE: 0x36,
  CALLDATACOPY: 0x37,
  CODESIZE: 0x38,
  CODECOPY: 0x39,
  GASPRICE: 0x3a,
  EXTCODESIZE: 0x3b,
  EXTCODECOPY: 0x3c,
  RETURNDATASIZE: 0x3d,
  RETURNDATACOPY: 0x3e,
  EXTCODEHASH: 0x3f,
  BLOCKHASH: 0x40,
  COINBASE: 0x41,
  TIMESTAMP: 0x42,
  NUMBER: 0x43,
  PREVRANDAO: 0x44,
  GASLIMIT: 0x45,
  CHAINID: 0x46,
  SELFBALANCE: 0x47,
  BASEFEE: 0x48,
  BLOBHASH: 0x49,
  BLOBBASEFEE: 0x4a,
  POP: 0x50,
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
  TSTORE: 0x5d,
  MCOPY: 0x5e,
  PUSH0: 0x5f,
  ...Object.fromEntries(Array.from({ length: 16 }, (_, i) => [`DUP${i + 1}`, 0x80 + i])),
  ...Object.fromEntries(Array.from({ length: 16 }, (_, i) => [`SWAP${i + 1}`, 0x90 + i])),
  ...Object.fromEntries(Array.from({ length: 5 }, (_, i) => [`LOG${i}`, 0xa0 + i])),
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
};

const JUMP = 0x56;
const JUMPI = 0x57;
const JUMPDEST = 0x5b;
/** Width of a bare `@label` push: 64 KiB of code is far more than any test contract needs. */
const LABEL_PUSH_SIZE = 2;

function parse(source: string): Item[] {
  const tokens = source
    .split('\n')
    .map((line) => line.replace(/;.*/, ''))
    .join(' ')
    .split(/\s+/)
    .filter((t) => t !== '');
  const items: Item[] = [];
  for (let i = 0; i < tokens.length; i++) {
    const token = tokens[i] as string;
    const next = (): string => {
      const operand = tokens[++i];
      if (operand === undefined) throw new SyntaxError(`asm: ${token} needs an operand`);
      return operand;
    };
    const upper = token.toUpperCase();
    const pushSize = /^PUSH([0-9]+)$/.exec(upper);
    if (token.endsWith(':')) {
      const name = token.slice(0, -1);
      if (!/^[A-Za-z_][\w.]*$/.test(name)) throw new SyntaxError(`asm: bad label ${token}`);
      items.push({ kind: 'label', name });
    } else if (token.startsWith('@')) {
      items.push({ kind: 'push', size: LABEL_PUSH_SIZE, operand: parseOperand(token), token });
    } else if (token === '.data') {
      const data = next();
      if (!/^0x([0-9a-fA-F]{2})*$/.test(data)) throw new SyntaxError(`asm: .data needs 0x-hex, got ${data}`);
      items.push({ kind: 'raw', bytes: hexBytes(data), token: data });
    } else if (upper === 'PUSH') {
      const operand = parseOperand(next());
      if (operand.kind === 'label') items.push({ kind: 'push', size: LABEL_PUSH_SIZE, operand, token });
      else if (operand.value === 0n) items.push({ kind: 'raw', bytes: [0x5f], token: 'PUSH0' });
      else items.push({ kind: 'push', size: byteLength(operand.value), operand, token });
    } else if (pushSize?.[1] !== undefined && upper !== 'PUSH0') {
      const size = Number(pushSize[1]);
      if (size < 1 || size > 32) throw new SyntaxError(`asm: no opcode ${token}`);
      items.push({ kind: 'push', size, operand: parseOperand(next()), token });
    } else {
      const op = OPCODES[upper];
      if (op === undefined) throw new SyntaxError(`asm: unknown mnemonic ${token}`);
      items.push({ kind: 'raw', bytes: [op], token: upper });
    }
  }
  return items;
}

function parseOperand(token: string): Operand {
  const label = /^@([A-Za-z_][\w.]*)(?:-@([A-Za-z_][\w.]*))?$/.exec(token);
  if (label?.[1] !== undefined) {
    return label[2] === undefined
      ? { kind: 'label', name: label[1] }
      : { kind: 'label', name: label[1], minus: label[2] };
  }
  if (!/^(0x[0-9a-fA-F]+|[0-9]+)$/.test(token)) throw new SyntaxError(`asm: bad operand ${token}`);
  return { kind: 'number', value: BigInt(token) };
}

/** Offsets of every label; all sizes are known before any label is, so one pass suffices. */
function layout(items: readonly Item[]): Map<string, number> {
  const labels = new Map<string, number>();
  let offset = 0;
  for (const item of items) {
    if (item.kind === 'label') {
      if (labels.has(item.name)) throw new SyntaxError(`asm: label ${item.name} defined twice`);
      labels.set(item.name, offset);
    } else offset += item.kind === 'raw' ? item.bytes.length : 1 + item.size;
  }
  return labels;
}

function operandValue(operand: Operand, labels: ReadonlyMap<string, number>): bigint {
  if (operand.kind === 'number') return operand.value;
  const at = (name: string): number => {
    const offset = labels.get(name);
    if (offset === undefined) throw new SyntaxError(`asm: undefined label ${name}`);
    return offset;
  };
  const value = at(operand.name) - (operand.minus === undefined ? 0 : at(operand.minus));
  if (value < 0) throw new RangeError(`asm: @${operand.name}-@${operand.minus} is negative`);
  return BigInt(value);
}

function operandBytes(item: Extract<Item, { kind: 'push' }>, labels: ReadonlyMap<string, number>): number[] {
  const value = operandValue(item.operand, labels);
  if (byteLength(value) > item.size) {
    throw new RangeError(`asm: ${item.token} operand ${value} does not fit in ${item.size} bytes`);
  }
  return hexBytes(`0x${value.toString(16).padStart(item.size * 2, '0')}`);
}

function checkJumpTargets(
  items: readonly Item[],
  labels: ReadonlyMap<string, number>,
  bytes: number[],
): void {
  const code = items.filter((item) => item.kind !== 'label');
  code.forEach((item, i) => {
    const following = code[i + 1];
    if (item.kind !== 'push' || item.operand.kind !== 'label' || item.operand.minus !== undefined) return;
    if (following?.kind !== 'raw' || ![JUMP, JUMPI].includes(following.bytes[0] ?? -1)) return;
    const target = Number(operandValue(item.operand, labels));
    if (bytes[target] !== JUMPDEST)
      throw new SyntaxError(`asm: jump to @${item.operand.name}, not a JUMPDEST`);
  });
}

function byteLength(value: bigint): number {
  if (value < 0n) throw new RangeError(`asm: negative operand ${value}`);
  return value === 0n ? 1 : Math.ceil(value.toString(16).length / 2);
}

function hexBytes(hex: string): number[] {
  const digits = hex.slice(2);
  return Array.from({ length: digits.length / 2 }, (_, i) =>
    Number.parseInt(digits.slice(2 * i, 2 * i + 2), 16),
  );
}

/**
 * Initcode that deploys `runtime` unchanged: copies the bytes that follow it to memory and returns them.
 */
export function deployCode(runtime: Hex): Hex {
  const length = (runtime.length - 2) / 2;
  return asm(`
    PUSH ${length} DUP1     ; len len
    @runtime PUSH0 CODECOPY ; len — mem[0:len] = runtime
    PUSH0 RETURN
    runtime: .data ${runtime}
  `);
}
