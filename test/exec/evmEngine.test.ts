import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { type CallLimits, DEFAULT_LIMITS } from '../../src/config/limits.ts';
import { type CallManyJob, runCallMany } from '../../src/exec/jobs/callMany.ts';
import { tempDir } from '../support/cli.ts';
import { mineDaoChain } from '../support/daoChain.ts';
import {
  diffAccessLists,
  diffBlobCalls,
  diffCallMany,
  diffCallShapes,
  diffCalls,
  diffDebugTraces,
  diffFailingOps,
  diffParts,
  diffReplays,
  type EngineChain,
  openEngineChain,
} from '../support/engineDiff.ts';
import { oracleRunCallMany } from '../support/ethereumjsOracle/index.ts';
import { importConformanceChain } from '../support/server.ts';

const LIMITS: CallLimits = DEFAULT_LIMITS.calls;

/**
 * Issue 20's rule for moving execution onto src/evm: no answer that was right changes. The same
 * replay jobs run on @ethereumjs/vm and on src/evm over real chains, and every answer must be the
 * same bytes: the conformance chain (Homestead → BPO2, every transaction type), the trace
 * workload built on anvil (constructors that call, create, log, revert and self-destruct, nested),
 * and the mainnet-like block of bench:mainnet (swaps, tokens, EIP-7702 wallets, failures).
 */
describe('src/evm against ethereumjs: replays and calls', () => {
  describe('the conformance chain', () => {
    let imported: { datadir: string; cleanup: () => void };
    let chain: EngineChain;
    before(async () => {
      imported = await importConformanceChain();
      chain = await openEngineChain(imported.datadir);
    });
    after(async () => {
      await chain?.close();
      imported?.cleanup();
    });
    it('replays every block byte for byte as ethereumjs does (vmTrace too)', async () => {
      const { problems, compared, txs } = await diffReplays(chain);
      assert.deepEqual(problems, [], `${problems.length} of ${compared} differ:\n${problems.join('\n')}`);
      assert.ok(txs > 50, `${txs} transactions`);
    });

    it('answers trace_callMany and trace_call (vmTrace too) on every parent byte for byte as ethereumjs does', async () => {
      const { problems, compared } = await diffCallMany(chain);
      assert.deepEqual(problems, [], `${problems.length} of ${compared} differ:\n${problems.join('\n')}`);
    });

    it('speculates in parts on src/evm: every item accepted has its serial answer', async () => {
      const { problems, accepted, items } = await diffParts(chain);
      assert.deepEqual(problems, [], problems.join('\n'));
      assert.ok(accepted > 0 || items === 0, `${accepted} of ${items} accepted`);
    });

    it('answers eth_call and eth_estimateGas on every parent as ethereumjs does', async () => {
      const { problems, compared } = await diffCalls(chain);
      assert.deepEqual(problems, [], `${problems.length} of ${compared} differ:\n${problems.join('\n')}`);
    });

    it('answers eth_createAccessList on every parent as ethereumjs does, on src/evm', async () => {
      const { problems, compared } = await diffAccessLists(chain);
      assert.deepEqual(problems, [], `${problems.length} of ${compared} differ:\n${problems.join('\n')}`);
    });

    it('answers calls with blobs and a blob base fee override as ethereumjs does, on src/evm', async () => {
      const { problems, compared } = await diffBlobCalls(chain);
      assert.deepEqual(problems, [], `${problems.length} of ${compared} differ:\n${problems.join('\n')}`);
    });

    it('answers and refuses calls of every shape on every parent as ethereumjs does', async () => {
      const { problems, compared } = await diffCallShapes(chain);
      assert.deepEqual(problems, [], `${problems.length} of ${compared} differ:\n${problems.join('\n')}`);
      assert.ok(compared > 1000, `${compared} compared`);
    });

    it('answers debug_trace* with every tracer and configuration byte for byte as ethereumjs does', async () => {
      const { problems, compared } = await diffDebugTraces(chain);
      assert.deepEqual(problems, [], `${problems.length} of ${compared} differ:\n${problems.join('\n')}`);
    });

    it('logs ops that fail (out of gas part-way, stack, undefined, bad jump) as ethereumjs does', async () => {
      const { problems, compared } = await diffFailingOps(chain);
      assert.deepEqual(problems, [], `${problems.length} of ${compared} differ:\n${problems.join('\n')}`);
    });

    it("shows a trace_call its sender's balance less only the value, whatever fee cap it names", async () => {
      // Reth's pure simulation debits no gas. The ethereumjs path credited the sender gas × fee cap
      // and runTx then debited gas × price, so BALANCE(CALLER) inside a call naming a fee cap above
      // its price saw the difference; src/evm debits nothing.
      const head = await chain.store.getHead();
      assert.ok(head);
      const header = await chain.chain.header(head.hash);
      assert.ok(header?.baseFeePerGas !== undefined);
      const probe = Uint8Array.from({ length: 20 }, (_, i) => 0xb0 + i);
      const sender = Uint8Array.from({ length: 20 }, (_, i) => 0x50 + i);
      const balance = 10n ** 21n;
      const job: CallManyJob = {
        blockHash: head.hash,
        calls: [
          {
            call: {
              from: sender,
              to: probe,
              gas: 100_000n,
              value: 7n,
              maxFeePerGas: header.baseFeePerGas * 10n + 10n,
              maxPriorityFeePerGas: 1n,
            },
            types: { trace: false, stateDiff: false, vmTrace: false },
          },
        ],
        // CALLER BALANCE, returned as a word.
        stateOverrides: [
          { address: probe, override: { code: Buffer.from('333160005260206000f3', 'hex') } },
          { address: sender, override: { balance } },
        ],
        single: true,
      };
      const seen = async (run: typeof runCallMany) =>
        BigInt(
          (JSON.parse(Buffer.from(await run(chain.chain, LIMITS, job)).toString()) as { output: string })
            .output,
        );
      assert.equal(await seen(runCallMany), balance - 7n);
      assert.notEqual(await seen(oracleRunCallMany), balance - 7n);
    });
  });

  describe('a chain with a DAO fork block', () => {
    const work = tempDir('ethtrace-engine-dao-');
    let chain: EngineChain;
    before(async () => {
      const datadir = join(work.path, 'data');
      await mineDaoChain('evm', datadir);
      chain = await openEngineChain(datadir);
    });
    after(async () => {
      await chain?.close();
      work.cleanup();
    });
    it('replays every block, the fork block included, on src/evm byte for byte as ethereumjs does', async () => {
      const { problems, compared, txs } = await diffReplays(chain);
      assert.deepEqual(problems, [], `${problems.length} of ${compared} differ:\n${problems.join('\n')}`);
      assert.equal(txs, 6);
    });

    it('answers trace_callMany and trace_call on every parent byte for byte as ethereumjs does', async () => {
      const { problems, compared } = await diffCallMany(chain);
      assert.deepEqual(problems, [], `${problems.length} of ${compared} differ:\n${problems.join('\n')}`);
    });
  });
});
