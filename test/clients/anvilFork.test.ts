import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import { after, before, describe, it } from 'node:test';
import { createPublicClient, createWalletClient, type Hex, http, numberToHex, publicActions } from 'viem';
import { collect } from '../support/cli.ts';
import { LOG_STORE_INITCODE, logStoreCalldata } from '../support/contracts.ts';
import { devAccount } from '../support/devAccounts.ts';
import { devChainForSuite } from '../support/devServer.ts';
import { rpc } from '../support/rpcClient.ts';

/**
 * anvil forking from ethtrace (`anvil --fork-url <ethtrace>`), as a developer forks a provider:
 * anvil reads the chain id, the fork block, and every account, code and storage slot it touches
 * through ethtrace, then mines its own transactions on top without writing back.
 */

const ANVIL = createRequire(import.meta.url).resolve('@foundry-rs/anvil-linux-amd64/bin/anvil');
const OWNER = devAccount(5);
// Not a dev account: anvil funds its own dev accounts (the same mnemonic) when it forks, so only an
// account outside them keeps the balance ethtrace has.
const PAYEE: Hex = `0x${'5e'.repeat(20)}`;
const word = (n: bigint): Hex => numberToHex(n, { size: 32 });

/** anvil on an OS-chosen port, forking `url`; resolves once it listens. */
async function forkAnvil(url: string): Promise<{ url: string; child: ChildProcess }> {
  const child = spawn(ANVIL, ['--fork-url', url, '--host', '127.0.0.1', '--port', '0', '--color', 'never'], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const port = await new Promise<string>((resolve, reject) => {
    const onData = (d: Buffer) => {
      output += d;
      const m = /Listening on 127\.0\.0\.1:(\d+)/.exec(output);
      if (m?.[1]) resolve(m[1]);
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', onData);
    child.once('exit', (code) => reject(new Error(`anvil exited ${code}: ${output}`)));
  });
  return { url: `http://127.0.0.1:${port}`, child };
}

describe('anvil --fork-url at ethtrace', () => {
  const dev = devChainForSuite('ethtrace-anvil-fork-');
  let store: Hex;
  let anvil: { url: string; child: ChildProcess } | undefined;

  before(async () => {
    const wallet = createWalletClient({ account: OWNER, transport: http(dev().url) }).extend(publicActions);
    const deployed = await wallet.waitForTransactionReceipt({
      hash: await wallet.sendTransaction({ data: LOG_STORE_INITCODE, chain: null }),
    });
    store = deployed.contractAddress as Hex;
    await wallet.waitForTransactionReceipt({
      hash: await wallet.sendTransaction({
        to: store,
        data: logStoreCalldata({ key: 7n, value: 99n, logs: 1 }),
        chain: null,
      }),
    });
    await wallet.waitForTransactionReceipt({
      hash: await wallet.sendTransaction({ to: PAYEE, value: 123_456_789n, chain: null }),
    });
    anvil = await forkAnvil(dev().url);
  });

  after(async () => {
    if (!anvil) return;
    const done = collect(anvil.child);
    anvil.child.kill('SIGTERM');
    await done;
  });

  const onFork = <T>(method: string, params: unknown[] = []) =>
    rpc<T>((anvil as { url: string }).url, method, params);
  const onEthtrace = <T>(method: string, params: unknown[] = []) => rpc<T>(dev().url, method, params);

  it('forks at ethtrace head with its chain id', async () => {
    assert.equal(await onFork<Hex>('eth_chainId'), await onEthtrace<Hex>('eth_chainId'));
    assert.equal(
      BigInt(await onFork<Hex>('eth_blockNumber')),
      BigInt(await onEthtrace<Hex>('eth_blockNumber')),
    );
    const head = await onEthtrace<{ hash: Hex; number: Hex }>('eth_getBlockByNumber', ['latest', false]);
    const forked = await onFork<{ hash: Hex }>('eth_getBlockByNumber', [head.number, false]);
    assert.equal(forked.hash, head.hash);
  });

  it('reads balances, nonces, code and storage through ethtrace', async () => {
    for (const who of [PAYEE, store]) {
      assert.equal(
        BigInt(await onFork<Hex>('eth_getBalance', [who, 'latest'])),
        BigInt(await onEthtrace<Hex>('eth_getBalance', [who, 'latest'])),
      );
      assert.equal(
        BigInt(await onFork<Hex>('eth_getTransactionCount', [who, 'latest'])),
        BigInt(await onEthtrace<Hex>('eth_getTransactionCount', [who, 'latest'])),
      );
    }
    const code = await onEthtrace<Hex>('eth_getCode', [store, 'latest']);
    assert.notEqual(code, '0x');
    assert.equal(await onFork<Hex>('eth_getCode', [store, 'latest']), code);
    assert.equal(await onFork<Hex>('eth_getStorageAt', [store, word(7n), 'latest']), word(99n));
    const call = { to: store, data: logStoreCalldata({ key: 1n, value: 3n, logs: 0 }) };
    assert.equal(
      await onFork<Hex>('eth_call', [call, 'latest']),
      await onEthtrace<Hex>('eth_call', [call, 'latest']),
    );
  });

  it('mines a transaction on the fork that ethtrace never sees', async () => {
    const ethtraceHead = await onEthtrace<Hex>('eth_blockNumber');
    const hash = await onFork<Hex>('eth_sendTransaction', [
      { from: OWNER.address, to: store, data: logStoreCalldata({ key: 9n, value: 42n, logs: 2 }) },
    ]);
    const fork = createPublicClient({ transport: http((anvil as { url: string }).url) });
    const receipt = await fork.waitForTransactionReceipt({ hash });
    assert.deepEqual({ status: receipt.status, logs: receipt.logs.length }, { status: 'success', logs: 2 });
    assert.equal(await onFork<Hex>('eth_getStorageAt', [store, word(9n), 'latest']), word(42n));
    assert.equal(await onEthtrace<Hex>('eth_getStorageAt', [store, word(9n), 'latest']), word(0n));
    assert.equal(await onEthtrace<Hex>('eth_blockNumber'), ethtraceHead);
    assert.equal(await onEthtrace<unknown>('eth_getTransactionByHash', [hash]), null);
  });
});
