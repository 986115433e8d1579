import type { Block, BlockHeader } from '@ethereumjs/block';
import type { Common } from '@ethereumjs/common';
import type { TypedTransaction } from '@ethereumjs/tx';
import type { ChainReader } from '../chain/reader.ts';
import type { TraceTypes } from '../core/call.ts';
import { BEACON_ROOTS_ADDRESS, HISTORY_STORAGE_ADDRESS } from '../evm/block.ts';
import { applyDaoFork } from '../evm/dao.ts';
import type { ForkRules } from '../evm/forks.ts';
import type { EvmTracer } from '../evm/hooks.ts';
import { WorldState } from '../evm/state.ts';
import { applyTransaction, InvalidTransaction, type TransactionResult } from '../evm/transaction.ts';
import { bytesToBigint } from '../evm/words.ts';
import { blockEnv, evmFork, evmTransaction } from './evmEngine.ts';
import { isDaoForkBlock } from './evmRules.ts';
import { evmStateAt, type FetchingStateReader, untilComplete, WrittenSlots } from './fetchingState.ts';
import type { StateAccess } from './sessionTypes.ts';
import { type ConflictBoard, PartConflict } from './speculation.ts';
import {
  AccessRecorder,
  adaptTracer,
  allEvmTracers,
  changedKeys,
  StateDiffRecorder,
} from './tracing/evmAdapter.ts';
import { EvmVmTracer } from './tracing/evmVmTrace.ts';
import { ParityCallTracer } from './tracing/parity.ts';
import { buildStateDiff } from './tracing/stateDiff.ts';
import type { ParityTraces } from './tracing/traceTypes.ts';

/**
 * A tracer of each transaction (geth's debug tracers), made as it starts on `world` and finished
 * right after it, before the next one changes the state.
 */
export type EvmTracerFactory = (
  tx: TypedTransaction,
  index: number,
  world: WorldState,
  rules: ForkRules,
) => { tracer: EvmTracer | null; finish(): void } | null;

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
 * the ethereumjs path's `replayBlock` answered (now the tests' oracle,
 * test/support/ethereumjsOracle/replay.ts), byte for byte. A `part` runs only
 * some transactions (a speculative part: src/exec/replay.ts ReplayPart), noting what each read and
 * changed. In upstream mode a transaction that reaches state not fetched yet runs again once it is
 * (src/exec/fetchingState.ts).
 */
export async function replayOnEvm(
  chain: ChainReader,
  block: Block,
  types: TraceTypes,
  part?: { indices: readonly number[]; board?: ConflictBoard },
  extra?: EvmTracerFactory,
): Promise<{ txs: EvmReplayedTx[]; access: StateAccess[] }> {
  const header = block.header;
  const common = chain.commonAt(header.number, header.timestamp);
  const fork = evmFork(chain, common);
  const state = evmStateAt(chain.store, { number: header.number - 1n, hash: header.parentHash }, fork);
  const { rules, precompiles } = fork;
  const { reader, fetching } = state;
  const world = new WorldState(reader);
  const env = blockEnv(header, fork.chainId, state.hashes);
  await beforeTransactions(world, fetching, rules, header, common);
  const diffs = types.stateDiff || part ? new StateDiffRecorder(world, reader) : null;
  // Upstream mode: the slots each transaction writes, for the keys its stateDiff may read.
  const written = fetching && diffs ? new WrittenSlots() : null;
  diffs?.skip();
  // A part notes what each transaction read and changed; the coinbase's reads outside the EVM (the
  // fee payment every transaction makes) are not noted (src/services/parallelCalls.ts).
  const access = part ? new AccessRecorder(env.coinbase) : null;
  const only = part ? new Set(part.indices) : null;
  const txs: EvmReplayedTx[] = [];
  const accesses: StateAccess[] = [];
  for (const [index, tx] of block.transactions.entries()) {
    if (only && !only.has(index)) continue;
    // Another part (or this one) found a conflict: the block will be replayed whole.
    if (part?.board?.lost) break;
    let run: { result: TransactionResult; parity: ParityCallTracer | null; vm: EvmVmTracer | null };
    // The extra tracer of the run that completed: each run (one stopped for missing state, then the
    // one that had it all) gets a fresh one.
    let traced: ReturnType<EvmTracerFactory> = null;
    try {
      run = await untilComplete(
        fetching,
        () => {
          const parity = types.trace ? new ParityCallTracer() : null;
          const vm = types.vmTrace ? new EvmVmTracer(world, rules) : null;
          traced = extra ? extra(tx, index, world, rules) : null;
          const tracer = allEvmTracers([
            parity && adaptTracer(parity, world),
            diffs?.tracer ?? null,
            access?.tracer ?? null,
            written?.tracer ?? null,
            vm?.tracer ?? null,
            traced?.tracer ?? null,
          ]);
          return {
            result: applyTransaction(world, env, rules, precompiles, evmTransaction(tx), tracer),
            parity,
            vm,
          };
        },
        () => {
          diffs?.abandon();
          access?.abandon();
          written?.clear();
        },
      );
      (traced as ReturnType<EvmTracerFactory>)?.finish();
    } catch (e) {
      // In a part, a transaction invalid on the part's state (funds or a nonce another part
      // provides) only means the part cannot stand alone.
      if (part && e instanceof InvalidTransaction) throw new PartConflict(index, e);
      throw e;
    }
    const { result, parity, vm } = run;
    if (written) {
      await untilComplete(fetching, () => fetching?.prepareDiff(world, written.slots));
      written.clear();
    }
    const changes = diffs ? diffs.changes() : null;
    txs.push({
      hash: tx.hash(),
      output: result.output,
      trace: parity?.traces() ?? [],
      stateDiff: types.stateDiff && changes ? buildStateDiff(changes) : null,
      vmTrace: vm?.result() ?? null,
    });
    if (part && access && diffs && changes) {
      const noted = { reads: access.takeReads(), writes: changedKeys(changes, diffs.wiped) };
      accesses.push(noted);
      part.board?.post(part.indices[accesses.length - 1] ?? index, noted);
    }
  }
  return { txs, access: accesses };
}

/**
 * What a block changes before its transactions: the DAO fork's state change, then the system
 * writes, outside any transaction's trace. Each ends its own transaction, so each is retried on its
 * own (upstream mode).
 */
export async function beforeTransactions(
  world: WorldState,
  fetching: FetchingStateReader | null,
  rules: ForkRules,
  header: BlockHeader,
  common: Common,
): Promise<void> {
  if (isDaoForkBlock(common, header.number))
    await untilComplete(
      fetching,
      () => applyDaoFork(world, rules),
      () => world.abortTransaction(),
    );
  await untilComplete(
    fetching,
    () => systemWrites(world, rules, header),
    () => world.abortTransaction(),
  );
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
