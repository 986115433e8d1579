import { bytesToHex, equalsBytes } from '@ethereumjs/util';
import { UserError } from '../core/errors.ts';
import type { ChainStore } from '../store/types.ts';
import { type ChainSpec, parseChainSpec } from './genesis.ts';

/** Where the store keeps the genesis spec of its chain (written with block 0). */
export const META_GENESIS = 'genesis';

/**
 * The same datadir must not mix chains: the genesis spec is recorded with the first block and compared
 * on every later run. An empty store belongs to no chain yet, whatever record a failed run left.
 */
export async function checkSameChain(store: ChainStore, spec: ChainSpec): Promise<void> {
  const head = await store.getHead();
  if (head === null) return;
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

/** The spec of the chain the store holds, or null for a store that holds none yet. */
export async function readStoredSpec(store: ChainStore): Promise<ChainSpec | null> {
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
