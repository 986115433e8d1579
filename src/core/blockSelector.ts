/** A block as a request names it: a number, a tag, or a hash (EIP-1898). */
export type BlockTag = 'latest' | 'earliest' | 'pending' | 'safe' | 'finalized';

export type BlockSelector =
  | { kind: 'number'; number: bigint }
  | { kind: 'tag'; tag: BlockTag }
  | { kind: 'hash'; hash: Uint8Array; requireCanonical: boolean };

export const LATEST: BlockSelector = { kind: 'tag', tag: 'latest' };
