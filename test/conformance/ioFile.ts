import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';

/**
 * The execution-apis `.io` fixture format, read the way hive's rpc-compat simulator reads it
 * (simulators/ethereum/rpc-compat/testload.go): `//` lines before the first request are the header
 * (a `speconly:` line there marks the case), `//` lines after it are ignored, `>>` sends, `<<`
 * expects. Requests are kept as the exact text of the line so they are replayed unchanged.
 */

export interface Exchange {
  /** The request line's JSON text, byte for byte. */
  request: string;
  /** The expected response line's JSON text. */
  response: string;
}

export interface IoCase {
  /** `<method>/<file without .io>`, hive's test name, so lists of differences can be compared with its reports. */
  name: string;
  method: string;
  path: string;
  comment: string;
  speconly: boolean;
  exchanges: Exchange[];
  /** Set when the file does not follow the format; the case then fails with it instead of running. */
  invalid?: string;
}

export function parseIoFile(method: string, file: string, path: string, text: string): IoCase {
  const c: IoCase = {
    name: `${method}/${file.replace(/\.io$/, '')}`,
    method,
    path,
    comment: '',
    speconly: false,
    exchanges: [],
  };
  let inHeader = true;
  let pending: string | undefined;
  const lines = text.split('\n');
  for (const [i, raw] of lines.entries()) {
    const line = raw.trim();
    if (line === '') continue;
    if (line.startsWith('//')) {
      if (!inHeader) continue;
      const comment = line.slice(2).replace(/^ /, '');
      c.comment += `${comment}\n`;
      if (comment.startsWith('speconly:')) c.speconly = true;
      continue;
    }
    const send = line.startsWith('>>');
    if (!send && !line.startsWith('<<')) return { ...c, invalid: `line ${i + 1}: not a comment, >> or <<` };
    inHeader = false;
    const data = line.slice(2).trim();
    try {
      JSON.parse(data);
    } catch (e) {
      return { ...c, invalid: `line ${i + 1}: invalid JSON (${(e as Error).message})` };
    }
    if (send) {
      if (pending !== undefined)
        return { ...c, invalid: `line ${i + 1}: a request before the previous one's response` };
      pending = data;
    } else {
      if (pending === undefined) return { ...c, invalid: `line ${i + 1}: a response before any request` };
      c.exchanges.push({ request: pending, response: data });
      pending = undefined;
    }
  }
  if (pending !== undefined) return { ...c, invalid: 'the last request has no expected response' };
  if (c.exchanges.length === 0) return { ...c, invalid: 'no request in the file' };
  return c;
}

/** Every `<method>/<case>.io` under `root`, ordered by method then file, as hive walks them. */
export function loadIoCases(root: string): IoCase[] {
  const cases: IoCase[] = [];
  for (const method of readdirSync(root).sort()) {
    const dir = join(root, method);
    if (!statSync(dir).isDirectory()) continue;
    for (const file of readdirSync(dir).sort()) {
      if (!file.endsWith('.io')) continue;
      const path = join(dir, file);
      cases.push(parseIoFile(method, file, path, readFileSync(path, 'utf8')));
    }
  }
  return cases;
}
