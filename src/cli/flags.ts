import type { Command } from 'commander';
import { UserError } from '../core/errors.ts';

/**
 * What every command of the CLI shares: the exit status of a user's mistake, how a command names
 * itself in its errors (src/cli/program.ts), and the checks of numeric flags, each failing with one
 * line that names the flag.
 */

/**
 * Exit status of every failure the user can act on (a wrong flag, a busy port, a bad datadir, a
 * chain that does not verify): one line on stderr says what and what to do. 1 is left to crashes
 * (a bug, printed with its stack), so scripts can tell the two apart.
 */
export const EXIT_USER_ERROR = 2;

export const DATADIR_HELP = 'data directory (default: $ETHTRACE_DATADIR, else ~/.local/share/ethtrace)';

/** Gives a command its name in errors and its usage line after them (src/cli/program.ts). */
export type Named = (command: Command, path: string) => Command;

/** A repeatable option's values, in the order given. */
export function collect(value: string, previous: string[] = []): string[] {
  return [...previous, value];
}

/** `--flag N`, a positive integer; `fallback` when not given. */
export function positive(flag: string, value: string | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (!Number.isSafeInteger(n) || n <= 0) throw new UserError(`--${flag} ${value} is not a positive integer`);
  return n;
}

/** `--flag N`, a whole number (0 included); `fallback` when not given. */
export function wholeNumber(flag: string, value: string | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  if (!/^[0-9]+$/.test(value)) throw new UserError(`--${flag} ${value} is not a whole number`);
  return Number(value);
}
