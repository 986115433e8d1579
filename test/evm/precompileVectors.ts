import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';

/** A precompile test vector in the JSON form geth's testdata and the EIPs' assets share. */
export interface Vector {
  Name: string;
  Input: string;
  Expected?: string;
  ExpectedError?: string;
  Gas?: number;
}

export const FIXTURES = join(import.meta.dirname, 'fixtures', 'precompiles');

/** The vectors of one fixture file (`.json`, or `.json.gz` for the large MSM files). */
export function loadVectors(path: string): Vector[] {
  const raw = readFileSync(join(FIXTURES, path));
  const text = path.endsWith('.gz') ? gunzipSync(raw).toString('utf8') : raw.toString('utf8');
  return JSON.parse(text) as Vector[];
}

export function fromHex(hex: string): Uint8Array {
  return Uint8Array.from(Buffer.from(hex.startsWith('0x') ? hex.slice(2) : hex, 'hex'));
}

export function toHex(bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('hex');
}
