import type { Block, BlockHeader } from '@ethereumjs/block';
import { type Common, Hardfork } from '@ethereumjs/common';
import { equalsBytes } from '@ethereumjs/util';
import type { BlockResult } from './chainWriter.ts';

/** A failed check: its name, what the header has and what was expected. */
export type CheckFailure = (check: string, have: unknown, want: unknown) => Error;

/**
 * The header rules that relate a block to its parent (the seal of proof-of-work blocks is not
 * checked). `devNode`: a chain made by a dev node (imported without state-root checks), which may
 * mine block 1 with its genesis base fee unchanged, as anvil does, instead of the EIP-1559 formula.
 */
export function checkHeaderAgainstParent(
  block: Block,
  parent: BlockHeader,
  common: Common,
  devNode: boolean,
  fail: CheckFailure,
): void {
  const header = block.header;
  if (!equalsBytes(header.parentHash, parent.hash()))
    throw fail('parent hash', header.parentHash, parent.hash());
  if (header.timestamp <= parent.timestamp)
    throw fail('timestamp', header.timestamp, `> ${parent.timestamp}`);
  try {
    header.validateGasLimit(parent);
  } catch (e) {
    throw fail('gas limit', header.gasLimit, (e as Error).message.split(' (')[0]);
  }
  if (common.isActivatedEIP(1559)) {
    const londonHere = common.hardforkBlock(Hardfork.London) === header.number;
    const want = londonHere ? BigInt(common.param('initialBaseFee')) : parent.calcNextBaseFee();
    const devNodeFirstBlock =
      devNode && header.number === 1n && header.baseFeePerGas === parent.baseFeePerGas;
    if (header.baseFeePerGas !== want && !devNodeFirstBlock)
      throw fail('base fee', header.baseFeePerGas, want);
  }
  if (!common.gteHardfork(Hardfork.Paris)) {
    const want = header.ethashCanonicalDifficulty(parent);
    if (header.difficulty !== want) throw fail('difficulty', header.difficulty, want);
  }
}

/** What executing the block computed against what its header says. */
export function checkExecution(
  header: BlockHeader,
  result: BlockResult,
  verifyStateRoot: boolean,
  fail: CheckFailure,
): void {
  if (result.gasUsed !== header.gasUsed) throw fail('gas used', header.gasUsed, result.gasUsed);
  if (!equalsBytes(result.receiptsRoot, header.receiptTrie))
    throw fail('receipts root', header.receiptTrie, result.receiptsRoot);
  if (!equalsBytes(result.logsBloom, header.logsBloom))
    throw fail('logs bloom', header.logsBloom, result.logsBloom);
  if (
    result.requestsHash !== undefined &&
    header.requestsHash !== undefined &&
    !equalsBytes(result.requestsHash, header.requestsHash)
  ) {
    throw fail('requests hash', header.requestsHash, result.requestsHash);
  }
  if (verifyStateRoot && !equalsBytes(result.stateRoot, header.stateRoot))
    throw fail('state root', header.stateRoot, result.stateRoot);
}
