// The source text of request ids. JSON.parse turns a numeric id into a double, so `1e400` becomes
// Infinity (rendered `null`) and a 30-digit integer loses its last digits, and a string id loses its
// escapes (`"\u0041\n"` is written back as `"A\n"`, `"\/"` as `"/"`); geth keeps the id as raw
// JSON and echoes it byte for byte, and clients match answers to requests by it. Node 20's
// JSON.parse gives a reviver no access to the source, so this small scanner finds the `id` member
// of the top-level object, or of each object of a top-level batch. It runs only on text JSON.parse
// has already accepted, so it need not validate, and it never recurses: a value nested ten thousand
// deep is skipped by counting brackets.

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;
const COMMA = 0x2c;

/**
 * For a single request, the raw text of its `id` (undefined when it has none); for a batch, one entry
 * per element. When a member is repeated the last one counts, as with JSON.parse.
 */
export function rawIds(text: string): string | undefined | Array<string | undefined> {
  let i = skipSpace(text, 0);
  const first = text.charCodeAt(i);
  if (first === OPEN_BRACE) return objectId(text, i).id;
  if (first !== OPEN_BRACKET) return undefined;
  const ids: Array<string | undefined> = [];
  i = skipSpace(text, i + 1);
  if (text.charCodeAt(i) === CLOSE_BRACKET) return ids;
  for (;;) {
    if (text.charCodeAt(i) === OPEN_BRACE) {
      const member = objectId(text, i);
      ids.push(member.id);
      i = member.end;
    } else {
      ids.push(undefined);
      i = skipValue(text, i);
    }
    i = skipSpace(text, i);
    if (text.charCodeAt(i) !== COMMA) return ids;
    i = skipSpace(text, i + 1);
  }
}

/** The raw `id` of the object starting at `start` (its `{`), and the index just past the object. */
function objectId(text: string, start: number): { id: string | undefined; end: number } {
  let id: string | undefined;
  let i = skipSpace(text, start + 1);
  if (text.charCodeAt(i) === CLOSE_BRACE) return { id, end: i + 1 };
  for (;;) {
    const keyEnd = skipString(text, i);
    const rawKey = text.slice(i, keyEnd);
    // A key may be written with escapes (`"\u0069d"`); only then is it worth decoding.
    const key = rawKey.includes('\\') ? (JSON.parse(rawKey) as string) : rawKey.slice(1, -1);
    i = skipSpace(text, keyEnd);
    i = skipSpace(text, i + 1); // past the colon
    const valueEnd = skipValue(text, i);
    if (key === 'id') id = text.slice(i, valueEnd).trimEnd();
    i = skipSpace(text, valueEnd);
    if (text.charCodeAt(i) !== COMMA) return { id, end: i + 1 };
    i = skipSpace(text, i + 1);
  }
}

function skipSpace(text: string, i: number): number {
  while (i < text.length) {
    const c = text.charCodeAt(i);
    if (c !== 0x20 && c !== 0x0a && c !== 0x0d && c !== 0x09) break;
    i++;
  }
  return i;
}

/** Past the string whose opening quote is at `i`. */
function skipString(text: string, i: number): number {
  let from = i + 1;
  for (;;) {
    const quote = text.indexOf('"', from);
    if (quote === -1) return text.length;
    // The quote is escaped when an odd number of backslashes runs up to it.
    let backslashes = 0;
    for (let b = quote - 1; b >= from && text.charCodeAt(b) === BACKSLASH; b--) backslashes++;
    if (backslashes % 2 === 0) return quote + 1;
    from = quote + 1;
  }
}

/** Past the value starting at `i`: a string, an object or array (by bracket counting), or a scalar. */
function skipValue(text: string, i: number): number {
  const c = text.charCodeAt(i);
  if (c === QUOTE) return skipString(text, i);
  if (c === OPEN_BRACE || c === OPEN_BRACKET) {
    let depth = 0;
    while (i < text.length) {
      const d = text.charCodeAt(i);
      if (d === QUOTE) {
        i = skipString(text, i);
        continue;
      }
      if (d === OPEN_BRACE || d === OPEN_BRACKET) depth++;
      else if (d === CLOSE_BRACE || d === CLOSE_BRACKET) depth--;
      i++;
      if (depth === 0) return i;
    }
    return i;
  }
  while (i < text.length) {
    const d = text.charCodeAt(i);
    if (d === COMMA || d === CLOSE_BRACE || d === CLOSE_BRACKET) break;
    i++;
  }
  return i;
}
