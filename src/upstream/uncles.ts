import { Unavailable } from '../core/errors.ts';
import { quantityToHex } from '../primitives/hex.ts';
import type { RpcCall, UpstreamReader } from './client.ts';

/**
 * The uncle headers each block answer lists (pre-merge blocks), which its sha3Uncles commits to and
 * its body carries, for blockFromRpc to check: one batch of eth_getUncleByBlockHashAndIndex for all
 * the blocks; undefined for a block that lists none. An upstream that cannot give one cannot give
 * the block.
 */
export async function fetchUncleHeaders(
  client: UpstreamReader,
  blocks: ReadonlyArray<Record<string, unknown>>,
): Promise<Array<unknown[] | undefined>> {
  const calls: RpcCall[] = [];
  const counts = blocks.map((json) => {
    const listed = Array.isArray(json.uncles) ? json.uncles.length : 0;
    for (let i = 0; i < listed; i++)
      calls.push({ method: 'eth_getUncleByBlockHashAndIndex', params: [json.hash, quantityToHex(i)] });
    return listed;
  });
  if (calls.length === 0) return blocks.map(() => undefined);
  const outcomes = await client.batch(calls);
  let next = 0;
  return counts.map((count, b) => {
    if (count === 0) return undefined;
    const headers = outcomes.slice(next, next + count).map((o, i) => {
      if (!o.ok || o.result === null)
        throw new Unavailable(`the upstream did not give uncle ${i} of block ${String(blocks[b]?.hash)}`);
      return o.result;
    });
    next += count;
    return headers;
  });
}
