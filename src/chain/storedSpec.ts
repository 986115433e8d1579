import { bytesToHex, equalsBytes } from '@ethereumjs/util';
import { UserError } from '../core/errors.ts';
import type { ChainStore } from '../store/types.ts';
import { type ChainSpec, parseChainSpec } from './genesis.ts';

/** Where the store keeps the genesis spec of its chain (written with block 0). */
export const META_GENESIS = 'genesis';

/**
 * The version of what a datadir keeps ready to serve: receipts rendered to JSON at import (served
 * as stored bytes), the flat state history, the records above. A change to any of their shapes
 * bumps it, and a datadir of another version is refused rather than served in a shape this code
 * does not write. Datadirs made before the version was recorded hold version 1.
 */
export const STORE_SCHEMA_VERSION = 1;
const META_SCHEMA = 'schema';

/** The record saying which version a new datadir's store is (written with block 0). */
export function schemaRecord(): [string, Uint8Array] {
  return [META_SCHEMA, new TextEncoder().encode(String(STORE_SCHEMA_VERSION))];
}

/** Refuses a store whose recorded version this code cannot serve or extend. */
export async function checkSchema(store: ChainStore, datadir?: string): Promise<void> {
  const recorded = await store.getMeta(META_SCHEMA);
  const version = recorded === null ? '1' : new TextDecoder().decode(recorded);
  if (version === String(STORE_SCHEMA_VERSION)) return;
  throw new UserError(
    `${datadir ?? 'the datadir'} holds a store of schema version ${JSON.stringify(version)}, and this ethtrace reads version ${STORE_SCHEMA_VERSION} only (its receipts and history are kept in another shape): run the ethtrace that made it, or import the chain again into a new --datadir`,
  );
}

/**
 * The same datadir must not mix chains: the genesis spec is recorded with the first block and compared
 * on every later run. An empty store belongs to no chain yet, whatever record a failed run left.
 */
export async function checkSameChain(store: ChainStore, spec: ChainSpec): Promise<void> {
  const head = await store.getHead();
  if (head === null) return;
  await checkSchema(store);
  const stored = await store.getMeta(META_GENESIS);
  if (stored !== null && equalsBytes(stored, specRecord(spec))) return;
  const genesisHash = await store.getCanonicalHash(0n);
  // `ethtrace start` records its options under this name when it makes a dev chain (src/main.ts).
  if ((await store.getMeta('dev')) !== null)
    throw new UserError(
      `datadir holds a dev chain made by ethtrace start (genesis ${genesisHash ? bytesToHex(genesisHash) : '?'}, head ${head.number}); import into another --datadir`,
    );
  throw new UserError(
    `datadir holds another chain (genesis ${genesisHash ? bytesToHex(genesisHash) : '?'}, head ${head.number}) made from a different genesis file; use another --datadir`,
  );
}

export function specRecord(spec: ChainSpec): Uint8Array {
  return new TextEncoder().encode(canonicalJson(spec.json));
}

/**
 * The spec of the chain the store holds, or null for a store that holds none yet; a store of a
 * schema version this code cannot serve is refused (UserError).
 */
export async function readStoredSpec(store: ChainStore): Promise<ChainSpec | null> {
  await checkSchema(store);
  const stored = await store.getMeta(META_GENESIS);
  return stored === null
    ? null
    : parseChainSpec(JSON.parse(new TextDecoder().decode(stored)), 'stored genesis');
}

function canonicalJson(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonicalJson).join(',')}]`;
  if (v && typeof v === 'object') {
    const entries = Object.entries(v as Record<string, unknown>).sort(([a], [b]) =>
      a < b ? -1 : a > b ? 1 : 0,
    );
    return `{${entries.map(([k, x]) => `${JSON.stringify(k)}:${canonicalJson(x)}`).join(',')}}`;
  }
  return JSON.stringify(v);
}
