import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { toBlobs } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { contractsOf, isAddress } from './contracts.ts';

const A = '0x5FbDB2315678afecb367f032d93F642f64180aa3';
const a = A.toLowerCase();
const B = '0xe7f1725e7734ce288f8367e1bb143e90bb3f0512';

describe('contractsOf', () => {
  it('reads the account of state reads', () => {
    for (const m of ['eth_getBalance', 'eth_getCode', 'eth_getTransactionCount'])
      assert.deepEqual(contractsOf(m, [A, 'latest']), [a], m);
    assert.deepEqual(contractsOf('eth_getStorageAt', [A, '0x0', 'latest']), [a]);
  });

  it("reads a call's `to`, and finds none in a call without one", () => {
    for (const m of [
      'eth_call',
      'eth_estimateGas',
      'eth_createAccessList',
      'trace_call',
      'debug_traceCall',
    ]) {
      assert.deepEqual(contractsOf(m, [{ from: B, to: A, data: '0x' }, 'latest']), [a], m);
      assert.deepEqual(contractsOf(m, [{ from: B, data: '0x60' }]), [], m);
      assert.deepEqual(contractsOf(m, [{ to: null }]), [], m);
    }
  });

  it("reads every call of every eth_simulateV1 block, its overrides' accounts, and [] for code", () => {
    const blocks = (...b: unknown[]) => [{ blockStateCalls: b }, 'latest'];
    assert.deepEqual(contractsOf('eth_simulateV1', blocks({ calls: [{ to: A }] }, { calls: [{ to: B }] })), [
      a,
      B,
    ]);
    assert.deepEqual(contractsOf('eth_simulateV1', blocks({ calls: [{ to: A }, { data: '0x' }] })), []);
    assert.deepEqual(
      contractsOf(
        'eth_simulateV1',
        blocks({ stateOverrides: { [B]: { balance: '0x1' } }, calls: [{ to: A }] }),
      ),
      [a, B],
    );
    assert.deepEqual(
      contractsOf(
        'eth_simulateV1',
        blocks({ calls: [{ to: A }] }, { stateOverrides: { [B]: { code: '0x00' } } }),
      ),
      [],
    );
    assert.deepEqual(
      contractsOf(
        'eth_simulateV1',
        blocks({
          stateOverrides: { '0x0000000000000000000000000000000000000001': { movePrecompileToAddress: B } },
          calls: [{ to: A }],
        }),
      ),
      [],
    );
    assert.deepEqual(contractsOf('eth_simulateV1', [{}]), []);
  });

  it('reads every call of trace_callMany, and [] if any has no address', () => {
    const call = (to: unknown) => [{ to }, ['trace']];
    assert.deepEqual(contractsOf('trace_callMany', [[call(A), call(B)], 'latest']), [a, B]);
    assert.deepEqual(contractsOf('trace_callMany', [[call(A), [{ data: '0x' }, ['trace']]]]), []);
    assert.deepEqual(contractsOf('trace_callMany', [[]]), []);
    assert.deepEqual(contractsOf('trace_callMany', ['nonsense']), []);
  });

  it('reads every call of eth_callMany and debug_traceCallMany, and their state overrides', () => {
    const bundles = [{ transactions: [{ to: A }] }, { transactions: [{ to: B }], blockOverride: {} }];
    assert.deepEqual(contractsOf('eth_callMany', [bundles, {}]), [a, B]);
    assert.deepEqual(contractsOf('debug_traceCallMany', [bundles, {}]), [a, B]);
    assert.deepEqual(contractsOf('eth_callMany', [bundles, {}, { [B]: { balance: '0x1' } }]), [a, B, B]);
    assert.deepEqual(contractsOf('eth_callMany', [bundles, {}, { [B]: { code: '0x00' } }]), []);
    assert.deepEqual(
      contractsOf('debug_traceCallMany', [bundles, {}, { stateOverrides: { [B]: { code: '0x' } } }]),
      [],
    );
    assert.deepEqual(contractsOf('eth_callMany', [[{ transactions: [{ to: A }, { data: '0x' }] }]]), []);
    assert.deepEqual(contractsOf('eth_callMany', [[{ transactions: [] }]]), []);
    assert.deepEqual(contractsOf('debug_traceCallMany', ['nonsense']), []);
  });

  it("reads every signed transaction's recipient of eth_callBundle, whatever its type or chain", async () => {
    const signer = privateKeyToAccount(`0x${'11'.repeat(32)}`);
    const fees = { maxFeePerGas: 10n, maxPriorityFeePerGas: 1n, gas: 21_000n, nonce: 0 };
    const txs = [
      await signer.signTransaction({ to: A, gasPrice: 1n, gas: 21_000n, nonce: 0, chainId: 31337 }),
      await signer.signTransaction({
        to: A,
        gasPrice: 1n,
        gas: 21_000n,
        nonce: 0,
        chainId: 1,
        accessList: [],
      }),
      await signer.signTransaction({ to: B as `0x${string}`, ...fees, chainId: 5 }),
      await signer.signTransaction({
        to: B as `0x${string}`,
        ...fees,
        chainId: 1,
        blobs: toBlobs({ data: '0x1234' }),
        maxFeePerBlobGas: 1n,
        kzg: { blobToKzgCommitment: () => new Uint8Array(48), computeBlobKzgProof: () => new Uint8Array(48) },
      }),
    ];
    const bundle = (list: unknown[]) => [{ txs: list, blockNumber: '0x1', stateBlockNumber: 'latest' }];
    assert.deepEqual(contractsOf('eth_callBundle', bundle(txs)), [a, a, B.toLowerCase(), B.toLowerCase()]);
    const creation = await signer.signTransaction({ data: '0x60', ...fees, chainId: 1 });
    assert.deepEqual(contractsOf('eth_callBundle', bundle([txs[0], creation])), []);
    assert.deepEqual(contractsOf('eth_callBundle', bundle(['0x1234'])), []);
    assert.deepEqual(contractsOf('eth_callBundle', bundle([])), []);
    assert.deepEqual(contractsOf('eth_callBundle', ['nonsense']), []);
  });

  it("reads a log filter's address or addresses; none means every contract", () => {
    assert.deepEqual(contractsOf('eth_getLogs', [{ address: A, fromBlock: '0x0' }]), [a]);
    assert.deepEqual(contractsOf('eth_getLogs', [{ address: [A, B] }]), [a, B]);
    assert.deepEqual(contractsOf('eth_getLogs', [{ fromBlock: '0x0' }]), []);
    assert.deepEqual(contractsOf('eth_getLogs', [{ address: [] }]), []);
    assert.deepEqual(contractsOf('eth_getLogs', [{ address: null }]), []);
    assert.deepEqual(contractsOf('eth_getLogs', []), []);
  });

  it("adds the accounts a call's state overrides touch, wherever the method takes them", () => {
    const overrides = { [B]: { balance: '0x1', nonce: '0x2', stateDiff: {} }, [A]: { state: {} } };
    const to = { to: A };
    assert.deepEqual(contractsOf('eth_call', [to, 'latest', overrides]), [a, B, a]);
    assert.deepEqual(contractsOf('eth_estimateGas', [to, 'latest', overrides]), [a, B, a]);
    assert.deepEqual(contractsOf('eth_createAccessList', [to, 'latest', overrides]), [a, B, a]);
    assert.deepEqual(contractsOf('trace_call', [to, ['trace'], 'latest', overrides]), [a, B, a]);
    assert.deepEqual(
      contractsOf('trace_callMany', [[[to, ['trace']]], 'latest', { stateOverrides: overrides }]),
      [a, B, a],
    );
    assert.deepEqual(contractsOf('debug_traceCall', [to, 'latest', { stateOverrides: overrides }]), [
      a,
      B,
      a,
    ]);
    // Absent, null, or not an object (the method refuses that before running anything): none.
    for (const none of [undefined, null, 'x', [B]])
      assert.deepEqual(contractsOf('eth_call', [to, 'latest', none]), [a], String(none));
  });

  it('finds none a list could allow in overrides that set code or move a precompile', () => {
    for (const overrides of [
      { [A]: { code: '0x00' } },
      { [B]: { code: '0x' } },
      { [A]: { movePrecompileToAddress: B } },
      { 'not an address': {} },
    ]) {
      assert.deepEqual(contractsOf('eth_call', [{ to: A }, 'latest', overrides]), []);
      assert.deepEqual(
        contractsOf('debug_traceCall', [{ to: A }, 'latest', { stateOverrides: overrides }]),
        [],
      );
    }
    assert.deepEqual(contractsOf('eth_call', [{ to: A }, 'latest', { [A]: { code: null } }]), [a, a]);
  });

  it('finds no address in malformed params', () => {
    assert.deepEqual(contractsOf('eth_getBalance', ['0x1234']), []);
    assert.deepEqual(contractsOf('eth_getBalance', {}), []);
    assert.deepEqual(contractsOf('eth_call', [{ to: 42 }]), []);
    assert.deepEqual(contractsOf('eth_getLogs', [{ address: [A, 'x'] }]), []);
  });

  it('does not apply to other methods', () => {
    for (const m of [
      'eth_chainId',
      'eth_getBlockByNumber',
      'eth_sendRawTransaction',
      'debug_traceTransaction',
    ])
      assert.equal(contractsOf(m, [A]), null, m);
  });

  it('knows an address when it sees one', () => {
    assert.ok(isAddress(A));
    assert.ok(!isAddress(`${A}00`));
    assert.ok(!isAddress('0xZZbDB2315678afecb367f032d93F642f64180aa3'));
  });
});
