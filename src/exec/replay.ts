import type { Block } from '@ethereumjs/block';
import type { ChainReader } from '../chain/reader.ts';
import type { TraceTypes } from '../core/call.ts';
import { NotFound, RequestFailed } from '../core/errors.ts';
import { toHex } from '../primitives/hex.ts';
import { type EvmReplayedTx, replayOnEvm } from './evmReplay.ts';
import type { StateAccess } from './sessionTypes.ts';
import type { ConflictBoard } from './speculation.ts';

/** One mined transaction, re-executed and traced. */
export type ReplayedTx = EvmReplayedTx;

export interface ReplayedBlock {
  block: Block;
  txs: ReplayedTx[];
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
 * Re-executes a block's transactions exactly as they ran (fees charged, system calls included) on
 * the state after its parent, on the EVM of src/evm (src/exec/evmReplay.ts), tracing each
 * transaction on its own. The system calls of EIP-4788/2935 run but are never traced.
 */
export async function replayBlock(
  chain: ChainReader,
  blockHash: Uint8Array,
  types: TraceTypes,
  part?: ReplayPart,
): Promise<ReplayedBlock> {
  const block = await chain.block(blockHash);
  if (!block) throw new NotFound(`block ${toHex(blockHash)} not found`);
  if (block.header.number === 0n) throw new RequestFailed('genesis is not traceable');
  return { block, ...(await replayOnEvm(chain, block, types, part)) };
}
