import { type Block, createBlockFromBytesArray } from '@ethereumjs/block';
import { RLP } from '@ethereumjs/rlp';
import { TransactionType, type TypedTransaction } from '@ethereumjs/tx';
import { bigIntToUnpaddedBytes, KECCAK256_RLP_ARRAY } from '@ethereumjs/util';
import { keccak256 } from '../primitives/keccak.ts';
import { building, type Fields, sameBytes, show } from './answer.ts';
import { type BlockAsked, type CheckedHeader, type ForkRules, readHeader } from './header.ts';
import { txFromRpc } from './transaction.ts';
import { orderedTrieRoot } from './trie.ts';

/**
 * A full block answer (eth_getBlockByHash/ByNumber with `true`) as an ethereumjs Block, checked
 * against its own header and that header against its hash:
 *
 * - keccak(header RLP) is the answer's `hash`, and the block asked for (`asked`: hash or number);
 * - each transaction, built from its fields, hashes to its `hash`; its signer is its `from`; its
 *   `blockHash`, `blockNumber` and `transactionIndex`, when given, are this block's and its place;
 * - the transactions root, and from Shanghai on the withdrawals root, are the header's;
 * - uncles: with `uncleHeaders` (eth_getUncleByBlockHashAndIndex answers, index for index) each
 *   hashes to the hash the block lists and together they hash to `sha3Uncles`; without them the
 *   block can only be checked to have none (no uncle hashes listed, `sha3Uncles` the empty list's).
 *
 * Not checked here: the header's rules against its parent, and what only execution shows (gas
 * used, receipts, bloom, state root, requests hash); `size` and `totalDifficulty` are not read
 * (a block served from this one is rendered from it). The Block is decoded from the checked
 * consensus encoding by the same decoder as an imported block, so it is byte for byte the block the
 * answer's hash commits to; its transactions keep their recovered senders.
 */
export async function blockFromRpc(
  json: unknown,
  rules: ForkRules,
  asked?: BlockAsked,
  uncleHeaders?: readonly unknown[],
): Promise<Block> {
  const checked = readHeader(json, rules, asked, (what) => `block ${what}`);
  const { header, values, fields, subject, common } = checked;
  const hash = header.hash();
  const txs = fields.array('transactions').map((item, i) => {
    if (typeof item === 'string') {
      throw subject.fail(
        `transactions[${i}] is a hash, not a transaction object: the block must be asked for with full transactions`,
      );
    }
    const tx = fields.child(item, `transactions[${i}]`);
    const built = txFromRpc(tx, common, i);
    tx.expectData('blockHash', hash, "the block's hash");
    tx.expectQuantity('blockNumber', header.number, "the block's number");
    tx.expectQuantity('transactionIndex', BigInt(i), 'its index in the block');
    return { built, from: tx.data('from', 20) };
  });
  const uncles = checkUncles(checked, rules, uncleHeaders);
  const withdrawals = withdrawalValues(checked);
  const block = building(subject, 'block', () =>
    createBlockFromBytesArray(
      // biome-ignore lint/suspicious/noExplicitAny: the block decoder takes the nested RLP arrays untyped
      [values, txs.map(({ built }) => bodyData(built)), uncles, ...(withdrawals ? [withdrawals] : [])] as any,
      { common },
    ),
  );
  const txRoot = await orderedTrieRoot(block.transactions.map((tx) => tx.serialize()));
  if (!sameBytes(txRoot, header.transactionsTrie)) {
    throw subject.mismatch('transactions root', txRoot, "the header's", header.transactionsTrie);
  }
  if (withdrawals && header.withdrawalsRoot) {
    const root = await orderedTrieRoot(withdrawals.map((w) => RLP.encode(w)));
    if (!sameBytes(root, header.withdrawalsRoot)) {
      throw subject.mismatch('withdrawals root', root, "the header's", header.withdrawalsRoot);
    }
  }
  // Last, as recovering senders is the costly part; the Block's transactions are frozen, so each keeps
  // its sender for the receipts rendered from it.
  block.transactions.forEach((tx, i) => {
    const sender = building(subject, `transaction ${i} sender`, () => tx.getSenderAddress().bytes);
    const from = txs[i]?.from ?? new Uint8Array();
    if (!sameBytes(sender, from)) {
      throw subject.mismatch(
        `transaction ${i} sender (recovered from its signature)`,
        sender,
        "the answer's from",
        from,
      );
    }
  });
  return block;
}

/** A transaction as a block body holds it: a legacy one as its field list, a typed one as its envelope. */
function bodyData(tx: TypedTransaction): Uint8Array | Uint8Array[] {
  return tx.type === TransactionType.Legacy ? (tx.raw() as Uint8Array[]) : tx.serialize();
}

/** The uncle headers' field values, each checked against the hash the block lists for it. */
function checkUncles(
  { header, fields, subject }: CheckedHeader,
  rules: ForkRules,
  uncleHeaders: readonly unknown[] | undefined,
): Uint8Array[][] {
  const listed = fields.dataList('uncles', 32);
  if (uncleHeaders === undefined) {
    if (listed.length > 0 || !sameBytes(header.uncleHash, KECCAK256_RLP_ARRAY)) {
      throw subject.fail(
        `uncles hash ${show(header.uncleHash)} (${listed.length} uncles listed) is not the empty list's ${show(KECCAK256_RLP_ARRAY)}, and no uncle headers were given to check its uncles`,
      );
    }
    return [];
  }
  if (uncleHeaders.length !== listed.length) {
    throw subject.mismatch(
      'uncle headers given:',
      uncleHeaders.length,
      'the number of uncles it lists,',
      listed.length,
    );
  }
  const uncles = uncleHeaders.map(
    (json, i) => readHeader(json, rules, listed[i], (what) => `uncle ${i} ${what} of ${subject.name}`).values,
  );
  const computed = keccak256(RLP.encode(uncles));
  if (!sameBytes(computed, header.uncleHash)) {
    throw subject.mismatch('uncles hash', computed, "the header's", header.uncleHash);
  }
  return uncles;
}

/** The withdrawals as RLP field lists, from Shanghai on (before it an answer must list none). */
function withdrawalValues({ header, fields, subject }: CheckedHeader): Uint8Array[][] | undefined {
  if (!header.common.isActivatedEIP(4895)) {
    if (fields.has('withdrawals') && fields.array('withdrawals').length > 0) {
      throw subject.fail('lists withdrawals, which its fork does not have');
    }
    return undefined;
  }
  return fields
    .objects('withdrawals')
    .map((w: Fields) => [
      bigIntToUnpaddedBytes(w.quantity('index', 64)),
      bigIntToUnpaddedBytes(w.quantity('validatorIndex', 64)),
      w.data('address', 20),
      bigIntToUnpaddedBytes(w.quantity('amount', 64)),
    ]);
}
