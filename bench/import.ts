// Imports chains end to end (execution, verification and store writes) into a fresh datadir, several
// times with each engine of src/ingest/engines.ts in turn (the EVM of src/evm, the default;
// @ethereumjs/vm's runBlock, the one it replaced), and prints Mgas/s of wall time and Mgas per
// CPU-second of this process (the store's flush to disk waits without CPU), each engine's median and
// their ratio. The chains: the execution-apis conformance chain (Frontier → BPO2, every root checked;
// one of its blocks carries 10.6 MB of receipts), and a mainnet-like chain built with anvil
// (bench/lib/mainnetBlocks.ts: swaps, transfers, reverts, 7702 wallets; BENCH_MAINNET_BLOCKS blocks
// of 200 transactions, 0 to skip it). Run: npm run bench:import [BENCH_RUNS=5]
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { readChainSpec } from '../src/chain/genesis.ts';
import { importChain } from '../src/ingest/importer.ts';
import { openLmdbStore } from '../src/store/lmdb/index.ts';
import { type ImportEngine, importEngine } from '../test/support/ethereumjsOracle/importEngine.ts';
import { exportChain } from '../test/support/exportChain.ts';
import { buildMainnetChain } from './lib/mainnetBlocks.ts';

const CONFORMANCE = resolve(import.meta.dirname, '..', '..', 'shared', 'conformance', 'execution-apis');
const RUNS = Number(process.env.BENCH_RUNS ?? 5);
const ENGINES: ImportEngine[] = ['evm', 'ethereumjs'];

const MAINNET_BLOCKS = Number(process.env.BENCH_MAINNET_BLOCKS ?? 2);

async function bench(
  title: string,
  genesisPath: string,
  file: string,
  verifyStateRoot: boolean,
): Promise<void> {
  console.log(`== ${title}`);
  const spec = readChainSpec(genesisPath);
  const rows = new Map<ImportEngine, Array<{ mgas: number; cpuMgas: number }>>(ENGINES.map((e) => [e, []]));
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
          files: [file],
          verifyStateRoot,
          engine: importEngine(engine),
        });
        const used = process.cpuUsage(cpu);
        const cpuSeconds = (used.user + used.system) / 1e6;
        const mgas = Number(s.gasUsed) / 1e6;
        const row = { mgas: mgas / s.seconds, cpuMgas: mgas / cpuSeconds };
        if (run >= 0) rows.get(engine)?.push(row);
        console.log(
          `${run < 0 ? 'warm-up' : `run ${run + 1}`} ${engine.padEnd(10)} ${s.imported} blocks, ${s.transactions} txs, ${mgas.toFixed(1)} Mgas in ${s.seconds.toFixed(3)} s (${cpuSeconds.toFixed(3)} s CPU): ${row.mgas.toFixed(1)} Mgas/s, ${row.cpuMgas.toFixed(1)} Mgas per CPU-second, ${(s.imported / s.seconds).toFixed(1)} blocks/s`,
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
}

await bench('the conformance chain', join(CONFORMANCE, 'genesis.json'), join(CONFORMANCE, 'chain.rlp'), true);
if (MAINNET_BLOCKS > 0) {
  const work = mkdtempSync(join(tmpdir(), 'ethtrace-bench-mainnet-'));
  const chain = await buildMainnetChain(work, { blocks: MAINNET_BLOCKS, txsPerBlock: 200 });
  try {
    const exported = await exportChain(chain.anvil, join(work, 'chain'));
    // anvil's genesis state root is not the canonical one: its chains import without that check.
    await bench(
      `a mainnet-like chain (${MAINNET_BLOCKS} blocks of 200 transactions, anvil's)`,
      exported.genesisPath,
      exported.rlpPath,
      false,
    );
  } finally {
    await chain.anvil.stop();
    rmSync(work, { recursive: true, force: true });
  }
}
