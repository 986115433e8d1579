/**
 * Comparison of a JSON-RPC answer with a fixture's expected one, as hive's rpc-compat simulator
 * (the suite's own runner) judges it:
 * - values are compared as JSON (key order ignored, numbers by value);
 * - where both sides hold an `error` object with a `message`, the message is left out: its wording
 *   is each client's own, while the code and data are part of the API (hive `redactErrorMessages`);
 * - `speconly` cases record one valid example, not the answer: a result is checked for its shape
 *   only, an error still exactly (minus the message).
 * The result is a list of readable differences, empty when the answers agree.
 */

type Kind = 'null' | 'boolean' | 'number' | 'string' | 'array' | 'object';

/** A failing case prints its first differences; past that the list is noise. */
const MAX_DIFFERENCES = 25;
/** Values are shown in a difference up to this length, so a 4 KB logsBloom does not drown the report. */
const MAX_VALUE_CHARS = 200;

function kindOf(v: unknown): Kind {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'array';
  const t = typeof v;
  if (t === 'boolean' || t === 'number' || t === 'string') return t;
  return 'object';
}

function isObject(v: unknown): v is Record<string, unknown> {
  return kindOf(v) === 'object';
}

function show(v: unknown): string {
  const s = v === undefined ? '(absent)' : JSON.stringify(v);
  return s.length > MAX_VALUE_CHARS ? `${s.slice(0, MAX_VALUE_CHARS)}… (${s.length} chars)` : s;
}

function child(path: string, key: string | number): string {
  return typeof key === 'number' ? `${path}[${key}]` : `${path}.${key}`;
}

class Differences {
  readonly lines: string[] = [];
  private more = 0;
  add(path: string, what: string): void {
    if (this.lines.length < MAX_DIFFERENCES) this.lines.push(`${path}: ${what}`);
    else this.more++;
  }
  list(): string[] {
    return this.more === 0 ? this.lines : [...this.lines, `… and ${this.more} more differences`];
  }
}

/** Exact JSON comparison; `redact` leaves out messages of errors present on both sides. */
function exact(got: unknown, want: unknown, path: string, out: Differences, redact: boolean): void {
  const [gk, wk] = [kindOf(got), kindOf(want)];
  if (gk !== wk) {
    out.add(path, `got ${show(got)}, want ${show(want)}`);
    return;
  }
  if (gk === 'array') {
    const [g, w] = [got as unknown[], want as unknown[]];
    if (g.length !== w.length) out.add(path, `got ${g.length} elements, want ${w.length}`);
    for (let i = 0; i < Math.min(g.length, w.length); i++) exact(g[i], w[i], child(path, i), out, redact);
    return;
  }
  if (gk === 'object') {
    const [g, w] = [got as Record<string, unknown>, want as Record<string, unknown>];
    for (const key of Object.keys(w)) {
      if (!Object.hasOwn(g, key)) out.add(child(path, key), `absent, want ${show(w[key])}`);
    }
    for (const key of Object.keys(g)) {
      const p = child(path, key);
      if (!Object.hasOwn(w, key)) {
        out.add(p, `unexpected, got ${show(g[key])}`);
      } else if (redact && key === 'error' && isObject(g[key]) && isObject(w[key])) {
        exactError(g[key], w[key], p, out);
      } else {
        exact(g[key], w[key], p, out, redact);
      }
    }
    return;
  }
  if (got !== want) out.add(path, `got ${show(got)}, want ${show(want)}`);
}

/** An error object with its message left out when both have one; nothing inside is redacted further. */
function exactError(
  got: Record<string, unknown>,
  want: Record<string, unknown>,
  path: string,
  out: Differences,
): void {
  if ('message' in got && 'message' in want) {
    const { message: _g, ...g } = got;
    const { message: _w, ...w } = want;
    exact(g, w, path, out, false);
  } else {
    exact(got, want, path, out, false);
  }
}

/**
 * Same kinds all the way down, `0x` strings where the example has them, the same keys in objects.
 * Array lengths may differ (a fee history or a mempool is node-specific); each element is held to
 * the example's element at its index, or the example's last one past its end.
 */
function shape(got: unknown, want: unknown, path: string, out: Differences): void {
  const [gk, wk] = [kindOf(got), kindOf(want)];
  if (gk !== wk) {
    out.add(path, `got a ${gk} (${show(got)}), want a ${wk} like ${show(want)}`);
    return;
  }
  if (gk === 'string') {
    const [g, w] = [got as string, want as string];
    if (w.startsWith('0x') !== g.startsWith('0x'))
      out.add(path, `got ${show(g)}, want a string like ${show(w)}`);
    return;
  }
  if (gk === 'array') {
    const [g, w] = [got as unknown[], want as unknown[]];
    if (w.length === 0) return;
    for (const [i, item] of g.entries()) shape(item, w[Math.min(i, w.length - 1)], child(path, i), out);
    return;
  }
  if (gk === 'object') {
    const [g, w] = [got as Record<string, unknown>, want as Record<string, unknown>];
    for (const key of Object.keys(w)) if (!Object.hasOwn(g, key)) out.add(child(path, key), 'absent');
    for (const key of Object.keys(g)) {
      if (!Object.hasOwn(w, key)) out.add(child(path, key), `unexpected, got ${show(g[key])}`);
      else shape(g[key], w[key], child(path, key), out);
    }
  }
}

/** Differences between an answer and the expected answer; empty when they agree. */
export function compareResponse(got: unknown, want: unknown, speconly: boolean): string[] {
  const out = new Differences();
  if (speconly && isObject(want) && 'result' in want) {
    if (!isObject(got) || !('result' in got)) {
      out.add('$', `got ${show(got)}, want a result`);
      return out.list();
    }
    const { result: g, ...gotEnvelope } = got;
    const { result: w, ...wantEnvelope } = want;
    exact(gotEnvelope, wantEnvelope, '$', out, true);
    shape(g, w, '$.result', out);
    return out.list();
  }
  exact(got, want, '$', out, true);
  return out.list();
}
