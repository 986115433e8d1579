import type { Block, BlockHeader } from '@ethereumjs/block';
import { Hardfork } from '@ethereumjs/common';
import type { ChainReader } from '../chain/reader.ts';
import type { TraceTypes } from '../core/call.ts';
import { BEACON_ROOTS_ADDRESS, HISTORY_STORAGE_ADDRESS } from '../evm/block.ts';
import type { ForkRules } from '../evm/forks.ts';
import { WorldState } from '../evm/state.ts';
import { applyTransaction } from '../evm/transaction.ts';
import { bytesToBigint } from '../evm/words.ts';
import { blockEnv, evmFork, evmTransaction, FlatStateReader } from './evmEngine.ts';
import { adaptTracer, allEvmTracers, StateDiffRecorder } from './tracing/evmAdapter.ts';
import { ParityCallTracer } from './tracing/parity.ts';
import { buildStateDiff } from './tracing/stateDiff.ts';
import type { ParityTraces } from './tracing/traceTypes.ts';

/** One transaction replayed and traced (src/exec/replay.ts's ReplayedTx). */
export interface EvmReplayedTx extends ParityTraces {
  hash: Uint8Array;
  output: Uint8Array;
}

// EIP-4788's and EIP-2935's ring sizes.
const HISTORICAL_ROOTS_LENGTH = 8191n;
const HISTORY_SERVE_WINDOW = 8191n;

/**
 * A block's transactions replayed on the EVM of src/evm, traced as `types` asks: what
 * `replayBlock` (src/exec/replay.ts) answers on ethereumjs, byte for byte. Null when this EVM cannot
 * run it yet: a store without synchronous reads (upstream mode), the DAO fork block (its irregular
 * state change lives in ethereumjs's runBlock), a fork without a rule row, or a vmTrace.
 */
export function replayOnEvm(chain: ChainReader, block: Block, types: TraceTypes): EvmReplayedTx[] | null {
  const reads = chain.store.syncReads;
  if (!reads || types.vmTrace) return null;
  const header = block.header;
  const common = chain.commonAt(header.number, header.timestamp);
  if (common.hardforkBlock(Hardfork.Dao) === header.number) return null;
  const fork = evmFork(chain, common);
  if (!fork) return null;
  const { rules, precompiles } = fork;
  const reader = new FlatStateReader(reads, header.number - 1n);
  const world = new WorldState(reader);
  const env = blockEnv(header, fork.chainId, reads);
  systemWrites(world, rules, header);
  const diffs = types.stateDiff ? new StateDiffRecorder(world, reader) : null;
  diffs?.skip();
  const txs: EvmReplayedTx[] = [];
  for (const tx of block.transactions) {
    const parity = types.trace ? new ParityCallTracer() : null;
    const tracer = allEvmTracers([parity && adaptTracer(parity, world), diffs?.tracer ?? null]);
    const result = applyTransaction(world, env, rules, precompiles, evmTransaction(tx), tracer);
    txs.push({
      hash: tx.hash(),
      output: result.output,
      trace: parity?.traces() ?? [],
      stateDiff: diffs ? buildStateDiff(diffs.changes()) : null,
      vmTrace: null,
    });
  }
  return txs;
}

/**
 * The EIP-4788 and EIP-2935 system writes before the transactions, as the ethereumjs path makes
 * them: the slots the system contracts would write, written directly, where the contract has code.
 * Nothing after the transactions (requests, withdrawals, rewards) can affect a trace.
 */
function systemWrites(world: WorldState, rules: ForkRules, header: BlockHeader): void {
  if (rules.beaconRoots && header.parentBeaconBlockRoot) {
    const beacon = world.account(BEACON_ROOTS_ADDRESS);
    if (beacon.hasCode) {
      const index = header.timestamp % HISTORICAL_ROOTS_LENGTH;
      world.setStorage(beacon, index, header.timestamp);
      world.setStorage(beacon, index + HISTORICAL_ROOTS_LENGTH, bytesToBigint(header.parentBeaconBlockRoot));
    }
  }
  if (rules.historyStorage) {
    const history = world.account(HISTORY_STORAGE_ADDRESS);
    if (history.hasCode) {
      world.setStorage(
        history,
        (header.number - 1n) % HISTORY_SERVE_WINDOW,
        bytesToBigint(header.parentHash),
      );
    }
  }
  world.endTransaction(rules.emptyIsAbsent);
}
