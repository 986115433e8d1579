import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { UserError } from '../../core/errors.ts';
import { checkEntry, checkSettings, limitsOf, originAllowed, refusingList } from './settings.ts';

const A = '0x5fbdb2315678afecb367f032d93f642f64180aa3';
const B = '0xe7f1725e7734ce288f8367e1bb143e90bb3f0512';
const call = (method: string, params: unknown = []) => ({ method, params });

describe('origin allow-list', () => {
  it('matches exactly, with the scheme when the entry has one', () => {
    assert.ok(originAllowed(['https://app.example.com'], 'https://app.example.com'));
    assert.ok(!originAllowed(['https://app.example.com'], 'http://app.example.com'));
    assert.ok(originAllowed(['app.example.com'], 'http://app.example.com'));
    assert.ok(originAllowed(['app.example.com'], 'https://APP.example.com'));
    assert.ok(!originAllowed(['app.example.com'], 'https://evil.app.example.com'));
    assert.ok(!originAllowed(['app.example.com'], 'https://app.example.com.evil.org'));
  });

  it('takes *.example.com for every subdomain, not the domain itself', () => {
    assert.ok(originAllowed(['*.example.com'], 'https://a.example.com'));
    assert.ok(originAllowed(['https://*.example.com'], 'https://a.b.example.com'));
    assert.ok(!originAllowed(['*.example.com'], 'https://example.com'));
    assert.ok(!originAllowed(['*.example.com'], 'https://badexample.com'));
    assert.ok(!originAllowed(['https://*.example.com'], 'http://a.example.com'));
  });

  it('matches any port unless the entry names one, a scheme alone, and nothing without an Origin', () => {
    assert.ok(originAllowed(['localhost'], 'http://localhost:3000'));
    assert.ok(originAllowed(['localhost:3000'], 'http://localhost:3000'));
    assert.ok(!originAllowed(['localhost:3000'], 'http://localhost:3001'));
    assert.ok(originAllowed(['https://'], 'https://anything.org'));
    assert.ok(!originAllowed(['https://'], 'http://anything.org'));
    assert.ok(!originAllowed(['https://'], undefined));
    assert.ok(!originAllowed(['https://'], 'null'));
  });
});

describe('origin allow-list against malformed origins', () => {
  // Each would pass a suffix test on the text after `://`; none is an origin (scheme://host[:port]).
  const attacks = [
    'https://evil.com#.example.com',
    'https://evil.com?x=.example.com',
    'https://evil.com:443.example.com',
    'https://evil.com/.example.com',
    'https://evil.com\\.example.com',
    'https://user@a.example.com',
    'https://evil.com@a.example.com',
    'https://a.example.com/',
    'https://a.example.com:99999',
    'https://a.example.com:',
    'https://a.example.com%2f',
    'https://evil%2ecom.example.com',
    'https://a.example.com extra',
    'https:/a.example.com',
    'a.example.com',
    '',
  ];

  it('refuses every origin that is not scheme://host[:port], whatever the entry', () => {
    for (const entries of [['*.example.com'], ['https://*.example.com'], ['https://']]) {
      for (const origin of attacks) assert.ok(!originAllowed(entries, origin), `${entries} let ${origin} in`);
    }
  });

  it('still takes well-formed origins: with a port, without, any case; never null', () => {
    assert.ok(originAllowed(['*.example.com'], 'https://a.example.com'));
    assert.ok(originAllowed(['*.example.com'], 'https://a.example.com:8443'));
    assert.ok(originAllowed(['*.example.com'], 'HTTPS://A.Example.COM'));
    assert.ok(originAllowed(['https://*.example.com:8443'], 'https://a.example.com:8443'));
    assert.ok(!originAllowed(['https://*.example.com:8443'], 'https://a.example.com'));
    // A default port is the same origin written out or not.
    assert.ok(originAllowed(['https://app.example.com:443'], 'https://app.example.com'));
    assert.ok(originAllowed(['https://app.example.com'], 'https://app.example.com:443'));
    assert.ok(originAllowed(['http://localhost:3000'], 'http://localhost:3000'));
    assert.ok(originAllowed(['127.0.0.1'], 'http://127.0.0.1:8080'));
    assert.ok(originAllowed(['http://'], 'http://[::1]:5173'));
    assert.ok(originAllowed(['chrome-extension://'], 'chrome-extension://abcdefghijklmnop'));
    assert.ok(!originAllowed(['*.example.com', 'https://'], 'null'));
  });

  it('matches a wildcard on whole labels only', () => {
    assert.ok(!originAllowed(['*.example.com'], 'https://evil-example.com'));
    assert.ok(!originAllowed(['*.example.com'], 'https://example.com.evil.org'));
    assert.ok(!originAllowed(['*.example.com'], 'https://.example.com'));
    assert.ok(!originAllowed(['*.example.com'], 'https://..example.com'));
    assert.ok(!originAllowed(['*.example.com'], 'https://a..example.com'));
  });
});

describe('allow-lists together', () => {
  const allow = {
    contracts: [A],
    origins: ['*.example.com'],
    userAgents: ['Android', 'viem'],
    methods: ['eth_call', 'eth_getBalance', 'eth_chainId'],
  };
  const ok = { origin: 'https://dapp.example.com', userAgent: 'Mozilla/5.0 (Linux; Android 14)' };

  it('pass when every kind with entries passes (OR within a kind)', () => {
    assert.equal(refusingList(allow, ok, [call('eth_call', [{ to: A }]), call('eth_chainId')]), null);
    assert.equal(refusingList(allow, { ...ok, userAgent: 'viem/2.0' }, [call('eth_getBalance', [A])]), null);
    assert.equal(refusingList(undefined, {}, [call('anything')]), null);
    assert.equal(refusingList({}, {}, [call('anything')]), null);
  });

  it('refuse when any kind fails (AND across kinds), naming it', () => {
    assert.equal(
      refusingList(allow, { ...ok, origin: 'https://evil.org' }, [call('eth_chainId')]),
      'origins',
    );
    assert.equal(refusingList(allow, { origin: ok.origin }, [call('eth_chainId')]), 'userAgents');
    assert.equal(refusingList(allow, { ...ok, userAgent: 'android' }, [call('eth_chainId')]), 'userAgents');
    assert.equal(refusingList(allow, ok, [call('eth_chainId'), call('eth_blockNumber')]), 'methods');
    assert.equal(refusingList(allow, ok, [call('eth_getBalance', [B, 'latest'])]), 'contracts');
    assert.equal(refusingList(allow, ok, [call('eth_call', [{ data: '0x' }])]), 'contracts');
  });

  it('applies the contract list to the calls that name contracts only', () => {
    const contractsOnly = { contracts: [A] };
    assert.equal(refusingList(contractsOnly, {}, [call('eth_blockNumber')]), null);
    assert.equal(refusingList(contractsOnly, {}, [call('eth_getLogs', [{ address: [A] }])]), null);
    assert.equal(refusingList(contractsOnly, {}, [call('eth_getLogs', [{ address: [A, B] }])]), 'contracts');
    assert.equal(refusingList(contractsOnly, {}, [call('eth_getLogs', [{ fromBlock: '0x0' }])]), 'contracts');
    const many = (to: string) => [{ to }, ['trace']];
    assert.equal(refusingList(contractsOnly, {}, [call('trace_callMany', [[many(A), many(A)]])]), null);
    assert.equal(
      refusingList(contractsOnly, {}, [call('trace_callMany', [[many(A), many(B)]])]),
      'contracts',
    );
  });
});

describe('settings as given to ethtrace keys', () => {
  it('checks and normalises entries', () => {
    assert.equal(checkEntry('contracts', A.toUpperCase().replace('0X', '0x')), A);
    assert.equal(checkEntry('origins', 'HTTPS://*.Example.com'), 'https://*.example.com');
    assert.equal(checkEntry('origins', 'https://'), 'https://');
    assert.equal(checkEntry('origins', 'localhost:3000'), 'localhost:3000');
    assert.throws(() => checkEntry('contracts', '0x1234'), UserError);
    assert.throws(() => checkEntry('origins', 'https://example.com/path'), UserError);
    assert.throws(() => checkEntry('origins', 'a.*.example.com'), UserError);
    assert.throws(() => checkEntry('methods', 'eth call'), UserError);
    assert.throws(() => checkEntry('userAgents', ''), UserError);
  });

  it('holds at most 30 entries a kind, and positive whole numbers', () => {
    const methods = Array.from({ length: 31 }, (_, i) => `m${i}`);
    assert.throws(() => checkSettings({ allow: { methods } }), /at most 30 methods/);
    assert.doesNotThrow(() => checkSettings({ allow: { methods: methods.slice(1) } }));
    assert.throws(() => checkSettings({ creditsPerSecond: 1.5 }), UserError);
    assert.throws(() => checkSettings({ burst: 10 }), /--burst applies to a key with --credits-per-second/);
  });

  it('default the burst to one second of the rate', () => {
    assert.deepEqual(limitsOf({ creditsPerSecond: 400 }), {
      creditsPerSecond: 400,
      burst: 400,
      creditsPerDay: null,
    });
    assert.deepEqual(limitsOf({ creditsPerSecond: 400, burst: 1000, creditsPerDay: 9 }), {
      creditsPerSecond: 400,
      burst: 1000,
      creditsPerDay: 9,
    });
    assert.deepEqual(limitsOf(undefined), { creditsPerSecond: null, burst: 0, creditsPerDay: null });
  });
});
