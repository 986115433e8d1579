import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { copyFileSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { createWalletClient, type Hex, http, numberToHex, publicActions } from 'viem';
import { ROOT } from '../support/cli.ts';
import { LOG_STORE_INITCODE, logStoreCalldata } from '../support/contracts.ts';
import { devAccount } from '../support/devAccounts.ts';
import { devChainForSuite } from '../support/devServer.ts';
import { rpc } from '../support/rpcClient.ts';

/**
 * Hardhat 3 forking from ethtrace: a tiny Hardhat project (test/clients/hardhat/) whose simulated
 * network forks an ethtrace dev chain, reads accounts, code and storage through it and mines a
 * transaction on the fork. Hardhat 3 needs Node ≥ 22, so it runs with the `node` binary from npm;
 * both are installed by .ci/run from test/clients/hardhat/package-lock.json into HARDHAT_DIR, outside
 * test/ (their packages ship *.test.ts files the test command would otherwise pick up).
 */

const HARDHAT_DIR = join(ROOT, '.tmp', 'hardhat-client');
const PROJECT = join(ROOT, 'test', 'clients', 'hardhat');
const NODE_22 = join(HARDHAT_DIR, 'node_modules', 'node', 'bin', 'node');
const HARDHAT_CLI = join(HARDHAT_DIR, 'node_modules', 'hardhat', 'dist', 'src', 'cli.js');
const EDR = join(HARDHAT_DIR, 'node_modules', '@nomicfoundation', 'edr-linux-x64-gnu');
// Only a guard against a hung child: Hardhat starts in about a second and the script is a dozen calls.
const HARDHAT_HANG_GUARD_MS = 120_000;

const installed = [NODE_22, HARDHAT_CLI, EDR].every((p) => existsSync(p));
const NOT_INSTALLED = `Hardhat is not installed in ${HARDHAT_DIR}: .ci/run installs it (npm ci from test/clients/hardhat)`;
// CI installs it, so there a missing install is a failure, not a skip.
if (!installed && !process.env.CI) process.stdout.write(`skipping the Hardhat suite: ${NOT_INSTALLED}\n`);

const OWNER = devAccount(2);
// Not a dev account: Hardhat funds its own accounts (the same mnemonic) on the fork.
const PAYEE: Hex = `0x${'7a'.repeat(20)}`;
const word = (n: bigint): Hex => numberToHex(n, { size: 32 });

interface ForkRead {
  forkNumber: Hex;
  forkHash: Hex;
  accounts: Record<string, { balance: Hex; nonce: Hex; code: Hex }>;
  slot: Hex;
  call: Hex;
  hash: Hex;
  status: Hex;
  written: Hex;
}

describe('Hardhat 3 forking from ethtrace', { skip: !installed && !process.env.CI }, () => {
  const dev = devChainForSuite('ethtrace-hardhat-');
  let store: Hex;
  let project: string;

  before(() => {
    assert.ok(installed, NOT_INSTALLED);
    // Inside HARDHAT_DIR, so the project resolves `hardhat` from its node_modules.
    project = mkdtempSync(join(HARDHAT_DIR, 'project-'));
    for (const file of ['hardhat.config.js', 'fork.js', 'package.json']) {
      copyFileSync(join(PROJECT, file), join(project, file));
    }
  });
  after(() => {
    if (project) rmSync(project, { recursive: true, force: true });
  });

  before(async () => {
    const wallet = createWalletClient({ account: OWNER, transport: http(dev().url) }).extend(publicActions);
    const deployed = await wallet.waitForTransactionReceipt({
      hash: await wallet.sendTransaction({ data: LOG_STORE_INITCODE, chain: null }),
    });
    store = deployed.contractAddress as Hex;
    for (const tx of [
      { to: store, data: logStoreCalldata({ key: 7n, value: 99n, logs: 1 }) },
      { to: PAYEE, value: 987_654_321n },
    ]) {
      await wallet.waitForTransactionReceipt({ hash: await wallet.sendTransaction({ ...tx, chain: null }) });
    }
  });

  function runFork(read: object): Promise<ForkRead> {
    return new Promise((resolve, reject) => {
      execFile(
        NODE_22,
        [HARDHAT_CLI, 'run', '--no-compile', 'fork.js'],
        {
          cwd: project,
          timeout: HARDHAT_HANG_GUARD_MS,
          env: {
            ...process.env,
            ETHTRACE_URL: dev().url,
            ETHTRACE_READ: JSON.stringify(read),
            HARDHAT_DISABLE_TELEMETRY_PROMPT: 'true',
          },
        },
        (error, stdout, stderr) => {
          const line = stdout.split('\n').find((l) => l.startsWith('{'));
          if (error || line === undefined)
            reject(new Error(`hardhat: ${stderr || error?.message}\n${stdout}`));
          else resolve(JSON.parse(line) as ForkRead);
        },
      );
    });
  }

  it('reads the fork block, accounts, code and storage through ethtrace and mines on the fork', async () => {
    const head = await rpc<Hex>(dev().url, 'eth_blockNumber');
    const got = await runFork({
      accounts: [PAYEE, store],
      store,
      slot: word(7n),
      call: logStoreCalldata({ key: 1n, value: 5n, logs: 0 }),
      write: { slot: word(9n), data: logStoreCalldata({ key: 9n, value: 42n, logs: 2 }) },
    });
    // Hardhat forks at ethtrace's head (or a block before it): its hash must be ethtrace's.
    assert.ok(BigInt(got.forkNumber) <= BigInt(head), `fork block ${got.forkNumber} after head ${head}`);
    const forkBlock = await rpc<{ hash: Hex }>(dev().url, 'eth_getBlockByNumber', [got.forkNumber, false]);
    assert.equal(got.forkHash, forkBlock.hash);
    for (const who of [PAYEE, store]) {
      const at = got.forkNumber;
      assert.deepEqual(
        {
          balance: BigInt(got.accounts[who]?.balance ?? -1),
          nonce: BigInt(got.accounts[who]?.nonce ?? -1),
          code: got.accounts[who]?.code,
        },
        {
          balance: BigInt(await rpc<Hex>(dev().url, 'eth_getBalance', [who, at])),
          nonce: BigInt(await rpc<Hex>(dev().url, 'eth_getTransactionCount', [who, at])),
          code: await rpc<Hex>(dev().url, 'eth_getCode', [who, at]),
        },
      );
    }
    assert.equal(got.slot, word(99n));
    assert.equal(BigInt(got.call), 5n);
    assert.equal(got.status, '0x1');
    assert.equal(got.written, word(42n));
    // The fork's transaction stays on the fork.
    assert.equal(await rpc<Hex>(dev().url, 'eth_getStorageAt', [store, word(9n), 'latest']), word(0n));
    assert.equal(await rpc<unknown>(dev().url, 'eth_getTransactionByHash', [got.hash]), null);
    assert.equal(await rpc<Hex>(dev().url, 'eth_blockNumber'), head);
  });
});
