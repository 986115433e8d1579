import { readdirSync, readFileSync, statSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join, relative } from 'node:path';
import { parentPort, Worker } from 'node:worker_threads';
import type { Command } from 'commander';
import { UserError } from '../core/errors.ts';
import { workerEntryBeside } from '../core/modules.ts';
import { FORK_NAMES, type ForkName, forkByName } from '../evm/forks.ts';
import type { Named } from './flags.ts';
import { type RunOptions, runStateTests } from './stateTests.ts';

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
  jobs?: string;
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

/** What one file gave: its passes, and a line per failure. */
interface FileOutcome {
  passed: number;
  failures: string[];
}

/** A file to run, as the main thread hands it to a worker. */
interface FileTask {
  file: string;
  fork?: ForkName;
  run?: string;
}

function runFile(task: FileTask): FileOutcome {
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(task.file, 'utf8'));
  } catch (e) {
    throw new UserError(`${task.file}: not a JSON file of state tests (${(e as Error).message})`);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed))
    throw new UserError(`${task.file}: not a JSON file of state tests`);
  const options: RunOptions = {};
  if (task.fork) options.fork = task.fork;
  if (task.run !== undefined) options.run = new RegExp(task.run);
  const name = relative(process.cwd(), task.file);
  const outcome: FileOutcome = { passed: 0, failures: [] };
  for (const result of runStateTests(parsed as Parameters<typeof runStateTests>[0], options)) {
    if (result.failure === null) {
      outcome.passed++;
      continue;
    }
    const { data, gas, value } = result.indexes;
    outcome.failures.push(
      `FAIL ${name} ${result.test} ${result.fork} #${result.index} (data ${data}, gas ${gas}, value ${value}): ${result.failure}`,
    );
  }
  return outcome;
}

type WorkerReply = { outcome: FileOutcome } | { error: string; user: boolean };

/** The loop of a worker thread (src/cli/statetestWorker.mjs): files in, outcomes out. */
export function serveStateTestWorker(): void {
  const port = parentPort;
  if (!port) throw new Error('serveStateTestWorker runs in a worker thread');
  port.on('message', (task: FileTask) => {
    let reply: WorkerReply;
    try {
      reply = { outcome: runFile(task) };
    } catch (e) {
      reply = { error: e instanceof Error ? e.message : String(e), user: e instanceof UserError };
    }
    port.postMessage(reply);
  });
}

const WORKER = workerEntryBeside(import.meta.url, './statetestThread', './statetestWorker.mjs');

/** Runs the tasks on `jobs` worker threads; outcomes in task order. */
async function runOnWorkers(
  tasks: readonly FileTask[],
  jobs: number,
  onOutcome: (i: number, o: FileOutcome) => void,
): Promise<void> {
  let next = 0;
  let failure: Error | null = null;
  const one = () =>
    new Promise<void>((resolve, reject) => {
      const worker = new Worker(WORKER);
      let current = -1;
      const feed = () => {
        if (failure !== null || next >= tasks.length) {
          void worker.terminate().then(() => resolve());
          return;
        }
        current = next++;
        worker.postMessage(tasks[current]);
      };
      worker.on('message', (reply: WorkerReply) => {
        if ('error' in reply) {
          failure ??= reply.user ? new UserError(reply.error) : new Error(reply.error);
        } else onOutcome(current, reply.outcome);
        feed();
      });
      worker.on('error', (e) => {
        failure ??= e;
        reject(e);
      });
      worker.once('online', feed);
    });
  await Promise.all(Array.from({ length: jobs }, one));
  if (failure !== null) throw failure;
}

/** Runs the state tests under `paths`; prints one line per failure and a closing count. */
export async function stateTestCommand(
  paths: readonly string[],
  options: Options,
  out: NodeJS.WritableStream,
): Promise<number> {
  const fork = options.fork === undefined ? undefined : forkByName(options.fork);
  if (fork === null) throw new UserError(`--fork ${options.fork}: one of ${FORK_NAMES.join(', ')}`);
  if (options.run !== undefined) {
    try {
      new RegExp(options.run);
    } catch (e) {
      throw new UserError(`--run ${options.run} is not a regular expression: ${(e as Error).message}`);
    }
  }
  let jobs = availableParallelism();
  if (options.jobs !== undefined) {
    jobs = Number(options.jobs);
    if (!/^[0-9]+$/.test(options.jobs) || jobs < 1)
      throw new UserError(`--jobs ${options.jobs} is not a positive integer`);
  }
  const tasks: FileTask[] = testFiles(paths).map((file) => ({
    file,
    ...(fork ? { fork } : {}),
    ...(options.run !== undefined ? { run: options.run } : {}),
  }));
  let passed = 0;
  let failed = 0;
  // Outcomes are printed in file order, whichever worker finishes first.
  const done: Array<FileOutcome | undefined> = [];
  let printed = 0;
  const onOutcome = (i: number, outcome: FileOutcome) => {
    done[i] = outcome;
    for (let o = done[printed]; o !== undefined; o = done[printed]) {
      passed += o.passed;
      failed += o.failures.length;
      for (const line of o.failures) out.write(`${line}\n`);
      done[printed] = undefined;
      printed++;
    }
  };
  if (jobs <= 1 || tasks.length <= 1) {
    for (const [i, task] of tasks.entries()) onOutcome(i, runFile(task));
  } else await runOnWorkers(tasks, Math.min(jobs, tasks.length), onOutcome);
  out.write(`${passed} passed, ${failed} failed\n`);
  return failed;
}

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
      .option('--jobs <n>', 'worker threads (default: one per core)')
      .action(async (paths: string[], options: Options) => {
        const failed = await stateTestCommand(paths, options, process.stdout);
        if (failed > 0) throw new StateTestsFailed(failed);
      }),
    'statetest',
  );
}
