import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { METHOD_SPECS } from '../../test/fuzz/methods.ts';
import { buildAnvilChain } from './chains/build.ts';
import { conformanceItems } from './corpus/conformance.ts';
import { type ChainContext, readContext } from './corpus/context.ts';
import { runDevScript } from './corpus/devScript.ts';
import { fuzzItems, MUTATING, RANDOM_RESULT_METHODS } from './corpus/fuzz.ts';
import { Builder, generatedItems, spread } from './corpus/generated.ts';
import { httpItems } from './corpus/http.ts';
import { FilterSession, WsSession, wsSample } from './corpus/sessions.ts';
import { type Item, Pair, Tally } from './lib/compare.ts';
import { closeAgent } from './lib/http.ts';
import { printReport } from './lib/report.ts';
import {
  FIXED_CLOCK_PRELOAD,
  importChain,
  methodTable,
  openTree,
  type Server,
  type Side,
  startServer,
  type Tree,
} from './lib/tree.ts';

/**
 * Proves a change leaves every answer byte-identical: builds the chains once, serves each with the
 * old and the new tree's CLI, sends both the same requests and compares the raw answers. See
 * scripts/answers/README.md.
 */

const USAGE = `usage: node --import tsx scripts/answers/compare.ts --old <tree> --new <tree> [options]

  --old DIR, --new DIR   checkouts of the project (each is driven through its bin/ethtrace.mjs)
  --only REGEX           only requests whose method matches (the dev chain's script always runs)
  --limit N              at most N requests per category and chain, spread over the list
  --chains LIST          comma-separated: conformance,anvil,dev (default all three)
  --fuzz-runs N          fuzz requests per chain (default 2000)
  --seed N               fuzz seed (default 20250611)
  --concurrency N        requests in flight per server (default 4)
  --workers N            --workers of each server (default 2)
  --exec-timeout MS      --exec-timeout of each server (default 60000, so load never times a trace out)
  --retries N            quiet re-sends of a request whose answers differed (default 2)
  --show N               differences printed in full (default 40)
  --json FILE            also write every difference, uncut, as JSON
  --conformance DIR      the execution-apis folder (default ../shared/conformance/execution-apis)
  --keep                 keep the temporary directory (chains and datadirs)
`;

const ALL_CHAINS = ['conformance', 'anvil', 'dev'] as const;
type ChainName = (typeof ALL_CHAINS)[number];

interface Options {
  old: string;
  new: string;
  only: RegExp | undefined;
  limit: number | undefined;
  chains: ChainName[];
  fuzzRuns: number;
  seed: number;
  concurrency: number;
  workers: number;
  execTimeout: number;
  retries: number;
  show: number;
  json: string | undefined;
  conformance: string;
  keep: boolean;
}

function options(): Options {
  const { values } = parseArgs({
    options: {
      old: { type: 'string' },
      new: { type: 'string' },
      only: { type: 'string' },
      limit: { type: 'string' },
      chains: { type: 'string' },
      'fuzz-runs': { type: 'string' },
      seed: { type: 'string' },
      concurrency: { type: 'string' },
      workers: { type: 'string' },
      'exec-timeout': { type: 'string' },
      retries: { type: 'string' },
      show: { type: 'string' },
      json: { type: 'string' },
      conformance: { type: 'string' },
      keep: { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help || values.old === undefined || values.new === undefined) {
    process.stderr.write(USAGE);
    process.exit(values.help ? 0 : 2);
  }
  const int = (name: string, v: string | undefined, dflt: number): number => {
    if (v === undefined) return dflt;
    const n = Number(v);
    if (!Number.isInteger(n) || n < 0) {
      process.stderr.write(`--${name} must be a whole number\n${USAGE}`);
      process.exit(2);
    }
    return n;
  };
  const chains = (values.chains ?? ALL_CHAINS.join(',')).split(',').map((c) => c.trim());
  for (const c of chains) {
    if (!(ALL_CHAINS as readonly string[]).includes(c)) {
      process.stderr.write(`--chains: unknown chain ${c}\n${USAGE}`);
      process.exit(2);
    }
  }
  return {
    old: values.old,
    new: values.new,
    only: values.only === undefined ? undefined : new RegExp(values.only),
    limit: values.limit === undefined ? undefined : int('limit', values.limit, 0),
    chains: chains as ChainName[],
    fuzzRuns: int('fuzz-runs', values['fuzz-runs'], 2000),
    seed: int('seed', values.seed, 20250611),
    concurrency: int('concurrency', values.concurrency, 4),
    workers: int('workers', values.workers, 2),
    execTimeout: int('exec-timeout', values['exec-timeout'], 60_000),
    retries: int('retries', values.retries, 2),
    show: int('show', values.show, 40),
    json: values.json,
    conformance: resolve(
      values.conformance ??
        join(import.meta.dirname, '..', '..', '..', 'shared', 'conformance', 'execution-apis'),
    ),
    keep: values.keep ?? false,
  };
}

const log = (line: string): void => void process.stderr.write(`${line}\n`);
const seconds = (since: number): string => `${((performance.now() - since) / 1000).toFixed(1)} s`;

interface Prepared {
  /** Per side, the datadir to serve. */
  datadirs: Record<Side, string>;
}

async function main(): Promise<number> {
  const opts = options();
  const started = performance.now();
  const trees: Record<Side, Tree> = { old: openTree('old', opts.old), new: openTree('new', opts.new) };
  const work = await mkdtemp(join(tmpdir(), 'ethtrace-answers-'));
  log(`answers: old ${trees.old.root}, new ${trees.new.root}; work dir ${work}`);
  const tally = new Tally();
  const notes: string[] = [];
  try {
    // The method tables, read in a child process of each tree.
    const [oldTable, newTable] = await Promise.all([methodTable(trees.old), methodTable(trees.new)]);
    const known = new Set<string>(Object.keys(METHOD_SPECS));
    for (const [side, table] of [
      ['old', oldTable],
      ['new', newTable],
    ] as const) {
      if (table === undefined)
        notes.push(`${side} tree: method table not found or not loadable; used the fuzz list`);
      else for (const n of table.names) known.add(n);
    }
    if (oldTable && newTable) {
      const a = [...oldTable.names].sort().join('\n');
      const b = [...newTable.names].sort().join('\n');
      tally.record('tables', 'method table', '(method table)', a === b ? 'same' : 'different');
      if (a !== b) {
        tally.differences.push({
          chain: 'tables',
          category: 'method table',
          method: '(method table)',
          request: `names of ${oldTable.file} / ${newTable.file}`,
          old: { status: 0, headers: '', body: a.replace(/\n/g, ' ') },
          new: { status: 0, headers: '', body: b.replace(/\n/g, ' ') },
          verdict: 'different',
        });
      }
      notes.push(`method table: ${newTable.names.length} methods in the new tree's ${newTable.file}`);
    }

    // Chains, built once and imported by each tree's own CLI.
    const t = performance.now();
    const prepared = await prepareChains(opts, trees, work);
    log(`chains ready in ${seconds(t)}`);

    for (const chain of opts.chains) {
      const p = prepared.get(chain) as Prepared;
      await compareChain(chain, p, trees, opts, tally, known, notes);
    }

    // Coverage: methods of the table no request named.
    const table = newTable?.names ?? oldTable?.names ?? Object.keys(METHOD_SPECS);
    const unsent = table.filter(
      (m) => !tally.byMethod.has(m) && (opts.only === undefined || opts.only.test(m)),
    );
    if (unsent.length > 0) notes.push(`methods of the table with no request sent: ${unsent.join(', ')}`);

    const report = printReport(tally, {
      chains: ['tables', ...opts.chains].filter((c) => tally.byChain.has(c)),
      show: opts.show,
      seconds: (performance.now() - started) / 1000,
      notes,
    });
    process.stdout.write(`${report}\n`);
    if (opts.json !== undefined)
      await writeFile(opts.json, `${JSON.stringify(tally.differences, null, 1)}\n`);
    // Unstable answers fail too: an answer that depends on load or timing is not byte-identical.
    const total = tally.total();
    return total.different + total.unstable > 0 ? 1 : 0;
  } finally {
    closeAgent();
    if (opts.keep) log(`kept ${work}`);
    else await rm(work, { recursive: true, force: true });
  }
}

async function prepareChains(
  opts: Options,
  trees: Record<Side, Tree>,
  work: string,
): Promise<Map<ChainName, Prepared>> {
  const out = new Map<ChainName, Prepared>();
  const dirs = (chain: string): Record<Side, string> => ({
    old: join(work, `${chain}-old`),
    new: join(work, `${chain}-new`),
  });
  const jobs: Promise<void>[] = [];
  if (opts.chains.includes('conformance')) {
    const d = dirs('conformance');
    jobs.push(
      Promise.all(
        (['old', 'new'] as const).map((side) =>
          importChain(trees[side], {
            genesis: join(opts.conformance, 'genesis.json'),
            datadir: d[side],
            files: [join(opts.conformance, 'chain.rlp')],
            verifyStateRoot: true,
          }).then((summary) => log(`conformance chain, ${side} tree: ${summary}`)),
        ),
      ).then(() => void out.set('conformance', { datadirs: d })),
    );
  }
  if (opts.chains.includes('anvil')) {
    const d = dirs('anvil');
    jobs.push(
      (async () => {
        const t = performance.now();
        const chain = await buildAnvilChain(work);
        log(`anvil chain built: ${chain.blocks} blocks, ${chain.txs} txs in ${seconds(t)}`);
        await Promise.all(
          (['old', 'new'] as const).map((side) =>
            importChain(trees[side], {
              genesis: chain.genesisPath,
              datadir: d[side],
              files: [chain.rlpPath],
              verifyStateRoot: false,
            }).then((summary) => log(`anvil chain, ${side} tree: ${summary}`)),
          ),
        );
        out.set('anvil', { datadirs: d });
      })(),
    );
  }
  if (opts.chains.includes('dev')) {
    const d = dirs('dev');
    jobs.push(
      (async () => {
        // Each tree makes its own dev chain (its own store format) with `start` on an empty
        // datadir, under a clock pinned to one instant, so both genesis blocks carry one timestamp.
        const preload = join(work, 'fixed-clock.mjs');
        await writeFile(preload, FIXED_CLOCK_PRELOAD);
        const env = { ANSWERS_FIXED_NOW_MS: String(Math.floor(Date.now() / 1000) * 1000) };
        await Promise.all(
          (['old', 'new'] as const).map(async (side) => {
            const server = await startServer(trees[side], d[side], ['--workers', '1'], {
              nodeArgs: ['--import', pathToFileURL(preload).href],
              env,
            });
            await server.stop();
          }),
        );
        out.set('dev', { datadirs: d });
      })(),
    );
  }
  await Promise.all(jobs);
  return out;
}

const FILTER_METHODS =
  /^eth_(newFilter|newBlockFilter|newPendingTransactionFilter|getFilterChanges|getFilterLogs|uninstallFilter)$/;
const WS_METHODS = ['eth_subscribe', 'eth_unsubscribe', 'eth_subscription (notification)'];

async function compareChain(
  chain: ChainName,
  p: Prepared,
  trees: Record<Side, Tree>,
  opts: Options,
  tally: Tally,
  known: ReadonlySet<string>,
  notes: string[],
): Promise<void> {
  const started = performance.now();
  const extra = ['--workers', String(opts.workers), '--exec-timeout', String(opts.execTimeout)];
  const [o, n] = await Promise.all([
    startServer(trees.old, p.datadirs.old, extra),
    startServer(trees.new, p.datadirs.new, extra),
  ]);
  const servers: Record<Side, Server> = { old: o, new: n };
  const pair = new Pair(chain, servers, tally, {
    timeoutMs: opts.execTimeout * 3,
    retries: opts.retries,
    progress: true,
  });
  const wanted = (method: string): boolean => opts.only === undefined || opts.only.test(method);
  const runFilters = opts.only === undefined || knownMatch(FILTER_METHODS, known, opts.only);
  const runWs = opts.only === undefined || WS_METHODS.some((m) => opts.only?.test(m));
  try {
    if (chain === 'dev') {
      // Filters and subscriptions made before the script mines, polled and compared after it.
      const genesisOnly = await readContext(o.url);
      const live: { filters?: FilterSession; ws?: WsSession } = {};
      log('dev chain: running the script');
      const scriptNotes = await runDevScript(pair, async () => {
        if (runFilters) {
          live.filters = new FilterSession(pair, genesisOnly);
          await live.filters.create();
        }
        if (runWs) {
          live.ws = await WsSession.open(pair, opts.execTimeout);
          await live.ws.subscribe(genesisOnly);
        }
      });
      notes.push(...scriptNotes);
      await live.filters?.poll();
      if (live.ws) {
        try {
          await live.ws.compareNotifications(5_000);
          await live.ws.unsubscribe();
        } finally {
          live.ws.close();
        }
      }
    }
    const ctx = await readContext(o.url);
    const txCount = ctx.blocks.reduce((k, b) => k + b.txs.length, 0);
    log(`${chain} chain: head ${ctx.head}, ${txCount} txs, ${ctx.addresses.length} accounts`);

    const items = corpus(chain, ctx, opts, known).filter((i) => wanted(i.method));
    const limited = limit(items, opts.limit);
    log(`${chain} chain: ${limited.length} requests to compare`);
    await pair.runItems('requests', limited, opts.concurrency);

    if (runFilters && chain !== 'dev') {
      const filters = new FilterSession(pair, ctx);
      await filters.create();
      await filters.poll();
    }
    if (runWs) {
      const session = await WsSession.open(pair, opts.execTimeout);
      try {
        for (const [method, text] of wsSample(ctx)) if (wanted(method)) await session.send(method, text);
        await session.subscribe(ctx);
        await session.unsubscribe();
      } finally {
        session.close();
      }
    }
    for (const s of [o, n]) {
      const died = /internal error in|failed in a worker/.exec(s.log());
      if (died) notes.push(`${chain} chain, ${s.tree.side} server logged an internal error: ${died[0]}`);
    }
    const c = tally.byChain.get(chain);
    log(
      `${chain} chain: ${c?.sent ?? 0} compared in ${seconds(started)}: ${c?.different ?? 0} different, ${c?.unstable ?? 0} unstable`,
    );
  } finally {
    await Promise.all([o.stop(), n.stop()]);
  }
}

function knownMatch(methods: RegExp, known: ReadonlySet<string>, only: RegExp): boolean {
  return [...known].some((m) => methods.test(m) && only.test(m));
}

/** Every static request for one chain, in a fixed order. */
function corpus(chain: ChainName, ctx: ChainContext, opts: Options, known: ReadonlySet<string>): Item[] {
  const items: Item[] = [];
  if (chain === 'conformance') items.push(...conformanceItems(opts.conformance, chain));
  items.push(...generatedItems(chain, ctx));
  items.push(
    ...fuzzItems(
      chain,
      {
        head: ctx.head,
        blockHashes: ctx.blocks.map((b) => b.hash),
        txHashes: ctx.blocks.flatMap((b) => b.txs.map((t) => t.hash)),
        addresses: ctx.addresses,
        signers: ctx.signers,
      },
      {
        seed: opts.seed + ALL_CHAINS.indexOf(chain) * 1000,
        runs: opts.fuzzRuns,
        knownMethods: known,
        writable: chain === 'dev',
      },
    ),
  );
  items.push(...httpItems(chain));
  // A method of the table that nothing above names still gets asked, bare and with no params.
  const named = new Set(items.map((i) => i.method));
  const probe = new Builder(chain);
  for (const m of [...known].sort()) {
    // On the dev chain the script covers the methods that change it; a stray call would race the rest.
    if (named.has(m) || (chain === 'dev' && MUTATING.has(m))) continue;
    probe.add('unlisted methods', m, []);
    probe.add('unlisted methods', m);
  }
  items.push(...probe.items);
  for (const item of items) if (RANDOM_RESULT_METHODS.has(item.method)) item.randomResult = true;
  return items;
}

function limit(items: readonly Item[], max: number | undefined): Item[] {
  if (max === undefined) return [...items];
  const byCategory = new Map<string, Item[]>();
  for (const item of items) {
    const list = byCategory.get(item.category) ?? [];
    list.push(item);
    byCategory.set(item.category, list);
  }
  return [...byCategory.values()].flatMap((list) => spread(list, max));
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    process.stderr.write(`answers: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exit(3);
  },
);
