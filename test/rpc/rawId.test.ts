// The id scanner (src/rpc/rawId.ts) against JSON.parse: on any request JSON.stringify can write, and
// on the same text re-spaced, it finds the text of the id JSON.parse reads.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { rawIds } from '../../src/rpc/rawId.ts';

const id = fc.oneof(fc.integer(), fc.double({ noNaN: true, noDefaultInfinity: true }), fc.string());
const request = fc.record(
  { id, params: fc.jsonValue(), method: fc.string(), extra: fc.dictionary(fc.string(), fc.jsonValue()) },
  { requiredKeys: ['method'] },
);
/** JSON.stringify's text with whitespace after every structural character outside strings. */
const spaced = (text: string) => {
  let out = '';
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i] as string;
    out += c;
    if (inString) {
      if (c === '\\') out += text[++i];
      else if (c === '"') inString = false;
    } else if (c === '"') inString = true;
    else if ('{}[],:'.includes(c)) out += ' \n\t';
  }
  return ` ${out}\r\n`;
};
const idText = (r: { id?: unknown }) => ('id' in r ? JSON.stringify(r.id) : undefined);

describe('rawIds', () => {
  it('finds the id of a single request as JSON.parse reads it', () => {
    fc.assert(
      fc.property(request, fc.boolean(), (r, respace) => {
        const text = respace ? spaced(JSON.stringify(r)) : JSON.stringify(r);
        const raw = rawIds(text);
        assert.equal(typeof raw === 'string' ? JSON.stringify(JSON.parse(raw)) : raw, idText(r));
      }),
      { seed: 10, numRuns: 300 },
    );
  });

  it('finds the id of each request of a batch, in place', () => {
    fc.assert(
      fc.property(fc.array(fc.oneof(request, fc.jsonValue())), fc.boolean(), (batch, respace) => {
        const text = respace ? spaced(JSON.stringify(batch)) : JSON.stringify(batch);
        const parsed = JSON.parse(text) as unknown[];
        const raws = rawIds(text);
        assert.ok(Array.isArray(raws));
        assert.equal(raws.length, parsed.length);
        parsed.forEach((element, i) => {
          const raw = raws[i];
          const isObject = typeof element === 'object' && element !== null && !Array.isArray(element);
          const expected = isObject ? idText(element as { id?: unknown }) : undefined;
          assert.equal(raw === undefined ? undefined : JSON.stringify(JSON.parse(raw)), expected);
        });
      }),
      { seed: 11, numRuns: 300 },
    );
  });

  it('keeps the source text of numbers JSON.parse cannot hold', () => {
    assert.equal(rawIds('{"id": 1e400 ,"method":"x"}'), '1e400');
    assert.deepEqual(rawIds('[{"id":123456789012345678901234567890}, 1, {"i\\u0064":-0.0}]'), [
      '123456789012345678901234567890',
      undefined,
      '-0.0',
    ]);
  });
});
