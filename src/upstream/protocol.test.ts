import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { readAnswer, requestBody, retryAfterOfData } from './protocol.ts';
import { describeNetworkError, parseRetryAfter } from './transports.ts';

describe('upstream protocol', () => {
  it('sends one call as a plain request and more as a batch', () => {
    assert.deepEqual(JSON.parse(requestBody([{ method: 'eth_chainId', params: [] }], [7])), {
      jsonrpc: '2.0',
      id: 7,
      method: 'eth_chainId',
      params: [],
    });
    const batch = JSON.parse(
      requestBody(
        [
          { method: 'a', params: [1] },
          { method: 'b', params: [] },
        ],
        [1, 2],
      ),
    ) as unknown[];
    assert.equal(batch.length, 2);
  });

  it('reads a batch answer in the order of the ids asked, whatever order it came in', () => {
    const answer = [
      { jsonrpc: '2.0', id: 2, error: { code: -32000, message: 'no', data: '0x01' } },
      { jsonrpc: '2.0', id: 1, result: null },
    ];
    assert.deepEqual(readAnswer(answer, [1, 2]), {
      kind: 'answers',
      outcomes: [
        { ok: true, result: null },
        { ok: false, error: { code: -32000, message: 'no', data: '0x01' } },
      ],
    });
  });

  it('refuses a batch answer with ids missing, repeated or not asked', () => {
    const ok = (id: unknown) => ({ jsonrpc: '2.0', id, result: '0x' });
    const reason = (value: unknown, ids: number[]) => {
      const reading = readAnswer(value, ids);
      return reading.kind === 'malformed' ? reading.reason : reading.kind;
    };
    assert.match(reason([ok(1)], [1, 2]), /lacks 1 of 2 ids \(first 2\)/);
    assert.match(reason([ok(1), ok(1)], [1, 2]), /id 1 answered twice/);
    assert.match(reason([ok(1), ok(3)], [1, 2]), /id 3 was not asked/);
    assert.match(reason([ok(1), ok(2), ok(3)], [1, 2]), /id 3 was not asked/);
    assert.match(reason([ok(1), { id: 2 }], [1, 2]), /neither result nor error/);
    assert.match(reason(ok(1), [1, 2]), /other than an array/);
    assert.match(reason([ok(1)], [1]), /not a JSON-RPC response object/);
    assert.match(reason(ok(2), [1]), /answer id 2, expected 1/);
    assert.match(reason({ id: 1, error: { message: 'no code' } }, [1]), /not a JSON-RPC error object/);
  });

  it('takes an error with id null as the answer to a single call, or the refusal of a batch', () => {
    const refusal = { jsonrpc: '2.0', id: null, error: { code: -32600, message: 'batch too large' } };
    assert.deepEqual(readAnswer(refusal, [5]), {
      kind: 'answers',
      outcomes: [{ ok: false, error: { code: -32600, message: 'batch too large' } }],
    });
    assert.deepEqual(readAnswer(refusal, [5, 6]), {
      kind: 'rejected',
      error: { code: -32600, message: 'batch too large' },
    });
  });

  it('reads how long a rate limiter asks to wait', () => {
    assert.equal(retryAfterOfData({ rate: { backoff_seconds: 30 } }), 30);
    assert.equal(retryAfterOfData({ retryAfter: '2' }), 2);
    assert.equal(retryAfterOfData({ retry_after: 1.5 }), 1.5);
    assert.equal(retryAfterOfData({ see: 'x' }), undefined);
    assert.equal(retryAfterOfData('0x'), undefined);
    assert.equal(parseRetryAfter('7'), 7);
    assert.equal(parseRetryAfter('Wed, 21 Oct 2015 07:28:10 GMT', Date.UTC(2015, 9, 21, 7, 28, 0)), 10);
    assert.equal(parseRetryAfter('soon'), undefined);
  });

  it('names a network error by its cause, without the address the URL already names', () => {
    const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:8545'), { code: 'ECONNREFUSED' });
    assert.equal(
      describeNetworkError(new TypeError('fetch failed', { cause: refused })),
      'connect ECONNREFUSED',
    );
    assert.equal(
      describeNetworkError(
        new TypeError('fetch failed', { cause: new Error('connect ECONNREFUSED ::1:8545') }),
      ),
      'connect ECONNREFUSED',
    );
    assert.equal(
      describeNetworkError(new Error('getaddrinfo ENOTFOUND node.invalid')),
      'getaddrinfo ENOTFOUND node.invalid',
    );
  });
});
