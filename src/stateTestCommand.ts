import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import type { Command } from 'commander';
import { UserError } from './core/errors.ts';
import { FORK_NAMES, forkByName } from './evm/forks.ts';
import { runStateTests } from './stateTests.ts';

/** Some state tests failed: `ethtrace statetest` exits with status 1 (src/main.ts). */
export class StateTestsFailed extends Error {
  constructor(readonly failed: number) {
    super(`${failed} state test cases failed`);
    this.name = 'StateTestsFailed';
  }
}

interface Options {
  fork?: string;
  run?: string;
}

/** Every .json file under the paths given, in a stable order. */
function testFiles(paths: readonly string[]): string[] {
  const files: string[] = [];
  const visit = (path: string): void => {
    let stat: ReturnType<typeof statSync>;
    try {
      stat = statSync(path);
    } catch {
      throw new UserError(`${path}: no such file or folder`);
    }
    if (stat.isDirectory()) {
      for (const entry of readdirSync(path).sort()) {
        const child = join(path, entry);
        if (entry.endsWith('.json') || statSync(child).isDirectory()) visit(child);
      }
    } else files.push(path);
  };
  for (const path of paths) visit(path);
  return files;
}

/** Runs the state tests under `paths`; prints one line per failure and a closing count. */
export function stateTestCommand(
  paths: readonly string[],
  options: Options,
  out: NodeJS.WritableStream,
): number {
  const fork = options.fork === undefined ? undefined : forkByName(options.fork);
  if (fork === null) throw new UserError(`--fork ${options.fork}: one of ${FORK_NAMES.join(', ')}`);
  let run: RegExp | undefined;
  if (options.run !== undefined) {
    try {
      run = new RegExp(options.run);
    } catch (e) {
      throw new UserError(`--run ${options.run} is not a regular expression: ${(e as Error).message}`);
    }
  }
  let passed = 0;
  let failed = 0;
  for (const file of testFiles(paths)) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(readFileSync(file, 'utf8'));
    } catch (e) {
      throw new UserError(`${file}: not a JSON file of state tests (${(e as Error).message})`);
    }
    if (typeof parsed !== 'object' || parsed === null)
      throw new UserError(`${file}: not a JSON file of state tests`);
    const name = relative(process.cwd(), file);
    for (const result of runStateTests(parsed as Parameters<typeof runStateTests>[0], {
      ...(fork ? { fork } : {}),
      ...(run ? { run } : {}),
    })) {
      if (result.failure === null) {
        passed++;
        continue;
      }
      failed++;
      const { data, gas, value } = result.indexes;
      out.write(
        `FAIL ${name} ${result.test} ${result.fork} #${result.index} (data ${data}, gas ${gas}, value ${value}): ${result.failure}\n`,
      );
    }
  }
  out.write(`${passed} passed, ${failed} failed\n`);
  return failed;
}

type Named = (command: Command, path: string) => Command;

/** `ethtrace statetest [--fork NAME] [--run REGEX] PATH…`. */
export function addStateTestCommand(root: Command, named: Named): void {
  named(
    root
      .command('statetest')
      .description(
        'run filled state tests (files or folders of GeneralStateTests JSON): one line per failing case, ' +
          'then "N passed, N failed"; exit status 1 when any fails',
      )
      .argument('<paths...>', 'state test files or folders')
      .option('--fork <name>', `only this fork (${FORK_NAMES.join(', ')})`)
      .option('--run <regex>', 'only tests whose name matches')
      .action((paths: string[], options: Options) => {
        const failed = stateTestCommand(paths, options, process.stdout);
        if (failed > 0) throw new StateTestsFailed(failed);
      }),
    'statetest',
  );
}
