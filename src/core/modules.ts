// The code runs either as TypeScript under tsx (tests, benches) or compiled to JavaScript
// (bin/build.mjs: `ethtrace` itself). Modules named by URL at run time (worker threads' entries, a
// module a worker imports) must be named as the running code is: `x.ts` or `x.js`.

/** Whether `base` (a module's `import.meta.url`) is compiled code. */
function compiled(base: string): boolean {
  return base.endsWith('.js');
}

/** The module `name` (a relative path without extension) beside `base`, as the running code is. */
export function moduleBeside(base: string, name: string): URL {
  return new URL(`${name}${compiled(base) ? '.js' : '.ts'}`, base);
}

/**
 * A worker thread's entry beside `base`: compiled, the module `name` itself; under tsx, `bootstrap`,
 * a `.mjs` that registers tsx before importing `name` (workers do not inherit the main thread's loader).
 */
export function workerEntryBeside(base: string, name: string, bootstrap: string): URL {
  return new URL(compiled(base) ? `${name}.js` : bootstrap, base);
}
