import { BLOCK_FORKS, TIME_FORKS } from './genesis.ts';

/**
 * EIP-2124's fork identifier: a CRC-32 of the genesis hash, updated with each fork block number and
 * then each fork timestamp the chain has passed (as 8-byte big-endian integers), and the next fork
 * still to come. The forks are the ones of geth's chain config: every block fork (the DAO fork's
 * block counts whether or not the chain took its side) and every timestamp fork; forks at block 0,
 * or at or before the genesis timestamp, are the genesis rules and not counted; forks at the same
 * block or time count once.
 */
export interface ForkId {
  /** The checksum of the forks passed, as 4 bytes. */
  hash: Uint8Array;
  /** The block number or timestamp of the next fork, 0 when none is scheduled. */
  next: bigint;
}

// geth counts the DAO fork block among the block forks; BLOCK_FORKS leaves it out because it changes
// state once rather than the rules (src/evm/dao.ts).
const ID_BLOCK_FORKS = [...BLOCK_FORKS, 'daoForkBlock'] as const;

export function forkId(
  config: Readonly<Record<string, unknown>>,
  genesis: { hash: Uint8Array; timestamp: bigint },
  head: { number: bigint; timestamp: bigint },
): ForkId {
  const byBlock = scheduled(config, ID_BLOCK_FORKS).filter((at) => at > 0n);
  const byTime = scheduled(config, TIME_FORKS).filter((at) => at > genesis.timestamp);
  let sum = crc32(genesis.hash);
  for (const [forks, passed] of [
    [byBlock, head.number],
    [byTime, head.timestamp],
  ] as const) {
    for (const at of forks) {
      if (at > passed) return { hash: checksumBytes(sum), next: at };
      sum = crc32(bigEndian64(at), sum);
    }
  }
  return { hash: checksumBytes(sum), next: 0n };
}

/** The distinct activation points the config gives these keys, in ascending order. */
function scheduled(config: Readonly<Record<string, unknown>>, keys: readonly string[]): bigint[] {
  const points = new Set<bigint>();
  for (const key of keys) {
    const at = config[key];
    if (typeof at === 'number' || typeof at === 'bigint') points.add(BigInt(at));
    else if (typeof at === 'string' && /^(0x[0-9a-fA-F]+|[0-9]+)$/.test(at)) points.add(BigInt(at));
  }
  return [...points].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
}

function bigEndian64(n: bigint): Uint8Array {
  const out = new Uint8Array(8);
  new DataView(out.buffer).setBigUint64(0, n);
  return out;
}

function checksumBytes(sum: number): Uint8Array {
  const out = new Uint8Array(4);
  new DataView(out.buffer).setUint32(0, sum);
  return out;
}

// The IEEE 802.3 polynomial, reflected, as zlib and EIP-2124 use it. Node's zlib.crc32 arrived in
// 20.15, after the Node 20 this project supports.
const CRC_TABLE = (() => {
  const table = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    table[n] = c >>> 0;
  }
  return table;
})();

/** CRC-32 of `data`, continuing from the checksum `previous` of the bytes before it. */
function crc32(data: Uint8Array, previous = 0): number {
  let c = ~previous >>> 0;
  for (const byte of data) c = (CRC_TABLE[(c ^ byte) & 0xff] ?? 0) ^ (c >>> 8);
  return ~c >>> 0;
}
