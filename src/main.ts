import { parseArgs } from 'node:util';
import { readChainSpec } from './chain/genesis.ts';
import { resolveDatadir } from './config/datadir.ts';
import { UserError } from './errors.ts';
import { importChain } from './ingest/importer.ts';
import { importProgress } from './ingest/progress.ts';
import { openLmdbStore } from './store/lmdb/index.ts';

const USAGE = `usage: ethtrace <command> [options]

commands:
  import --genesis genesis.json [--datadir DIR] [--no-verify-state-root] FILE.rlp [FILE.rlp ...]
      execute and verify the blocks of geth-export files and store them

The data directory is --datadir, else $ETHTRACE_DATADIR, else ~/.local/share/ethtrace.
`;

async function importCommand(args: string[]): Promise<void> {
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    options: {
      datadir: { type: 'string' },
      genesis: { type: 'string' },
      'no-verify-state-root': { type: 'boolean', default: false },
    },
  });
  if (!values.genesis) throw new UserError('import needs --genesis genesis.json');
  if (positionals.length === 0)
    throw new UserError('import needs at least one chain file (geth export format)');
  const spec = readChainSpec(values.genesis);
  const store = await openLmdbStore(resolveDatadir(values.datadir));
  const progress = importProgress(process.stderr);
  try {
    const summary = await importChain({
      store,
      spec,
      files: positionals,
      verifyStateRoot: !values['no-verify-state-root'],
      progress,
    });
    progress.finish(summary);
  } finally {
    await store.close();
  }
}

const commands: Record<string, (args: string[]) => Promise<void>> = {
  import: importCommand,
};

async function main(argv: string[]): Promise<number> {
  const [name, ...rest] = argv;
  if (!name || name === '--help' || name === '-h' || name === 'help') {
    process.stdout.write(USAGE);
    return name ? 0 : 2;
  }
  const command = commands[name];
  if (!command) {
    process.stderr.write(`ethtrace: unknown command "${name}"\n\n${USAGE}`);
    return 2;
  }
  try {
    await command(rest);
    return 0;
  } catch (e) {
    if (e instanceof UserError || (e as { code?: string }).code?.startsWith('ERR_PARSE_ARGS')) {
      process.stderr.write(`\nethtrace ${name}: ${(e as Error).message}\n`);
      return 1;
    }
    throw e;
  }
}

process.exitCode = await main(process.argv.slice(2));
