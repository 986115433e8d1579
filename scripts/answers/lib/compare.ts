import { type Answer, answerKey, type HttpShape, postJson, send } from './http.ts';
import type { Server, Side } from './tree.ts';

/**
 * The comparison engine: each request goes to the old and the new server, and the two answers
 * (status, compared headers, body) must be byte-identical. Nothing is normalised except values a
 * session registered as known-random (filter and subscription ids), each replaced on its own side
 * by the same placeholder.
 */

export interface Item {
  chain: string;
  category: string;
  /** The method, or a label such as `(batch)` for requests that are not one call. */
  method: string;
  /** JSON-RPC request text, POSTed to the server's URL. */
  body: string;
  /** A raw HTTP exchange instead of a JSON POST (`body` is then only the label shown). */
  http?: HttpShape;
  /** The answer's `result` is a fresh random id (eth_newFilter …): that id is masked. */
  randomResult?: boolean;
}

export type Verdict = 'same' | 'different' | 'unstable';

export interface Difference {
  chain: string;
  category: string;
  method: string;
  request: string;
  old: Answer;
  new: Answer;
  verdict: Exclude<Verdict, 'same'>;
  /** For `unstable`: what was seen first, before a quiet retry gave equal answers. */
  firstSeen?: { old: Answer; new: Answer };
}

interface Counts {
  sent: number;
  same: number;
  different: number;
  unstable: number;
}

const SLOWEST_KEPT = 12;

const zero = (): Counts => ({ sent: 0, same: 0, different: 0, unstable: 0 });

export class Tally {
  readonly byChain = new Map<string, Counts>();
  readonly byCategory = new Map<string, Counts>();
  /** method → chain → counts. */
  readonly byMethod = new Map<string, Map<string, Counts>>();
  readonly differences: Difference[] = [];
  /** `chain\tcategory` → first request sent and last answer received (ms since the run started). */
  readonly spans = new Map<string, { start: number; end: number }>();

  /** The slowest exchanges (both servers answered), slowest first. */
  readonly slowest: Array<{ ms: number; chain: string; method: string; request: string; bytes: number }> = [];

  timed(ms: number, item: Item, bytes: number): void {
    const list = this.slowest;
    if (list.length >= SLOWEST_KEPT && ms <= (list.at(-1)?.ms ?? 0)) return;
    list.push({ ms, chain: item.chain, method: item.method, request: item.body, bytes });
    list.sort((a, b) => b.ms - a.ms);
    list.length = Math.min(list.length, SLOWEST_KEPT);
  }

  span(chain: string, category: string, start: number, end: number): void {
    const key = `${chain}\t${category}`;
    const s = this.spans.get(key);
    if (!s) this.spans.set(key, { start, end });
    else {
      s.start = Math.min(s.start, start);
      s.end = Math.max(s.end, end);
    }
  }

  record(chain: string, category: string, method: string, verdict: Verdict): void {
    const bump = (c: Counts): void => {
      c.sent++;
      c[verdict]++;
    };
    const get = <K>(map: Map<K, Counts>, key: K): Counts => {
      let c = map.get(key);
      if (!c) {
        c = zero();
        map.set(key, c);
      }
      return c;
    };
    bump(get(this.byChain, chain));
    bump(get(this.byCategory, `${chain}\t${category}`));
    let perChain = this.byMethod.get(method);
    if (!perChain) {
      perChain = new Map();
      this.byMethod.set(method, perChain);
    }
    bump(get(perChain, chain));
  }

  total(): Counts {
    const t = zero();
    for (const c of this.byChain.values()) {
      t.sent += c.sent;
      t.same += c.same;
      t.different += c.different;
      t.unstable += c.unstable;
    }
    return t;
  }
}

export interface PairOptions {
  timeoutMs: number;
  /** Quiet re-sends of a request whose answers differed, before it counts as different. */
  retries: number;
  /** Progress lines on stderr. */
  progress: boolean;
}

/** A filter or subscription id: 16 random bytes (services/subscriptions.ts). */
const RANDOM_RESULT = /"result":"0x[0-9a-f]{32}"/;

export class Pair {
  private readonly masks: Record<Side, Map<string, string>> = { old: new Map(), new: new Map() };
  private maskCount = 0;

  constructor(
    readonly chain: string,
    private readonly servers: Record<Side, Server>,
    private readonly tally: Tally,
    private readonly opts: PairOptions,
  ) {}

  server(side: Side): Server {
    return this.servers[side];
  }

  /** Sends `items` (read-only requests) with `concurrency` in flight, recording each comparison. */
  async runItems(label: string, items: readonly Item[], concurrency: number): Promise<void> {
    let next = 0;
    let done = 0;
    const started = performance.now();
    let lastReport = started;
    const worker = async (): Promise<void> => {
      while (next < items.length) {
        while (this.gate) await this.gate;
        const item = items[next++] as Item;
        const start = performance.now();
        this.inFlight++;
        try {
          await this.compareItem(item);
        } finally {
          this.inFlight--;
        }
        this.tally.span(item.chain, item.category, start, performance.now());
        done++;
        const now = performance.now();
        if (this.opts.progress && now - lastReport > 15_000) {
          lastReport = now;
          const t = this.tally.byChain.get(this.chain) ?? zero();
          process.stderr.write(
            `  ${this.chain} ${label}: ${done}/${items.length} in ${((now - started) / 1000).toFixed(0)} s` +
              ` (${t.different} different, ${t.unstable} unstable so far)\n`,
          );
        }
      }
    };
    await Promise.all(Array.from({ length: Math.max(1, concurrency) }, worker));
  }

  private async compareItem(item: Item): Promise<void> {
    const exchange = (side: Side): Promise<Answer> => this.sendItem(side, item);
    const started = performance.now();
    let [o, n] = await Promise.all([exchange('old'), exchange('new')]);
    this.tally.timed(performance.now() - started, item, Math.max(o.body.length, n.body.length));
    if (same(o, n)) {
      this.tally.record(item.chain, item.category, item.method, 'same');
      return;
    }
    const first = { old: o, new: n };
    for (let i = 0; i < this.opts.retries; i++) {
      // Alone: no other request in flight, and one server at a time, so neither answer is made
      // under load. Equal then: the first answers depended on timing ('unstable').
      [o, n] = await this.quietly(async () => [await exchange('old'), await exchange('new')]);
      if (same(o, n)) {
        this.tally.record(item.chain, item.category, item.method, 'unstable');
        this.tally.differences.push({
          ...describe(item),
          old: o,
          new: n,
          verdict: 'unstable',
          firstSeen: first,
        });
        return;
      }
    }
    this.tally.record(item.chain, item.category, item.method, 'different');
    this.tally.differences.push({ ...describe(item), old: o, new: n, verdict: 'different' });
  }

  /** Requests being compared by runItems' workers, and the gate a quiet retry holds. */
  private inFlight = 0;
  private gate: Promise<void> | undefined;

  /** Runs `fn` once no other worker has a request in flight, holding new ones back meanwhile. */
  private async quietly<T>(fn: () => Promise<T>): Promise<T> {
    this.inFlight--;
    while (this.gate) await this.gate;
    let release = (): void => {};
    this.gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    try {
      while (this.inFlight > 0) await new Promise((r) => setTimeout(r, 10));
      return await fn();
    } finally {
      this.gate = undefined;
      release();
      this.inFlight++;
    }
  }

  private async sendItem(side: Side, item: Item): Promise<Answer> {
    const server = this.servers[side];
    const answer = item.http
      ? await send(server.url, item.http, this.opts.timeoutMs)
      : await postJson(server.url, item.body, this.opts.timeoutMs);
    if (item.randomResult && RANDOM_RESULT.test(answer.body)) {
      return { ...answer, body: answer.body.replace(RANDOM_RESULT, '"result":"<random id>"') };
    }
    return answer;
  }

  /**
   * One step of a session: a request built per side (it may name that side's own ids), sent to both
   * at once, compared after masking, and recorded. Answers are returned unmasked, so the session can
   * read ids out of them.
   */
  async step(
    category: string,
    method: string,
    build: string | ((side: Side) => string),
    opts: { randomId?: string } = {},
  ): Promise<Record<Side, Answer>> {
    const body = (side: Side): string =>
      this.unmaskText(side, typeof build === 'string' ? build : build(side));
    const [o, n] = await Promise.all([
      postJson(this.servers.old.url, body('old'), this.opts.timeoutMs),
      postJson(this.servers.new.url, body('new'), this.opts.timeoutMs),
    ]);
    if (opts.randomId !== undefined) this.registerResults(opts.randomId, o, n);
    this.compareMasked(category, method, body('old'), o, n);
    return { old: o, new: n };
  }

  /**
   * When both answers' results are strings (a filter or subscription id), registers them as one
   * random value of `kind` and answers its placeholder.
   */
  registerResults(kind: string, o: Answer, n: Answer): string | undefined {
    const result = (a: Answer): unknown => {
      try {
        return (JSON.parse(a.body) as { result?: unknown }).result;
      } catch {
        return undefined;
      }
    };
    const x = result(o);
    const y = result(n);
    if (typeof x !== 'string' || typeof y !== 'string') return undefined;
    return this.registerRandom(kind, { old: x, new: y });
  }

  /** Records a comparison of answers obtained elsewhere (WebSocket frames), after masking. */
  compareMasked(category: string, method: string, request: string, o: Answer, n: Answer): void {
    const mo = this.mask('old', o);
    const mn = this.mask('new', n);
    const verdict: Verdict = same(mo, mn) ? 'same' : 'different';
    this.tally.record(this.chain, category, method, verdict);
    if (verdict === 'different') {
      this.tally.differences.push({
        chain: this.chain,
        category,
        method,
        request,
        old: mo,
        new: mn,
        verdict,
      });
    }
  }

  /**
   * Registers a known-random value each side answered (a filter id): later answers show it as one
   * placeholder, and requests may name it by that placeholder (replaced by the side's own value).
   */
  registerRandom(kind: string, values: Record<Side, string>): string {
    const placeholder = `<${kind} ${++this.maskCount}>`;
    this.masks.old.set(values.old, placeholder);
    this.masks.new.set(values.new, placeholder);
    return placeholder;
  }

  /** The placeholder registered last (to tell whether a step registered one). */
  lastPlaceholder(): string | undefined {
    return [...this.masks.old.values()].at(-1);
  }

  private mask(side: Side, a: Answer): Answer {
    let body = a.body;
    for (const [value, placeholder] of this.masks[side]) body = body.split(value).join(placeholder);
    return { ...a, body };
  }

  /** `text` with each placeholder replaced by `side`'s own value. */
  unmaskText(side: Side, text: string): string {
    let out = text;
    for (const [value, placeholder] of this.masks[side]) out = out.split(placeholder).join(value);
    return out;
  }
}

function same(a: Answer, b: Answer): boolean {
  return answerKey(a) === answerKey(b);
}

function describe(item: Item): Pick<Difference, 'chain' | 'category' | 'method' | 'request'> {
  const request = item.http
    ? `${item.http.method} ${item.http.path} ${JSON.stringify(item.http.headers)} ${item.body}`
    : item.body;
  return { chain: item.chain, category: item.category, method: item.method, request };
}

/** The method named by a request text (the first `"method"` member), for labels. */
export function methodOf(body: string): string {
  try {
    const parsed = JSON.parse(body) as unknown;
    if (Array.isArray(parsed)) return '(batch)';
    if (typeof parsed === 'object' && parsed !== null) {
      const m = (parsed as { method?: unknown }).method;
      return typeof m === 'string' ? m : '(invalid request)';
    }
    return '(invalid request)';
  } catch {
    return '(bad JSON)';
  }
}
