// The sources compiled to JavaScript once per version of them, so `ethtrace` and its worker threads
// run plain JavaScript and start-up pays no compiler (tsx compiling in the main thread and in every
// worker took seconds). `npm ci` builds it (the `prepare` script); `bin/ethtrace.mjs` checks on every
// start that the build matches the sources and compiles again when they changed, so an edited
// checkout never runs stale code.
//
// A build lives in dist/<key>/, where the key is a hash of every source file's path, size and
// modification time: processes starting at once (tests, `--processes`) share a finished build or
// each make one in a directory of its own and move it into place with one rename, so no process
// ever sees a half-written build. The type check is `npm run typecheck`'s; this only emits.

import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  cpSync,
  existsSync,
  mkdirSync,
  readdirSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const SRC = join(ROOT, 'src');
const DIST = join(ROOT, 'dist');
// What the emitted code depends on besides src/.
const INPUTS = ['tsconfig.json', 'tsconfig.build.json', 'package.json'];
// Builds kept beside the newest: a long-running server may still start workers from its own.
const KEEP = 3;

/** Every file under `dir` but the tests, as [path, stats]. */
function sources(dir, out = []) {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) sources(path, out);
    else if (!entry.name.endsWith('.test.ts')) out.push([path, statSync(path)]);
  }
  return out;
}

function keyOf(files) {
  const hash = createHash('sha256');
  for (const [path, st] of files) hash.update(`${relative(ROOT, path)}\0${st.size}\0${st.mtimeMs}\n`);
  return hash.digest('hex').slice(0, 16);
}

function compile(target) {
  const tsc = join(dirname(createRequire(import.meta.url).resolve('typescript/package.json')), 'bin', 'tsc');
  execFileSync(
    process.execPath,
    [tsc, '-p', join(ROOT, 'tsconfig.build.json'), '--outDir', join(target, 'src')],
    {
      cwd: ROOT,
      stdio: ['ignore', 'inherit', 'inherit'],
    },
  );
  // Files read at run time beside the code (the dashboard's page); TypeScript emits only .js.
  for (const [path] of sources(SRC)) {
    if (!path.endsWith('.ts') && !path.endsWith('.mjs')) {
      const to = join(target, 'src', relative(SRC, path));
      mkdirSync(dirname(to), { recursive: true });
      cpSync(path, to);
    }
  }
  // `src/version.ts` reads the version from ../package.json; the copy also makes the build's .js ES modules.
  cpSync(join(ROOT, 'package.json'), join(target, 'package.json'));
}

function prune(current) {
  const builds = readdirSync(DIST, { withFileTypes: true })
    .filter((e) => e.isDirectory() && e.name !== current)
    .map((e) => ({ path: join(DIST, e.name), mtime: statSync(join(DIST, e.name)).mtimeMs }))
    .sort((a, b) => b.mtime - a.mtime);
  for (const old of builds.slice(KEEP)) rmSync(old.path, { recursive: true, force: true });
}

/** The directory of the build matching the sources now, compiled first if there is none. */
export function build() {
  const files = sources(SRC);
  for (const name of INPUTS) files.push([join(ROOT, name), statSync(join(ROOT, name))]);
  const key = keyOf(files);
  const target = join(DIST, key);
  if (existsSync(join(target, 'complete'))) return target;
  mkdirSync(DIST, { recursive: true });
  const work = join(DIST, `.${key}.${process.pid}`);
  rmSync(work, { recursive: true, force: true });
  try {
    compile(work);
    writeFileSync(join(work, 'complete'), '');
    try {
      renameSync(work, target);
    } catch (e) {
      // Another process finished the same build first; theirs is as good as ours.
      if (!existsSync(join(target, 'complete'))) throw e;
    }
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
  prune(key);
  return target;
}

/** The URL of the compiled `src/<module>` (a path without extension, e.g. `main`). */
export function compiledModule(module) {
  return pathToFileURL(join(build(), 'src', `${module}.js`));
}

if (process.argv[1] === fileURLToPath(import.meta.url)) console.log(`compiled to ${relative(ROOT, build())}`);
