import { type Block, createBlock } from '@ethereumjs/block';
import { Hardfork } from '@ethereumjs/common';
import type { TypedTransaction } from '@ethereumjs/tx';
import { nextBaseFee, nextExcessBlobGas } from '../evm/block.ts';
import { EMPTY_TRIE_ROOT, orderedTrieRoot } from '../evm/trie.ts';
import { keccak256 } from '../primitives/keccak.ts';
import { renderReceipts } from '../wire/receipts.ts';
import type { ChainWriter } from './chainWriter.ts';

const DAO_EXTRA_DATA = new TextEncoder().encode('dao-hard-fork');

/** EIP-4844's blob gas per blob. */
const GAS_PER_BLOB = 131072n;

/**
 * Mines the transactions into one new block on the writer's head (a dev chain): executes them
 * exactly as an imported block is executed and stores the block the same way; the header's roots,
 * gas used and bloom come from the execution. The transactions must be valid on the head state; a
 * block that fails leaves the chain as it was.
 */
export async function mineBlock(
  writer: ChainWriter,
  txs: TypedTransaction[],
  timestamp: bigint,
): Promise<Block> {
  const parent = writer.headHeader;
  if (!parent) throw new Error('mining needs a genesis block');
  const common = writer.common;
  const number = parent.number + 1n;
  const time = timestamp > parent.timestamp ? timestamp : parent.timestamp + 1n;
  common.setHardforkBy({ blockNumber: number, timestamp: time });
  const has = (eip: number) => common.isActivatedEIP(eip);
  const header: Record<string, unknown> = {
    parentHash: parent.hash(),
    number,
    timestamp: time,
    gasLimit: parent.gasLimit,
    coinbase: parent.coinbase,
    difficulty: 0n,
    // Dev chains have no beacon chain: the randomness is derived from the parent, as anvil does.
    mixHash: keccak256(parent.hash()),
    nonce: new Uint8Array(8),
  };
  // The DAO fork's rule for the ten blocks from it (a chain with daoForkSupport), as geth's miner.
  const dao = common.hardforkBlock(Hardfork.Dao);
  if (dao !== null && number >= dao && number - dao < 10n) header.extraData = DAO_EXTRA_DATA;
  const rules = writer.evmFork().rules;
  if (has(1559))
    header.baseFeePerGas = nextBaseFee(parent.gasLimit, parent.gasUsed, parent.baseFeePerGas ?? 0n);
  if (has(4844)) {
    header.excessBlobGas = nextExcessBlobGas(
      rules,
      parent.excessBlobGas ?? 0n,
      parent.blobGasUsed ?? 0n,
      parent.baseFeePerGas ?? 0n,
    );
    header.blobGasUsed = txs.reduce(
      (sum, tx) =>
        sum + ('blobVersionedHashes' in tx ? BigInt(tx.blobVersionedHashes.length) * GAS_PER_BLOB : 0n),
      0n,
    );
  }
  if (has(4788)) header.parentBeaconBlockRoot = new Uint8Array(32);
  const withdrawals = has(4895) ? { withdrawals: [] } : {};
  const draft = createBlock(
    { header, transactions: txs, ...withdrawals },
    { common, skipConsensusFormatValidation: true },
  );
  try {
    const result = await writer.execute(draft);
    const sealed = createBlock(
      {
        header: {
          ...header,
          stateRoot: result.stateRoot,
          receiptTrie: result.receiptsRoot,
          logsBloom: result.logsBloom,
          gasUsed: result.gasUsed,
          transactionsTrie: orderedTrieRoot(txs.map((tx) => tx.serialize())),
          ...(result.requestsHash ? { requestsHash: result.requestsHash } : {}),
          ...(has(4895) ? { withdrawalsRoot: EMPTY_TRIE_ROOT } : {}),
        },
        transactions: txs,
        ...withdrawals,
      },
      { common, skipConsensusFormatValidation: true },
    );
    await writer.commit(
      sealed,
      result.stateRoot,
      renderReceipts(sealed, result.receipts, result.encodedReceipts),
    );
    return sealed;
  } catch (e) {
    await writer.discard();
    throw e;
  }
}
