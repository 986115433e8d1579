import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import WebSocket from 'ws';
import { MAX_DEV_TIMESTAMP, MAX_MINE_BLOCKS } from '../../src/services/dev/index.ts';
import { collect, tempDir } from '../support/cli.ts';
import { devAccount } from '../support/devAccounts.ts';
import { devChainForSuite, serveDev, stopDev } from '../support/devServer.ts';
import { rpc, rpcFailure } from '../support/rpcClient.ts';

const FIRST = devAccount(0).address;
const TARGET = '0x00000000000000000000000000000000000a11ce';
const OTHER = '0x00000000000000000000000000000000000b0b00';
const hex = (n: bigint | number) => `0x${n.toString(16)}`;

/** A call that must be refused as a bad parameter: -32602, and a message without JS internals. */
async function invalidParams(url: string, method: string, params: unknown[]): Promise<string> {
  const e = await rpcFailure(url, method, params);
  assert.equal(e.code, -32602, `${method} ${JSON.stringify(params)}: ${e.message}`);
  assert.doesNotMatch(e.message, /BigInt|\[object|undefined|NaN|TypeError/, e.message);
  return e.message;
}

describe('dev chain: values a chain cannot hold are refused with -32602, and nothing is stored', () => {
  const dev = devChainForSuite('ethtrace-dev-limits-');
  const head = async () => BigInt(await rpc<string>(dev().url, 'eth_blockNumber'));

  it('anvil_setNonce at or above 2^64 (EIP-2681), anvil_setBalance above 2^256-1', async () => {
    const before = await head();
    for (const method of ['anvil_setNonce', 'hardhat_setNonce']) {
      assert.match(
        await invalidParams(dev().url, method, [TARGET, hex(1n << 64n)]),
        /nonce must be at most 2\^64-1/,
      );
    }
    for (const method of ['anvil_setBalance', 'hardhat_setBalance']) {
      assert.match(
        await invalidParams(dev().url, method, [TARGET, hex(1n << 256n)]),
        // The quantity parser refuses it before the method sees it, in geth's words.
        /hex number > 256 bits|balance must be at most 2\^256-1/,
      );
    }
    assert.equal(await head(), before, 'no block was written');
    assert.equal(await rpc(dev().url, 'eth_getTransactionCount', [TARGET, 'latest']), '0x0');
    assert.equal(await rpc(dev().url, 'eth_getBalance', [TARGET, 'latest']), '0x0');
    // The largest values that fit are taken and read back.
    await rpc(dev().url, 'anvil_setNonce', [TARGET, hex((1n << 64n) - 1n)]);
    await rpc(dev().url, 'anvil_setBalance', [TARGET, hex((1n << 256n) - 1n)]);
    assert.equal(await rpc(dev().url, 'eth_getTransactionCount', [TARGET, 'latest']), hex((1n << 64n) - 1n));
    assert.equal(await rpc(dev().url, 'eth_getBalance', [TARGET, 'latest']), hex((1n << 256n) - 1n));
  });

  it('a send from an account that has code (EIP-3607) is refused, not mined into a failing block', async () => {
    const sender = devAccount(7).address;
    await rpc(dev().url, 'anvil_setCode', [sender, '0x6000']);
    const before = await head();
    const e = await rpcFailure(dev().url, 'eth_sendTransaction', [
      { from: sender, to: OTHER, value: '0x1', gas: '0x5208' },
    ]);
    assert.equal(e.code, -32000, e.message);
    assert.match(e.message, /sender not an eoa/);
    assert.equal(await head(), before, 'no block was written');
    // A 7702 delegation designator is not code in EIP-3607's sense: such an account still sends.
    await rpc(dev().url, 'anvil_setCode', [sender, `0xef0100${'11'.repeat(20)}`]);
    const hash = await rpc<string>(dev().url, 'eth_sendTransaction', [
      { from: sender, to: OTHER, value: '0x1', gas: '0x5208' },
    ]);
    const receipt = await rpc<{ status: string }>(dev().url, 'eth_getTransactionReceipt', [hash]);
    assert.equal(receipt.status, '0x1');
  });

  it('a mine of more than MAX_MINE_BLOCKS blocks, in each of its forms', async () => {
    const before = await head();
    const over = MAX_MINE_BLOCKS + 1;
    for (const [method, params] of [
      ['anvil_mine', [over]],
      ['hardhat_mine', [hex(over)]],
      ['anvil_mine', ['0xffffffffffff']],
      ['evm_mine', [{ blocks: over }]],
    ] as const) {
      assert.match(await invalidParams(dev().url, method, [...params]), /at most \d+ blocks/);
    }
    assert.equal(await head(), before);
  });

  it('time moved past what a block timestamp (uint64) can hold, while the chain stays usable', async () => {
    const before = await head();
    for (const [method, params] of [
      ['evm_increaseTime', [hex(1n << 64n)]],
      ['evm_increaseTime', [hex(MAX_DEV_TIMESTAMP)]],
      ['evm_setNextBlockTimestamp', [hex(1n << 64n)]],
      ['evm_setNextBlockTimestamp', [hex(MAX_DEV_TIMESTAMP + 1n)]],
      ['evm_mine', [{ timestamp: hex(1n << 64n) }]],
      ['anvil_mine', [2, hex(1n << 64n)]],
    ] as const) {
      assert.match(await invalidParams(dev().url, method, [...params]), /latest/);
    }
    assert.equal(await head(), before);
    // The clock was not moved: the next block is stamped about now.
    await rpc(dev().url, 'evm_mine');
    const block = await rpc<{ timestamp: string }>(dev().url, 'eth_getBlockByNumber', ['latest', false]);
    assert.ok(BigInt(block.timestamp) < BigInt(Math.floor(Date.now() / 1000)) + 60n);
    // The latest allowed timestamp is taken, and transactions and calls still work after it.
    await rpc(dev().url, 'evm_setNextBlockTimestamp', [hex(MAX_DEV_TIMESTAMP)]);
    await rpc(dev().url, 'evm_mine');
    const hash = await rpc<string>(dev().url, 'eth_sendTransaction', [
      { from: FIRST, to: OTHER, value: '0x1' },
    ]);
    const receipt = await rpc<{ status: string; blockNumber: string }>(
      dev().url,
      'eth_getTransactionReceipt',
      [hash],
    );
    assert.equal(receipt.status, '0x1');
    const mined = await rpc<{ timestamp: string }>(dev().url, 'eth_getBlockByNumber', [
      receipt.blockNumber,
      false,
    ]);
    assert.equal(BigInt(mined.timestamp), MAX_DEV_TIMESTAMP + 1n);
    assert.equal(await rpc(dev().url, 'eth_call', [{ from: FIRST, to: OTHER }, 'latest']), '0x');
  });

  it('typed data that does not fit its types, with a message naming the field', async () => {
    const domainType = [{ name: 'name', type: 'string' }];
    const typed = (
      types: Record<string, unknown>,
      message: unknown,
      extra: Record<string, unknown> = {},
    ) => ({
      types: { EIP712Domain: domainType, ...types },
      primaryType: 'M',
      domain: { name: 'x' },
      message,
      ...extra,
    });
    const cases: Array<[unknown, RegExp]> = [
      [typed({ M: [{ name: 'a', type: 'uint256' }] }, {}), /message\.a: missing uint256/],
      [typed({ M: [{ name: 'a', type: 'address' }] }, { a: {} }), /message\.a: an address/],
      [typed({ M: [{ name: 'a', type: 'uint8' }] }, { a: 256 }), /message\.a: out of range for uint8/],
      [typed({ M: [{ name: 'a', type: 'uint256' }] }, { a: 'ten' }), /message\.a: a uint256 must be/],
      [typed({ M: [{ name: 'a', type: 'bytes2' }] }, { a: '0x010203' }), /at most 2 bytes/],
      [typed({ M: [{ name: 'a', type: 'bool' }] }, { a: 1 }), /message\.a: a bool/],
      [typed({ M: [{ name: 'a', type: 'uint256[2]' }] }, { a: [1] }), /must have 2 items/],
      [typed({ M: [{ name: 'a', type: 'Nope' }] }, { a: 1 }), /message\.a: unknown type Nope/],
      [typed({ M: [{ name: 'a' }] }, {}), /types\.M\[0\] must be/],
      [typed({ M: [] }, 5), /message must be an object/],
      [typed({ M: [] }, {}, { primaryType: 'Other' }), /primaryType Other is not among the types/],
      [typed({ M: [] }, {}, { types: 5 }), /types must be an object/],
      [{ types: { M: [] }, primaryType: 'M', domain: {}, message: {} }, /EIP712Domain/],
      ['{"types":', /not valid JSON/],
    ];
    for (const [data, expected] of cases) {
      for (const form of [data, typeof data === 'string' ? data : JSON.stringify(data)]) {
        const message = await invalidParams(dev().url, 'eth_signTypedData_v4', [FIRST, form]);
        assert.match(message, expected);
      }
    }
  });
});

describe('dev chain: a long mine does not hold up other requests and stops on SIGTERM', () => {
  it('answers eth_chainId while MAX_MINE_BLOCKS blocks are mined, stops mid-run, keeps the blocks', async () => {
    const dir = tempDir('ethtrace-dev-mine-');
    let server = await serveDev(dir.path);
    try {
      const start = BigInt(await rpc<string>(server.url, 'eth_blockNumber'));
      const ws = new WebSocket(server.wsUrl);
      await new Promise((resolve, reject) => ws.once('open', resolve).once('error', reject));
      const firstHead = new Promise<bigint>((resolve) => {
        ws.on('message', (data) => {
          const m = JSON.parse(data.toString()) as {
            method?: string;
            params?: { result: { number: string } };
          };
          if (m.method === 'eth_subscription' && m.params) resolve(BigInt(m.params.result.number));
        });
      });
      await new Promise<void>((resolve) => {
        ws.once('message', () => resolve());
        ws.send(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'eth_subscribe', params: ['newHeads'] }));
      });
      let finished = false;
      const mining = rpc(server.url, 'anvil_mine', [MAX_MINE_BLOCKS]).then(
        (result) => {
          finished = true;
          return { result };
        },
        (e: Error & { code?: number }) => {
          finished = true;
          return { error: e };
        },
      );
      // A block of the run has been announced: the run is under way, and other requests are served.
      assert.equal(await firstHead, start + 1n);
      assert.equal(await rpc(server.url, 'eth_chainId'), '0x7a69');
      assert.equal(finished, false, 'eth_chainId was answered only after the whole mine');
      ws.close();
      // SIGTERM in the middle of the run: the process stops cleanly and the run is cut short.
      const exited = collect(server.child);
      server.child.kill('SIGTERM');
      const { code } = await exited;
      assert.equal(code, 0);
      const outcome = await mining;
      assert.ok(!('result' in outcome), 'the cut-short mine did not answer success');
      server = await serveDev(dir.path);
      const head = BigInt(await rpc<string>(server.url, 'eth_blockNumber'));
      assert.ok(head > start && head < start + BigInt(MAX_MINE_BLOCKS), `head ${head} after start ${start}`);
      // The blocks mined before the stop are whole: the chain goes on from them.
      await rpc(server.url, 'evm_mine');
      assert.equal(BigInt(await rpc<string>(server.url, 'eth_blockNumber')), head + 1n);
    } finally {
      if (server.child.exitCode === null && server.child.signalCode === null) await stopDev(server.child);
      dir.cleanup();
    }
  });
});
