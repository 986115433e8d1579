import { type ChildProcess, spawn } from 'node:child_process';
import { closeSync, openSync, readdirSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';

/**
 * Servers under test as child processes of their own, so the load generator in this process never
 * shares an event loop (or, with more than one core, a core) with the server it measures.
 */

export const ROOT = resolve(import.meta.dirname, '..', '..');
export const CLI = resolve(ROOT, 'bin', 'ethtrace.mjs');

/** Start-up includes tsx compiling the sources on a cold cache: seconds, not minutes. */
const STARTUP_TIMEOUT_MS = 60_000;
const STOP_GRACE_MS = 5_000;

export interface Child {
  readonly process: ChildProcess;
  /** The first capture group of the ready line. */
  readonly ready: string;
  /** Everything the process wrote so far, for error messages. */
  output(): string;
  stop(): Promise<void>;
}

/** Spawns a command and waits until its output matches `readyLine`; kills it if this process exits. */
export async function startChild(
  command: string,
  args: readonly string[],
  readyLine: RegExp,
  /**
   * `stderrFile`: the child's stderr goes to this file instead of a pipe read here, as a server's logs
   * go to a file or a journal; read here, a busy server's log lines cost this process CPU that the
   * server shares on a small machine.
   */
  opts: { cwd?: string; env?: NodeJS.ProcessEnv; stderrFile?: string } = {},
): Promise<Child> {
  const stderrFd = opts.stderrFile === undefined ? null : openSync(opts.stderrFile, 'w');
  const child = spawn(command, args, {
    cwd: opts.cwd ?? ROOT,
    env: { ...process.env, ...opts.env },
    stdio: ['ignore', 'pipe', stderrFd ?? 'pipe'],
  });
  if (stderrFd !== null) closeSync(stderrFd);
  const killOnExit = (): void => void child.kill('SIGKILL');
  process.once('exit', killOnExit);
  let output = '';
  const stop = async (): Promise<void> => {
    process.off('exit', killOnExit);
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise<void>((done) => child.once('exit', () => done()));
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), STOP_GRACE_MS);
    await exited;
    clearTimeout(timer);
  };
  let started = false;
  // Stays attached: a child whose pipes are not read blocks on a full pipe mid-measurement.
  const record = (chunk: Buffer): void => {
    output = (output + chunk.toString()).slice(-64_000);
  };
  child.stdout?.on('data', record);
  child.stderr?.on('data', record);
  const ready = await new Promise<string>((resolveReady, reject) => {
    const fail = (why: string) => {
      clearTimeout(timer);
      reject(new Error(`${command} ${args.join(' ')} did not start: ${why}\n${output.slice(-4000)}`));
    };
    const timer = setTimeout(() => fail(`no ready line within ${STARTUP_TIMEOUT_MS} ms`), STARTUP_TIMEOUT_MS);
    const check = () => {
      const match = started ? null : readyLine.exec(output);
      if (match === null) return;
      started = true;
      clearTimeout(timer);
      child.off('exit', onExit);
      child.stdout?.off('data', check);
      child.stderr?.off('data', check);
      resolveReady(match[1] ?? match[0]);
    };
    const onExit = (code: number | null, signal: string | null) =>
      fail(`exited (code ${code}, signal ${signal})`);
    child.stdout?.on('data', check);
    child.stderr?.on('data', check);
    child.once('exit', onExit);
    child.once('error', (e) => fail(e.message));
  }).catch(async (e) => {
    await stop();
    throw e;
  });
  return { process: child, ready, output: () => output, stop };
}

/** `ethtrace start` on an OS-chosen port without keys; resolves with its HTTP JSON-RPC URL. */
export async function startEthtrace(
  datadir: string,
  extraArgs: string[] = [],
  nodeArgs: string[] = [],
): Promise<Child & { url: string }> {
  const child = await startChild(
    process.execPath,
    [...nodeArgs, CLI, 'start', '--datadir', datadir, '--port', '0', '--no-auth', ...extraArgs],
    /HTTP\s+(http:\/\/\S+)\r?\n/,
  );
  return { ...child, url: child.ready };
}

/** USER_HZ, the unit of /proc times: 100 on every Linux ABI Node supports. */
const CLOCK_TICKS_PER_SECOND = 100;

/**
 * CPU seconds (user + system) a process has used so far, all its threads (worker threads included:
 * /proc/PID/stat sums them) and every live descendant process; null where /proc is absent.
 */
export function cpuSeconds(pid: number): number | null {
  if (ownCpuTicks(pid) === null) return null;
  let ticks = 0;
  for (const p of processTree(pid)) ticks += ownCpuTicks(p) ?? 0;
  return ticks / CLOCK_TICKS_PER_SECOND;
}

/** Resident memory of a process and every live descendant, in MiB (0 where /proc is absent). */
export function rssMiB(pid: number): number {
  let kib = 0;
  for (const p of processTree(pid)) {
    try {
      kib += Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${p}/status`, 'utf8'))?.[1] ?? 0);
    } catch {
      // Gone meanwhile.
    }
  }
  return kib / 1024;
}

/** A process and its live descendants (the API processes of `--processes`, their helpers). */
function processTree(pid: number): number[] {
  const children = new Map<number, number[]>();
  try {
    for (const entry of readdirSync('/proc')) {
      if (!/^\d+$/.test(entry)) continue;
      const ppid = parentOf(Number(entry));
      if (ppid === null) continue;
      const list = children.get(ppid) ?? [];
      list.push(Number(entry));
      children.set(ppid, list);
    }
  } catch {
    return [pid];
  }
  const tree = [pid];
  const stack = [...(children.get(pid) ?? [])];
  for (let next = stack.pop(); next !== undefined; next = stack.pop()) {
    tree.push(next);
    stack.push(...(children.get(next) ?? []));
  }
  return tree;
}

/** Fields of /proc/PID/stat after the parenthesised command name, which may itself hold spaces. */
function statFields(pid: number): string[] | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  } catch {
    return null;
  }
}

function ownCpuTicks(pid: number): number | null {
  const fields = statFields(pid);
  return fields === null ? null : Number(fields[11]) + Number(fields[12]);
}

function parentOf(pid: number): number | null {
  const fields = statFields(pid);
  return fields === null ? null : Number(fields[1]);
}

/** The pid of this process's child running `command` (as /proc names it), e.g. the anvil startAnvil ran. */
export function childPid(command: string): number | null {
  try {
    for (const entry of readdirSync('/proc')) {
      if (!/^\d+$/.test(entry)) continue;
      try {
        const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
        const name = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
        const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
        if (name === command && ppid === process.pid) return Number(entry);
      } catch {
        // The process ended while the list was read.
      }
    }
  } catch {
    // No /proc: CPU figures are left out.
  }
  return null;
}
