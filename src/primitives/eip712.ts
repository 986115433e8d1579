import { keccak256 } from '../chain/crypto.ts';

/** EIP-712 typed data, as eth_signTypedData_v4 receives it. */
export interface TypedData {
  types: Record<string, Array<{ name: string; type: string }>>;
  primaryType: string;
  domain: Record<string, unknown>;
  message: Record<string, unknown>;
}

const encoder = new TextEncoder();

/** The digest a v4 signature signs: keccak256(0x1901 ‖ hashStruct(domain) ‖ hashStruct(message)). */
export function typedDataDigest(data: TypedData): Uint8Array {
  const domain = hashStruct('EIP712Domain', data.domain, data.types);
  const message = hashStruct(data.primaryType, data.message, data.types);
  return keccak256(Buffer.concat([Uint8Array.of(0x19, 0x01), domain, message]));
}

function hashStruct(type: string, value: Record<string, unknown>, types: TypedData['types']): Uint8Array {
  const fields = types[type];
  if (!fields) throw new Error(`unknown type ${type}`);
  const parts = [keccak256(encoder.encode(encodeType(type, types)))];
  for (const field of fields) parts.push(encodeValue(field.type, value[field.name], types));
  return keccak256(Buffer.concat(parts));
}

/** `Type(fields)` followed by every struct it references, those sorted by name (EIP-712). */
function encodeType(type: string, types: TypedData['types']): string {
  const seen = new Set<string>();
  const visit = (t: string) => {
    const base = t.replace(/\[\d*\]$/, '');
    if (seen.has(base) || !types[base]) return;
    seen.add(base);
    for (const f of types[base] ?? []) visit(f.type);
  };
  visit(type);
  seen.delete(type);
  const one = (t: string) => `${t}(${(types[t] ?? []).map((f) => `${f.type} ${f.name}`).join(',')})`;
  return [one(type), ...[...seen].sort().map(one)].join('');
}

function encodeValue(type: string, value: unknown, types: TypedData['types']): Uint8Array {
  const array = /^(.*)\[(\d*)\]$/.exec(type);
  if (array) {
    const items = Array.isArray(value) ? value : [];
    return keccak256(Buffer.concat(items.map((item) => encodeValue(array[1] as string, item, types))));
  }
  if (types[type]) return hashStruct(type, (value ?? {}) as Record<string, unknown>, types);
  if (type === 'string') return keccak256(encoder.encode(String(value)));
  if (type === 'bytes') return keccak256(hexBytes(value));
  if (type === 'bool') return word(value === true || value === 'true' ? 1n : 0n);
  if (type === 'address') return word(BigInt(String(value)));
  const bytesN = /^bytes(\d+)$/.exec(type);
  if (bytesN) {
    const out = new Uint8Array(32);
    out.set(hexBytes(value).subarray(0, Number(bytesN[1])));
    return out;
  }
  const int = /^(u?)int(\d*)$/.exec(type);
  if (int) {
    const n = BigInt(value as string | number | bigint);
    const bits = BigInt(int[2] || 256);
    // Signed integers are encoded as 256-bit two's complement.
    return word(int[1] === '' && n < 0n ? (1n << 256n) + n : n & ((1n << bits) - 1n));
  }
  throw new Error(`unsupported EIP-712 type ${type}`);
}

function word(n: bigint): Uint8Array {
  return Buffer.from(n.toString(16).padStart(64, '0'), 'hex');
}

function hexBytes(value: unknown): Uint8Array {
  const hex = String(value ?? '0x').replace(/^0x/, '');
  return Buffer.from(hex.length % 2 ? `0${hex}` : hex, 'hex');
}
