import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import {
  createPublicClient,
  createWalletClient,
  type Hex,
  http,
  parseEther,
  publicActions,
  stringToHex,
  verifyMessage,
  verifyTypedData,
} from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { tempDir } from '../support/cli.ts';
import { LOG_STORE_INITCODE, logStoreCalldata } from '../support/contracts.ts';
import { type CliServer, serveDev, stopDev } from '../support/devServer.ts';
import { rpc, rpcFailure } from '../support/rpcClient.ts';
import { importConformanceChain, startServer } from '../support/server.ts';
import { castRun } from './cast.ts';

// The well-known first account of the test mnemonic (anvil's and Hardhat's too).
const FIRST = '0xf39fd6e51aad88f6f4ce6ab8827279cfffb92266';
const FIRST_KEY = '0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80';
const SECOND = '0x70997970c51812dc3a010c7d01b50e0d17dc79c8';

describe('the dev chain (ethtrace start on an empty datadir)', () => {
  const dir = tempDir('ethtrace-dev-');
  let server: CliServer;
  before(async () => {
    server = await serveDev(dir.path);
  });
  after(async () => {
    if (server) await stopDev(server.child);
    dir.cleanup();
  });

  it('creates chain 31337 with the ten test-mnemonic accounts, printed with their keys', async () => {
    assert.match(server.output, /serving dev chain 31337 \(head 0\)/);
    assert.match(server.output, new RegExp(`\\(0\\) ${FIRST}\\s+private key ${FIRST_KEY}`));
    assert.equal((server.output.match(/private key 0x[0-9a-f]{64}/g) ?? []).length, 10);
    const client = createPublicClient({ transport: http(server.url) });
    assert.equal(await client.getChainId(), 31337);
    assert.equal(await client.getBalance({ address: FIRST }), parseEther('10000'));
    const accounts = await rpc<string[]>(server.url, 'eth_accounts', []);
    assert.equal(accounts.length, 10);
    assert.equal(accounts[0], FIRST);
  });

  it('mines each transaction into its own block: viem sends, deploys, reads receipts and traces', async () => {
    const wallet = createWalletClient({ account: FIRST, transport: http(server.url) }).extend(publicActions);
    const before = await wallet.getBlockNumber();
    // A JSON-RPC account: the server signs with the dev key (eth_sendTransaction).
    const transfer = await wallet.sendTransaction({
      account: FIRST,
      to: SECOND,
      value: parseEther('1'),
      chain: null,
    });
    const transferReceipt = await wallet.waitForTransactionReceipt({ hash: transfer });
    assert.equal(transferReceipt.status, 'success');
    assert.equal(transferReceipt.blockNumber, before + 1n);
    // A local account: viem signs, the server checks and mines the raw transaction.
    const local = createWalletClient({
      account: privateKeyToAccount(FIRST_KEY),
      transport: http(server.url),
    }).extend(publicActions);
    const deploy = await local.sendTransaction({ data: LOG_STORE_INITCODE, chain: null });
    const deployed = await local.waitForTransactionReceipt({ hash: deploy });
    assert.equal(deployed.status, 'success');
    assert.ok(deployed.contractAddress);
    const call = await local.sendTransaction({
      to: deployed.contractAddress,
      data: logStoreCalldata({ key: 1n, value: 42n, logs: 2 }),
      chain: null,
    });
    const called = await local.waitForTransactionReceipt({ hash: call });
    assert.equal(called.logs.length, 2);
    assert.equal(await local.getBlockNumber(), before + 3n);

    const receipts = await rpc<Array<{ transactionHash: string }>>(server.url, 'eth_getBlockReceipts', [
      'latest',
    ]);
    assert.equal(receipts?.length, 1);
    assert.equal(receipts?.[0]?.transactionHash, call);
    type Traced = { trace: Array<{ action: { to: string } }>; stateDiff: Record<string, unknown> };
    const traces = await rpc<Traced[]>(server.url, 'trace_callMany', [
      [
        [
          {
            from: FIRST,
            to: deployed.contractAddress,
            data: logStoreCalldata({ key: 1n, value: 7n, logs: 1 }),
          },
          ['trace', 'stateDiff'],
        ],
      ],
      'latest',
    ]);
    assert.equal(traces[0]?.trace[0]?.action.to, deployed.contractAddress.toLowerCase());
    assert.ok(traces[0]?.stateDiff[deployed.contractAddress.toLowerCase()]);
  });

  it("works with Foundry's cast: send from a dev key, read the receipt and the balance", async () => {
    const before = await rpc<string>(server.url, 'eth_getBalance', [SECOND, 'latest']);
    const sent = await castRun([
      'send',
      '--rpc-url',
      server.url,
      '--private-key',
      FIRST_KEY,
      SECOND,
      '--value',
      '3wei',
      '--json',
    ]);
    const receipt = JSON.parse(sent) as { status: string; transactionHash: string; blockNumber: string };
    assert.equal(receipt.status, '0x1');
    const read = await castRun(['receipt', '--rpc-url', server.url, receipt.transactionHash, 'status']);
    // cast (pinned 1.7.1) prints a successful status as `true`.
    assert.equal(read.trim(), 'true');
    const after = await castRun(['balance', '--rpc-url', server.url, SECOND]);
    assert.equal(BigInt(after.trim()), BigInt(before) + 3n);
    const receipts = await rpc<Array<{ transactionHash: string }>>(server.url, 'eth_getBlockReceipts', [
      receipt.blockNumber,
    ]);
    assert.deepEqual(
      receipts.map((r) => r.transactionHash),
      [receipt.transactionHash],
    );
  });

  it('fills in the gas of eth_sendTransaction from an estimate and its fees as geth does', async () => {
    type Tx = { gas: string; maxFeePerGas: string; maxPriorityFeePerGas: string; type: string };
    const client = createPublicClient({ transport: http(server.url) });
    const deploy = await rpc<Hex>(server.url, 'eth_sendTransaction', [
      { from: FIRST, data: LOG_STORE_INITCODE },
    ]);
    const deployed = await client.getTransactionReceipt({ hash: deploy });
    assert.equal(deployed.status, 'success');
    const store = deployed.contractAddress as Hex;
    const calls = [
      { from: FIRST, to: SECOND, value: '0x1' },
      { from: FIRST, to: store, data: logStoreCalldata({ key: 5n, value: 6n, logs: 3 }) },
    ];
    for (const call of calls) {
      const estimate = await rpc<string>(server.url, 'eth_estimateGas', [call, 'latest']);
      const tip = BigInt(await rpc<string>(server.url, 'eth_maxPriorityFeePerGas', []));
      const head = await client.getBlock({ blockTag: 'latest' });
      const hash = await rpc<Hex>(server.url, 'eth_sendTransaction', [call]);
      const tx = await rpc<Tx>(server.url, 'eth_getTransactionByHash', [hash]);
      assert.equal(tx.gas, estimate);
      if (!call.data) assert.equal(tx.gas, '0x5208');
      assert.equal(BigInt(tx.maxPriorityFeePerGas), tip);
      assert.equal(BigInt(tx.maxFeePerGas), tip + 2n * (head.baseFeePerGas ?? 0n));
      assert.equal((await client.getTransactionReceipt({ hash })).status, 'success');
    }
    // A call that reverts: the estimate's error is the answer, and nothing is mined.
    const reverter = '0x00000000000000000000000000000000000e0e0e';
    await rpc(server.url, 'anvil_setCode', [reverter, '0x365f5f37365ffd']);
    const height = await client.getBlockNumber({ cacheTime: 0 });
    const nonce = await client.getTransactionCount({ address: FIRST, blockTag: 'pending' });
    const reason = `0x08c379a0${(32).toString(16).padStart(64, '0')}${'4'.padStart(64, '0')}${Buffer.from('nope').toString('hex').padEnd(64, '0')}`;
    const refused = await rpc(server.url, 'eth_sendTransaction', [
      { from: FIRST, to: reverter, data: reason },
    ]).then(
      () => assert.fail('a send whose estimate reverts was accepted'),
      (e: Error & { code: number; data?: unknown }) => e,
    );
    assert.deepEqual([refused.code, refused.message], [3, 'execution reverted: nope']);
    assert.equal(await client.getBlockNumber({ cacheTime: 0 }), height);
    assert.equal(await client.getTransactionCount({ address: FIRST, blockTag: 'pending' }), nonce);
    // With its gas named, the same transaction is sent and mined, failing as it must.
    const named = await rpc<Hex>(server.url, 'eth_sendTransaction', [
      { from: FIRST, to: reverter, data: reason, gas: '0x10000' },
    ]);
    assert.equal((await client.getTransactionReceipt({ hash: named })).status, 'reverted');
  });

  it('rejects what a node rejects, with clear errors', async () => {
    const low = await rpcFailure(server.url, 'eth_sendTransaction', [
      { from: FIRST, to: SECOND, value: '0x1', nonce: '0x0' },
    ]);
    assert.equal(low.code, -32000);
    assert.match(low.message, /^nonce too low: next nonce \d+, tx nonce 0$/);
    const poor = privateKeyToAccount(generatePrivateKey());
    const signed: Hex = await poor.signTransaction({
      chainId: 31337,
      type: 'eip1559',
      nonce: 0,
      to: SECOND,
      value: 1n,
      gas: 21000n,
      maxFeePerGas: 10_000_000_000n,
      maxPriorityFeePerGas: 1n,
    });
    const funds = await rpcFailure(server.url, 'eth_sendRawTransaction', [signed]);
    assert.equal(funds.code, -32003);
    assert.match(funds.message, /^insufficient funds for gas \* price \+ value/);
    const otherChain = await privateKeyToAccount(FIRST_KEY).signTransaction({
      chainId: 1,
      type: 'eip1559',
      nonce: 0,
      to: SECOND,
      gas: 21000n,
      maxFeePerGas: 10_000_000_000n,
      maxPriorityFeePerGas: 1n,
    });
    const chain = await rpcFailure(server.url, 'eth_sendRawTransaction', [otherChain]);
    assert.equal(chain.code, -32000);
    const intrinsic = await rpcFailure(server.url, 'eth_sendTransaction', [
      { from: FIRST, to: SECOND, gas: '0x100' },
    ]);
    assert.match(intrinsic.message, /intrinsic gas too low/);
    const stranger = await rpcFailure(server.url, 'eth_sendTransaction', [
      { from: SECOND.replace('7', '8'), to: FIRST },
    ]);
    assert.match(stranger.message, /unknown account/);
  });

  it('offers anvil/Hardhat conveniences: mining, time, account state, the pool, signing', async () => {
    const client = createPublicClient({ transport: http(server.url) });
    // viem caches the block number for its polling interval: ask afresh each time.
    const start = await client.getBlockNumber({ cacheTime: 0 });
    await rpc(server.url, 'evm_mine', []);
    await rpc(server.url, 'anvil_mine', [3]);
    assert.equal(await client.getBlockNumber({ cacheTime: 0 }), start + 4n);

    const head = await client.getBlock();
    const next = head.timestamp + 1000n;
    await rpc(server.url, 'evm_setNextBlockTimestamp', [Number(next)]);
    await rpc(server.url, 'evm_mine', []);
    assert.equal((await client.getBlock()).timestamp, next);
    const offset = await rpc<number>(server.url, 'evm_increaseTime', [3600]);
    assert.ok(offset >= 3600);
    await rpc(server.url, 'evm_mine', []);
    assert.ok((await client.getBlock()).timestamp >= BigInt(Math.floor(Date.now() / 1000)) + 3600n - 5n);

    const target = '0x00000000000000000000000000000000000d0d0d';
    const before = await client.getBlockNumber({ cacheTime: 0 });
    await rpc(server.url, 'anvil_setBalance', [target, '0x1234']);
    await rpc(server.url, 'hardhat_setCode', [target, '0x6001600101']);
    await rpc(server.url, 'anvil_setNonce', [target, '0x7']);
    assert.equal(
      await rpc(server.url, 'anvil_setStorageAt', [
        target,
        `0x${'00'.repeat(31)}01`,
        `0x${'00'.repeat(31)}2a`,
      ]),
      true,
    );
    assert.equal(await client.getBalance({ address: target }), 0x1234n);
    assert.equal(await client.getCode({ address: target }), '0x6001600101');
    assert.equal(await client.getTransactionCount({ address: target }), 7);
    assert.equal(
      await client.getStorageAt({ address: target, slot: `0x${'00'.repeat(31)}01` }),
      `0x${'00'.repeat(31)}2a`,
    );
    // Each change is a block of its own, so the history before it is kept.
    assert.equal(await client.getBalance({ address: target, blockNumber: before }), 0n);

    assert.deepEqual(await rpc(server.url, 'txpool_status', []), { pending: '0x0', queued: '0x0' });
    assert.deepEqual(await rpc(server.url, 'txpool_content', []), { pending: {}, queued: {} });

    const message = 'hello ethtrace';
    const signature = await rpc<Hex>(server.url, 'personal_sign', [stringToHex(message), FIRST]);
    assert.ok(await verifyMessage({ address: FIRST, message, signature }));
    assert.equal(await rpc<Hex>(server.url, 'eth_sign', [FIRST, stringToHex(message)]), signature);
    // EIP-712: nested structs, arrays, dynamic and fixed types, checked by viem's own verifier.
    const typed = {
      domain: { name: 'Ether Mail', version: '1', chainId: 31337, verifyingContract: target },
      types: {
        EIP712Domain: [
          { name: 'name', type: 'string' },
          { name: 'version', type: 'string' },
          { name: 'chainId', type: 'uint256' },
          { name: 'verifyingContract', type: 'address' },
        ],
        Person: [
          { name: 'name', type: 'string' },
          { name: 'wallets', type: 'address[]' },
        ],
        Mail: [
          { name: 'from', type: 'Person' },
          { name: 'to', type: 'Person[]' },
          { name: 'contents', type: 'string' },
          { name: 'tag', type: 'bytes4' },
          { name: 'amount', type: 'int64' },
          { name: 'ok', type: 'bool' },
          { name: 'blob', type: 'bytes' },
        ],
      },
      primaryType: 'Mail',
      message: {
        from: { name: 'Cow', wallets: [FIRST, SECOND] },
        to: [{ name: 'Bob', wallets: [target] }],
        contents: 'Hello, Bob!',
        tag: '0xdeadbeef',
        amount: -42,
        ok: true,
        blob: '0x0102',
      },
    } as const;
    const typedSignature = await rpc<Hex>(server.url, 'eth_signTypedData_v4', [FIRST, JSON.stringify(typed)]);
    const { EIP712Domain: _domainType, ...types } = typed.types;
    assert.ok(
      await verifyTypedData({
        address: FIRST,
        domain: typed.domain,
        types,
        primaryType: 'Mail',
        message: { ...typed.message, amount: -42n },
        signature: typedSignature,
      }),
    );
    const stranger = await rpcFailure(server.url, 'personal_sign', [stringToHex(message), target]);
    assert.match(stranger.message, /unknown account/);
  });

  it('keeps the chain across a restart', async () => {
    const client = createPublicClient({ transport: http(server.url) });
    const head = await client.getBlock();
    const balance = await client.getBalance({ address: SECOND });
    await stopDev(server.child);
    server = await serveDev(dir.path);
    const again = createPublicClient({ transport: http(server.url) });
    assert.equal((await again.getBlock()).hash, head.hash);
    assert.equal(await again.getBalance({ address: SECOND }), balance);
    assert.match(server.output, new RegExp(`serving dev chain 31337 \\(head ${head.number}\\)`));
  });
});

describe('an imported chain is read-only', () => {
  it('refuses transactions and has no accounts', async () => {
    const chain = await importConformanceChain();
    const server = await startServer(chain.datadir);
    try {
      assert.deepEqual(await server.rpc('eth_accounts'), []);
      const e = await rpcFailure(server.url, 'eth_sendRawTransaction', ['0x01']);
      assert.equal(e.code, -32000);
      assert.match(e.message, /read-only/);
    } finally {
      await server.close();
      chain.cleanup();
    }
  });
});
