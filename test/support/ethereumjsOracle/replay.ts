import type { Block } from '@ethereumjs/block';
import { Hardfork } from '@ethereumjs/common';
import type { EVM } from '@ethereumjs/evm';
import type { TypedTransaction } from '@ethereumjs/tx';
import {
  Address,
  bigIntToAddressBytes,
  bigIntToBytes,
  bytesToUnprefixedHex,
  createAddressFromString,
  setLengthLeft,
} from '@ethereumjs/util';
import { type RunTxResult, runBlock, runTx, type VM } from '@ethereumjs/vm';
import type { ChainReader } from '../../../src/chain/reader.ts';
import type { TraceTypes } from '../../../src/core/call.ts';
import { DomainError, NotFound, RequestFailed } from '../../../src/core/errors.ts';
import { OutputLimitExceeded } from '../../../src/exec/responseLimit.ts';
import { type ConflictBoard, PartConflict } from '../../../src/exec/speculation.ts';
import { toHex } from '../../../src/primitives/hex.ts';
import { StoreInconsistentError } from '../../../src/store/errors.ts';
import { allOf, type ExecutionTracer } from './hooks.ts';
import { acquireMachine, releaseMachine, simulationCommon } from './machine.ts';
import { OverlayStateManager, stateAtBlock } from './overlayState.ts';
import type { StateAccess } from './session.ts';
import { ParityTracers, type ParityTraces } from './traceTypes.ts';

/** One mined transaction, re-executed and traced. */
export interface ReplayedTx extends ParityTraces {
  hash: Uint8Array;
  output: Uint8Array;
}

/** Extra tracers a caller can run per transaction (geth's debug tracers), made fresh for each. */
export type TracerFactory = (
  tx: TypedTransaction,
  index: number,
  evm: EVM,
) => ExecutionTracer & { finish?(): unknown };

export interface ReplayedBlock {
  block: Block;
  txs: ReplayedTx[];
  /** What each `extra` tracer returned from `finish()`, per transaction. */
  extra: unknown[];
  /** In a part replay, what each transaction read and changed (see ReplayPart). */
  access: StateAccess[];
}

/**
 * A speculative part of a block's replay (services/parallelCalls.ts): only these transactions run,
 * in block order, on the parent's state after the system writes, and what each reads and changes
 * is noted. The coinbase's reads outside the EVM (its fee payment, which every transaction makes)
 * are not noted; its reads inside (BALANCE, a call to it) are.
 */
export interface ReplayPart {
  indices: readonly number[];
  /** Shared with the other parts: each transaction's access is posted, and a conflict stops the part. */
  board?: ConflictBoard;
}

/**
 * The part of block processing that transactions can observe: the EIP-4788 and EIP-2935 system
 * writes before them, then each transaction with fees as in the block. runBlock would also build
 * the transaction and receipt tries, re-create the block and pay withdrawals and rewards, none of
 * which a trace of the transactions sees (measured: about 40% of a 200-transaction replay).
 */
// EIP-4788's contract (ethereumjs keeps its address as a constant, not a parameter).
const BEACON_ROOTS_ADDRESS = createAddressFromString('0x000F3df6D732807Ef1319fB7B8bB8522d0Beac02');

async function runTransactions(
  vm: VM,
  block: Block,
  only: ReadonlySet<number> | null,
  board?: ConflictBoard,
): Promise<void> {
  const common = vm.common;
  const state = vm.stateManager;
  const header = block.header;
  if (common.isActivatedEIP(4788) && header.parentBeaconBlockRoot) {
    const address = BEACON_ROOTS_ADDRESS;
    if ((await state.getCode(address)).length > 0) {
      const ring = common.param('historicalRootsLength');
      const index = header.timestamp % ring;
      await state.putStorage(
        address,
        setLengthLeft(bigIntToBytes(index), 32),
        bigIntToBytes(header.timestamp),
      );
      await state.putStorage(
        address,
        setLengthLeft(bigIntToBytes(index + ring), 32),
        header.parentBeaconBlockRoot,
      );
    }
  }
  if (common.isActivatedEIP(2935)) {
    const address = new Address(bigIntToAddressBytes(common.param('historyStorageAddress')));
    if ((await state.getCode(address)).length > 0) {
      const slot = (header.number - 1n) % common.param('historyServeWindow');
      await state.putStorage(address, setLengthLeft(bigIntToBytes(slot), 32), header.parentHash);
    }
  }
  let gasUsed = 0n;
  for (const [index, tx] of block.transactions.entries()) {
    if (only && !only.has(index)) continue;
    // Another part (or this one, at its last transaction) found a conflict: the block will be
    // replayed whole, so what this part would add is wasted.
    if (board?.lost) return;
    let result: RunTxResult;
    try {
      result = await runTx(vm, { tx, block, blockGasUsed: gasUsed, skipHardForkValidation: true });
    } catch (e) {
      // In a part, a transaction that ethereumjs refuses (funds or nonce another part provides)
      // only means the part cannot stand alone. A trace stopped for size, or a domain error, is not that.
      if (
        !only ||
        e instanceof OutputLimitExceeded ||
        e instanceof DomainError ||
        e instanceof StoreInconsistentError
      )
        throw e;
      throw new PartConflict(index, e);
    }
    gasUsed += result.totalGasSpent;
  }
}

/**
 * Re-executes a block's transactions exactly as they ran (fees charged, system calls, withdrawals
 * and rewards included) on the state after its parent, tracing each transaction on its own. The
 * system calls of EIP-4788/2935/7002/7251 run but are never traced: tracers are attached only
 * between a transaction's `beforeTx` and `afterTx`.
 */
export async function replayBlock(
  chain: ChainReader,
  blockHash: Uint8Array,
  types: TraceTypes,
  extra?: TracerFactory,
  part?: ReplayPart,
): Promise<ReplayedBlock> {
  const block = await chain.block(blockHash);
  if (!block) throw new NotFound(`block ${toHex(blockHash)} not found`);
  if (block.header.number === 0n) throw new RequestFailed('genesis is not traceable');
  const common = simulationCommon(chain.commonAt(block.header.number, block.header.timestamp));
  const parent = { number: block.header.number - 1n, hash: block.header.parentHash };
  const state = new OverlayStateManager(stateAtBlock(chain.store, parent));
  const machine = await acquireMachine(common, chain, state);
  const { vm, hooks } = machine;
  const evm = vm.evm as EVM;
  const txs: ReplayedTx[] = [];
  const extras: unknown[] = [];
  const access: StateAccess[] = [];
  const coinbase = bytesToUnprefixedHex(block.header.coinbase.bytes);
  let depth = 0;
  const enterFrame = () => {
    if (depth++ === 0) state.unnotedAccount = null;
  };
  const leaveFrame = () => {
    if (--depth === 0) state.unnotedAccount = coinbase;
  };
  if (part) {
    state.recordReads();
    evm.events.on('beforeMessage', enterFrame);
    evm.events.on('afterMessage', leaveFrame);
  }
  let index = 0;
  let current: {
    tx: TypedTransaction;
    mark: number;
    tracers: ParityTracers;
    extra: (ExecutionTracer & { finish?(): unknown }) | null;
  } | null = null;
  const beforeTx = (tx: TypedTransaction) => {
    const tracers = new ParityTracers(types, evm, state);
    const extraTracer = extra ? extra(tx, index, evm) : null;
    current = { tx, mark: state.mark(), tracers, extra: extraTracer };
    if (part) {
      // What ran before (system writes, the previous transaction's end) is not this transaction's.
      state.takeReads();
      state.unnotedAccount = coinbase;
    }
    hooks.attach(allOf([...tracers.tracers(), extraTracer]), tx.getSenderAddress().bytes);
  };
  const afterTx = async (result: RunTxResult & { transaction?: TypedTransaction }, resolve?: () => void) => {
    try {
      hooks.attach(null);
      const c = current;
      if (!c) return;
      c.tracers.detach();
      txs.push({ hash: c.tx.hash(), output: result.execResult.returnValue, ...(await c.tracers.finish()) });
      extras.push(c.extra?.finish?.());
      if (part) {
        const noted = { reads: state.takeReads(), writes: state.changedKeysSince(c.mark) };
        access.push(noted);
        part.board?.post(part.indices[access.length - 1] ?? index, noted);
        state.unnotedAccount = null;
      }
      current = null;
      index++;
    } finally {
      resolve?.();
    }
  };
  vm.events.on('beforeTx', beforeTx);
  vm.events.on('afterTx', afterTx);
  try {
    if (common.hardforkBlock(Hardfork.Dao) === block.header.number) {
      if (part) throw new PartConflict(0, new Error('the DAO fork block is replayed whole'));
      // The DAO fork's irregular state change is applied inside runBlock only.
      await runBlock(vm, {
        block,
        generate: true,
        skipBlockValidation: true,
        skipHeaderValidation: true,
        skipHardForkValidation: true,
        setHardfork: false,
      });
    } else {
      await runTransactions(vm, block, part ? new Set(part.indices) : null, part?.board);
    }
  } finally {
    // A transaction stopped mid-way (its trace grew past the answer-size bound, say) never reached
    // afterTx: unwrap the tracer from this machine's EVM before the machine is reused.
    (current as { tracers: ParityTracers } | null)?.tracers.detach();
    vm.events.off('beforeTx', beforeTx);
    vm.events.off('afterTx', afterTx);
    evm.events.off('beforeMessage', enterFrame);
    evm.events.off('afterMessage', leaveFrame);
    hooks.attach(null);
    releaseMachine(machine);
  }
  return { block, txs, extra: extras, access };
}
