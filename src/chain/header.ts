import {
  type Block,
  type BlockHeader,
  createBlockFromBytesArray,
  createBlockHeaderFromRLP,
} from '@ethereumjs/block';
import type { Common } from '@ethereumjs/common';
import { RLP } from '@ethereumjs/rlp';
import { bytesToBigInt } from '@ethereumjs/util';

// Header field positions in the consensus encoding (the order every fork keeps; later forks only
// append fields). Number and time are read before a header is decoded: the fork, and so the fields
// expected, depend on them. src/store/lmdb/check.ts keeps its own copy of HEADER_NUMBER: the store
// layer sits below chain and may not import it.
export const HEADER_STATE_ROOT = 3;
export const HEADER_LOGS_BLOOM = 6;
export const HEADER_NUMBER = 8;
export const HEADER_TIMESTAMP = 11;

/**
 * The rules of a block by its number and time: a Forks' `commonAt`, or, for the chain writer, its
 * own Common set to the block's fork.
 */
export type RulesAt = (number: bigint, timestamp: bigint) => Common;

/** The consensus fields of an RLP-encoded header. */
export function headerFields(rlp: Uint8Array): Uint8Array[] {
  return RLP.decode(rlp) as Uint8Array[];
}

/**
 * A header's number and time, which choose its fork. A stored header always has both; an absent
 * field reads as 0, and the decoder then rejects the header with its own message.
 */
export function numberAndTime(fields: readonly Uint8Array[]): { number: bigint; timestamp: bigint } {
  return {
    number: bytesToBigInt(fields[HEADER_NUMBER] ?? new Uint8Array()),
    timestamp: bytesToBigInt(fields[HEADER_TIMESTAMP] ?? new Uint8Array()),
  };
}

/** The rules of the fork a header belongs to. */
export function rulesOfHeader(fields: readonly Uint8Array[], rulesAt: RulesAt): Common {
  const { number, timestamp } = numberAndTime(fields);
  return rulesAt(number, timestamp);
}

/**
 * A stored header decoded with the rules of its fork. Stored headers were checked when they were
 * written, so the consensus format checks are skipped.
 */
export function decodeStoredHeader(rlp: Uint8Array, rulesAt: RulesAt): BlockHeader {
  const common = rulesOfHeader(headerFields(rlp), rulesAt);
  return createBlockHeaderFromRLP(rlp, { common, skipConsensusFormatValidation: true });
}

/**
 * A stored block (its header and body records) decoded with the rules of its fork. `freeze: false`
 * leaves the block's objects open, for a reader that keeps facts on them (src/chain/reader.ts keeps
 * each transaction's sender).
 */
export function decodeStoredBlock(
  header: Uint8Array,
  body: Uint8Array,
  rulesAt: RulesAt,
  opts: { freeze?: boolean } = {},
): Block {
  const headerValues = headerFields(header);
  const common = rulesOfHeader(headerValues, rulesAt);
  // biome-ignore lint/suspicious/noExplicitAny: the block decoder takes the nested RLP arrays untyped
  const values = [headerValues, ...(RLP.decode(body) as any)] as any;
  return createBlockFromBytesArray(values, {
    common,
    skipConsensusFormatValidation: true,
    ...(opts.freeze === false ? { freeze: false } : {}),
  });
}
