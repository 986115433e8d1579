// README.md's limits table, made from src/config/limits.ts (LIMIT_SETTINGS and DEFAULT_LIMITS), so
// the two cannot drift: `node --import tsx scripts/limits-table.ts --write` rewrites the table
// between the README's limits markers; without --write it exits 1 when the README differs.
// test/config/limitsTable.test.ts runs the same comparison.
import { readFileSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import {
  DEFAULT_LIMITS,
  LIMIT_NAMES,
  LIMIT_SETTINGS,
  type LimitSetting,
  limitValue,
} from '../src/config/limits.ts';

export const README = resolve(import.meta.dirname, '..', 'README.md');
export const BEGIN = '<!-- limits table: made by scripts/limits-table.ts from src/config/limits.ts -->';
export const END = '<!-- end of limits table -->';

function amount(value: number, unit: LimitSetting['unit']): string {
  const mib = 1024 * 1024;
  if (unit === 'bytes' && value % mib === 0) return `${value / mib} MiB`;
  if (unit === 'ms' && value % 60_000 === 0 && value >= 60_000) return `${value / 60_000} min`;
  if (unit === 'ms' && value % 1000 === 0) return `${value / 1000} s`;
  const n = value.toLocaleString('en-US');
  return unit === 'count' || unit === 'ms' ? (unit === 'ms' ? `${n} ms` : n) : `${n} ${unit}`;
}

/** The table's rows, as cells: limit, default, flag, what the client gets past it, why. */
export function limitRows(): string[][] {
  return LIMIT_NAMES.map((name) => {
    const s = LIMIT_SETTINGS[name];
    return [
      `\`${name}\``,
      amount(limitValue(DEFAULT_LIMITS, name), s.unit),
      s.flag === null ? '—' : `\`${s.flag}\``,
      s.refusal,
      s.reason,
    ];
  });
}

export function limitsTable(): string {
  const rows = [
    ['Limit', 'Default', 'Flag', 'Past it', 'Why'],
    ['---', '---', '---', '---', '---'],
    ...limitRows(),
  ];
  return rows.map((cells) => `| ${cells.join(' | ')} |`).join('\n');
}

/** The cells of the README's table (header and separator left out), whatever padding a formatter gave it. */
export function readmeRows(readme: string): string[][] {
  const start = readme.indexOf(BEGIN);
  const end = readme.indexOf(END);
  if (start < 0 || end < start)
    throw new Error(`README.md has no limits table between "${BEGIN}" and "${END}"`);
  return readme
    .slice(start + BEGIN.length, end)
    .split('\n')
    .filter((line) => line.trim().startsWith('|'))
    .slice(2)
    .map((line) =>
      line
        .trim()
        .replace(/^\||\|$/g, '')
        .split(' | ')
        .map((cell) => cell.trim().replace(/\s+/g, ' ')),
    );
}

if (process.argv[1]?.endsWith('limits-table.ts')) {
  const readme = readFileSync(README, 'utf8');
  if (process.argv.includes('--write')) {
    const start = readme.indexOf(BEGIN);
    const end = readme.indexOf(END);
    if (start < 0 || end < start) throw new Error(`README.md has no "${BEGIN}" … "${END}" markers`);
    writeFileSync(
      README,
      `${readme.slice(0, start + BEGIN.length)}\n\n${limitsTable()}\n\n${readme.slice(end)}`,
    );
  } else if (JSON.stringify(readmeRows(readme)) !== JSON.stringify(limitRows())) {
    process.stderr.write('README.md limits table differs from src/config/limits.ts: run with --write\n');
    process.exit(1);
  }
}
