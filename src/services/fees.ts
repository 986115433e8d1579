import type { BlockHeader } from '@ethereumjs/block';
import { RLP } from '@ethereumjs/rlp';
import { bytesToBigInt } from '@ethereumjs/util';
import type { ChainReader } from '../chain/reader.ts';
import type { BlockSelector } from '../core/blockSelector.ts';
import { RequestFailed } from '../core/errors.ts';
import { effectiveGasPrice } from '../primitives/fees.ts';
import { bytesKey } from '../primitives/hex.ts';
import { LruCache } from '../primitives/lru.ts';

// The gas-price oracle is geth's (eth/gasprice, FullNodeGPO defaults): the 3 lowest tips of each of the
// last 20 blocks, the 60th percentile of them, capped at 500 gwei; tips under 2 wei and the block
// producer's own transactions are not samples.
const ORACLE_BLOCKS = 20;
const ORACLE_SAMPLES_PER_BLOCK = 3;
const ORACLE_PERCENTILE = 60;
const ORACLE_MAX_PRICE = 500n * 10n ** 9n;
const ORACLE_IGNORE_PRICE = 2n;
// What an empty block (or one holding only its producer's transactions) contributes. geth uses its
// previous answer there, which makes the result depend on which requests came before; a constant
// (geth's starting value, its default --miner.gasprice of 0.001 gwei) keeps the answer a function of
// the chain alone.
const ORACLE_EMPTY_BLOCK_TIP = 10n ** 6n;

// EIP-1559's INITIAL_BASE_FEE, the London block's base fee.
const INITIAL_BASE_FEE = 1_000_000_000n;

// geth's bound on reward percentiles per eth_feeHistory request.
export const MAX_REWARD_PERCENTILES = 100;

// Sorted tips of a block for fee-history rewards. Wallets ask for the last few blocks again and again,
// and a full-width request covers 1,024 blocks; entries are small (two numbers per transaction).
const TIPS_CACHE_SIZE = 1024;

/** The fee-history answer in domain terms, arrays in block order (the base-fee arrays one longer). */
export interface FeeHistory {
  oldestBlock: bigint;
  /** Only when reward percentiles were asked for. */
  reward?: bigint[][];
  baseFeePerGas: bigint[];
  gasUsedRatio: number[];
  baseFeePerBlobGas: bigint[];
  blobGasUsedRatio: number[];
}

interface TxTip {
  tip: bigint;
  gasUsed: number;
}

/**
 * Fee-market views of the stored chain: next-block base fees, eth_feeHistory, and a gas-price oracle.
 * Everything is derived from headers, transactions and receipts, so equal chains give equal answers.
 */
export class FeeService {
  private readonly tips = new LruCache<string, TxTip[]>(TIPS_CACHE_SIZE);
  private suggestion: { head: string; tip: bigint } | null = null;

  constructor(private readonly chain: ChainReader) {}

  /** Base fee of the block after `header`: 1 gwei at the London block, null before London. */
  nextBaseFee(header: BlockHeader): bigint | null {
    const next = this.chain.commonAt(header.number + 1n, header.timestamp);
    if (!next.isActivatedEIP(1559)) return null;
    if (!header.common.isActivatedEIP(1559)) return INITIAL_BASE_FEE;
    return header.calcNextBaseFee();
  }

  /**
   * Blob base fee of the block after `header` (its excess blob gas follows from this header's, with
   * EIP-7918's reserve price from Osaka on), null before Cancun. Like geth's fee history, the child is
   * taken to be in the header's own fork, since its timestamp is not known yet.
   */
  nextBlobBaseFee(header: BlockHeader): bigint | null {
    if (header.excessBlobGas === undefined) return null;
    return header.calcNextBlobGasPrice(header.common);
  }

  async feeHistory(
    blockCount: number,
    newest: BlockSelector,
    percentiles: readonly number[] | undefined,
    maxBlocks: number,
  ): Promise<FeeHistory> {
    const wantRewards = percentiles !== undefined && percentiles.length > 0;
    if (blockCount < 1) {
      return {
        oldestBlock: 0n,
        baseFeePerGas: [],
        gasUsedRatio: [],
        baseFeePerBlobGas: [],
        blobGasUsedRatio: [],
      };
    }
    const last = await this.newestNumber(newest);
    // Like geth and reth, a request wider than the limit (or than the chain) is answered for the
    // newest blocks it names rather than refused: the spec lets the answer cover less than was asked.
    const count = BigInt(Math.min(blockCount, maxBlocks));
    const oldest = last + 1n - count > 0n ? last + 1n - count : 0n;

    const history: FeeHistory = {
      oldestBlock: oldest,
      baseFeePerGas: [],
      gasUsedRatio: [],
      baseFeePerBlobGas: [],
      blobGasUsedRatio: [],
    };
    const reward: bigint[][] = [];
    let newestHeader: BlockHeader | undefined;
    for (let n = oldest; n <= last; n++) {
      const hash = await this.chain.store.getCanonicalHash(n);
      const header = hash && (await this.chain.header(hash));
      if (!hash || !header) throw new RequestFailed(`header not found for block ${n}`);
      history.baseFeePerGas.push(header.baseFeePerGas ?? 0n);
      history.gasUsedRatio.push(
        header.gasLimit === 0n ? 0 : Number(header.gasUsed) / Number(header.gasLimit),
      );
      history.baseFeePerBlobGas.push(header.excessBlobGas === undefined ? 0n : header.getBlobGasPrice());
      history.blobGasUsedRatio.push(blobGasUsedRatio(header));
      if (wantRewards) reward.push(rewardsAt(await this.blockTips(hash, header), header, percentiles));
      newestHeader = header;
    }
    if (newestHeader) {
      history.baseFeePerGas.push(this.nextBaseFee(newestHeader) ?? 0n);
      history.baseFeePerBlobGas.push(this.nextBlobBaseFee(newestHeader) ?? 0n);
    }
    if (wantRewards) history.reward = reward;
    return history;
  }

  /** The tip the oracle suggests for a transaction to be included soon (eth_maxPriorityFeePerGas). */
  async suggestTipCap(): Promise<bigint> {
    const head = await this.chain.head();
    const headKey = bytesKey(head.hash);
    if (this.suggestion?.head === headKey) return this.suggestion.tip;

    const samples: bigint[] = [];
    let budget = ORACLE_BLOCKS;
    let checked = 0;
    for (let n = head.number; checked < budget && n > 0n; n--) {
      checked++;
      let tips = await this.lowestTips(n);
      if (tips.length === 0) tips = [ORACLE_EMPTY_BLOCK_TIP];
      // A block that yields a single sample says little: look one block further back, up to twice
      // the usual number of blocks (geth's rule).
      if (tips.length === 1 && samples.length + 1 + (budget - checked) < ORACLE_BLOCKS * 2 && n > 1n)
        budget++;
      samples.push(...tips);
    }
    samples.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
    let tip = samples[Math.floor(((samples.length - 1) * ORACLE_PERCENTILE) / 100)] ?? ORACLE_EMPTY_BLOCK_TIP;
    if (tip > ORACLE_MAX_PRICE) tip = ORACLE_MAX_PRICE;
    this.suggestion = { head: headKey, tip };
    return tip;
  }

  private async newestNumber(selector: BlockSelector): Promise<bigint> {
    const head = (await this.chain.head()).number;
    if (selector.kind === 'number') {
      if (selector.number > head) {
        throw new RequestFailed(`request beyond head block: requested ${selector.number}, head ${head}`);
      }
      return selector.number;
    }
    const ref = await this.chain.resolve(selector);
    if (!ref) throw new RequestFailed('header not found');
    return ref.number;
  }

  /** Up to three of the block's lowest tips that count as samples, ascending. */
  private async lowestTips(number: bigint): Promise<bigint[]> {
    const hash = await this.chain.store.getCanonicalHash(number);
    const block = hash && (await this.chain.block(hash));
    if (!block) throw new RequestFailed(`block ${number} not found`);
    const baseFee = block.header.baseFeePerGas;
    const sorted = block.transactions
      .map((tx) => ({ tx, tip: effectiveGasPrice(tx, baseFee) - (baseFee ?? 0n) }))
      .sort((a, b) => (a.tip < b.tip ? -1 : a.tip > b.tip ? 1 : 0));
    const tips: bigint[] = [];
    for (const { tx, tip } of sorted) {
      if (tip < ORACLE_IGNORE_PRICE) continue;
      if (tx.getSenderAddress().equals(block.header.coinbase)) continue;
      tips.push(tip);
      if (tips.length >= ORACLE_SAMPLES_PER_BLOCK) break;
    }
    return tips;
  }

  /** The block's transactions as (effective tip, gas used), ascending by tip. */
  private async blockTips(hash: Uint8Array, header: BlockHeader): Promise<TxTip[]> {
    const key = bytesKey(hash);
    const cached = this.tips.get(key);
    if (cached) return cached;
    const [block, receipts] = await Promise.all([this.chain.block(hash), this.chain.store.getReceipts(hash)]);
    if (!block || !receipts) throw new RequestFailed(`block ${header.number} not found`);
    const baseFee = header.baseFeePerGas;
    let previous = 0n;
    const tips = block.transactions.map((tx, i) => {
      const receipt = receipts[i];
      if (!receipt) throw new Error(`no receipt for transaction ${i} of block ${header.number}`);
      const cumulative = cumulativeGasUsed(receipt);
      const gasUsed = Number(cumulative - previous);
      previous = cumulative;
      return { tip: effectiveGasPrice(tx, baseFee) - (baseFee ?? 0n), gasUsed };
    });
    // Array.prototype.sort is stable, as geth's SortStableFunc: equal tips keep block order.
    tips.sort((a, b) => (a.tip < b.tip ? -1 : a.tip > b.tip ? 1 : 0));
    this.tips.set(key, tips);
    return tips;
  }
}

/**
 * geth's percentile walk: transactions ascending by tip, each weighing its gas used; a percentile
 * takes the tip of the transaction at which the running gas reaches that share of the block's gas.
 */
function rewardsAt(tips: TxTip[], header: BlockHeader, percentiles: readonly number[]): bigint[] {
  const first = tips[0];
  if (!first) return percentiles.map(() => 0n);
  const blockGas = Number(header.gasUsed);
  let index = 0;
  let sum = first.gasUsed;
  return percentiles.map((p) => {
    const threshold = Math.trunc((blockGas * p) / 100);
    while (sum < threshold && index < tips.length - 1) {
      index++;
      sum += tips[index]?.gasUsed ?? 0;
    }
    return tips[index]?.tip ?? 0n;
  });
}

function blobGasUsedRatio(header: BlockHeader): number {
  if (header.blobGasUsed === undefined) return 0;
  const max = header.common.getBlobGasSchedule().maxBlobGasPerBlock;
  return max === 0n ? 0 : Number(header.blobGasUsed) / Number(max);
}

/** A consensus receipt's cumulative gas: field 1 of the RLP list, after the type byte of typed ones. */
function cumulativeGasUsed(encoded: Uint8Array): bigint {
  const first = encoded[0] ?? 0;
  const fields = RLP.decode(first >= 0xc0 ? encoded : encoded.subarray(1)) as Uint8Array[];
  return bytesToBigInt(fields[1] ?? new Uint8Array());
}
