// Imports the execution-apis conformance chain end to end (execution, verification and store writes)
// into a fresh datadir, several times with each engine of src/ingest/engines.ts in turn (the EVM of
// src/evm, the default; @ethereumjs/vm's runBlock, the one it replaced), and prints Mgas/s of wall
// time and Mgas per CPU-second of this process (the store's flush to disk waits without CPU), each
// engine's median and their ratio. Run: npm run bench:import [BENCH_RUNS=5]
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { readChainSpec } from '../src/chain/genesis.ts';
import type { EngineName } from '../src/ingest/engines.ts';
import { importChain } from '../src/ingest/importer.ts';
import { openLmdbStore } from '../src/store/lmdb/index.ts';

const CONFORMANCE = resolve(import.meta.dirname, '..', '..', 'shared', 'conformance', 'execution-apis');
const RUNS = Number(process.env.BENCH_RUNS ?? 5);
const ENGINES: EngineName[] = ['evm', 'ethereumjs'];

const spec = readChainSpec(join(CONFORMANCE, 'genesis.json'));
const rows = new Map<EngineName, Array<{ mgas: number; cpuMgas: number; blocksPerSecond: number }>>(
  ENGINES.map((e) => [e, []]),
);
// One warm-up import per engine (JIT), not counted.
for (let run = -1; run < RUNS; run++) {
  for (const engine of ENGINES) {
    const datadir = mkdtempSync(join(tmpdir(), 'ethtrace-bench-'));
    const store = await openLmdbStore(datadir);
    try {
      const cpu = process.cpuUsage();
      const s = await importChain({
        store,
        spec,
        files: [join(CONFORMANCE, 'chain.rlp')],
        verifyStateRoot: true,
        engine,
      });
      const used = process.cpuUsage(cpu);
      const cpuSeconds = (used.user + used.system) / 1e6;
      const mgas = Number(s.gasUsed) / 1e6;
      const row = {
        mgas: mgas / s.seconds,
        cpuMgas: mgas / cpuSeconds,
        blocksPerSecond: s.imported / s.seconds,
      };
      if (run >= 0) rows.get(engine)?.push(row);
      console.log(
        `${run < 0 ? 'warm-up' : `run ${run + 1}`} ${engine.padEnd(10)} ${s.imported} blocks, ${s.transactions} txs, ${mgas.toFixed(1)} Mgas in ${s.seconds.toFixed(3)} s (${cpuSeconds.toFixed(3)} s CPU): ${row.mgas.toFixed(1)} Mgas/s, ${row.cpuMgas.toFixed(1)} Mgas per CPU-second, ${row.blocksPerSecond.toFixed(1)} blocks/s`,
      );
    } finally {
      await store.close();
      rmSync(datadir, { recursive: true, force: true });
    }
  }
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? 0;
const medians = new Map(
  ENGINES.map((e) => {
    const r = rows.get(e) ?? [];
    return [e, { mgas: median(r.map((x) => x.mgas)), cpuMgas: median(r.map((x) => x.cpuMgas)) }];
  }),
);
for (const [engine, m] of medians)
  console.log(
    `median of ${RUNS} ${engine.padEnd(10)}: ${m.mgas.toFixed(1)} Mgas/s, ${m.cpuMgas.toFixed(1)} Mgas per CPU-second`,
  );
const ours = medians.get('evm');
const theirs = medians.get('ethereumjs');
if (ours && theirs)
  console.log(
    `evm / ethereumjs: ×${(ours.mgas / theirs.mgas).toFixed(2)} wall, ×${(ours.cpuMgas / theirs.cpuMgas).toFixed(2)} CPU`,
  );
