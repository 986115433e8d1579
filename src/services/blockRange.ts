import type { ChainReader } from '../chain/reader.ts';
import type { BlockSelector } from '../core/blockSelector.ts';
import { InvalidArgument, LimitExceeded, refusedBy } from '../core/errors.ts';
import { quantityToHex } from '../primitives/hex.ts';

/**
 * The blocks a range query (eth_getLogs, trace_filter) scans: its ends resolved against the head
 * (no start is block 0, no end the head), refused in geth's words when reversed or past the head,
 * and, when wider than `max` blocks, refused under `limit` with the widest range that is served
 * from the same start (log-paging tools read it out of the message).
 */
export async function blockRange(
  chain: ChainReader,
  ends: { fromBlock?: BlockSelector; toBlock?: BlockSelector },
  widest: { max: number; limit: string },
): Promise<{ from: bigint; to: bigint }> {
  const head = (await chain.head()).number;
  const from = ends.fromBlock ? await chain.numberOf(ends.fromBlock, head) : 0n;
  const to = ends.toBlock ? await chain.numberOf(ends.toBlock, head) : head;
  if (from > to) throw new InvalidArgument('invalid block range params');
  if (to > head) throw new InvalidArgument('block range extends beyond current head block');
  const max = BigInt(widest.max);
  if (to - from + 1n > max) {
    throw refusedBy(
      widest.limit,
      new LimitExceeded(
        `query exceeds max block range ${max}. Try with this block range [${quantityToHex(from)}, ${quantityToHex(from + max - 1n)}].`,
      ),
    );
  }
  return { from, to };
}
