import type { Command } from 'commander';
import { UserError } from '../core/errors.ts';
import { checkExistingDatadir, prepareDatadir, resolveDatadir } from '../store/datadir.ts';
import { PostgresKeyTable } from '../store/postgres/keys.ts';
import { openPostgres } from '../store/postgres/pool.ts';
import { readUsageRows } from '../store/postgres/usage.ts';
import {
  ALLOW_KINDS,
  type AllowKind,
  type AllowLists,
  checkEntry,
  checkSettings,
  describeLimits,
  type KeySettings,
  KIND_NAMES,
} from '../transport/access/settings.ts';
import {
  mergeRows,
  readUsage,
  totalsOf,
  type UsageRow,
  type UsageStatus,
} from '../transport/access/usage.ts';
import { hashKey, KeyFile, keyId, type StoredKey } from '../transport/apiKeys.ts';
import { DatabaseKeyStore, FileKeyStore, type KeyStore } from '../transport/keyStore.ts';
import { addDatabaseOptions, type DatabaseFlags, databasePlan } from './databaseFlags.ts';
import { collect, DATADIR_HELP, type Named } from './flags.ts';

/**
 * `ethtrace keys create|list|show|update|revoke|usage`: the keys of a datadir and their settings
 * (src/transport/access/settings.ts), changed in the keys file that running servers re-read within a
 * second, and the usage they have recorded (src/transport/access/usage.ts).
 */

/** The flag words of each allow-list: `--allow-<flag>`, `--remove-<flag>`, `--clear-<plural>`. */
const FLAGS: Record<AllowKind, { flag: string; plural: string; option: string; what: string }> = {
  contracts: { flag: 'contract', plural: 'contracts', option: 'Contract', what: 'a contract address' },
  origins: { flag: 'origin', plural: 'origins', option: 'Origin', what: 'an Origin (https://*.example.com)' },
  userAgents: {
    flag: 'user-agent',
    plural: 'user-agents',
    option: 'UserAgent',
    what: 'a User-Agent substring',
  },
  methods: { flag: 'method', plural: 'methods', option: 'Method', what: 'a JSON-RPC method' },
};

interface SettingFlags {
  creditsPerSecond?: string;
  burst?: string;
  creditsPerDay?: string;
  [allowOrRemove: string]: string | string[] | boolean | undefined;
}

/** `--since 15m|1h|24h|7d` in ms. */
function duration(text: string): number {
  const m = /^([0-9]+)(m|h|d)$/.exec(text);
  if (!m) throw new UserError(`--since ${text} is not a duration such as 15m, 1h, 24h or 7d`);
  const unit = m[2] === 'm' ? 60_000 : m[2] === 'h' ? 3_600_000 : 86_400_000;
  return Number(m[1]) * unit;
}

/** A whole number flag; `zeroClears` lets 0 mean "no limit" (`keys update`). */
function whole(flag: string, value: string | undefined, zeroClears: boolean): number | null | undefined {
  if (value === undefined) return undefined;
  if (!/^[0-9]+$/.test(value) || !Number.isSafeInteger(Number(value)))
    throw new UserError(`--${flag} ${value} is not a whole number`);
  const n = Number(value);
  if (n === 0) {
    if (zeroClears) return null;
    throw new UserError(`--${flag} 0: leave the flag out for no limit`);
  }
  return n;
}

function addSettingOptions(command: Command, update: boolean): Command {
  const zero = update ? '; 0 removes the limit' : '';
  command
    .option('--credits-per-second <n>', `credits the key may spend per second (token bucket)${zero}`)
    .option(
      '--burst <n>',
      `credits it may spend at once after a quiet spell (default: one second's worth)${update ? '; 0 restores that' : ''}`,
    )
    .option('--credits-per-day <n>', `credits it may spend per UTC day (reset at 00:00 UTC)${zero}`);
  for (const kind of ALLOW_KINDS) {
    const f = FLAGS[kind];
    command.option(`--allow-${f.flag} <value>`, `allow ${f.what} (repeatable, at most 30)`, collect);
    if (update) {
      command
        .option(`--remove-${f.flag} <value>`, `take ${f.what} off its allow-list (repeatable)`, collect)
        .option(`--clear-${f.plural}`, `empty the ${KIND_NAMES[kind]} allow-list (any is allowed)`);
    }
  }
  return command;
}

/** The settings `flags` ask for, starting from `base` (a key's current settings, for update). */
function settingsOf(flags: SettingFlags, base: KeySettings, update: boolean): KeySettings {
  const out: KeySettings = { ...base };
  const numbers: Array<[keyof KeySettings & ('creditsPerSecond' | 'burst' | 'creditsPerDay'), string]> = [
    ['creditsPerSecond', 'credits-per-second'],
    ['burst', 'burst'],
    ['creditsPerDay', 'credits-per-day'],
  ];
  for (const [field, flag] of numbers) {
    const n = whole(flag, flags[field] as string | undefined, update);
    if (n === null) delete out[field];
    else if (n !== undefined) out[field] = n;
  }
  // A key whose rate is removed has no burst either.
  if (out.creditsPerSecond === undefined && flags.burst === undefined) delete out.burst;
  const allow: AllowLists = { ...base.allow };
  for (const kind of ALLOW_KINDS) {
    const f = FLAGS[kind];
    let list = [...(allow[kind] ?? [])];
    if (flags[`clear${f.option}s`] === true) list = [];
    const removed = ((flags[`remove${f.option}`] as string[] | undefined) ?? []).map((e) =>
      checkEntry(kind, e),
    );
    list = list.filter((e) => !removed.includes(e));
    for (const added of (flags[`allow${f.option}`] as string[] | undefined) ?? []) {
      const entry = checkEntry(kind, added);
      if (!list.includes(entry)) list.push(entry);
    }
    if (list.length > 0) allow[kind] = list;
    else delete allow[kind];
  }
  if (Object.keys(allow).length > 0) out.allow = allow;
  else delete out.allow;
  return checkSettings(out);
}

/**
 * What a subcommand does with the datadir: `read` what is there (list, show, usage), `change` a key
 * that must be there (update, revoke), or `create` one (the datadir too, if missing). Each checks it
 * before anything else, as `start` and `import` do, and only `create` makes anything.
 */
type DatadirUse = 'read' | 'change' | 'create';

function datadirFor(command: Command, use: DatadirUse): string {
  const datadir = resolveDatadir(command.optsWithGlobals().datadir);
  if (use === 'create') prepareDatadir(datadir);
  else checkExistingDatadir(datadir, { writable: use === 'change' });
  return datadir;
}

/**
 * Runs `work` on the keys `command` names: the database of `--database` (or $DATABASE_URL), opened
 * for the command and closed after it, else the datadir's keys file.
 */
async function withKeys<T>(
  command: Command,
  use: DatadirUse,
  work: (keys: KeyStore) => Promise<T>,
): Promise<T> {
  const plan = databasePlan(command.optsWithGlobals<DatabaseFlags>(), process.env);
  if (plan === null) return work(new FileKeyStore(new KeyFile(datadirFor(command, use))));
  const db = await openPostgres(plan.url, {
    ...plan.settings,
    poolSize: 1,
    applicationName: 'ethtrace keys',
  });
  try {
    return await work(new DatabaseKeyStore(new PostgresKeyTable<KeySettings>(db)));
  } finally {
    await db.close();
  }
}

function describeKey(k: StoredKey): string {
  const lines = [
    ['name', k.name],
    ['key', `${k.prefix}… (the key itself is not kept)`],
    ['created', k.createdAt],
    ...(k.updatedAt ? [['updated', k.updatedAt]] : []),
    ...(k.revokedAt ? [['revoked', k.revokedAt]] : []),
    ['secret', k.secretSha256 ? 'required (HTTP Basic auth)' : 'not required'],
    ['limits', describeLimits(k.settings)],
    ...ALLOW_KINDS.map((kind) => {
      const list = k.settings?.allow?.[kind] ?? [];
      return [KIND_NAMES[kind], list.length === 0 ? 'any' : list.join(', ')];
    }),
  ];
  return lines.map(([label, value]) => `${(label ?? '').padEnd(20)}${value}\n`).join('');
}

/** What `keys show --json` prints: the entry without its hashes. */
function publicKey(k: StoredKey) {
  return {
    name: k.name,
    prefix: k.prefix,
    createdAt: k.createdAt,
    ...(k.updatedAt ? { updatedAt: k.updatedAt } : {}),
    ...(k.revokedAt ? { revokedAt: k.revokedAt } : {}),
    secretRequired: k.secretSha256 !== undefined,
    settings: k.settings ?? {},
  };
}

/** A usage row, and with `--database` the host that served it. */
type HostRow = UsageRow & { host?: string };

/**
 * The usage table: totals per key, method and status (with `byHost`, per host too, in a first
 * column), or a line per minute; with `--database`, the service's totals are followed by each host's.
 */
function printUsage(rows: HostRow[], since: number, perMinute: boolean, byHost = false, title = ''): string {
  if (rows.length === 0) return `no usage${title} since ${new Date(since).toISOString()}\n`;
  const host = (r: HostRow) => (byHost ? [r.host ?? ''] : []);
  const table: string[][] = [];
  if (perMinute) {
    table.push([...(byHost ? ['host'] : []), 'minute', 'key', 'method', 'status', 'requests', 'credits']);
    for (const r of rows)
      table.push([
        ...host(r),
        new Date(r.minute).toISOString().slice(0, 16),
        r.key,
        r.method,
        r.status,
        String(r.requests),
        String(r.credits),
      ]);
  } else {
    table.push([...(byHost ? ['host'] : []), 'key', 'method', 'status', 'requests', 'credits']);
    const byCall = new Map<
      string,
      { host: string; key: string; method: string; status: string; requests: number; credits: number }
    >();
    for (const r of rows) {
      const h = byHost ? (r.host ?? '') : '';
      const id = `${h}\u0000${r.keyId}\u0000${r.method}\u0000${r.status}`;
      const t = byCall.get(id) ?? {
        host: h,
        key: r.key,
        method: r.method,
        status: r.status,
        requests: 0,
        credits: 0,
      };
      t.requests += r.requests;
      t.credits += r.credits;
      byCall.set(id, t);
    }
    const sorted = [...byCall.values()].sort(
      (a, b) =>
        a.host.localeCompare(b.host) ||
        a.key.localeCompare(b.key) ||
        b.credits - a.credits ||
        a.method.localeCompare(b.method),
    );
    for (const t of sorted)
      table.push([
        ...(byHost ? [t.host] : []),
        t.key,
        t.method,
        t.status,
        String(t.requests),
        String(t.credits),
      ]);
    const hosts = byHost ? [...new Set(rows.map((r) => r.host ?? ''))].sort() : [''];
    for (const h of hosts) {
      const keys = totalsOf(
        rows.filter((r) => !byHost || (r.host ?? '') === h),
        'key',
      );
      for (const k of keys)
        table.push([...(byHost ? [h] : []), k.name, '(all)', '', String(k.requests), String(k.credits)]);
    }
  }
  const widths = (table[0] ?? []).map((_, i) => Math.max(...table.map((row) => (row[i] ?? '').length)));
  const lines = table.map((row) =>
    row
      .map((cell, i) => cell.padEnd(widths[i] ?? 0))
      .join('  ')
      .trimEnd(),
  );
  return `usage${title} since ${new Date(since).toISOString()}\n${lines.join('\n')}\n`;
}

/** `ethtrace keys` and its subcommands, each on the keys of one datadir. */
export function addKeysCommand(root: Command, named: Named): void {
  const keys = named(
    root
      .command('keys')
      .description('manage the API keys, kept (hashed) in the datadir or in the --database')
      .option('--datadir <dir>', DATADIR_HELP),
    'keys',
  );
  addDatabaseOptions(keys, false);
  addCreate(keys, named, DATADIR_HELP);
  addList(keys, named, DATADIR_HELP);
  addShow(keys, named, DATADIR_HELP);
  addUpdate(keys, named, DATADIR_HELP);
  addRevoke(keys, named, DATADIR_HELP);
  addUsage(keys, named, DATADIR_HELP);
  addImportFile(keys, named);
  addExport(keys, named);
  // Each subcommand takes --database after its name too, as it takes --datadir.
  for (const sub of keys.commands)
    if (!sub.options.some((o) => o.long === '--database')) addDatabaseOptions(sub, false);
}

/** Opens the database `command` names, which it must name. */
function databaseOf(command: Command, what: string) {
  const plan = databasePlan(command.optsWithGlobals<DatabaseFlags>(), process.env);
  if (plan === null) throw new UserError(`${what} needs --database (or $DATABASE_URL)`);
  return openPostgres(plan.url, { ...plan.settings, poolSize: 1, applicationName: 'ethtrace keys' });
}

function addImportFile(keys: Command, named: Named): void {
  named(
    keys
      .command('import-file')
      .description(
        "copy a datadir's keys file into the --database: every key, revoked ones too, as it is; a key already there is skipped",
      )
      .option('--datadir <dir>', DATADIR_HELP)
      .action(async (_opts, command: Command) => {
        const file = new KeyFile(datadirFor(command, 'read'));
        const stored = file.read();
        const db = await databaseOf(command, 'keys import-file');
        try {
          const store = new DatabaseKeyStore(new PostgresKeyTable<KeySettings>(db));
          const { added, skipped } = await store.importKeys(stored);
          for (const k of added) process.stdout.write(`imported key "${k.name}" (${k.prefix}…)\n`);
          for (const k of skipped)
            process.stdout.write(`skipped key "${k.name}" (${k.prefix}…): already in the database\n`);
          process.stderr.write(
            `${added.length} imported, ${skipped.length} already there, from ${file.path} into ${store.where}\n`,
          );
        } finally {
          await db.close();
        }
      }),
    'keys import-file',
  );
}

function addExport(keys: Command, named: Named): void {
  named(
    keys
      .command('export')
      .description("print the --database's keys as a keys file (JSON, hashes only) to standard output")
      .action(async (_opts, command: Command) => {
        const db = await databaseOf(command, 'keys export');
        try {
          const stored = await new DatabaseKeyStore(new PostgresKeyTable<KeySettings>(db)).read();
          process.stdout.write(`${JSON.stringify({ keys: stored }, null, 2)}\n`);
        } finally {
          await db.close();
        }
      }),
    'keys export',
  );
}

function addCreate(keys: Command, named: Named, datadirHelp: string): void {
  named(
    addSettingOptions(
      keys
        .command('create')
        .description('make a key and print it (only this once), with its settings')
        .option('--name <name>', 'a name to show, update and revoke it by')
        .option(
          '--secret',
          'require a secret with the key (HTTP Basic auth); printed once, on a second line',
        ),
      false,
    )
      .option('--datadir <dir>', datadirHelp)
      .action(async (opts: SettingFlags & { name?: string; secret?: boolean }, command: Command) => {
        const settings = settingsOf(opts, {}, false);
        const { key, secret, stored } = await withKeys(command, 'create', (store) =>
          store.create(opts.name, {
            settings,
            ...(opts.secret ? { secret: true } : {}),
          }),
        );
        process.stdout.write(`${key}\n${secret === null ? '' : `${secret}\n`}`);
        process.stderr.write(
          `created key "${stored.name}" (${describeLimits(stored.settings)}${secret ? ', secret required' : ''}); ` +
            `${secret ? 'the key and its secret are' : 'it is'} shown only now (only hashes are kept)\n`,
        );
      }),
    'keys create',
  );
}

function addList(keys: Command, named: Named, datadirHelp: string): void {
  named(
    keys
      .command('list')
      .description('list the keys: name, first characters, dates, limits')
      .option('--datadir <dir>', datadirHelp)
      .action(async (_opts, command: Command) => {
        for (const k of await withKeys(command, 'read', (store) => store.read())) {
          process.stdout.write(
            `${k.name}\t${k.prefix}…\tcreated ${k.createdAt}${k.revokedAt ? `\trevoked ${k.revokedAt}` : ''}` +
              `\t${describeLimits(k.settings)}${k.secretSha256 ? '\tsecret' : ''}` +
              `${k.settings?.allow ? '\tallow-lists' : ''}\n`,
          );
        }
      }),
    'keys list',
  );
}

function addShow(keys: Command, named: Named, datadirHelp: string): void {
  named(
    keys
      .command('show')
      .description("print a key's settings (never the key or its secret)")
      .argument('<key-or-name>')
      .option('--json', 'as JSON')
      .option('--datadir <dir>', datadirHelp)
      .action(async (target: string, opts: { json?: boolean }, command: Command) => {
        const k = await withKeys(command, 'read', (store) => store.find(target));
        process.stdout.write(opts.json ? `${JSON.stringify(publicKey(k), null, 2)}\n` : describeKey(k));
      }),
    'keys show',
  );
}

function addUpdate(keys: Command, named: Named, datadirHelp: string): void {
  named(
    addSettingOptions(
      keys
        .command('update')
        .description("change a key's settings; running servers apply them within a second")
        .argument('<key-or-name>')
        .option('--rename <name>', 'give the key a new name')
        .option('--secret', 'make a new secret and require it (printed once)')
        .option('--no-secret', 'stop requiring a secret'),
      true,
    )
      .option('--datadir <dir>', datadirHelp)
      .action(
        async (
          target: string,
          opts: SettingFlags & { rename?: string; secret?: boolean },
          command: Command,
        ) => {
          const { stored, secret } = await withKeys(command, 'change', (store) =>
            store.update(target, (current) => ({
              settings: settingsOf(opts, current.settings ?? {}, true),
              ...(opts.secret === undefined ? {} : { secret: opts.secret }),
              ...(opts.rename === undefined ? {} : { rename: opts.rename }),
            })),
          );
          if (secret !== null) process.stdout.write(`${secret}\n`);
          process.stderr.write(
            `updated key "${stored.name}"${secret ? '; its new secret is shown only now' : ''}\n`,
          );
          process.stderr.write(describeKey(stored));
        },
      ),
    'keys update',
  );
}

function addRevoke(keys: Command, named: Named, datadirHelp: string): void {
  named(
    keys
      .command('revoke')
      .description('revoke a key, by the key or its name; running servers refuse it within a second')
      .argument('<key-or-name>')
      .option('--datadir <dir>', datadirHelp)
      .action(async (target: string, _opts, command: Command) => {
        const revoked = await withKeys(command, 'change', (store) => store.revoke(target));
        process.stdout.write(`revoked key "${revoked.name}"\n`);
      }),
    'keys revoke',
  );
}

function addUsage(keys: Command, named: Named, datadirHelp: string): void {
  named(
    keys
      .command('usage')
      .description(
        'print the usage recorded by servers on this datadir, or with --database by every host of the service: requests and credits per key, method and status',
      )
      .argument('[key-or-name]', 'only this key')
      .option('--since <duration>', 'how far back: 15m, 1h, 24h, 7d', '24h')
      .option('--per-minute', 'a line per minute instead of totals')
      .option('--json', 'rows per minute as JSON')
      .option('--host <name>', 'with --database: only the usage this host served')
      .option('--datadir <dir>', datadirHelp)
      .action(
        async (
          target: string | undefined,
          opts: { since: string; perMinute?: boolean; json?: boolean; host?: string },
          command: Command,
        ) => {
          const since = Date.now() - duration(opts.since);
          const database = databasePlan(command.optsWithGlobals<DatabaseFlags>(), process.env) !== null;
          if (opts.host !== undefined && !database)
            throw new UserError('--host needs --database: a datadir holds the usage of its own host only');
          const { rows: all, known } = database
            ? await withKeys(command, 'read', async (store) => ({
                rows: await usageOfDatabase(command, since, opts.host),
                known: target === undefined ? [] : await store.read(),
              }))
            : {
                rows: mergeRows(readUsage(datadirFor(command, 'read'), since)) as HostRow[],
                known: target === undefined ? [] : new KeyFile(datadirFor(command, 'read')).read(),
              };
          let rows = all;
          if (target !== undefined) {
            // Every key that had this name (or is this key), revoked ones included, by its id.
            const ids = new Set(
              known
                .filter((k) => k.name === target || k.sha256 === hashKey(target))
                .map((k) => keyId(k.sha256)),
            );
            rows = rows.filter((r) => ids.has(r.keyId) || r.key === target);
          }
          rows.sort(
            (a, b) =>
              a.minute - b.minute ||
              (a.host ?? '').localeCompare(b.host ?? '') ||
              a.key.localeCompare(b.key) ||
              a.method.localeCompare(b.method),
          );
          const perMinute = opts.perMinute === true;
          if (opts.json) {
            const out = rows.map((r) => ({ ...r, minute: new Date(r.minute).toISOString() }));
            process.stdout.write(`${JSON.stringify(out, null, 2)}\n`);
          } else if (!database) process.stdout.write(printUsage(rows, since, perMinute));
          else if (opts.host !== undefined)
            process.stdout.write(printUsage(rows, since, perMinute, true, ` of host ${opts.host}`));
          else {
            // The whole service (every host's rows of a minute added up), then each host's.
            const service = mergeRows(rows.map(({ host: _host, ...row }) => row));
            const hosts = new Set(rows.map((r) => r.host)).size;
            process.stdout.write(
              printUsage(service, since, perMinute, false, ` of the service (${hosts} hosts)`),
            );
            if (rows.length > 0)
              process.stdout.write(`\n${printUsage(rows, since, perMinute, true, ' by host')}`);
          }
        },
      ),
    'keys usage',
  );
}

/** The usage rows of the `--database` (of one host, or all), each with its host. */
async function usageOfDatabase(
  command: Command,
  since: number,
  host: string | undefined,
): Promise<HostRow[]> {
  const db = await databaseOf(command, 'keys usage');
  try {
    const rows = await readUsageRows(db, since, host === undefined ? {} : { host });
    return rows.map((r) => ({ ...r, status: r.status as UsageStatus }));
  } finally {
    await db.close();
  }
}
