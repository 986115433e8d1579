import { type Address, concatHex, type Hex, numberToHex, size, zeroAddress } from 'viem';
import { asm, deployCode } from './asm.ts';

/**
 * Probe: one contract that does whatever its call data says, so a workload can reach every trace
 * shape (nesting, call kinds, creations, failures, logs, storage) with a single hand-assembled
 * contract instead of one per case.
 *
 * Call data is a program: actions run one after another, and running off its end STOPs. An action
 * is an opcode-named byte followed by fixed-width operands:
 *
 * | byte | action | operands |
 * |------|--------|----------|
 * | 00 | stop | — |
 * | 55 / 5d | SSTORE / TSTORE | slot (32), value (32) |
 * | 54 / 5c | LOG0 of SLOAD / TLOAD | slot (32) |
 * | a0…a4 | LOGn, data = the action's offset in the program | n topics (32 each) |
 * | f3 / fd | RETURN / REVERT | length (2), data |
 * | f0 | CREATE | value (32), length (2), initcode |
 * | f5 | CREATE2 | value (32), salt (32), length (2), initcode |
 * | f1 f2 f4 fa | CALL CALLCODE DELEGATECALL STATICCALL | target (20), value (32), gas (4), length (2), call data |
 * | 3e | LOG0 of the last call's return data | — |
 * | 15 | REVERT with the last call's return data if that call failed | — |
 * | ff | SELFDESTRUCT | beneficiary (20) |
 * | 30 | SELFDESTRUCT to itself | — |
 * | 5a | burn all gas in a loop | — |
 * | 59 | MLOAD at 16 MiB (memory expansion out of gas) | — |
 * | 56 | JUMP to offset 0, which is no JUMPDEST | — |
 * | fe | INVALID | — |
 * | 0c | the undefined opcode 0x0c | — |
 * | 50 | POP on an empty stack | — |
 *
 * A call target of zero means the contract the last CREATE/CREATE2 of this frame made, so a
 * program can create a contract and then call it. The value of DELEGATECALL/STATICCALL is ignored;
 * a gas above what is left (e.g. `ALL_GAS`) gets all but 1/64 of it (EIP-150).
 *
 * Memory: 0x00 scratch word, 0x20 last created address, 0x40 last call's success flag, 0x80 on
 * the buffer for call data, initcode, return and revert data.
 */

/** One handler per action byte; each starts with [p, op] on the stack and jumps back to `loop` with [p']. */
function handlers(): string {
  const storeHandler = (op: string): string => `
    JUMPDEST POP
    DUP1 PUSH1 0x21 ADD CALLDATALOAD   ; p value
    DUP2 PUSH1 0x01 ADD CALLDATALOAD   ; p value slot
    ${op}
    PUSH1 0x41 ADD @loop JUMP`;
  const loadLogHandler = (op: string): string => `
    JUMPDEST POP
    DUP1 PUSH1 0x01 ADD CALLDATALOAD ${op} PUSH0 MSTORE ; p — mem[0] = loaded word
    PUSH1 0x20 PUSH0 LOG0
    PUSH1 0x21 ADD @loop JUMP`;
  // Topics are pushed last first, so topic 1 ends up just below size and offset.
  const logHandler = (n: number): string => `
    JUMPDEST POP
    DUP1 PUSH0 MSTORE                  ; p — mem[0] = p, the log data
    ${Array.from({ length: n }, (_, k) => `DUP${k + 1} PUSH1 ${1 + 32 * (n - 1 - k)} ADD CALLDATALOAD`).join(' ')}
    PUSH1 0x20 PUSH0 LOG${n}
    PUSH1 ${1 + 32 * n} ADD @loop JUMP`;
  const endHandler = (op: string): string => `
    JUMPDEST POP
    DUP1 PUSH1 0x01 ADD CALLDATALOAD PUSH1 0xf0 SHR   ; p len
    DUP1 DUP3 PUSH1 0x03 ADD PUSH1 0x80 CALLDATACOPY  ; p len — mem[0x80:] = data
    PUSH1 0x80 ${op}`;
  // Stack before the call: p len retSize=0 retOffset=0 argsSize=len argsOffset=0x80 [value] target gas.
  const callHandler = (op: string, withValue: boolean): string => {
    const depth = withValue ? 7 : 6;
    return `
    JUMPDEST POP
    DUP1 PUSH1 57 ADD CALLDATALOAD PUSH1 0xf0 SHR    ; p len
    DUP1 DUP3 PUSH1 59 ADD PUSH1 0x80 CALLDATACOPY   ; p len — mem[0x80:] = call data
    PUSH0 PUSH0 DUP3 PUSH1 0x80                      ; p len 0 0 len 0x80
    ${withValue ? 'DUP6 PUSH1 21 ADD CALLDATALOAD' : ''}
    DUP${depth} PUSH1 1 ADD CALLDATALOAD PUSH1 0x60 SHR  ; … target
    DUP1 ISZERO PUSH1 0x20 MLOAD MUL OR              ; … target, or the last created if zero
    DUP${depth + 1} PUSH1 53 ADD CALLDATALOAD PUSH1 0xe0 SHR ; … target gas
    ${op}                                            ; p len success
    PUSH1 0x40 MSTORE
    PUSH1 59 ADD ADD @loop JUMP`;
  };
  return `
    sstore: ${storeHandler('SSTORE')}
    tstore: ${storeHandler('TSTORE')}
    sload: ${loadLogHandler('SLOAD')}
    tload: ${loadLogHandler('TLOAD')}
    ${[0, 1, 2, 3, 4].map((n) => `log${n}: ${logHandler(n)}`).join('\n')}
    return: ${endHandler('RETURN')}
    revert: ${endHandler('REVERT')}
    call: ${callHandler('CALL', true)}
    callcode: ${callHandler('CALLCODE', true)}
    delegatecall: ${callHandler('DELEGATECALL', false)}
    staticcall: ${callHandler('STATICCALL', false)}
    create: JUMPDEST POP
      DUP1 PUSH1 0x21 ADD CALLDATALOAD PUSH1 0xf0 SHR   ; p len
      DUP1 DUP3 PUSH1 0x23 ADD PUSH1 0x80 CALLDATACOPY  ; p len — mem[0x80:] = initcode
      DUP1 PUSH1 0x80 DUP4 PUSH1 0x01 ADD CALLDATALOAD  ; p len len 0x80 value
      CREATE PUSH1 0x20 MSTORE                          ; p len
      PUSH1 0x23 ADD ADD @loop JUMP
    create2: JUMPDEST POP
      DUP1 PUSH1 0x41 ADD CALLDATALOAD PUSH1 0xf0 SHR   ; p len
      DUP1 DUP3 PUSH1 0x43 ADD PUSH1 0x80 CALLDATACOPY  ; p len — mem[0x80:] = initcode
      DUP2 PUSH1 0x21 ADD CALLDATALOAD                  ; p len salt
      DUP2 PUSH1 0x80 DUP5 PUSH1 0x01 ADD CALLDATALOAD  ; p len salt len 0x80 value
      CREATE2 PUSH1 0x20 MSTORE                         ; p len
      PUSH1 0x43 ADD ADD @loop JUMP
    retlog: JUMPDEST POP
      RETURNDATASIZE PUSH0 PUSH1 0x80 RETURNDATACOPY
      RETURNDATASIZE PUSH1 0x80 LOG0
      PUSH1 0x01 ADD @loop JUMP
    bubble: JUMPDEST POP
      PUSH1 0x40 MLOAD @bubble_ok JUMPI
      RETURNDATASIZE PUSH0 PUSH1 0x80 RETURNDATACOPY
      RETURNDATASIZE PUSH1 0x80 REVERT
    bubble_ok: JUMPDEST PUSH1 0x01 ADD @loop JUMP
    selfdestruct: JUMPDEST POP PUSH1 0x01 ADD CALLDATALOAD PUSH1 0x60 SHR SELFDESTRUCT
    selfdestruct_self: JUMPDEST POP POP ADDRESS SELFDESTRUCT
    burn: JUMPDEST POP POP
    burn_loop: JUMPDEST @burn_loop JUMP
    memory_oog: JUMPDEST POP POP PUSH3 0xffffff MLOAD
    bad_jump: JUMPDEST POP POP PUSH0 JUMP
    invalid: JUMPDEST POP POP INVALID
    undefined_op: JUMPDEST POP POP .data 0x0c
    underflow: JUMPDEST POP POP POP
    stop: JUMPDEST POP POP STOP`;
}

/** Action byte → handler label, in dispatch order (most used first: each miss costs ~22 gas). */
const DISPATCH: readonly (readonly [number, string])[] = [
  [0xf1, 'call'],
  [0x55, 'sstore'],
  [0xa0, 'log0'],
  [0xa1, 'log1'],
  [0xa2, 'log2'],
  [0xa3, 'log3'],
  [0xa4, 'log4'],
  [0xfd, 'revert'],
  [0xf3, 'return'],
  [0xf4, 'delegatecall'],
  [0xfa, 'staticcall'],
  [0xf2, 'callcode'],
  [0xf0, 'create'],
  [0xf5, 'create2'],
  [0x3e, 'retlog'],
  [0x15, 'bubble'],
  [0x5d, 'tstore'],
  [0x5c, 'tload'],
  [0x54, 'sload'],
  [0xff, 'selfdestruct'],
  [0x30, 'selfdestruct_self'],
  [0x5a, 'burn'],
  [0x59, 'memory_oog'],
  [0x56, 'bad_jump'],
  [0xfe, 'invalid'],
  [0x0c, 'undefined_op'],
  [0x50, 'underflow'],
  [0x00, 'stop'],
];

/** Offset 0 must stay a non-JUMPDEST: the bad-jump action jumps there. */
export const PROBE_RUNTIME: Hex = asm(`
  PUSH0                                  ; p = 0
  loop: JUMPDEST                         ; p
    CALLDATASIZE DUP2 LT ISZERO @done JUMPI
    DUP1 CALLDATALOAD PUSH1 0xf8 SHR     ; p op
    ${DISPATCH.map(([op, label]) => `DUP1 PUSH1 ${op} EQ @${label} JUMPI`).join('\n    ')}
    INVALID                              ; an unknown action is a bug in the program
  done: JUMPDEST STOP
  ${handlers()}
`);

export const PROBE_INITCODE: Hex = deployCode(PROBE_RUNTIME);

/** Gas operand meaning "all the callee can get" (capped by EIP-150's 63/64). */
export const ALL_GAS = 0xffff_ffff;
/** Call target meaning "the contract this frame created last". */
export const LAST_CREATED: Address = zeroAddress;

const word = (n: bigint | number): Hex => numberToHex(BigInt(n), { size: 32 });
const len2 = (data: Hex): Hex => numberToHex(size(data), { size: 2 });

export interface CallOptions {
  value?: bigint;
  gas?: number;
}

type CallKind = 'call' | 'callcode' | 'delegatecall' | 'staticcall';
const CALL_BYTE: Record<CallKind, Hex> = {
  call: '0xf1',
  callcode: '0xf2',
  delegatecall: '0xf4',
  staticcall: '0xfa',
};

function callAction(kind: CallKind, target: Address, data: Hex, opts: CallOptions): Hex {
  const gas = numberToHex(opts.gas ?? ALL_GAS, { size: 4 });
  return concatHex([CALL_BYTE[kind], target, word(opts.value ?? 0n), gas, len2(data), data]);
}

/** Builders of probe actions; a program is their concatenation (`program(...)`). */
export const act = {
  stop: (): Hex => '0x00',
  sstore: (slot: bigint | number, value: bigint | number): Hex =>
    concatHex(['0x55', word(slot), word(value)]),
  tstore: (slot: bigint | number, value: bigint | number): Hex =>
    concatHex(['0x5d', word(slot), word(value)]),
  logSload: (slot: bigint | number): Hex => concatHex(['0x54', word(slot)]),
  logTload: (slot: bigint | number): Hex => concatHex(['0x5c', word(slot)]),
  log: (topics: readonly Hex[]): Hex => {
    if (topics.length > 4) throw new RangeError('LOG takes at most 4 topics');
    return concatHex([numberToHex(0xa0 + topics.length), ...topics.map((t) => word(BigInt(t)))]);
  },
  ret: (data: Hex = '0x'): Hex => concatHex(['0xf3', len2(data), data]),
  revert: (data: Hex = '0x'): Hex => concatHex(['0xfd', len2(data), data]),
  create: (initcode: Hex, value = 0n): Hex => concatHex(['0xf0', word(value), len2(initcode), initcode]),
  create2: (initcode: Hex, salt: bigint, value = 0n): Hex =>
    concatHex(['0xf5', word(value), word(salt), len2(initcode), initcode]),
  call: (target: Address, data: Hex = '0x', opts: CallOptions = {}): Hex =>
    callAction('call', target, data, opts),
  callcode: (target: Address, data: Hex = '0x', opts: CallOptions = {}): Hex =>
    callAction('callcode', target, data, opts),
  delegatecall: (target: Address, data: Hex = '0x', opts: Omit<CallOptions, 'value'> = {}): Hex =>
    callAction('delegatecall', target, data, opts),
  staticcall: (target: Address, data: Hex = '0x', opts: Omit<CallOptions, 'value'> = {}): Hex =>
    callAction('staticcall', target, data, opts),
  logReturnData: (): Hex => '0x3e',
  bubbleFailure: (): Hex => '0x15',
  selfdestruct: (beneficiary: Address): Hex => concatHex(['0xff', beneficiary]),
  selfdestructToSelf: (): Hex => '0x30',
  burnGas: (): Hex => '0x5a',
  memoryOutOfGas: (): Hex => '0x59',
  badJump: (): Hex => '0x56',
  invalid: (): Hex => '0xfe',
  undefinedOpcode: (): Hex => '0x0c',
  stackUnderflow: (): Hex => '0x50',
};

export function program(...actions: readonly Hex[]): Hex {
  return concatHex([...actions]);
}

/** Initcode that REVERTs with 4 bytes of data (0xdeadbeef) and deploys nothing. */
export const REVERTING_INITCODE: Hex = asm(`
  PUSH4 0xdeadbeef PUSH0 MSTORE
  PUSH1 4 PUSH1 28 REVERT
`);

/** Initcode that loops until its gas is gone. */
export const GAS_BURNING_INITCODE: Hex = asm(`
  spin: JUMPDEST @spin JUMP
`);

/** Initcode that SELFDESTRUCTs to its creator: the contract never exists after the transaction. */
export const SELFDESTRUCTING_INITCODE: Hex = asm(`
  CALLER SELFDESTRUCT
`);
