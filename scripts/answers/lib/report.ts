import type { Difference, Tally } from './compare.ts';
import type { Answer } from './http.ts';

/** The printed summary: totals per chain and category, every difference (cut), a per-method table. */

const REQUEST_CUT = 300;
const ANSWER_CUT = 400;
/** Around the first differing byte of two long answers. */
const CONTEXT_BEFORE = 80;
const CONTEXT_AFTER = 240;

export function cut(text: string, max: number): string {
  const oneLine = text.replace(/\n/g, '\\n');
  return oneLine.length <= max ? oneLine : `${oneLine.slice(0, max)}… (${text.length} chars)`;
}

function show(a: Answer): string {
  const head = a.failure === undefined ? `HTTP ${a.status}` : `transport failure ${a.failure}`;
  const headers = a.headers === '' ? '' : ` [${a.headers.replace(/\n/g, '; ')}]`;
  return `${head}${headers} ${a.body.length} chars`;
}

/** Both answers, whole when short, else around the first byte where they differ. */
function answersAround(o: Answer, n: Answer): string[] {
  const lines = [`      old: ${show(o)}`, `      new: ${show(n)}`];
  const x = o.body;
  const y = n.body;
  if (x.length <= ANSWER_CUT && y.length <= ANSWER_CUT) {
    lines.push(`      old body: ${cut(x, ANSWER_CUT)}`, `      new body: ${cut(y, ANSWER_CUT)}`);
    return lines;
  }
  let i = 0;
  while (i < x.length && i < y.length && x[i] === y[i]) i++;
  const from = Math.max(0, i - CONTEXT_BEFORE);
  const piece = (s: string): string =>
    `${from > 0 ? '…' : ''}${s.slice(from, i + CONTEXT_AFTER).replace(/\n/g, '\\n')}${s.length > i + CONTEXT_AFTER ? '…' : ''}`;
  lines.push(
    `      bodies first differ at char ${i}${x === y ? ' (bodies equal: status or headers differ)' : ''}`,
    `      old: ${piece(x)}`,
    `      new: ${piece(y)}`,
  );
  return lines;
}

function pad(s: string | number, n: number): string {
  return String(s).padEnd(n);
}
function padL(s: string | number, n: number): string {
  return String(s).padStart(n);
}

export function printReport(
  tally: Tally,
  opts: { chains: string[]; show: number; seconds: number; notes: string[] },
): string {
  const out: string[] = [];
  const t = tally.total();
  out.push('', '=== answers: old vs new ===', '');
  out.push(
    `${pad('chain', 14)} ${padL('sent', 8)} ${padL('identical', 10)} ${padL('different', 10)} ${padL('unstable', 9)}`,
  );
  for (const chain of opts.chains) {
    const c = tally.byChain.get(chain);
    if (!c) continue;
    out.push(
      `${pad(chain, 14)} ${padL(c.sent, 8)} ${padL(c.same, 10)} ${padL(c.different, 10)} ${padL(c.unstable, 9)}`,
    );
  }
  out.push(
    `${pad('all', 14)} ${padL(t.sent, 8)} ${padL(t.same, 10)} ${padL(t.different, 10)} ${padL(t.unstable, 9)}`,
  );
  out.push('', 'per chain and category:');
  for (const [key, c] of [...tally.byCategory.entries()]) {
    const [chain, category] = key.split('\t');
    const span = tally.spans.get(key);
    const time = span === undefined ? '' : ` (${((span.end - span.start) / 1000).toFixed(0)} s)`;
    out.push(
      `  ${pad(chain ?? '', 12)} ${pad(category ?? '', 34)} ${padL(c.sent, 7)} sent, ${padL(c.same, 7)} identical${time}` +
        (c.different + c.unstable > 0 ? `, ${c.different} different, ${c.unstable} unstable` : ''),
    );
  }

  out.push('', 'per method (requests sent per chain; identical / different / unstable over all chains):');
  const header = `  ${pad('method', 40)} ${opts.chains.map((c) => padL(c, 12)).join(' ')} ${padL('identical', 10)} ${padL('different', 10)} ${padL('unstable', 9)}`;
  out.push(header);
  for (const [method, perChain] of [...tally.byMethod.entries()].sort(([a], [b]) => (a < b ? -1 : 1))) {
    let same = 0;
    let different = 0;
    let unstable = 0;
    for (const c of perChain.values()) {
      same += c.same;
      different += c.different;
      unstable += c.unstable;
    }
    out.push(
      `  ${pad(method, 40)} ${opts.chains.map((c) => padL(perChain.get(c)?.sent ?? 0, 12)).join(' ')} ${padL(same, 10)} ${padL(different, 10)} ${padL(unstable, 9)}`,
    );
  }

  const differences = tally.differences.filter((d) => d.verdict === 'different');
  const unstable = tally.differences.filter((d) => d.verdict === 'unstable');
  const list = (title: string, items: Difference[]): void => {
    if (items.length === 0) return;
    out.push(
      '',
      `${title} (${items.length}${items.length > opts.show ? `, first ${opts.show} shown` : ''}):`,
    );
    for (const d of items.slice(0, opts.show)) {
      out.push(`  - ${d.chain} / ${d.category} / ${d.method}`);
      out.push(`      request: ${cut(d.request, REQUEST_CUT)}`);
      if (d.firstSeen) {
        out.push('      first answers (under load):');
        out.push(...answersAround(d.firstSeen.old, d.firstSeen.new));
        out.push('      equal when re-sent alone.');
      } else out.push(...answersAround(d.old, d.new));
    }
    if (items.length > opts.show) {
      const byMethod = new Map<string, number>();
      for (const d of items.slice(opts.show)) byMethod.set(d.method, (byMethod.get(d.method) ?? 0) + 1);
      out.push(
        `  … and ${items.length - opts.show} more: ${[...byMethod.entries()].map(([m, n]) => `${m} ×${n}`).join(', ')}`,
      );
    }
  };
  list('DIFFERENCES', differences);
  list('UNSTABLE (answers differed, then were equal when re-sent alone)', unstable);
  if (tally.slowest.length > 0) {
    out.push('', 'slowest requests (both answers in):');
    for (const s of tally.slowest) {
      out.push(
        `  ${padL((s.ms / 1000).toFixed(1), 6)} s ${padL(s.bytes, 10)} chars  ${s.chain} ${cut(s.request, 150)}`,
      );
    }
  }
  if (opts.notes.length > 0) out.push('', 'notes:', ...opts.notes.map((n) => `  - ${n}`));
  out.push(
    '',
    `${t.sent} requests compared in ${opts.seconds.toFixed(0)} s: ${t.same} identical, ${t.different} different, ${t.unstable} unstable.`,
  );
  return out.join('\n');
}
