import { UpstreamAnswerInvalid } from '../core/errors.ts';
import { toHex } from '../primitives/hex.ts';

/**
 * Reading an upstream node's JSON answer: every field read is checked for its type, hex form and
 * length, and any failure (a malformed field or a check that does not hold) is an `UpstreamAnswerInvalid`
 * whose message names what failed and both values. The client then gets -32002 and nothing is stored.
 */

const VERIFICATION_FAILED = 'upstream answer failed verification';

/** What an answer is about ("block 5 (0x…)"), named in every failure; refined as fields are read. */
export class Subject {
  constructor(public name: string) {}

  fail(what: string): UpstreamAnswerInvalid {
    return new UpstreamAnswerInvalid(`${VERIFICATION_FAILED}: ${this.name} ${what}`);
  }

  /** `<check> <got> is not <whose> <want>`: a value computed or read against the one it must equal. */
  mismatch(check: string, got: Shown, whose: string, want: Shown): UpstreamAnswerInvalid {
    return this.fail(`${check} ${show(got)} is not ${whose} ${show(want)}`);
  }
}

type Shown = Uint8Array | bigint | number | string;

export function show(v: Shown): string {
  if (v instanceof Uint8Array) return toHex(v);
  if (typeof v === 'bigint') return `0x${v.toString(16)}`;
  return String(v);
}

// An offending value is quoted in the message, cut so that a megabyte of bad hex stays a short line.
const MAX_QUOTED_CHARS = 80;

export function quote(v: unknown): string {
  let text: string;
  try {
    text = JSON.stringify(v) ?? String(v);
  } catch {
    text = String(v);
  }
  return text.length <= MAX_QUOTED_CHARS
    ? text
    : `${text.slice(0, MAX_QUOTED_CHARS)}… (${text.length} chars)`;
}

const QUANTITY = /^0x[0-9a-fA-F]+$/;
const DATA = /^0x(?:[0-9a-fA-F]{2})*$/;

/**
 * The fields of one JSON object of an answer. `path` says where it sits in the answer
 * (`transactions[3].accessList[0]`), so a failure names the exact field.
 */
export class Fields {
  private constructor(
    private readonly object: Record<string, unknown>,
    readonly path: string,
    readonly subject: Subject,
  ) {}

  /** `value` as an object, or a failure naming `path`. */
  static of(value: unknown, path: string, subject: Subject): Fields {
    if (typeof value !== 'object' || value === null || Array.isArray(value)) {
      throw subject.fail(`${path || 'answer'} is not a JSON object: ${quote(value)}`);
    }
    return new Fields(value as Record<string, unknown>, path, subject);
  }

  /** Another object of the same answer, at `path`. */
  child(value: unknown, path: string): Fields {
    return Fields.of(value, path, this.subject);
  }

  private where(key: string): string {
    return this.path ? `${this.path}.${key}` : key;
  }

  /** Present and not null. */
  has(key: string): boolean {
    const v = this.object[key];
    return v !== undefined && v !== null;
  }

  private required(key: string): unknown {
    const v = this.object[key];
    if (v === undefined || v === null) throw this.subject.fail(`${this.where(key)} is missing`);
    return v;
  }

  /** A hex quantity (`0x0`, `0x1f`) of at most `bits` bits. */
  quantity(key: string, bits = 256): bigint {
    return parseQuantity(this.required(key), this.where(key), bits, this.subject);
  }

  optionalQuantity(key: string, bits = 256): bigint | undefined {
    return this.has(key) ? this.quantity(key, bits) : undefined;
  }

  /** Hex bytes (`0x` and an even number of digits), of exactly `length` bytes when given. */
  data(key: string, length?: number): Uint8Array {
    return parseData(this.required(key), this.where(key), length, this.subject);
  }

  optionalData(key: string, length?: number): Uint8Array | undefined {
    return this.has(key) ? this.data(key, length) : undefined;
  }

  optionalBoolean(key: string): boolean | undefined {
    if (!this.has(key)) return undefined;
    const v = this.object[key];
    if (typeof v !== 'boolean')
      throw this.subject.fail(`${this.where(key)} is not true or false: ${quote(v)}`);
    return v;
  }

  array(key: string): unknown[] {
    const v = this.required(key);
    if (!Array.isArray(v)) throw this.subject.fail(`${this.where(key)} is not a list: ${quote(v)}`);
    return v;
  }

  /** The list at `key`, each item as an object. */
  objects(key: string): Fields[] {
    return this.array(key).map((item, i) => Fields.of(item, `${this.where(key)}[${i}]`, this.subject));
  }

  /** The list at `key`, each item hex bytes (of `length` bytes when given). */
  dataList(key: string, length?: number): Uint8Array[] {
    return this.array(key).map((item, i) =>
      parseData(item, `${this.where(key)}[${i}]`, length, this.subject),
    );
  }

  /** `key` when present (and not null) must equal `want`; a quantity of `bits` bits. */
  expectQuantity(key: string, want: bigint, whose: string, bits = 64): void {
    const got = this.optionalQuantity(key, bits);
    if (got !== undefined && got !== want) throw this.subject.mismatch(this.where(key), got, whose, want);
  }

  /** `key` when present (and not null) must equal `want`, bytes of want's length. */
  expectData(key: string, want: Uint8Array, whose: string): void {
    const got = this.optionalData(key, want.length);
    if (got !== undefined && !sameBytes(got, want))
      throw this.subject.mismatch(this.where(key), got, whose, want);
  }
}

export function parseQuantity(v: unknown, where: string, bits: number, subject: Subject): bigint {
  if (typeof v !== 'string' || !QUANTITY.test(v)) {
    throw subject.fail(`${where} is not a hex quantity: ${quote(v)}`);
  }
  // Leading zeros are tolerated (the value is the same); the value must fit the field.
  const digits = v.slice(2).replace(/^0+/, '');
  const value = digits === '' ? 0n : digits.length * 4 <= bits + 3 ? BigInt(`0x${digits}`) : undefined;
  if (value === undefined || value >> BigInt(bits) !== 0n) {
    throw subject.fail(`${where} does not fit in ${bits} bits: ${quote(v)}`);
  }
  return value;
}

export function parseData(
  v: unknown,
  where: string,
  length: number | undefined,
  subject: Subject,
): Uint8Array {
  if (typeof v !== 'string' || !DATA.test(v)) {
    throw subject.fail(`${where} is not hex bytes: ${quote(v)}`);
  }
  // A plain Uint8Array of its own (not a view into Node's shared Buffer pool): ethereumjs code reads
  // `.buffer` in places as if the bytes started at offset 0.
  const decoded = Buffer.from(v.slice(2), 'hex');
  const bytes = new Uint8Array(
    decoded.buffer.slice(decoded.byteOffset, decoded.byteOffset + decoded.byteLength),
  );
  if (length !== undefined && bytes.length !== length) {
    throw subject.fail(`${where} is ${bytes.length} bytes, not ${length}: ${quote(v)}`);
  }
  return bytes;
}

export function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  return Buffer.from(a.buffer, a.byteOffset, a.byteLength).equals(
    Buffer.from(b.buffer, b.byteOffset, b.byteLength),
  );
}

/** Runs an ethereumjs constructor, turning what it throws into a failure naming what was built. */
export function building<T>(subject: Subject, what: string, build: () => T): T {
  try {
    return build();
  } catch (e) {
    if (e instanceof UpstreamAnswerInvalid) throw e;
    throw subject.fail(`${what} cannot be built: ${(e as Error).message}`);
  }
}
