import cluster from 'node:cluster';
import { CommanderError } from 'commander';
import { EXIT_USER_ERROR } from './cli/flags.ts';
import { program } from './cli/program.ts';
import { StateTestsFailed } from './cli/statetest.ts';
import { UserError } from './core/errors.ts';
import { StartFailure } from './processes.ts';

// The entry of `ethtrace` (bin/ethtrace.mjs runs it compiled): the commands are in src/cli/, one file
// each; this decides the exit status of every outcome, and is the only place that exits.

async function main(argv: string[]): Promise<number> {
  const cli = program();
  if (argv.length === 0) {
    process.stderr.write(cli.helpInformation());
    return EXIT_USER_ERROR;
  }
  try {
    await cli.parseAsync(argv, { from: 'user' });
    return 0;
  } catch (e) {
    // Commander has printed its message (and the usage) already; --help and --version end here too.
    if (e instanceof CommanderError) return e.exitCode === 0 ? 0 : EXIT_USER_ERROR;
    // An API process of `--processes` failed: it has said why on the shared stderr.
    if (e instanceof StartFailure) return e.status;
    if (e instanceof StateTestsFailed) return 1;
    if (e instanceof UserError) {
      const command = argv[0] && cli.commands.some((c) => c.name() === argv[0]) ? ` ${argv[0]}` : '';
      // On a terminal the import's progress bar may hold the line.
      const newline = process.stderr.isTTY ? '\n' : '';
      process.stderr.write(`${newline}ethtrace${command}: ${e.message}\n`);
      return EXIT_USER_ERROR;
    }
    throw e;
  }
}

const code = await main(process.argv.slice(2));
// A failed start may leave handles (worker threads, timers) that would keep the process up.
// An API process of `--processes` has its IPC channel to the primary open: it leaves when done.
if (code === 0 && !cluster.isWorker) process.exitCode = 0;
else process.exit(code);
