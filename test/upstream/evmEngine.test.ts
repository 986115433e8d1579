import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Hex } from 'viem';
import { buildMainnetChain } from '../../bench/lib/mainnetBlocks.ts';
import { ChainReader } from '../../src/chain/reader.ts';
import { readStoredSpec } from '../../src/chain/storedSpec.ts';
import type { TraceTypes } from '../../src/core/call.ts';
import { fetchingStats } from '../../src/exec/fetchingState.ts';
import { replayJobs } from '../../src/exec/jobs/replay.ts';
import { evmAlsoRead } from '../../src/exec/prefetch.ts';
import { DEFAULT_UPSTREAM_LIMITS } from '../../src/upstream/client.ts';
import { openUpstreamSource, type UpstreamSource } from '../../src/upstream/open.ts';
import { type Anvil, mineBlock, startAnvil } from '../support/anvil.ts';
import { serveTraceWorkload, type TraceWorkloadServers } from '../support/anvilTraces.ts';
import { asm, deployCode } from '../support/asm.ts';
import { tempDir } from '../support/cli.ts';
import { devAccount } from '../support/devAccounts.ts';
import {
  diffCallMany,
  diffCalls,
  diffParts,
  diffReplays,
  type EngineChain,
  firstDifference,
} from '../support/engineDiff.ts';
import { oracleReplayJobs } from '../support/ethereumjsOracle/index.ts';
import { type FaultProxy, startFaultProxy } from '../support/faultProxy.ts';
import { importConformanceChain, type RunningServer, startServer } from '../support/server.ts';

// Upstream mode on src/evm (issue 20): state comes over the network, the EVM reads synchronously
// what is already fetched, and a transaction that reaches what is not runs again once it is
// (src/exec/fetchingState.ts). Its answers must be the ethereumjs path's, byte for byte, and the
// reruns few: the upstream's prestateTracer names nearly everything ahead of the run.

/** A chain read from an upstream on a fresh cache of its own, as an EngineChain for the diff harness. */
async function upstreamChain(url: string): Promise<EngineChain & { source: UpstreamSource }> {
  const dir = tempDir('ethtrace-upstream-engine-');
  const source = await openUpstreamSource(
    dir.path,
    { urls: [url], limits: DEFAULT_UPSTREAM_LIMITS, finalityDepth: 64, pollMs: 600_000, genesis: null },
    () => {},
  );
  const spec = await readStoredSpec(source.store);
  assert.ok(spec);
  return {
    source,
    chain: new ChainReader(source.store, spec),
    store: source.store,
    async close() {
      source.head.stop();
      await source.store.close();
      dir.cleanup();
    },
  };
}

describe('upstream mode on src/evm against the ethereumjs path', () => {
  describe('the trace workload (anvil), each engine on a cold cache of its own', () => {
    let servers: TraceWorkloadServers;
    let oracle: EngineChain;
    let ours: EngineChain;
    before(async () => {
      servers = await serveTraceWorkload();
    });
    after(async () => {
      await servers?.close();
    });
    // Each test on fresh caches: src/evm meets every key missing (nothing read ahead here), so each
    // of its transactions runs again as often as it reaches state it does not hold.
    const fresh = async () => {
      await oracle?.close();
      await ours?.close();
      oracle = await upstreamChain(servers.anvil.url);
      ours = await upstreamChain(servers.anvil.url);
    };
    after(async () => {
      await oracle?.close();
      await ours?.close();
    });

    it('replays every block byte for byte as ethereumjs does', async () => {
      await fresh();
      const reruns = fetchingStats.reruns;
      const { problems, compared, txs } = await diffReplays(oracle, undefined, ours);
      assert.deepEqual(problems, [], `${problems.length} of ${compared} differ:\n${problems.join('\n')}`);
      assert.ok(txs >= 90, `${txs} transactions`);
      assert.ok(fetchingStats.reruns > reruns, 'src/evm never met missing state');
    });

    it('answers trace_callMany and trace_call on every parent byte for byte as ethereumjs does', async () => {
      await fresh();
      const { problems, compared } = await diffCallMany(oracle, ours);
      assert.deepEqual(problems, [], `${problems.length} of ${compared} differ:\n${problems.join('\n')}`);
    });

    it('speculates in parts on src/evm: every item accepted has its serial answer', async () => {
      await fresh();
      const { problems, accepted, items } = await diffParts(ours);
      assert.deepEqual(problems, [], problems.join('\n'));
      assert.ok(accepted > 0 || items === 0, `${accepted} of ${items} accepted`);
    });

    it('answers eth_call and eth_estimateGas on every parent as ethereumjs does', async () => {
      await fresh();
      const { problems, compared } = await diffCalls(oracle, ours);
      assert.deepEqual(problems, [], `${problems.length} of ${compared} differ:\n${problems.join('\n')}`);
    });
  });

  describe('the conformance chain (Frontier to BPO2), through a second ethtrace as the upstream', () => {
    let imported: { datadir: string; cleanup: () => void };
    let first: RunningServer;
    let oracle: EngineChain;
    let ours: EngineChain;
    before(async () => {
      imported = await importConformanceChain();
      first = await startServer(imported.datadir);
      oracle = await upstreamChain(first.url);
      ours = await upstreamChain(first.url);
    });
    after(async () => {
      await oracle?.close();
      await ours?.close();
      await first?.close();
      imported?.cleanup();
    });

    it('replays every block of every fork byte for byte as ethereumjs does, from cold caches', async () => {
      const reruns = fetchingStats.reruns;
      const { problems, compared, txs } = await diffReplays(oracle, undefined, ours);
      assert.deepEqual(problems, [], `${problems.length} of ${compared} differ:\n${problems.join('\n')}`);
      assert.ok(txs > 50, `${txs} transactions`);
      assert.ok(fetchingStats.reruns > reruns, 'src/evm never met missing state');
    });
  });

  describe('the mainnet-like block (anvil), each engine on a cold cache of its own', () => {
    const work = tempDir('ethtrace-upstream-engine-mainnet-');
    let built: Awaited<ReturnType<typeof buildMainnetChain>>;
    let oracle: EngineChain;
    let ours: EngineChain;
    before(async () => {
      built = await buildMainnetChain(work.path, { blocks: 1, txsPerBlock: 60 });
      oracle = await upstreamChain(built.anvil.url);
      ours = await upstreamChain(built.anvil.url);
    });
    after(async () => {
      await oracle?.close();
      await ours?.close();
      await built?.anvil.stop();
      work.cleanup();
    });

    it('replays every block byte for byte as ethereumjs does', async () => {
      const { problems, compared, txs } = await diffReplays(oracle, undefined, ours);
      assert.deepEqual(problems, [], `${problems.length} of ${compared} differ:\n${problems.join('\n')}`);
      assert.ok(txs >= 60, `${txs} transactions`);
    });

    it('answers trace_callMany and trace_call on every parent byte for byte as ethereumjs does', async () => {
      const { problems, compared } = await diffCallMany(oracle, ours);
      assert.deepEqual(problems, [], `${problems.length} of ${compared} differ:\n${problems.join('\n')}`);
    });
  });

  describe('a block whose pre-state the upstream’s prestateTracer under-reports', () => {
    // A contract whose empty call counts (slot 0 += 1), and whose other call reads through that
    // count: slot 100 + count into slot 1, the balance of address 0x1000 + count into slot 2, and
    // the balance of WITNESS into slot 3. In a block where a count runs before a read, the read's
    // pre-state as traced on the parent (how the upstream is asked: src/upstream/prefetch.ts)
    // names the slot and account of the old count, not the new: two keys only the run finds.
    const WITNESS = '0x00000000000000000000000000000000000000ee';
    const RUNTIME = asm(`
      CALLDATASIZE @read JUMPI
      PUSH0 SLOAD PUSH 1 ADD PUSH0 SSTORE STOP
      read: JUMPDEST
      PUSH0 SLOAD PUSH 100 ADD SLOAD PUSH 1 SSTORE
      PUSH0 SLOAD PUSH 0x1000 ADD BALANCE PUSH 2 SSTORE
      PUSH20 ${WITNESS} BALANCE PUSH 3 SSTORE
      STOP
    `);
    const TYPES: TraceTypes = { trace: true, stateDiff: true, vmTrace: false };
    let anvil: Anvil;
    let block: { number: bigint; hash: Hex };
    let contract: Hex;
    let plain: FaultProxy;
    let dropping: FaultProxy;
    const chains: EngineChain[] = [];

    before(async () => {
      anvil = await startAnvil();
      const chainId = anvil.genesis.config.chainId;
      const [a, b] = [devAccount(0), devAccount(1)];
      const fees = { maxFeePerGas: 100_000_000_000n, maxPriorityFeePerGas: 1n, type: 'eip1559' as const };
      const deployed = await mineBlock(anvil, [
        await a.signTransaction({ chainId, nonce: 0, data: deployCode(RUNTIME), gas: 200_000n, ...fees }),
        await b.signTransaction({ chainId, nonce: 0, to: WITNESS, value: 7n, gas: 21_000n, ...fees }),
      ]);
      contract = deployed.receipts[0]?.contractAddress as Hex;
      assert.ok(contract);
      // Counts once, so the block below starts from a count of 1.
      await mineBlock(anvil, [
        await a.signTransaction({ chainId, nonce: 1, to: contract, gas: 100_000n, ...fees }),
      ]);
      const mined = await mineBlock(anvil, [
        await a.signTransaction({ chainId, nonce: 2, to: contract, gas: 100_000n, ...fees }),
        await b.signTransaction({ chainId, nonce: 1, to: contract, data: '0x01', gas: 200_000n, ...fees }),
      ]);
      block = { number: mined.number, hash: mined.hash };
      plain = await startFaultProxy(anvil.url);
      dropping = await startFaultProxy(anvil.url);
      // This upstream's prestateTracer also leaves out the contract's slot 0 and WITNESS.
      dropping.inject(
        {
          kind: 'rewrite',
          when: (request) => JSON.stringify(request).includes('prestateTracer'),
          edit: (answer) => {
            for (const a of (Array.isArray(answer) ? answer : [answer]) as Array<{ result?: unknown }>) {
              const prestate = a.result as Record<string, { storage?: Record<string, string> }> | undefined;
              if (typeof prestate !== 'object' || prestate === null) continue;
              for (const address of Object.keys(prestate)) {
                if (address.toLowerCase() === WITNESS) delete prestate[address];
                else if (address.toLowerCase() === contract.toLowerCase())
                  delete prestate[address]?.storage?.[`0x${'0'.repeat(64)}`];
              }
            }
            return answer;
          },
        },
        Number.POSITIVE_INFINITY,
      );
    });
    after(async () => {
      for (const chain of chains) await chain.close();
      await plain?.close();
      await dropping?.close();
      await anvil?.stop();
    });

    /** The block's replay on `engine` after the read-ahead a server makes, its reruns and round trips. */
    async function replay(proxy: FaultProxy, engine: 'evm' | 'ethereumjs') {
      const chain = await upstreamChain(proxy.url);
      chains.push(chain);
      const blockHash = Buffer.from(block.hash.slice(2), 'hex');
      // As a server reads ahead for each engine (src/exec/prefetch.ts PrefetchingClient).
      await chain.source.prefetch.block(blockHash, engine === 'evm' ? evmAlsoRead : undefined);
      const requests = proxy.counters.requests;
      const reruns = fetchingStats.reruns;
      const keys = fetchingStats.keys;
      const jobs = engine === 'evm' ? replayJobs(chain.chain) : oracleReplayJobs(chain.chain);
      const [answer] = await jobs.replayBlock({ blockHash, types: TYPES });
      assert.ok(answer);
      return {
        answer: Buffer.from(answer).toString(),
        reruns: fetchingStats.reruns - reruns,
        keys: fetchingStats.keys - keys,
        roundTrips: proxy.counters.requests - requests,
      };
    }

    it('reruns a transaction once for each key the read-ahead missed, and answers as ethereumjs does', async () => {
      const oracle = await replay(plain, 'ethereumjs');
      const ours = await replay(plain, 'evm');
      assert.equal(ours.answer, oracle.answer, firstDifference(oracle.answer, ours.answer));
      // The read transaction's slot 102 and account 0x1002, each found by a run (the precompiles,
      // which every transaction warms and no prestateTracer names, were read ahead).
      assert.deepEqual({ reruns: ours.reruns, keys: ours.keys }, { reruns: 2, keys: 2 });
      // One round trip per rerun (a batch of eth_getProof and eth_getCode), as the ethereumjs path
      // makes one per key it reads.
      assert.equal(ours.roundTrips, 2);
      assert.equal(oracle.roundTrips, 2);
    });

    it('reruns as often as the upstream’s prestateTracer leaves keys out, and still answers right', async () => {
      const oracle = await replay(plain, 'ethereumjs');
      const ours = await replay(dropping, 'evm');
      assert.equal(ours.answer, oracle.answer, firstDifference(oracle.answer, ours.answer));
      // Slot 0 (the count transaction, first to read it), then slot 102, account 0x1002 and WITNESS.
      assert.deepEqual({ reruns: ours.reruns, keys: ours.keys }, { reruns: 4, keys: 4 });
      assert.equal(ours.roundTrips, 4);
    });
  });
});
