// Summarises the .cpuprofile files Node writes with --cpu-prof (one per thread: the main thread's
// name ends in `.0.NNN.cpuprofile`, each worker's in its thread id): busy time per thread, then over
// the worker threads together the files and functions with the most self time.
// Run: node --import tsx scripts/cpuprofile-summary.ts DIR [TOP] [all]   (`all`: the main thread's
// functions counted too, for a profile of in-process work; bench/mainnet.ts runs it itself with
// BENCH_PROFILE=1)
import { readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
}

interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

const ROOT = resolve(import.meta.dirname, '..');
/** Pseudo-frames V8 records when no JavaScript runs; shown on their own, not among the functions. */
const NOT_JS = new Set(['(idle)', '(program)', '(garbage collector)', '(root)']);

function where(url: string): string {
  const path = url.startsWith('file://') ? fileURLToPath(url) : url;
  if (path === '') return '(native)';
  return path.startsWith(ROOT) ? path.slice(ROOT.length + 1) : path;
}

/** Self time in microseconds per node id. */
function selfTimes(profile: Profile): Map<number, number> {
  const self = new Map<number, number>();
  for (const [i, id] of profile.samples.entries()) {
    // A sample's time is the delta to the next one; the last sample gets the previous delta.
    const delta = profile.timeDeltas[i + 1] ?? profile.timeDeltas[i] ?? 0;
    self.set(id, (self.get(id) ?? 0) + delta);
  }
  return self;
}

const msOf = (us: number) => (us / 1000).toFixed(0).padStart(8);
const pct = (part: number, whole: number) => `${((100 * part) / whole).toFixed(1).padStart(5)}%`;

export function summariseProfiles(dir: string, top = 25, threads: 'workers' | 'all' = 'workers'): string {
  const files = readdirSync(dir).filter((f) => f.endsWith('.cpuprofile'));
  if (files.length === 0) return `no .cpuprofile files in ${dir}`;
  const out: string[] = [`CPU profiles in ${dir}:`];
  const byFunction = new Map<string, number>();
  const byFile = new Map<string, number>();
  const pseudo = new Map<string, number>();
  let workerBusy = 0;
  for (const file of files.sort()) {
    const profile = JSON.parse(readFileSync(join(dir, file), 'utf8')) as Profile;
    const nodes = new Map(profile.nodes.map((n) => [n.id, n]));
    const self = selfTimes(profile);
    // The thread id is the second number from the end of the file name (CPU.date.time.pid.tid.seq).
    const parts = file.split('.');
    const isMain = threads === 'workers' && parts[parts.length - 3] === '0';
    let busy = 0;
    let idle = 0;
    for (const [id, us] of self) {
      const frame = (nodes.get(id) as ProfileNode).callFrame;
      if (frame.functionName === '(idle)') {
        idle += us;
        continue;
      }
      busy += us;
      if (isMain) continue;
      if (NOT_JS.has(frame.functionName)) {
        pseudo.set(frame.functionName, (pseudo.get(frame.functionName) ?? 0) + us);
        continue;
      }
      const fileName = where(frame.url);
      const fn = `${frame.functionName || '(anonymous)'}  ${fileName}:${frame.lineNumber + 1}`;
      byFunction.set(fn, (byFunction.get(fn) ?? 0) + us);
      byFile.set(fileName, (byFile.get(fileName) ?? 0) + us);
    }
    if (!isMain) workerBusy += busy;
    out.push(
      `  ${isMain ? 'main  ' : 'worker'} ${file}: busy ${msOf(busy).trim()} ms, idle ${msOf(idle).trim()} ms`,
    );
  }
  const rank = (m: Map<string, number>) => [...m].sort((a, b) => b[1] - a[1]).slice(0, top);
  out.push(`workers, busy ${msOf(workerBusy).trim()} ms in all; outside JavaScript:`);
  for (const [name, us] of rank(pseudo)) out.push(`  ${msOf(us)} ms ${pct(us, workerBusy)}  ${name}`);
  out.push(`workers, self time by file (top ${top}):`);
  for (const [name, us] of rank(byFile)) out.push(`  ${msOf(us)} ms ${pct(us, workerBusy)}  ${name}`);
  out.push(`workers, self time by function (top ${top}):`);
  for (const [name, us] of rank(byFunction)) out.push(`  ${msOf(us)} ms ${pct(us, workerBusy)}  ${name}`);
  return out.join('\n');
}

if (process.argv[1] !== undefined && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const dir = process.argv[2];
  if (dir === undefined) {
    console.error('usage: node --import tsx scripts/cpuprofile-summary.ts DIR [TOP] [all]');
    process.exit(2);
  }
  console.log(
    summariseProfiles(dir, Number(process.argv[3] ?? 25), process.argv[4] === 'all' ? 'all' : 'workers'),
  );
}
