import { Command } from 'commander';
import { VERSION } from '../version.ts';
import { addImportCommand } from './import.ts';
import { addKeysCommand } from './keys.ts';
import { addStartCommand } from './start.ts';
import { addStateTestCommand } from './statetest.ts';

/**
 * The command line: one file per command beside this one. Errors go through `exitOverride`, so that
 * src/main.ts decides every exit status.
 */

/** Commander's message on one line: "error: unknown option '--nme'\n(Did you mean --name?)\n". */
function oneLine(text: string): string {
  return `${text
    .replace(/^error: /, '')
    .trimEnd()
    .replace(/\n\(Did you mean (.*)\)$/, ' (did you mean $1)')}\n`;
}

/** Commander's "error: …" becomes "ethtrace <command>: …", followed by that command's usage line. */
function named(command: Command, path: string): Command {
  const full = path === '' ? 'ethtrace' : `ethtrace ${path}`;
  return command
    .configureOutput({ outputError: (text, write) => write(`${full}: ${oneLine(text)}`) })
    .showHelpAfterError(`usage: ${full} ${command.usage()}\n(\`${full} --help\` describes the options)`);
}

export function program(): Command {
  const root = new Command('ethtrace')
    .description('Ethereum JSON-RPC service for traces and receipts (Infura-compatible at the edge)')
    .version(`ethtrace ${VERSION}`, '-V, --version', 'print the version')
    .helpOption('-h, --help', 'print this help')
    .exitOverride()
    .addHelpText(
      'after',
      '\nRun `ethtrace <command> --help` for its options. Exit status: 0 done, 2 the command could not do\nwhat was asked (one line on stderr says why), 1 an internal error.',
    );
  addImportCommand(root, named);
  addStartCommand(root, named);
  addKeysCommand(root, named);
  addStateTestCommand(root, named);
  return named(root, '');
}
