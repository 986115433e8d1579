// The repository's own TypeScript and JavaScript, parsed (with @swc/core's parser, a devDependency),
// for the source checks that `npm test` runs (scripts/emptyCatches.ts, scripts/deadExports.ts).

import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { type Module, parseSync } from '@swc/core';

export const ROOT = join(import.meta.dirname, '..');

const SOURCE = /\.(ts|mts|mjs|js|cjs)$/;
const SKIP = new Set(['node_modules', 'dist', '.tmp']);

/** Every source file under these folders of the repository (paths relative to it). */
export function sourceFiles(folders: readonly string[]): string[] {
  const out: string[] = [];
  const walk = (dir: string) => {
    for (const name of readdirSync(join(ROOT, dir)).sort()) {
      if (SKIP.has(name) || name.startsWith('.')) continue;
      const path = join(dir, name);
      if (statSync(join(ROOT, path)).isDirectory()) walk(path);
      else if (SOURCE.test(name) && !name.endsWith('.d.ts')) out.push(path);
    }
  };
  for (const folder of folders) walk(folder);
  return out;
}

export interface Parsed {
  path: string;
  module: Module;
  /** The line (1-based) of a node's span start. */
  line(span: { start: number }): number;
}

/**
 * One file parsed. swc's spans count on across every parse of a process, so each file is parsed
 * behind a one-statement marker whose span says where the file begins.
 */
export function parse(path: string): Parsed {
  const text = readFileSync(join(ROOT, path), 'utf8');
  // A shebang line becomes a comment of the same length (it may only open a file).
  const source = `0;\n${text.startsWith('#!') ? `//${text.slice(2)}` : text}`;
  const module = parseSync(source, {
    syntax: /\.(ts|mts)$/.test(path) ? 'typescript' : 'ecmascript',
    target: 'esnext',
  });
  const base = module.body[0]?.span.start ?? 0;
  const bytes = Buffer.from(source);
  return {
    path,
    module,
    line: (span) =>
      bytes
        .subarray(0, span.start - base)
        .toString()
        .split('\n').length - 1,
  };
}

/** Every node of a tree with a `type`, each once, depth first. */
export function* nodes(tree: unknown): Generator<Record<string, unknown> & { type: string }> {
  const stack: unknown[] = [tree];
  while (stack.length > 0) {
    const node = stack.pop();
    if (Array.isArray(node)) {
      for (let i = node.length - 1; i >= 0; i--) stack.push(node[i]);
      continue;
    }
    if (node === null || typeof node !== 'object') continue;
    const record = node as Record<string, unknown>;
    if (typeof record.type === 'string') yield record as Record<string, unknown> & { type: string };
    for (const [key, value] of Object.entries(record)) if (key !== 'span') stack.push(value);
  }
}
