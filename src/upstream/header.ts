import { type BlockHeader, createBlockHeaderFromBytesArray } from '@ethereumjs/block';
import type { Common } from '@ethereumjs/common';
import { RLP } from '@ethereumjs/rlp';
import { bigIntToUnpaddedBytes } from '@ethereumjs/util';
import { keccak256 } from '../primitives/keccak.ts';
import { building, Fields, Subject, sameBytes, show } from './answer.ts';

/**
 * The rules a block is built with: one Common set to the block's fork, or a function giving the
 * Common of any block (`ChainReader.commonAt`), which also serves uncles from an earlier fork.
 */
export type ForkRules = Common | ((number: bigint, timestamp: bigint) => Common);

/** What a block was asked for by: its hash, or its number. */
export type BlockAsked = Uint8Array | bigint;

type FieldKind = { bits: number } | { bytes: number | undefined };

// Header fields in consensus order: the first 15 always, each later one from the fork that added it.
const HEADER_FIELDS: ReadonlyArray<readonly [string, FieldKind]> = [
  ['parentHash', { bytes: 32 }],
  ['sha3Uncles', { bytes: 32 }],
  ['miner', { bytes: 20 }],
  ['stateRoot', { bytes: 32 }],
  ['transactionsRoot', { bytes: 32 }],
  ['receiptsRoot', { bytes: 32 }],
  ['logsBloom', { bytes: 256 }],
  ['difficulty', { bits: 256 }],
  ['number', { bits: 64 }],
  ['gasLimit', { bits: 64 }],
  ['gasUsed', { bits: 64 }],
  ['timestamp', { bits: 64 }],
  ['extraData', { bytes: undefined }],
  ['mixHash', { bytes: 32 }],
  ['nonce', { bytes: 8 }],
  ['baseFeePerGas', { bits: 256 }],
  ['withdrawalsRoot', { bytes: 32 }],
  ['blobGasUsed', { bits: 64 }],
  ['excessBlobGas', { bits: 64 }],
  ['parentBeaconBlockRoot', { bytes: 32 }],
  ['requestsHash', { bytes: 32 }],
];
const MANDATORY_HEADER_FIELDS = 15;

/** A header read from an answer and checked against its hash, with what reading it established. */
export interface CheckedHeader {
  header: BlockHeader;
  /** The consensus field values, as hashed. */
  values: Uint8Array[];
  /** The answer object the header was read from (a block's other fields are read from it too). */
  fields: Fields;
  /** `block N (0x…)`, named in every later failure about this block. */
  subject: Subject;
  /** The Common of the header's fork, as `rules` gave it. */
  common: Common;
}

/**
 * A header alone (eth_getBlockByHash/ByNumber with `false`, or an uncle), checked: its consensus
 * fields hash to the answer's `hash`, and that is the block asked for (hash or number).
 */
export function headerFromRpc(json: unknown, rules: ForkRules, asked?: BlockAsked): BlockHeader {
  return readHeader(json, rules, asked, (what) => `block ${what}`).header;
}

/**
 * The header fields of `json` in consensus order (optional ones up to the first absent), hashed and
 * compared with the answer's `hash`, then decoded with the rules of the header's fork.
 * `name` names the header given what is known of it: what it was asked for by, then its number and hash.
 */
export function readHeader(
  json: unknown,
  rules: ForkRules,
  asked: BlockAsked | undefined,
  name: (what: string) => string,
): CheckedHeader {
  const before = asked === undefined ? '' : typeof asked === 'bigint' ? String(asked) : show(asked);
  const subject = new Subject(name(before).replace('  ', ' ').trim());
  const fields = Fields.of(json, '', subject);
  const number = fields.quantity('number', 64);
  const timestamp = fields.quantity('timestamp', 64);
  const hash = fields.data('hash', 32);
  subject.name = name(`${number} (${show(hash)})`);
  const values = headerValues(fields);
  const computed = keccak256(RLP.encode(values));
  if (!sameBytes(computed, hash)) {
    throw subject.mismatch("hash of the header's fields", computed, "the answer's hash", hash);
  }
  if (asked instanceof Uint8Array && !sameBytes(hash, asked)) {
    throw subject.mismatch('is not the block asked for: hash', hash, 'the hash asked for', asked);
  }
  if (typeof asked === 'bigint' && number !== asked) {
    throw subject.mismatch('is not the block asked for: number', number, 'the number asked for', asked);
  }
  const common = commonFor(rules, number, timestamp, subject);
  const header = building(subject, `header (with the rules of ${common.hardfork()})`, () =>
    createBlockHeaderFromBytesArray(values, { common }),
  );
  // ethereumjs re-encodes what it decoded; anything it dropped or changed would show here.
  if (!sameBytes(header.hash(), hash)) {
    throw subject.mismatch('re-encoded header hash', header.hash(), "the answer's hash", hash);
  }
  return { header, values, fields, subject, common };
}

function headerValues(fields: Fields): Uint8Array[] {
  const values: Uint8Array[] = [];
  for (const [i, [key, kind]] of HEADER_FIELDS.entries()) {
    if (!fields.has(key)) {
      if (i < MANDATORY_HEADER_FIELDS) throw fields.subject.fail(`${key} is missing`);
      const later = HEADER_FIELDS.slice(i + 1).find(([next]) => fields.has(next));
      if (later)
        throw fields.subject.fail(`has ${later[0]} but not ${key}, which comes before it in a header`);
      break;
    }
    values.push(
      'bits' in kind ? bigIntToUnpaddedBytes(fields.quantity(key, kind.bits)) : fields.data(key, kind.bytes),
    );
  }
  return values;
}

/** The Common for a block: from the function, or the one given after checking it is the block's fork. */
export function commonFor(rules: ForkRules, number: bigint, timestamp: bigint, subject: Subject): Common {
  if (typeof rules === 'function') return rules(number, timestamp);
  const fork = rules.getHardforkBy({ blockNumber: number, timestamp });
  if (fork !== rules.hardfork()) {
    throw subject.fail(
      `is a ${fork} block by its number and timestamp, but the rules given are ${rules.hardfork()}'s`,
    );
  }
  return rules;
}
