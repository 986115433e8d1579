import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { rpc, rpcFailure } from '../support/rpcClient.ts';
import { conformanceServerForSuite } from '../support/server.ts';

/**
 * eth_simulateV1 on the conformance chain where its fixtures (test/conformance) do not reach: the
 * beacon root and withdrawals a block override sets, the chain id a call names, and bad input.
 */

const BEACON_ROOTS = '0x000f3df6d732807ef1319fb7b8bb8522d0beac02';
const C0 = '0xc000000000000000000000000000000000000000';
const C1 = '0xc100000000000000000000000000000000000000';
const ROOT = `0x${'ab'.repeat(32)}`;
const GWEI = 10n ** 9n;

interface SimBlock {
  timestamp: string;
  withdrawals: unknown[];
  withdrawalsRoot: string;
  calls: Array<{ status: string; returnData: string }>;
}

describe('eth_simulateV1 beyond the fixtures', () => {
  const server = conformanceServerForSuite();
  const simulate = (options: unknown) => rpc<SimBlock[]>(server().url, 'eth_simulateV1', [options, 'latest']);

  it('credits a withdrawal override and lists it; the beacon root override is what EIP-4788 stores', async () => {
    const withdrawal = { index: '0x7', validatorIndex: '0x3', address: C0, amount: '0x5' };
    const [first, second] = await simulate({
      blockStateCalls: [
        {
          blockOverrides: { time: '0x300', beaconRoot: ROOT, withdrawals: [withdrawal] },
          // EIP-4788's contract answers the root stored for a timestamp.
          calls: [{ from: C1, to: BEACON_ROOTS, input: `0x${(0x300).toString(16).padStart(64, '0')}` }],
        },
        { calls: [{ from: C0, to: C1, value: `0x${(5n * GWEI).toString(16)}` }] },
      ],
    });
    assert.ok(first && second);
    assert.deepEqual(first.withdrawals, [withdrawal]);
    assert.notEqual(
      first.withdrawalsRoot,
      '0x56e81f171bcc55a6ff8345e692c0f86e5b48e01b996cadc001622fb5e363b421',
    );
    assert.equal(first.calls[0]?.returnData, ROOT);
    // The withdrawal's 5 gwei are all C0 has: the next block's transfer of them succeeds.
    assert.equal(second.calls[0]?.status, '0x1');
    const short = await rpcFailure(server().url, 'eth_simulateV1', [
      { blockStateCalls: [{ calls: [{ from: C0, to: C1, value: `0x${(5n * GWEI).toString(16)}` }] }] },
      'latest',
    ]);
    assert.equal(short.code, -38014);
  });

  it('refuses a call naming another chain id, and bad input with -32602 naming the field', async () => {
    const url = server().url;
    const other = await rpcFailure(url, 'eth_simulateV1', [
      { blockStateCalls: [{ calls: [{ from: C0, to: C1, chainId: '0x1' }] }] },
      'latest',
    ]);
    assert.equal(other.code, -32000);
    assert.match(other.message, /chainId does not match/);
    const empty = await rpcFailure(url, 'eth_simulateV1', [{ blockStateCalls: [] }, 'latest']);
    assert.equal(empty.code, -32602);
    const bad = await rpcFailure(url, 'eth_simulateV1', [
      { blockStateCalls: [{ blockOverrides: { withdrawals: [{ index: 'x' }] } }] },
      'latest',
    ]);
    assert.equal(bad.code, -32602);
    assert.match(bad.message, /withdrawals\[0\]\.index/);
    const flag = await rpcFailure(url, 'eth_simulateV1', [{ blockStateCalls: [{}], validation: 'yes' }]);
    assert.equal(flag.code, -32602);
    assert.match(flag.message, /validation/);
  });
});
