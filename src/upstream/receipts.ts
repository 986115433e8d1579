import type { Block } from '@ethereumjs/block';
import { Hardfork } from '@ethereumjs/common';
import { type RenderedReceipts, renderReceipts } from '../wire/receipts.ts';
import { LogsBloom, type ReceiptLog, type TxReceipt } from '../wire/txReceipt.ts';
import { Fields, quote, Subject, sameBytes, show } from './answer.ts';
import { orderedTrieRoot } from './trie.ts';

/**
 * A block's receipts as an upstream answers them (eth_getBlockReceipts, or the
 * eth_getTransactionReceipt answers of its transactions in order) → their consensus encodings and
 * the JSON this service serves for them, rendered by src/wire/receipts.ts from `block` and the
 * receipts' consensus fields exactly as for an imported block (same bytes). Checked:
 *
 * - one receipt per transaction, in order: each one's `transactionHash`, `transactionIndex` and
 *   `blockHash` (and `blockNumber`, `type`, and each log's own block, transaction and block-wide
 *   `logIndex`, when given) are its transaction's;
 * - each receipt's `logsBloom` is the bloom of its logs, `cumulativeGasUsed` never falls;
 * - the receipts trie root is the header's `receiptsRoot`, the blooms together are its
 *   `logsBloom`, and the last cumulative gas is its `gasUsed`.
 *
 * The outcome is `status` from Byzantium on and `root` before, as the fork's receipts hold. The other
 * fields of an answer (`gasUsed`, `effectiveGasPrice`, `from`, `to`, `contractAddress`, blob fields,
 * log timestamps) are not read: they follow from the block and the consensus fields, and the JSON
 * served is rendered from those, so an upstream's own rendering of them cannot reach a client.
 */
export async function receiptsFromRpc(block: Block, json: unknown): Promise<RenderedReceipts> {
  const header = block.header;
  const blockHash = block.hash();
  const subject = new Subject(`block ${header.number} (${show(blockHash)})`);
  if (!Array.isArray(json)) throw subject.fail(`receipts are not a list: ${quote(json)}`);
  if (json.length !== block.transactions.length) {
    throw subject.mismatch('receipt count', json.length, 'its transaction count', block.transactions.length);
  }
  const byzantium = header.common.gteHardfork(Hardfork.Byzantium);
  let logIndex = 0;
  let previousCumulative = 0n;
  const receipts = block.transactions.map((tx, i): TxReceipt => {
    const r = Fields.of(json[i], `receipts[${i}]`, subject);
    const txHash = tx.hash();
    const given = r.data('transactionHash', 32);
    if (!sameBytes(given, txHash)) {
      throw subject.mismatch(`receipts[${i}].transactionHash`, given, `transaction ${i}'s hash`, txHash);
    }
    const index = r.quantity('transactionIndex', 64);
    if (index !== BigInt(i))
      throw subject.mismatch(`receipts[${i}].transactionIndex`, index, 'its place', BigInt(i));
    const inBlock = r.data('blockHash', 32);
    if (!sameBytes(inBlock, blockHash)) {
      throw subject.mismatch(`receipts[${i}].blockHash`, inBlock, "the block's hash", blockHash);
    }
    r.expectQuantity('blockNumber', header.number, "the block's number");
    r.expectQuantity('type', BigInt(tx.type), `transaction ${i}'s type`, 8);
    const cumulativeBlockGasUsed = r.quantity('cumulativeGasUsed', 64);
    if (cumulativeBlockGasUsed < previousCumulative) {
      throw subject.mismatch(
        `receipts[${i}].cumulativeGasUsed`,
        cumulativeBlockGasUsed,
        "at least the previous receipt's",
        previousCumulative,
      );
    }
    previousCumulative = cumulativeBlockGasUsed;
    const bloom = new LogsBloom();
    const logs = r.objects('logs').map((log): ReceiptLog => {
      const address = log.data('address', 20);
      const topics = log.dataList('topics', 32);
      if (topics.length > 4)
        throw subject.fail(`${log.path}.topics has ${topics.length} topics, more than 4`);
      const data = log.data('data');
      log.expectData('blockHash', blockHash, "the block's hash");
      log.expectQuantity('blockNumber', header.number, "the block's number");
      log.expectData('transactionHash', txHash, `transaction ${i}'s hash`);
      log.expectQuantity('transactionIndex', BigInt(i), "its receipt's place");
      log.expectQuantity('logIndex', BigInt(logIndex), "its place among the block's logs");
      if (log.optionalBoolean('removed') === true)
        throw subject.fail(`${log.path}.removed is true in a block's receipt`);
      logIndex++;
      bloom.add(address);
      for (const topic of topics) bloom.add(topic);
      return [address, topics, data];
    });
    const bitvector = r.data('logsBloom', 256);
    if (!sameBytes(bitvector, bloom.bitvector)) {
      throw subject.mismatch(
        `receipts[${i}] logs bloom`,
        bitvector,
        'the bloom of its logs',
        bloom.bitvector,
      );
    }
    if (!byzantium) return { stateRoot: r.data('root', 32), cumulativeBlockGasUsed, bitvector, logs };
    const status = r.quantity('status', 8);
    if (status > 1n) throw subject.fail(`receipts[${i}].status is ${show(status)}, not 0x0 or 0x1`);
    return { status: status === 1n ? 1 : 0, cumulativeBlockGasUsed, bitvector, logs };
  });
  const rendered = renderReceipts(block, receipts);
  const root = await orderedTrieRoot(rendered.encoded);
  if (!sameBytes(root, header.receiptTrie)) {
    throw subject.mismatch('receipts root', root, "the header's", header.receiptTrie);
  }
  const blockBloom = new LogsBloom();
  for (const receipt of receipts) blockBloom.or(receipt.bitvector);
  if (!sameBytes(blockBloom.bitvector, header.logsBloom)) {
    throw subject.mismatch("receipts' logs bloom", blockBloom.bitvector, "the header's", header.logsBloom);
  }
  if (previousCumulative !== header.gasUsed) {
    throw subject.mismatch("receipts' gas used", previousCumulative, "the header's", header.gasUsed);
  }
  return rendered;
}
