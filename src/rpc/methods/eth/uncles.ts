import type { Block } from '@ethereumjs/block';
import type { BlockSelector } from '../../../core/blockSelector.ts';
import { quantityToHex } from '../../../primitives/hex.ts';
import { formatUncle } from '../../../wire/block.ts';
import { blockSelector, hash, required, smallQuantity } from '../../params.ts';
import type { Services } from '../../services.ts';
import { method } from '../define.ts';

// Uncles exist only before the merge; a wallet or indexer walking old blocks still asks for them, and
// an ethtrace serving as another's upstream (docs/upstream.md) is asked for them to check a block's
// sha3Uncles. A block the chain does not have answers null, as for every block read; an index past
// the block's uncles too (geth).

async function blockBySelector(services: Services, selector: BlockSelector): Promise<Block | null> {
  const ref = await services.chain.resolve(selector);
  return ref && services.chain.block(ref.hash);
}

function count(block: Block | null) {
  return block && quantityToHex(block.uncleHeaders.length);
}

function uncle(block: Block | null, index: number) {
  const header = block?.uncleHeaders[index];
  return header ? formatUncle(header) : null;
}

export const eth_getUncleCountByBlockHash = method([required(hash)], async ([blockHash], { services }) =>
  count(await services.chain.block(blockHash)),
);

export const eth_getUncleCountByBlockNumber = method(
  [required(blockSelector)],
  async ([selector], { services }) => count(await blockBySelector(services, selector)),
);

export const eth_getUncleByBlockHashAndIndex = method(
  [required(hash), required(smallQuantity)],
  async ([blockHash, index], { services }) => uncle(await services.chain.block(blockHash), index),
);

export const eth_getUncleByBlockNumberAndIndex = method(
  [required(blockSelector), required(smallQuantity)],
  async ([selector, index], { services }) => uncle(await blockBySelector(services, selector), index),
);
