import { keccak256 } from './keccak.ts';

/** EIP-712 typed data, as eth_signTypedData_v4 receives it. */
export interface TypedData {
  types: Record<string, Array<{ name: string; type: string }>>;
  primaryType: string;
  domain: Record<string, unknown>;
  message: Record<string, unknown>;
}

/** Typed data that cannot be encoded; the message says which field and why. */
export class TypedDataError extends Error {}

const encoder = new TextEncoder();
const HEX = /^0x[0-9a-fA-F]*$/;
const DECIMAL = /^-?[0-9]+$/;
// Nested structs and arrays are encoded recursively; a type that refers to itself through a value
// could nest as deep as the JSON does, so the depth is bounded well above any real domain's.
const MAX_DEPTH = 64;

/**
 * The typed data as received (a JSON object), checked for shape: an object of `types` whose entries
 * are lists of {name, type}, a `primaryType` among them, and object `domain` and `message`.
 */
export function typedDataOf(value: unknown): TypedData {
  if (!isObject(value)) throw new TypedDataError('typed data must be an object');
  const { types, primaryType, domain, message } = value;
  if (!isObject(types)) throw new TypedDataError('types must be an object of struct definitions');
  for (const [name, fields] of Object.entries(types)) {
    if (!Array.isArray(fields)) throw new TypedDataError(`types.${name} must be an array of {name, type}`);
    fields.forEach((f: unknown, i) => {
      if (!isObject(f) || typeof f.name !== 'string' || typeof f.type !== 'string')
        throw new TypedDataError(`types.${name}[${i}] must be {name: string, type: string}`);
    });
  }
  if (typeof primaryType !== 'string') throw new TypedDataError('primaryType must be a string');
  if (!structOf(types as TypedData['types'], primaryType))
    throw new TypedDataError(`primaryType ${primaryType} is not among the types`);
  if (!structOf(types as TypedData['types'], 'EIP712Domain'))
    throw new TypedDataError('types must define EIP712Domain');
  if (!isObject(domain)) throw new TypedDataError('domain must be an object');
  if (!isObject(message)) throw new TypedDataError('message must be an object');
  return value as unknown as TypedData;
}

/**
 * The digest a v4 signature signs: keccak256(0x1901 ‖ hashStruct(domain) ‖ hashStruct(message)).
 * Throws TypedDataError naming the field when a value does not fit its type.
 */
export function typedDataDigest(data: TypedData): Uint8Array {
  const domain = hashStruct('EIP712Domain', data.domain, data.types, 'domain', 0);
  const message = hashStruct(data.primaryType, data.message, data.types, 'message', 0);
  return keccak256(Buffer.concat([Uint8Array.of(0x19, 0x01), domain, message]));
}

/**
 * The fields of struct `name`, if the typed data defines it: its own members only, since `types`
 * comes from JSON and `types.constructor` would otherwise find Object.prototype's.
 */
function structOf(types: TypedData['types'], name: string): TypedData['types'][string] | undefined {
  return Object.hasOwn(types, name) ? types[name] : undefined;
}

function hashStruct(
  type: string,
  value: unknown,
  types: TypedData['types'],
  path: string,
  depth: number,
): Uint8Array {
  const fields = structOf(types, type);
  if (!fields) throw new TypedDataError(`${path}: unknown type ${type}`);
  if (!isObject(value)) throw new TypedDataError(`${path}: a ${type} must be an object`);
  if (depth > MAX_DEPTH) throw new TypedDataError(`${path}: nested more than ${MAX_DEPTH} deep`);
  const parts = [keccak256(encoder.encode(encodeType(type, types)))];
  for (const field of fields) {
    parts.push(encodeValue(field.type, value[field.name], types, `${path}.${field.name}`, depth + 1));
  }
  return keccak256(Buffer.concat(parts));
}

/** `Type(fields)` followed by every struct it references, those sorted by name (EIP-712). */
function encodeType(type: string, types: TypedData['types']): string {
  const seen = new Set<string>();
  const visit = (t: string) => {
    const base = t.replace(/(\[\d*\])+$/, '');
    if (seen.has(base) || !structOf(types, base)) return;
    seen.add(base);
    for (const f of structOf(types, base) ?? []) visit(f.type);
  };
  visit(type);
  seen.delete(type);
  const one = (t: string) =>
    `${t}(${(structOf(types, t) ?? []).map((f) => `${f.type} ${f.name}`).join(',')})`;
  return [one(type), ...[...seen].sort().map(one)].join('');
}

function encodeValue(
  type: string,
  value: unknown,
  types: TypedData['types'],
  path: string,
  depth: number,
): Uint8Array {
  const array = /^(.*)\[(\d*)\]$/.exec(type);
  if (array) {
    if (!Array.isArray(value)) throw new TypedDataError(`${path}: a ${type} must be an array`);
    if (array[2] !== '' && value.length !== Number(array[2]))
      throw new TypedDataError(`${path}: a ${type} must have ${array[2]} items, not ${value.length}`);
    if (depth > MAX_DEPTH) throw new TypedDataError(`${path}: nested more than ${MAX_DEPTH} deep`);
    return keccak256(
      Buffer.concat(
        value.map((item, i) => encodeValue(array[1] as string, item, types, `${path}[${i}]`, depth + 1)),
      ),
    );
  }
  if (structOf(types, type)) {
    // A missing struct encodes as the zero word (MetaMask's v4 encoding, which wallets follow).
    if (value === undefined || value === null) return new Uint8Array(32);
    return hashStruct(type, value, types, path, depth);
  }
  if (value === undefined || value === null) throw new TypedDataError(`${path}: missing ${type} value`);
  if (type === 'string') {
    if (typeof value !== 'string') throw new TypedDataError(`${path}: a string must be a JSON string`);
    return keccak256(encoder.encode(value));
  }
  if (type === 'bytes') return keccak256(hexBytes(value, path, type));
  if (type === 'bool') {
    if (typeof value !== 'boolean') throw new TypedDataError(`${path}: a bool must be true or false`);
    return word(value ? 1n : 0n);
  }
  if (type === 'address') {
    if (typeof value !== 'string' || !/^0x[0-9a-fA-F]{40}$/.test(value))
      throw new TypedDataError(`${path}: an address must be 0x and 40 hex digits`);
    return word(BigInt(value));
  }
  const bytesN = /^bytes([1-9][0-9]?)$/.exec(type);
  if (bytesN && Number(bytesN[1]) <= 32) {
    const size = Number(bytesN[1]);
    const bytes = hexBytes(value, path, type);
    if (bytes.length > size) throw new TypedDataError(`${path}: a ${type} holds at most ${size} bytes`);
    const out = new Uint8Array(32);
    out.set(bytes);
    return out;
  }
  const int = /^(u?)int([1-9][0-9]*)?$/.exec(type);
  const bits = int ? Number(int[2] ?? 256) : 0;
  if (int && bits % 8 === 0 && bits <= 256) {
    const n = integer(value, path, type);
    const signed = int[1] === '';
    const min = signed ? -(1n << BigInt(bits - 1)) : 0n;
    const max = signed ? (1n << BigInt(bits - 1)) - 1n : (1n << BigInt(bits)) - 1n;
    if (n < min || n > max) throw new TypedDataError(`${path}: out of range for ${type}`);
    // Signed integers are encoded as 256-bit two's complement.
    return word(n < 0n ? (1n << 256n) + n : n);
  }
  throw new TypedDataError(`${path}: unknown type ${type}`);
}

/** A JSON number (a safe integer), a decimal string or a 0x hex string. */
function integer(value: unknown, path: string, type: string): bigint {
  if (typeof value === 'number' && Number.isSafeInteger(value)) return BigInt(value);
  if (
    typeof value === 'string' &&
    value.length <= 80 &&
    (DECIMAL.test(value) || (HEX.test(value) && value.length > 2))
  )
    return BigInt(value);
  throw new TypedDataError(`${path}: a ${type} must be an integer, a decimal string or 0x hex`);
}

function hexBytes(value: unknown, path: string, type: string): Uint8Array {
  if (typeof value !== 'string' || !HEX.test(value) || value.length % 2 !== 0)
    throw new TypedDataError(`${path}: a ${type} must be 0x and an even number of hex digits`);
  return Buffer.from(value.slice(2), 'hex');
}

function word(n: bigint): Uint8Array {
  return Buffer.from(n.toString(16).padStart(64, '0'), 'hex');
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
