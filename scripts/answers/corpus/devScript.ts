import type { Hex as ViemHex } from 'viem';
import { LOG_STORE_INITCODE, LOG_STORE_RUNTIME, logStoreCalldata } from '../../../test/support/contracts.ts';
import { devAccount } from '../../../test/support/devAccounts.ts';
import type { Pair } from '../lib/compare.ts';
import type { Answer } from '../lib/http.ts';
import type { Side } from '../lib/tree.ts';
import { request, resultOf } from './sessions.ts';

/**
 * The dev chain, made the same way on both servers: one fixed script of sends and dev methods, each
 * step sent to both and compared. It is deterministic because nothing reads the wall clock:
 *
 * - each tree made its dev chain with `start` on an empty datadir under a clock pinned to one
 *   instant (compare.ts), so both genesis blocks carry the same timestamp;
 * - the first block is given a timestamp ten million seconds after genesis (evm_setNextBlockTimestamp),
 *   and every later block either gets an explicit one or falls back to the clock, which is then
 *   behind the head, so the service takes the parent's timestamp + 1;
 * - every transaction's nonce, gas and fees are fixed here or derived from the chain.
 */

const GWEI = 1_000_000_000n;
const hex = (n: number | bigint): ViemHex => `0x${n.toString(16)}`;
const word = (n: number | bigint): ViemHex => `0x${n.toString(16).padStart(64, '0')}`;
const CATEGORY = 'dev chain script';

/** Runs the script; answers notes for the report (a genesis that differs explains every later difference). */
export async function runDevScript(pair: Pair, between: () => Promise<void>): Promise<string[]> {
  const notes: string[] = [];
  const step = (method: string, params: readonly unknown[] = []): Promise<Record<Side, Answer>> =>
    pair.step(CATEGORY, method, request(method, params));
  /** The old side's result (the sides' results are compared; the script follows the old one). */
  const value = async (method: string, params: readonly unknown[] = []): Promise<unknown> =>
    resultOf((await step(method, params)).old);

  const [a0, a1, a2, a3, a4, a5, a6, , , a9] = Array.from({ length: 10 }, (_, i) => devAccount(i));
  if (!a0 || !a1 || !a2 || !a3 || !a4 || !a5 || !a6 || !a9) throw new Error('dev accounts missing');
  const fresh = (i: number): ViemHex => `0x${i.toString(16).padStart(2, '0').repeat(20)}`;

  await step('eth_accounts');
  await step('eth_chainId');
  await step('eth_blockNumber');
  const genesisAnswers = await step('eth_getBlockByNumber', ['0x0', false]);
  const genesis = resultOf(genesisAnswers.old) as { timestamp: string } | null;
  if (!genesis) throw new Error('the dev chain has no genesis block');
  const other = resultOf(genesisAnswers.new) as { timestamp: string } | null;
  if (genesisAnswers.old.body !== genesisAnswers.new.body) {
    notes.push(
      `dev chain: the two genesis blocks differ (timestamps ${genesis.timestamp} and ${other?.timestamp}); ` +
        'every later dev-chain answer that names a block differs with them',
    );
  }
  const t0 = BigInt(genesis.timestamp) + 10_000_000n;
  await between();

  // Sends: eth_sendTransaction with the fees and gas filled in by the service, a deployment, calls
  // that log, revert on estimate and revert when mined.
  await step('evm_setNextBlockTimestamp', [hex(t0)]);
  await step('eth_sendTransaction', [{ from: a0.address, to: a1.address, value: hex(10n ** 18n) }]);
  const deploy = await value('eth_sendTransaction', [
    { from: a0.address, data: LOG_STORE_INITCODE, gas: '0x30d40' },
  ]);
  const receipt = (await value('eth_getTransactionReceipt', [deploy])) as { contractAddress?: string } | null;
  const logStore = (receipt?.contractAddress ?? fresh(0x77)) as ViemHex;
  await step('eth_sendTransaction', [
    {
      from: a1.address,
      to: logStore,
      data: logStoreCalldata({ key: 1n, value: 11n, logs: 3 }),
      gas: '0x186a0',
    },
  ]);
  await step('eth_sendTransaction', [
    { from: a2.address, to: logStore, data: logStoreCalldata({ key: 2n, value: 0n, logs: 0 }) },
  ]);
  await step('eth_sendTransaction', [
    {
      from: a2.address,
      to: logStore,
      data: logStoreCalldata({ key: 2n, value: 0n, logs: 0 }),
      gas: '0x186a0',
    },
  ]);
  await step('eth_sendTransaction', [{ from: a2.address, to: a3.address, value: hex(10n ** 30n) }]);
  await step('eth_sendTransaction', [{ from: fresh(0x12), to: a3.address, value: '0x1' }]);

  // Raw transactions of every envelope, signed here with fixed fees.
  const chainId = Number(await value('eth_chainId'));
  const nonceOf = async (address: ViemHex): Promise<number> =>
    Number(await value('eth_getTransactionCount', [address, 'pending']));
  const fees = { maxFeePerGas: 10n * GWEI, maxPriorityFeePerGas: GWEI };
  const call = (key: bigint, logs: number): ViemHex => logStoreCalldata({ key, value: key * 10n + 1n, logs });
  const legacy = await a3.signTransaction({
    type: 'legacy',
    chainId,
    nonce: await nonceOf(a3.address),
    gas: 100_000n,
    gasPrice: 10n * GWEI,
    to: logStore,
    data: call(3n, 2),
  });
  await step('eth_sendRawTransaction', [legacy]);
  await step('eth_sendRawTransaction', [legacy]);
  const preEip155 = await a4.signTransaction({
    type: 'legacy',
    nonce: await nonceOf(a4.address),
    gas: 21_000n,
    gasPrice: 10n * GWEI,
    to: fresh(0x44),
    value: 5n,
  });
  await step('eth_sendRawTransaction', [preEip155]);
  await step('eth_sendRawTransaction', [
    await a4.signTransaction({
      type: 'eip2930',
      chainId,
      nonce: await nonceOf(a4.address),
      gas: 100_000n,
      gasPrice: 10n * GWEI,
      to: logStore,
      data: call(4n, 1),
      accessList: [{ address: logStore, storageKeys: [word(4)] }],
    }),
  ]);
  await step('eth_sendRawTransaction', [
    await a5.signTransaction({
      type: 'eip1559',
      chainId,
      nonce: await nonceOf(a5.address),
      gas: 100_000n,
      ...fees,
      to: logStore,
      data: call(5n, 3),
    }),
  ]);
  const a6Nonce = await nonceOf(a6.address);
  await step('eth_sendRawTransaction', [
    await a5.signTransaction({
      type: 'eip7702',
      chainId,
      nonce: await nonceOf(a5.address),
      gas: 200_000n,
      ...fees,
      to: a6.address,
      data: call(6n, 3),
      authorizationList: [await a6.signAuthorization({ chainId, address: logStore, nonce: a6Nonce })],
    }),
  ]);
  await step('eth_sendRawTransaction', [
    await a6.signTransaction({
      type: 'eip1559',
      chainId,
      nonce: await nonceOf(a6.address),
      gas: 100_000n,
      ...fees,
      to: a6.address,
      data: call(7n, 2),
    }),
  ]);
  // Refused: a nonce already used, a fee cap under the base fee, too little gas, a wrong chain id.
  await step('eth_sendRawTransaction', [
    await a5.signTransaction({ type: 'eip1559', chainId, nonce: 0, gas: 21_000n, ...fees, to: a1.address }),
  ]);
  await step('eth_sendRawTransaction', [
    await a5.signTransaction({
      type: 'eip1559',
      chainId,
      nonce: await nonceOf(a5.address),
      gas: 21_000n,
      maxFeePerGas: 1n,
      maxPriorityFeePerGas: 1n,
      to: a1.address,
    }),
  ]);
  await step('eth_sendRawTransaction', [
    await a5.signTransaction({
      type: 'eip1559',
      chainId,
      nonce: await nonceOf(a5.address),
      gas: 20_000n,
      ...fees,
      to: a1.address,
    }),
  ]);
  await step('eth_sendRawTransaction', [
    await a5.signTransaction({
      type: 'eip1559',
      chainId: chainId + 1,
      nonce: await nonceOf(a5.address),
      gas: 21_000n,
      ...fees,
      to: a1.address,
    }),
  ]);

  // The pending pool: a queued transaction, a replacement too cheap and one that pays enough, all
  // undone by evm_revert (a snapshot keeps the pool as it was).
  const snapshot = await value('evm_snapshot');
  const gapNonce = (await nonceOf(a3.address)) + 1;
  const queued = (gasPrice: bigint) =>
    a3.signTransaction({
      type: 'legacy',
      chainId,
      nonce: gapNonce,
      gas: 21_000n,
      gasPrice,
      to: a1.address,
      value: 1n,
    });
  await step('eth_sendRawTransaction', [await queued(10n * GWEI)]);
  await step('txpool_status');
  await step('txpool_content');
  await step('txpool_contentFrom', [a3.address]);
  await step('eth_getTransactionCount', [a3.address, 'pending']);
  await step('eth_getBlockByNumber', ['pending', true]);
  await step('eth_sendRawTransaction', [await queued(10n * GWEI + GWEI / 2n)]);
  await step('eth_sendRawTransaction', [await queued(12n * GWEI)]);
  await step('txpool_content');
  await step('evm_revert', [snapshot]);
  await step('txpool_status');
  await step('eth_blockNumber');

  // Mining: every form, times given or taken from the parent.
  await step('evm_mine');
  await step('evm_mine', [{ timestamp: Number(t0 + 1000n), blocks: 2 }]);
  await step('evm_mine', [Number(t0 + 2000n)]);
  await step('anvil_mine', [3, 12]);
  await step('hardhat_mine', ['0x2']);
  await step('anvil_mine', ['0x2', '0x0']);
  await step('hardhat_mine', [1, 5]);
  await step('evm_increaseTime', [100]);
  await step('anvil_increaseTime', ['0x32']);
  await step('evm_mine');
  await step('evm_setNextBlockTimestamp', [hex(t0 + 5000n)]);
  await step('anvil_setNextBlockTimestamp', [Number(t0 + 6000n)]);
  await step('evm_mine');
  await step('evm_setNextBlockTimestamp', [hex(t0)]);
  await step('eth_getBlockByNumber', ['latest', false]);

  // Snapshots: a later one reverted first, then the earlier one, then used-up and unknown ids.
  const s2 = await value('evm_snapshot');
  const s3 = await value('anvil_snapshot');
  await step('evm_mine');
  await step('eth_sendTransaction', [{ from: a0.address, to: a2.address, value: '0x7' }]);
  await step('anvil_revert', [s3]);
  await step('eth_blockNumber');
  await step('evm_revert', [s2]);
  await step('evm_revert', [s2]);
  await step('evm_revert', ['0x63']);
  await step('eth_blockNumber');

  // State setters, each in a block of its own, and a call into code that was set.
  await step('anvil_setBalance', [a9.address, hex(10n ** 20n)]);
  await step('hardhat_setBalance', [fresh(0x51), '0x1']);
  await step('anvil_setNonce', [a9.address, '0x32']);
  await step('hardhat_setNonce', [fresh(0x51), 3]);
  await step('anvil_setCode', [fresh(0x52), LOG_STORE_RUNTIME]);
  await step('hardhat_setCode', [fresh(0x53), '0x6001600055']);
  await step('anvil_setStorageAt', [logStore, word(1), word(42)]);
  await step('hardhat_setStorageAt', [fresh(0x52), word(0), word(1)]);
  await step('eth_getBalance', [a9.address, 'latest']);
  await step('eth_getTransactionCount', [a9.address, 'latest']);
  await step('eth_getCode', [fresh(0x52), 'latest']);
  await step('eth_getStorageAt', [logStore, '0x1', 'latest']);
  await step('eth_sendTransaction', [
    {
      from: a9.address,
      to: fresh(0x52),
      data: logStoreCalldata({ key: 9n, value: 99n, logs: 2 }),
      gas: '0x186a0',
    },
  ]);
  await step('eth_sendTransaction', [{ from: a9.address, to: fresh(0x53), gas: '0x186a0' }]);

  // Signing with the dev accounts.
  await step('eth_sign', [a0.address, '0xdeadbeef']);
  await step('personal_sign', ['0x68656c6c6f', a0.address]);
  const typed = {
    types: {
      EIP712Domain: [
        { name: 'name', type: 'string' },
        { name: 'chainId', type: 'uint256' },
      ],
      Mail: [
        { name: 'to', type: 'address' },
        { name: 'amount', type: 'uint256' },
      ],
    },
    primaryType: 'Mail',
    domain: { name: 'answers', chainId },
    message: { to: a1.address, amount: '12345' },
  };
  await step('eth_signTypedData_v4', [a0.address, typed]);
  await step('eth_signTypedData_v4', [a0.address, JSON.stringify(typed)]);
  await step('eth_sign', [fresh(0x12), '0x00']);
  await step('eth_blockNumber');
  return notes;
}
