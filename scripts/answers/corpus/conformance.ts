import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { type Item, methodOf } from '../lib/compare.ts';

/**
 * Every request line (`>> `) of every `.io` case of the execution-apis conformance folder, in path
 * order, sent exactly as written. The expected lines (`<< `) are not used: what matters here is
 * that the old and the new tree answer alike, right or wrong.
 */
export function conformanceItems(dir: string, chain: string): Item[] {
  const items: Item[] = [];
  for (const file of ioFiles(dir)) {
    const lines = readFileSync(file, 'utf8').split('\n');
    for (const line of lines) {
      if (!line.startsWith('>> ')) continue;
      const body = line.slice(3);
      items.push({ chain, category: 'conformance .io', method: methodOf(body), body });
    }
  }
  if (items.length === 0) throw new Error(`no .io requests under ${dir}`);
  return items;
}

export function ioFiles(dir: string): string[] {
  const out: string[] = [];
  const walk = (d: string): void => {
    for (const name of readdirSync(d).sort()) {
      const path = join(d, name);
      if (statSync(path).isDirectory()) walk(path);
      else if (name.endsWith('.io')) out.push(path);
    }
  };
  walk(dir);
  return out.sort((a, b) => (relative(dir, a) < relative(dir, b) ? -1 : 1));
}
