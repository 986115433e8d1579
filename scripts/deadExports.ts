// `npm test` runs this: a name exported from src/ that no other file imports (from src/, test/,
// bench/, scripts/ or bin/) and its own file does not use is dead; each is named by file and line.
// Imports are followed through re-exports (`export { x } from`, `export * from`); a namespace import
// or a dynamic import() of a module counts as using every name it exports.

import { existsSync } from 'node:fs';
import { dirname, join, normalize } from 'node:path';
import { nodes, type Parsed, parse, ROOT, sourceFiles } from './sourceFiles.ts';

type Node = Record<string, unknown> & { type: string };

/**
 * Modules loaded by path rather than imported, whose exports are used by name: the CLI that
 * bin/ethtrace.mjs starts from the build, and the execution worker's module, whose `init` the
 * pool's worker thread calls (src/exec/pool/worker.ts).
 */
const ENTRY_POINTS = new Set(['src/main.ts', 'src/exec/worker/entry.ts']);

/** Exports kept with no user yet, each with why (none today). */
const KEPT = new Set<string>();

const files = sourceFiles(['src', 'test', 'bench', 'scripts', 'bin']);
const parsed = new Map<string, Parsed>(files.map((path) => [path, parse(path)]));

/** The repository file a relative specifier names from `from`, if it is one of ours. */
function resolve(from: string, specifier: unknown): string | null {
  if (typeof specifier !== 'string' || !specifier.startsWith('.')) return null;
  const base = normalize(join(dirname(from), specifier));
  for (const candidate of [base, base.replace(/\.js$/, '.ts'), `${base}.ts`, join(base, 'index.ts')])
    if (parsed.has(candidate) || existsSync(join(ROOT, candidate)))
      return parsed.has(candidate) ? candidate : null;
  return null;
}

const nameOf = (node: unknown): string => {
  const n = node as Node;
  return n.type === 'StringLiteral' ? String(n.value) : String(n.value);
};

/** Each module's exports: name → line. */
const exported = new Map<string, Map<string, number>>();
/** Names of a module that another file imports ('*': all of them). */
const imported = new Map<string, Set<string>>();
/** `export * from` edges: a name used from the first module may be the second's. */
const forwards = new Map<string, string[]>();

const use = (module: string | null, name: string) => {
  if (module === null) return;
  const names = imported.get(module) ?? new Set<string>();
  names.add(name);
  imported.set(module, names);
};

for (const [path, file] of parsed) {
  const own = new Map<string, number>();
  exported.set(path, own);
  const line = (node: Node) => file.line(node.span as { start: number });
  for (const item of file.module.body as unknown as Node[]) {
    const source = item.source as Node | null | undefined;
    if (item.type === 'ImportDeclaration') {
      const from = resolve(path, source?.value);
      for (const spec of item.specifiers as Node[]) {
        if (spec.type === 'ImportNamespaceSpecifier') use(from, '*');
        else if (spec.type === 'ImportDefaultSpecifier') use(from, 'default');
        else use(from, nameOf((spec.imported as Node | null) ?? spec.local));
      }
    } else if (item.type === 'ExportAllDeclaration') {
      const from = resolve(path, source?.value);
      if (from !== null) forwards.set(path, [...(forwards.get(path) ?? []), from]);
    } else if (item.type === 'ExportNamedDeclaration') {
      const from = source ? resolve(path, source.value) : null;
      for (const spec of item.specifiers as Node[]) {
        if (spec.type === 'ExportNamespaceSpecifier') {
          use(from, '*');
          own.set(nameOf(spec.name), line(item));
          continue;
        }
        const orig = nameOf(spec.orig);
        if (source) use(from, orig);
        own.set(nameOf((spec.exported as Node | null) ?? spec.orig), line(item));
      }
    } else if (item.type === 'ExportDeclaration') {
      const decl = item.declaration as Node;
      if (decl.type === 'VariableDeclaration')
        for (const d of decl.declarations as Node[]) {
          const id = d.id as Node;
          if (id.type === 'Identifier') own.set(String(id.value), line(item));
        }
      else {
        const id = (decl.identifier ?? decl.id) as Node | undefined;
        if (id) own.set(nameOf(id), line(item));
      }
    } else if (item.type === 'ExportDefaultDeclaration' || item.type === 'ExportDefaultExpression')
      own.set('default', line(item));
  }
  // import('./x.ts') and `typeof import('./x.ts')`: every name of that module.
  for (const node of nodes(file.module)) {
    if (node.type === 'CallExpression' && (node.callee as Node).type === 'Import') {
      const arg = (node.arguments as Array<{ expression: Node }>)[0]?.expression;
      if (arg?.type === 'StringLiteral') use(resolve(path, arg.value), '*');
    }
    if (node.type === 'TsImportType') use(resolve(path, (node.argument as Node).value), '*');
  }
}

/** Whether `name` of `module` is imported, directly or through modules that forward all of it. */
function isUsed(module: string, name: string, seen = new Set<string>()): boolean {
  if (seen.has(module)) return false;
  seen.add(module);
  const names = imported.get(module);
  if (names?.has(name) || names?.has('*')) return true;
  for (const [forwarder, targets] of forwards)
    if (targets.includes(module) && isUsed(forwarder, name, seen)) return true;
  return false;
}

/** How often each identifier occurs in a file (its declaration included). */
function identifierCounts(file: Parsed): Map<string, number> {
  const counts = new Map<string, number>();
  for (const node of nodes(file.module))
    if (node.type === 'Identifier') counts.set(String(node.value), (counts.get(String(node.value)) ?? 0) + 1);
  return counts;
}

// A name its own file uses (a type in an exported signature, a helper also called there) is alive;
// as knip's ignoreExportsUsedInFile, its `export` is left to the author.
const dead: string[] = [];
for (const [path, names] of exported) {
  if (!path.startsWith('src/') || ENTRY_POINTS.has(path)) continue;
  let counts: Map<string, number> | null = null;
  for (const [name, line] of names) {
    if (isUsed(path, name) || KEPT.has(`${path}:${name}`)) continue;
    counts ??= identifierCounts(parsed.get(path) as Parsed);
    if ((counts.get(name) ?? 0) <= 1) dead.push(`${path}:${line}: ${name}`);
  }
}
if (dead.length > 0) {
  process.stderr.write(`${dead.join('\n')}\n${dead.length} export(s) of src/ used nowhere: remove them\n`);
  process.exit(1);
}
