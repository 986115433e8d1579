// What checking each stored value's checksum costs a read (issue 19, item 10), in process: the same
// records read through the store (value and checksum read, checked, the checksum cut off) and read
// raw from the same LMDB environment (the stored bytes as they are, unchecked), side by side.
// Run: node --import tsx bench/storeChecksums.ts   (env: BENCH_ROUNDS, BENCH_RECEIPTS)
import { performance } from 'node:perf_hooks';
import { open } from 'lmdb';
import { openLmdbStore } from '../src/store/lmdb/index.ts';
import { addressHistoryKey, blockNumberKey } from '../src/store/lmdb/keys.ts';
import { account, address, block, fakeHash } from '../test/store/blocks.ts';
import { tempDir } from '../test/support/cli.ts';
import { machineLine } from './lib/rpc.ts';

/** Rounds of each measurement; the best is kept (the machine is shared, the best is the least disturbed). */
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 7);
/** Receipts in the block: 200 with two 300-byte logs each make ~300 KB of JSON, a busy block's. */
const RECEIPTS = Number(process.env.BENCH_RECEIPTS ?? 200);

const receiptJson = (i: number) =>
  JSON.stringify({
    transactionHash: `0x${'ab'.repeat(32)}`,
    logs: Array.from({ length: 2 }, () => ({
      data: `0x${'00'.repeat(300)}`,
      topics: [`0x${'cd'.repeat(32)}`],
    })),
    transactionIndex: `0x${i.toString(16)}`,
  });

async function main(): Promise<void> {
  const dir = tempDir('ethtrace-bench-checksums-');
  try {
    const store = await openLmdbStore(dir.path);
    const txHashes = Array.from({ length: RECEIPTS }, (_, i) => fakeHash(0x7a, 0n, i));
    await store.commitBlock(
      block(0n, {
        txHashes,
        receipts: txHashes.map(() => new Uint8Array(300)),
        receiptsJson: txHashes.map((_, i) => receiptJson(i)),
        accounts: Array.from({ length: 50 }, (_, i) => ({
          address: address(i),
          account: account(1n, 10n ** 18n),
        })),
      }),
    );
    const hash = fakeHash(0xb0, 0n);
    const size = (await store.getBlockReceiptsJson(hash))?.length ?? 0;
    const env = open(dir.path, { noSubdir: false, readOnly: true, compression: false, maxDbs: 32 });
    const raw = (name: string) =>
      env.openDB<Uint8Array, Uint8Array>(name, { keyEncoding: 'binary', encoding: 'binary' });
    const [canonical, headers, txIndex, accountHistory, receiptsJson] = [
      'canonical',
      'headers',
      'txIndex',
      'accountHistory',
      'receiptsJson',
    ].map(raw) as [
      ReturnType<typeof raw>,
      ReturnType<typeof raw>,
      ReturnType<typeof raw>,
      ReturnType<typeof raw>,
      ReturnType<typeof raw>,
    ];
    const who = address(7);
    const cases: Array<{ name: string; n: number; checked: () => unknown; unchecked: () => unknown }> = [
      {
        name: 'canonical hash (32 B)',
        n: 50_000,
        checked: () => store.getCanonicalHash(0n),
        unchecked: async () => canonical.get(blockNumberKey(0n)),
      },
      {
        name: 'header',
        n: 50_000,
        checked: () => store.getHeader(hash),
        unchecked: async () => headers.get(hash),
      },
      {
        name: 'transaction index (44 B)',
        n: 50_000,
        checked: () => store.getTxLocation(txHashes[7] as Uint8Array),
        unchecked: async () => txIndex.get(txHashes[7] as Uint8Array),
      },
      {
        name: 'account at a block (range read)',
        n: 50_000,
        checked: () => store.getAccountAt(who, 5n),
        unchecked: async () => {
          const key = addressHistoryKey(who, 5n);
          for (const entry of accountHistory.getRange({
            start: key,
            end: key.subarray(0, 20),
            reverse: true,
            limit: 1,
          }))
            return entry;
          return undefined;
        },
      },
      {
        name: `one receipt's JSON of ${RECEIPTS}`,
        n: 20_000,
        checked: () => store.getReceiptJson(hash, RECEIPTS >> 1),
        unchecked: async () => {
          const text = receiptsJson.getBinaryFast(hash);
          return text && Uint8Array.prototype.slice.call(text, 0, Math.floor(size / RECEIPTS));
        },
      },
      {
        name: `a block's receipts JSON (${Math.round(size / 1024)} KB)`,
        n: 500,
        checked: () => store.getBlockReceiptsJson(hash),
        unchecked: async () => receiptsJson.get(hash),
      },
    ];
    // Rounds alternate the two ways of reading, so that a change in the machine's load meets both.
    const best = async (n: number, reads: Array<() => unknown>) => {
      const us = reads.map(() => Number.POSITIVE_INFINITY);
      for (let round = 0; round < ROUNDS; round++) {
        for (const [i, read] of reads.entries()) {
          const started = performance.now();
          for (let k = 0; k < n; k++) await read();
          us[i] = Math.min(us[i] as number, ((performance.now() - started) * 1000) / n);
        }
      }
      return us;
    };
    const rows: string[] = [];
    for (const c of cases) {
      const [unchecked = 0, checked = 0] = await best(c.n, [c.unchecked, c.checked]);
      rows.push(
        `${c.name.padEnd(36)} ${unchecked.toFixed(2).padStart(9)} ${checked.toFixed(2).padStart(9)} ${(checked - unchecked).toFixed(2).padStart(9)}`,
      );
    }
    await env.close();
    await store.close();
    process.stdout.write(
      [
        '',
        `store reads, µs per read (best of ${ROUNDS} rounds): raw = the stored bytes read from LMDB, unchecked; ` +
          'store = through the store, checksum checked and cut off',
        `${'record'.padEnd(36)} ${'raw'.padStart(9)} ${'store'.padStart(9)} ${'cost'.padStart(9)}`,
        ...rows,
        `  ${machineLine()}`,
        '',
      ].join('\n'),
    );
  } finally {
    dir.cleanup();
  }
}

await main();
