import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type Address, getAddress } from 'viem';
import { type Anvil, mineBlock, startAnvil } from '../support/anvil.ts';
import { asm, deployCode } from '../support/asm.ts';
import { tempDir } from '../support/cli.ts';
import { logStoreCalldata } from '../support/contracts.ts';
import { devAccount } from '../support/devAccounts.ts';
import { importFromAnvil } from '../support/exportChain.ts';
import { type RunningServer, startServer } from '../support/server.ts';
import { buildBigBlock, deployLogStore, freshAddress, TxFactory } from '../support/workload.ts';

// A block replay may run speculatively in parts (src/services/parallelCalls.ts). Its answer must be
// the serial one: each block of an anvil chain is replayed by a server that speculates and by one
// that never does, with `trace` and `vmTrace` (whose stack values show every balance an opcode
// read), and the answers must be identical.

const CALL_GAS = 200_000n;

describe('trace_replayBlockTransactions replayed in parts answers exactly as replayed whole', () => {
  const dir = tempDir('ethtrace-parallel-replay-');
  let anvil: Anvil;
  let parallel: RunningServer;
  let serial: RunningServer;
  const blocks: Record<'independent' | 'funded' | 'coinbase', bigint> = {
    independent: 0n,
    funded: 0n,
    coinbase: 0n,
  };

  before(async () => {
    anvil = await startAnvil();
    let f = new TxFactory(anvil);
    const { logStore } = await deployLogStore(anvil, f, devAccount(0));
    // 1. Forty calls by ten senders, each writing its own slots of one contract.
    blocks.independent = (await buildBigBlock(anvil, { txs: 40, logsPerTx: 1, logStore })).number;
    // buildBigBlock signed with its own nonces: a new factory reads them afresh.
    f = new TxFactory(anvil);
    // 2. A sender whose balance another sender's transfer changed earlier in the block. Both send
    // the most transactions, so they cannot share a part (the largest senders are placed first).
    const funded: `0x${string}`[] = [
      await f.sign({
        type: 'eip1559',
        from: devAccount(1),
        to: devAccount(9).address,
        value: 12345n,
        gas: 21_000n,
      }),
    ];
    for (let i = 0; i < 9; i++) funded.push(await storeCall(f, logStore, 1, i));
    for (let i = 0; i < 6; i++) funded.push(await storeCall(f, logStore, 2 + (i % 3), 10 + i));
    for (let i = 0; i < 10; i++) funded.push(await storeCall(f, logStore, 9, 20 + i));
    blocks.funded = (await mineBlock(anvil, funded)).number;
    // 3. A contract that stores the coinbase's balance, which every fee before it changed.
    const reader = await deploy(anvil, f, asm('COINBASE BALANCE PUSH0 SSTORE STOP'));
    const coinbase: `0x${string}`[] = [];
    for (let i = 0; i < 20; i++) {
      coinbase.push(
        i === 12
          ? await f.sign({ type: 'eip1559', from: devAccount(8), to: reader, gas: CALL_GAS })
          : await storeCall(f, logStore, i % 6, 100 + i),
      );
    }
    blocks.coinbase = (await mineBlock(anvil, coinbase)).number;

    const { datadir } = await importFromAnvil(anvil, dir.path);
    parallel = await startServer(datadir, {
      limits: { replay: { parallelMinTxs: 2 }, pool: { workers: 4 } },
    });
    serial = await startServer(datadir, {
      limits: { replay: { parallelMinTxs: Number.POSITIVE_INFINITY } },
    });
    await parallel.app.warm();
  });
  after(async () => {
    await parallel?.close();
    await serial?.close();
    await anvil?.stop();
    dir.cleanup();
  });

  async function compare(number: bigint): Promise<{ speculated: number; fellBack: number }> {
    const stats = parallel.app.services.replay.parallelStats;
    const before = { ...stats };
    const params = [`0x${number.toString(16)}`, ['trace', 'vmTrace']];
    const ours = await parallel.rpc<unknown[]>('trace_replayBlockTransactions', params);
    const reference = await serial.rpc<unknown[]>('trace_replayBlockTransactions', params);
    assert.ok(ours.length >= 20);
    assert.deepEqual(ours, reference);
    return { speculated: stats.speculated - before.speculated, fellBack: stats.fellBack - before.fellBack };
  }

  it('keeps the parts of a block whose senders do not touch each other’s state', async () => {
    assert.deepEqual(await compare(blocks.independent), { speculated: 1, fellBack: 0 });
  });

  it('replays whole a block where one sender was paid by another earlier in it', async () => {
    assert.deepEqual(await compare(blocks.funded), { speculated: 1, fellBack: 1 });
  });

  it('replays whole a block where a call reads the coinbase balance the fees before it paid', async () => {
    assert.deepEqual(await compare(blocks.coinbase), { speculated: 1, fellBack: 1 });
  });

  it('does not speculate a stateDiff (each coinbase entry depends on all fees before)', async () => {
    const stats = parallel.app.services.replay.parallelStats;
    const speculated = stats.speculated;
    const params = [`0x${blocks.independent.toString(16)}`, ['stateDiff']];
    assert.deepEqual(
      await parallel.rpc('trace_replayBlockTransactions', params),
      await serial.rpc('trace_replayBlockTransactions', params),
    );
    assert.equal(stats.speculated, speculated);
  });
});

function storeCall(f: TxFactory, logStore: Address, sender: number, i: number): Promise<`0x${string}`> {
  const key = BigInt(freshAddress(`parallel-replay/${sender}/${i}`));
  return f.sign({
    type: 'eip1559',
    from: devAccount(sender),
    to: logStore,
    data: logStoreCalldata({ key, value: BigInt(i + 1), logs: 1 }),
    gas: CALL_GAS,
  });
}

async function deploy(anvil: Anvil, f: TxFactory, runtime: `0x${string}`): Promise<Address> {
  const block = await mineBlock(anvil, [
    await f.sign({ type: 'eip1559', from: devAccount(0), data: deployCode(runtime), gas: 300_000n }),
  ]);
  const address = block.receipts[0]?.contractAddress;
  if (!address) throw new Error('no contract address');
  return getAddress(address);
}
