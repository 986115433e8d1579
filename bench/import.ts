// Imports the execution-apis conformance chain end to end (execution, verification and store writes)
// into a fresh datadir, several times, and prints Mgas/s and blocks/s. Run: npm run bench:import
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { readChainSpec } from '../src/chain/genesis.ts';
import { importChain } from '../src/ingest/importer.ts';
import { openLmdbStore } from '../src/store/lmdb/index.ts';

const CONFORMANCE = resolve(import.meta.dirname, '..', '..', 'shared', 'conformance', 'execution-apis');
const RUNS = Number(process.env.BENCH_RUNS ?? 5);

const spec = readChainSpec(join(CONFORMANCE, 'genesis.json'));
const rows: Array<{ seconds: number; mgas: number; blocksPerSecond: number }> = [];
for (let run = 0; run < RUNS; run++) {
  const datadir = mkdtempSync(join(tmpdir(), 'ethtrace-bench-'));
  const store = await openLmdbStore(datadir);
  try {
    const s = await importChain({
      store,
      spec,
      files: [join(CONFORMANCE, 'chain.rlp')],
      verifyStateRoot: true,
    });
    const row = {
      seconds: s.seconds,
      mgas: Number(s.gasUsed) / 1e6 / s.seconds,
      blocksPerSecond: s.imported / s.seconds,
    };
    rows.push(row);
    console.log(
      `run ${run + 1}: ${s.imported} blocks, ${s.transactions} txs, ${(Number(s.gasUsed) / 1e6).toFixed(1)} Mgas in ${s.seconds.toFixed(3)} s: ${row.mgas.toFixed(1)} Mgas/s, ${row.blocksPerSecond.toFixed(1)} blocks/s`,
    );
  } finally {
    await store.close();
    rmSync(datadir, { recursive: true, force: true });
  }
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? 0;
console.log(
  `median of ${RUNS}: ${median(rows.map((r) => r.mgas)).toFixed(1)} Mgas/s, ${median(rows.map((r) => r.blocksPerSecond)).toFixed(1)} blocks/s (first run includes JIT warm-up)`,
);
