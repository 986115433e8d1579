import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { compareResponse } from './compare.ts';
import { parseIoFile } from './ioFile.ts';

// The runner is only as strict as these two pieces: a comparison that lets a wrong answer through
// turns the whole conformance run green.

const ok = (result: unknown, id: unknown = 1) => ({ jsonrpc: '2.0', id, result });
const err = (code: number, message: string, data?: unknown) => ({
  jsonrpc: '2.0',
  id: 1,
  error: data === undefined ? { code, message } : { code, message, data },
});

describe('compareResponse', () => {
  it('ignores key order and compares numbers by value', () => {
    assert.deepEqual(
      compareResponse({ result: { b: 1, a: 2 }, id: 1 }, { id: 1.0, result: { a: 2, b: 1 } }, false),
      [],
    );
  });

  it('reports changed, missing and extra fields, and array lengths, by path', () => {
    const got = ok({ a: '0x1', b: [1, 2], extra: true });
    const want = ok({ a: '0x2', b: [1], c: null });
    assert.deepEqual(compareResponse(got, want, false), [
      '$.result.c: absent, want null',
      '$.result.a: got "0x1", want "0x2"',
      '$.result.b: got 2 elements, want 1',
      '$.result.extra: unexpected, got true',
    ]);
  });

  it('tells null from an empty list and a result from an error', () => {
    assert.equal(compareResponse(ok(null), ok([]), false).length, 1);
    assert.equal(compareResponse(err(-32000, 'x'), ok(null), false).length, 2);
  });

  it('leaves out error messages present on both sides, but not codes or data', () => {
    assert.deepEqual(compareResponse(err(-32602, 'ours'), err(-32602, 'geth says'), false), []);
    assert.deepEqual(compareResponse(err(-32000, 'm'), err(-32602, 'm'), false), [
      '$.error.code: got -32000, want -32602',
    ]);
    assert.equal(compareResponse(err(3, 'a', '0x01'), err(3, 'b', '0x02'), false).length, 1);
    assert.deepEqual(compareResponse({ ...ok(null), error: { code: 1 } }, err(1, 'x'), false).length, 2);
  });

  it('leaves out messages of nested errors too (eth_simulateV1 call results)', () => {
    const got = ok([{ calls: [{ status: '0x0', error: { code: 3, message: 'execution reverted: x' } }] }]);
    const want = ok([{ calls: [{ status: '0x0', error: { code: 3, message: 'execution reverted' } }] }]);
    assert.deepEqual(compareResponse(got, want, false), []);
  });

  it('checks only the shape of a speconly result', () => {
    const want = ok({ oldestBlock: '0x1b', reward: [['0x1', '0x1']], gasUsedRatio: [0.5] });
    assert.deepEqual(
      compareResponse(
        ok({ oldestBlock: '0x2', reward: [['0x5', '0x6'], ['0x7']], gasUsedRatio: [] }),
        want,
        true,
      ),
      [],
    );
    assert.deepEqual(compareResponse(ok({ oldestBlock: 27, reward: [], gasUsedRatio: [] }), want, true), [
      '$.result.oldestBlock: got a number (27), want a string like "0x1b"',
    ]);
    assert.deepEqual(compareResponse(ok({ oldestBlock: '0x1', reward: [] }), want, true), [
      '$.result.gasUsedRatio: absent',
    ]);
    assert.equal(compareResponse(ok('0x1', 2), ok('0x5208'), true).length, 1, 'the id is still exact');
    assert.match(compareResponse(err(-32000, 'x'), ok('0x5208'), true).join(), /want a result/);
  });

  it('compares a speconly error exactly, message aside', () => {
    assert.deepEqual(
      compareResponse(err(3, 'reverted', '0xaa'), err(3, 'execution reverted', '0xaa'), true),
      [],
    );
    assert.equal(compareResponse(err(-32000, 'x'), err(3, 'x', '0xaa'), true).length, 2);
  });
});

describe('parseIoFile', () => {
  it('reads the header, speconly, and several exchanges, keeping requests as written', () => {
    const text = [
      '// gets things',
      '// speconly: client response is only checked for schema validity.',
      '>> {"jsonrpc":"2.0","id":1,"method":"m",  "params":[]}',
      '<< {"jsonrpc":"2.0","id":1,"result":"0x1"}',
      '// a later comment is ignored',
      '>> {"jsonrpc":"2.0","id":2,"method":"n"}',
      '<< {"jsonrpc":"2.0","id":2,"result":null}',
      '',
    ].join('\n');
    const c = parseIoFile('m', 'case.io', '/x/m/case.io', text);
    assert.equal(c.name, 'm/case');
    assert.equal(c.speconly, true);
    assert.equal(c.comment, 'gets things\nspeconly: client response is only checked for schema validity.\n');
    assert.deepEqual(c.exchanges, [
      {
        request: '{"jsonrpc":"2.0","id":1,"method":"m",  "params":[]}',
        response: '{"jsonrpc":"2.0","id":1,"result":"0x1"}',
      },
      {
        request: '{"jsonrpc":"2.0","id":2,"method":"n"}',
        response: '{"jsonrpc":"2.0","id":2,"result":null}',
      },
    ]);
    assert.equal(c.invalid, undefined);
  });

  it('marks malformed files invalid instead of throwing', () => {
    const parse = (text: string) => parseIoFile('m', 'c.io', 'p', text).invalid;
    assert.match(parse('<< {}') ?? '', /response before any request/);
    assert.match(parse('>> {}\n>> {}\n<< {}') ?? '', /before the previous one's response/);
    assert.match(parse('>> {}') ?? '', /no expected response/);
    assert.match(parse('>> {oops\n<< {}') ?? '', /invalid JSON/);
    assert.match(parse('hello') ?? '', /not a comment/);
    assert.match(parse('// only a comment') ?? '', /no request/);
  });
});
