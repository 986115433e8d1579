import type { BlockSelector, BlockTag } from '../core/blockSelector.ts';
import { InvalidArgument } from '../core/errors.ts';

export { type BlockSelector, LATEST } from '../core/blockSelector.ts';

/**
 * Parameter parsers. Each turns one JSON value into a domain value or throws a ParamProblem; the
 * method table prefixes the argument's position, giving geth's `invalid argument N: …` messages.
 */
export class ParamProblem extends Error {}

/**
 * `parse()`, a ParamProblem it throws prefixed with `name: `, the field or element the problem is
 * in (`fromBlock: hex string "0x"`, `call 1: …`). Nested fields nest their prefixes.
 */
export function field<T>(name: string, parse: () => T): T {
  try {
    return parse();
  } catch (e) {
    if (e instanceof ParamProblem) throw new ParamProblem(`${name}: ${e.message}`);
    throw e;
  }
}

/** `parse()` of argument `index`, a ParamProblem it throws answered as geth's `invalid argument N: …`. */
export function argument<T>(index: number, parse: () => T): T {
  try {
    return parse();
  } catch (e) {
    if (e instanceof ParamProblem) throw new InvalidArgument(`invalid argument ${index}: ${e.message}`);
    throw e;
  }
}

export interface Param<T> {
  parse(value: unknown): T;
  /** Optional parameters may be absent or null; `parse` then receives undefined. */
  optional: boolean;
}

export type ParamValues<P extends readonly Param<unknown>[]> = {
  [K in keyof P]: P[K] extends Param<infer T> ? T : never;
};

export function required<T>(parse: (value: unknown) => T): Param<T> {
  return { parse, optional: false };
}

export function optional<T>(parse: (value: unknown) => T): Param<T | undefined> {
  return { parse: (v) => (v === undefined || v === null ? undefined : parse(v)), optional: true };
}

/** Applies the parsers to a request's params array, with geth's argument-count messages. */
export function parseParams<P extends readonly Param<unknown>[]>(spec: P, params: unknown): ParamValues<P> {
  const list = params === undefined || params === null ? [] : params;
  if (!Array.isArray(list)) throw new InvalidArgument('non-array args');
  if (list.length > spec.length) throw new InvalidArgument(`too many arguments, want at most ${spec.length}`);
  return spec.map((p, i) => {
    const value = list[i];
    if ((value === undefined || value === null) && !p.optional) {
      throw new InvalidArgument(`missing value for required argument ${i}`);
    }
    return argument(i, () => p.parse(value));
  }) as ParamValues<P>;
}

const HEX = /^0[xX]([0-9a-fA-F]*)$/;

/** geth's two ways a hex text fails (hexutil): no 0x at all, or something other than hex digits after it. */
function hexFailure(value: string): string {
  return /^0[xX]/.test(value) ? 'invalid hex string' : 'hex string without 0x prefix';
}

/** Characters of a client's value quoted in an error message: enough to recognise it. */
const MAX_QUOTED_CHARS = 80;

/** `value` as JSON for an error message, cut short: a megabyte sent is not a megabyte sent back. */
export function quoted(value: unknown): string {
  const text =
    typeof value === 'string' && value.length > MAX_QUOTED_CHARS
      ? JSON.stringify(value.slice(0, MAX_QUOTED_CHARS))
      : String(JSON.stringify(value));
  return text.length > MAX_QUOTED_CHARS ? `${text.slice(0, MAX_QUOTED_CHARS)}…` : text;
}

/**
 * Significant hex digits a quantity may have: 256 bits, as geth's hexutil.Big allows. Checked on the
 * text, before BigInt: a megabyte of digits would otherwise become a number that every later step
 * (comparison, error message, decimal rendering) pays for.
 */
const MAX_QUANTITY_DIGITS = 64;

/** Decimal digits of the largest block number, 2^64 − 1 (20 digits), checked before BigInt for the same reason. */
const MAX_BLOCK_NUMBER_DIGITS = 20;
const MAX_UINT64 = (1n << 64n) - 1n;

/** `digits` without its leading zeros (a regex would backtrack over a long run of them). */
function significant(digits: string): string {
  let i = 0;
  while (i < digits.length && digits.charCodeAt(i) === 48) i++;
  return i === 0 ? digits : digits.slice(i);
}

export function quantity(value: unknown): bigint {
  if (typeof value !== 'string')
    throw new ParamProblem('json: cannot unmarshal non-string into Go value of type hexutil.Big');
  const m = HEX.exec(value);
  if (!m) throw new ParamProblem(hexFailure(value));
  const digits = m[1] ?? '';
  if (digits === '') throw new ParamProblem('hex string "0x"');
  if (significant(digits).length > MAX_QUANTITY_DIGITS) throw new ParamProblem('hex number > 256 bits');
  return BigInt(value);
}

/** A decimal block number, refused past 2^64 − 1 as the hex form is (a store key holds 64 bits). */
function decimalBlockNumber(value: string): bigint {
  const digits = significant(value);
  if (digits.length > MAX_BLOCK_NUMBER_DIGITS || BigInt(`0${digits}`) > MAX_UINT64) {
    throw new ParamProblem('block number > 64 bits');
  }
  return BigInt(`0${digits}`);
}

/** A quantity geth types as hexutil.Uint64 (a call's gas, nonce, type): at most 2^64 − 1. */
export function uint64(value: unknown): bigint {
  const n = quantity(value);
  if (n > MAX_UINT64) throw new ParamProblem('hex number > 64 bits');
  return n;
}

/** A small quantity (an index, a count) that must fit a JS number. */
export function smallQuantity(value: unknown): number {
  const n = quantity(value);
  if (n > BigInt(Number.MAX_SAFE_INTEGER)) throw new ParamProblem('hex number > 53 bits');
  return Number(n);
}

export function data(value: unknown): Uint8Array {
  if (typeof value !== 'string')
    throw new ParamProblem('json: cannot unmarshal non-string into Go value of type hexutil.Bytes');
  const m = HEX.exec(value);
  if (!m) throw new ParamProblem(hexFailure(value));
  const digits = m[1] ?? '';
  if (digits.length % 2 !== 0) throw new ParamProblem('hex string of odd length');
  return Uint8Array.from(Buffer.from(digits, 'hex'));
}

function fixedBytes(length: number, goType: string) {
  return (value: unknown): Uint8Array => {
    if (typeof value !== 'string')
      throw new ParamProblem(`json: cannot unmarshal non-string into Go value of type ${goType}`);
    const m = HEX.exec(value);
    if (!m)
      throw new ParamProblem(`json: cannot unmarshal ${hexFailure(value)} into Go value of type ${goType}`);
    const digits = m[1] ?? '';
    if (digits.length !== length * 2) {
      throw new ParamProblem(`hex string has length ${digits.length}, want ${length * 2} for ${goType}`);
    }
    return Uint8Array.from(Buffer.from(digits, 'hex'));
  };
}

export const address = fixedBytes(20, 'common.Address');
export const hash = fixedBytes(32, 'common.Hash');

export function bool(value: unknown): boolean {
  if (typeof value !== 'boolean')
    throw new ParamProblem('json: cannot unmarshal non-bool into Go value of type bool');
  return value;
}

const TAGS: ReadonlySet<string> = new Set(['latest', 'earliest', 'pending', 'safe', 'finalized']);

/**
 * Every block-parameter form of our profile: hex number, JSON integer, decimal string, the five tags,
 * a 32-byte hash, and the EIP-1898 objects `{blockNumber}` / `{blockHash, requireCanonical?}`.
 */
export function blockSelector(value: unknown): BlockSelector {
  if (typeof value === 'number') {
    if (!Number.isSafeInteger(value) || value < 0) throw new ParamProblem(`invalid block number ${value}`);
    return { kind: 'number', number: BigInt(value) };
  }
  if (typeof value === 'string') {
    if (TAGS.has(value)) return { kind: 'tag', tag: value as BlockTag };
    if (/^[0-9]+$/.test(value)) return { kind: 'number', number: decimalBlockNumber(value) };
    const m = HEX.exec(value);
    if (m) {
      const digits = m[1] ?? '';
      if (digits.length === 64)
        return { kind: 'hash', hash: Uint8Array.from(Buffer.from(digits, 'hex')), requireCanonical: false };
      if (digits.length === 0) throw new ParamProblem('hex string "0x"');
      if (digits.length > 16) throw new ParamProblem('hex number > 64 bits');
      return { kind: 'number', number: BigInt(value) };
    }
    throw new ParamProblem(`invalid block number or tag ${quoted(value)}`);
  }
  if (typeof value === 'object' && value !== null && !Array.isArray(value)) {
    // A member given as null is absent, as geth decodes it (a nil pointer).
    const o = value as Record<string, unknown>;
    const given = (v: unknown) => v !== undefined && v !== null;
    if (given(o.blockHash) && given(o.blockNumber)) {
      throw new ParamProblem('cannot specify both BlockHash and BlockNumber, choose one or the other');
    }
    if (given(o.blockHash)) {
      const canonical = o.requireCanonical ?? false;
      if (typeof canonical !== 'boolean') throw new ParamProblem('requireCanonical must be a boolean');
      return { kind: 'hash', hash: hash(o.blockHash), requireCanonical: canonical };
    }
    if (given(o.blockNumber)) {
      // geth decodes it as a BlockNumber: a number or a tag, never another object.
      if (typeof o.blockNumber === 'object') throw new ParamProblem('blockNumber must be a number or tag');
      const selector = blockSelector(o.blockNumber);
      if (selector.kind === 'hash') throw new ParamProblem('blockNumber must be a number or tag');
      return selector;
    }
    throw new ParamProblem('block object needs blockHash or blockNumber');
  }
  throw new ParamProblem(`invalid block parameter ${quoted(value)}`);
}
