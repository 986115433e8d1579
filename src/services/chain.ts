import {
  type Block,
  type BlockHeader,
  createBlockFromBytesArray,
  createBlockHeaderFromRLP,
} from '@ethereumjs/block';
import type { Common } from '@ethereumjs/common';
import { RLP } from '@ethereumjs/rlp';
import { bytesToBigInt, equalsBytes } from '@ethereumjs/util';
import { type ChainSpec, makeCommon } from '../chain/genesis.ts';
import { ServerError } from '../rpc/errors.ts';
import type { BlockSelector } from '../rpc/params.ts';
import type { BlockRef, ChainStore } from '../store/types.ts';
import { LruCache } from './lru.ts';

// Decoded blocks are the unit most methods work on; a few hundred cover the hot head of the chain
// and the blocks a client walks through, at a few MB.
const BLOCK_CACHE_SIZE = 256;
const HEADER_CACHE_SIZE = 4096;

const HEADER_NUMBER = 8;
const HEADER_TIMESTAMP = 11;

/**
 * Read access to the stored chain in domain terms: resolves block parameters, decodes headers and
 * blocks with the rules of their fork (one Common per fork), and caches what it decoded.
 */
export class ChainService {
  private readonly commons = new Map<string, Common>();
  private readonly headers = new LruCache<string, BlockHeader>(HEADER_CACHE_SIZE);
  private readonly blocks = new LruCache<string, Block>(BLOCK_CACHE_SIZE);

  constructor(
    readonly store: ChainStore,
    readonly spec: ChainSpec,
    private readonly baseCommon: Common = makeCommon(spec),
  ) {}

  get chainId(): bigint {
    return this.spec.chainId;
  }

  /** The Common for a block, set to its fork. Shared per fork, never mutated after creation. */
  commonAt(number: bigint, timestamp: bigint): Common {
    const fork = this.baseCommon.getHardforkBy({ blockNumber: number, timestamp });
    let common = this.commons.get(fork);
    if (!common) {
      common = this.baseCommon.copy();
      common.setHardfork(fork);
      this.commons.set(fork, common);
    }
    return common;
  }

  async head(): Promise<BlockRef> {
    const head = await this.store.getHead();
    if (!head) throw new ServerError('the chain is empty: import or start a chain first');
    return head;
  }

  /**
   * The block a parameter names, or null when there is none (a number past the head, an unknown
   * hash). `pending`, `safe` and `finalized` are the head: this chain has no unfinalised blocks.
   */
  async resolve(selector: BlockSelector): Promise<BlockRef | null> {
    switch (selector.kind) {
      case 'tag': {
        if (selector.tag === 'earliest') {
          const hash = await this.store.getCanonicalHash(0n);
          return hash && { number: 0n, hash };
        }
        return this.head();
      }
      case 'number': {
        const hash = await this.store.getCanonicalHash(selector.number);
        return hash && { number: selector.number, hash };
      }
      case 'hash': {
        const number = await this.store.getBlockNumber(selector.hash);
        if (number === null) return null;
        if (selector.requireCanonical) {
          const canonical = await this.store.getCanonicalHash(number);
          if (!canonical || !equalsBytes(canonical, selector.hash)) {
            throw new ServerError(
              `hash ${Buffer.from(selector.hash).toString('hex')} is not currently canonical`,
            );
          }
        }
        return { number, hash: selector.hash };
      }
    }
  }

  async header(hash: Uint8Array): Promise<BlockHeader | null> {
    const key = Buffer.from(hash).toString('hex');
    const cached = this.headers.get(key) ?? this.blocks.get(key)?.header;
    if (cached) return cached;
    const rlp = await this.store.getHeader(hash);
    if (!rlp) return null;
    const values = RLP.decode(rlp) as Uint8Array[];
    const common = this.commonAt(fieldNumber(values, HEADER_NUMBER), fieldNumber(values, HEADER_TIMESTAMP));
    const header = createBlockHeaderFromRLP(rlp, { common, skipConsensusFormatValidation: true });
    this.headers.set(key, header);
    return header;
  }

  async block(hash: Uint8Array): Promise<Block | null> {
    const key = Buffer.from(hash).toString('hex');
    const cached = this.blocks.get(key);
    if (cached) return cached;
    const [headerRlp, bodyRlp] = await Promise.all([this.store.getHeader(hash), this.store.getBody(hash)]);
    if (!headerRlp || !bodyRlp) return null;
    const headerValues = RLP.decode(headerRlp) as Uint8Array[];
    const body = RLP.decode(bodyRlp) as unknown as Uint8Array[][];
    const common = this.commonAt(
      fieldNumber(headerValues, HEADER_NUMBER),
      fieldNumber(headerValues, HEADER_TIMESTAMP),
    );
    // biome-ignore lint/suspicious/noExplicitAny: the decoder takes the nested RLP arrays untyped
    const block = createBlockFromBytesArray([headerValues, ...body] as any, {
      common,
      skipConsensusFormatValidation: true,
    });
    this.blocks.set(key, block);
    return block;
  }

  /** The block a parameter names, decoded, or null. */
  async blockAt(selector: BlockSelector): Promise<Block | null> {
    const ref = await this.resolve(selector);
    return ref && this.block(ref.hash);
  }
}

function fieldNumber(values: Uint8Array[], index: number): bigint {
  return bytesToBigInt(values[index] ?? new Uint8Array());
}
