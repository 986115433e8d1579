import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { asm, deployCode } from './asm.ts';
import { LOG_STORE_INITCODE, LOG_STORE_RUNTIME } from './contracts.ts';
import { PROBE_INITCODE, PROBE_RUNTIME } from './probe.ts';

describe('asm', () => {
  it('reproduces LogStore, hand-assembled in contracts.ts, from its mnemonics', () => {
    const runtime = asm(`
      PUSH0 CALLDATALOAD PUSH1 0x20 CALLDATALOAD
      DUP1 PUSH0 MSTORE
      DUP1 ISZERO PUSH1 @revert JUMPI
      DUP2 SSTORE
      PUSH1 0x40 CALLDATALOAD
      DUP1 ISZERO PUSH1 @done JUMPI
      PUSH1 0x20 PUSH0 LOG0
      PUSH1 2 DUP2 LT PUSH1 @done JUMPI
      DUP2 PUSH1 0x20 PUSH0 LOG1
      PUSH1 3 DUP2 LT PUSH1 @done JUMPI
      CALLER DUP3 PUSH1 0x20 PUSH0 LOG2
      done: JUMPDEST PUSH1 0x20 PUSH0 RETURN
      revert: JUMPDEST DUP2 PUSH0 MSTORE PUSH1 0x20 PUSH0 REVERT
    `);
    assert.equal(runtime, LOG_STORE_RUNTIME);
    const initcode = asm(`
      CALLER PUSH0 SSTORE
      PUSH1 @end-@runtime DUP1 PUSH1 @runtime PUSH0 CODECOPY
      PUSH0 RETURN
      runtime: .data ${runtime}
      end:
    `);
    assert.equal(initcode, LOG_STORE_INITCODE);
  });

  it('picks the shortest PUSH, and PUSH2 for a bare label', () => {
    assert.equal(asm('PUSH 0 PUSH 1 PUSH 0x100 PUSH 0xffffff'), '0x5f600161010062ffffff');
    assert.equal(asm('PUSH32 1').length, 2 + 2 * 33);
    assert.equal(asm('a: JUMPDEST @a JUMP'), '0x5b61000056');
    assert.equal(asm('@b b: JUMPDEST ; comment @nothing'), '0x6100035b');
    assert.equal(asm('a: b: @b-@a STOP'), '0x61000000');
  });

  it('is case-insensitive for mnemonics and keeps .data verbatim', () => {
    assert.equal(asm('push1 0xAA .data 0x0c5b caller'), '0x60aa0c5b33');
  });

  it('refuses what would assemble into a broken contract', () => {
    assert.throws(() => asm('FOO'), /unknown mnemonic FOO/);
    assert.throws(() => asm('@nowhere JUMP'), /undefined label nowhere/);
    assert.throws(() => asm('a: STOP @a JUMP'), /jump to @a, not a JUMPDEST/);
    assert.throws(() => asm('a: JUMPDEST a: JUMPDEST'), /defined twice/);
    assert.throws(() => asm('PUSH1 0x100'), /does not fit in 1 bytes/);
    assert.throws(() => asm('PUSH1'), /needs an operand/);
    assert.throws(() => asm('PUSH33 1'), /no opcode PUSH33/);
    assert.throws(() => asm('.data 0xabc'), /needs 0x-hex/);
    assert.throws(() => asm('a: STOP b: @a-@b'), /is negative/);
  });

  it('deployCode puts a copier that returns the runtime in front of it', () => {
    assert.equal(deployCode('0x00'), '0x60018061000a5f395ff300');
    assert.ok(PROBE_INITCODE.endsWith(PROBE_RUNTIME.slice(2)));
    // The probe's bad-jump action targets offset 0, which must stay a non-JUMPDEST.
    assert.notEqual(PROBE_RUNTIME.slice(2, 4), '5b');
  });
});
