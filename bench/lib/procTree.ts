import { readdirSync, readFileSync } from 'node:fs';
import { cpuSeconds } from './process.ts';

/**
 * A server and everything it started (the API processes of `--processes`, their helpers): what a
 * benchmark charges to the server. From /proc; empty where there is none.
 */
export function processTree(pid: number): number[] {
  const out: number[] = [];
  const walk = (p: number) => {
    out.push(p);
    let tasks: string[];
    try {
      tasks = readdirSync(`/proc/${p}/task`);
    } catch {
      return;
    }
    for (const task of tasks) {
      try {
        const text = readFileSync(`/proc/${p}/task/${task}/children`, 'utf8').trim();
        if (text !== '') for (const child of text.split(/\s+/)) walk(Number(child));
      } catch {
        // The thread ended while it was read.
      }
    }
  };
  walk(pid);
  return out;
}

/** CPU seconds used so far by a process and all its descendants. */
export function treeCpuSeconds(pid: number): number {
  return processTree(pid).reduce((sum, p) => sum + (cpuSeconds(p) ?? 0), 0);
}

/** Resident memory of a process and all its descendants, in MiB. */
export function treeRssMiB(pid: number): number {
  let kib = 0;
  for (const p of processTree(pid)) {
    try {
      const match = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${p}/status`, 'utf8'));
      kib += Number(match?.[1] ?? 0);
    } catch {
      // Gone meanwhile.
    }
  }
  return kib / 1024;
}
