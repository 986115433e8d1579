import type { Command } from 'commander';
import { readChainSpec } from '../chain/genesis.ts';
import { checkSchema } from '../chain/storedSpec.ts';
import { UserError } from '../core/errors.ts';
import { claimWriter } from '../datadirWriter.ts';
import { GROUP_BLOCKS } from '../ingest/chainWriter.ts';
import { importChain } from '../ingest/importer.ts';
import { importProgress } from '../ingest/progress.ts';
import { prepareDatadir, resolveDatadir } from '../store/datadir.ts';
import { checkStore } from '../store/lmdb/check.ts';
import { openLmdbStore } from '../store/lmdb/index.ts';
import { DATADIR_HELP, type Named } from './flags.ts';

interface ImportOptions {
  datadir?: string;
  genesis: string;
  verifyStateRoot: boolean;
  blocksPerCommit: string;
}

/** `ethtrace import --genesis FILE FILES…`. */
export function addImportCommand(root: Command, named: Named): void {
  named(
    root
      .command('import')
      .description('execute and verify the blocks of geth-export files and store them')
      .argument('<files...>', 'chain files in the format of `geth export` (RLP blocks)')
      .requiredOption('--genesis <file>', 'the genesis file (geth format) of the chain')
      .option('--datadir <dir>', DATADIR_HELP)
      .option('--no-verify-state-root', 'accept state roots that differ (chains of dev nodes)')
      .option(
        '--blocks-per-commit <n>',
        'blocks stored per store transaction at most (also one a second); a killed import loses at most these',
        String(GROUP_BLOCKS),
      )
      .action((files: string[], opts: ImportOptions) => importCommand(files, opts)),
    'import',
  );
}

async function importCommand(files: string[], opts: ImportOptions): Promise<void> {
  const blocksPerCommit = Number(opts.blocksPerCommit);
  if (!Number.isSafeInteger(blocksPerCommit) || blocksPerCommit <= 0)
    throw new UserError(`--blocks-per-commit ${opts.blocksPerCommit} is not a positive integer`);
  const spec = readChainSpec(opts.genesis);
  const datadir = resolveDatadir(opts.datadir);
  prepareDatadir(datadir);
  // The import writes: refused while another process writes this datadir (src/datadirWriter.ts),
  // not while servers serve its chain read-only, which see the new blocks.
  const writer = claimWriter(datadir, 'import', 'imported chain');
  const store = await openLmdbStore(datadir);
  try {
    await checkStore(store, datadir);
    await checkSchema(store, datadir);
    const progress = importProgress(process.stderr);
    const summary = await importChain({
      store,
      spec,
      files,
      verifyStateRoot: opts.verifyStateRoot,
      progress,
      blocksPerCommit,
    });
    progress.finish(summary);
  } finally {
    await store.close();
    writer.release();
  }
}
