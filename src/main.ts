import { parseArgs } from 'node:util';
import { buildApp, DEFAULT_CONFIG } from './app.ts';
import { parseChainSpec, readChainSpec } from './chain/genesis.ts';
import { resolveDatadir } from './config/datadir.ts';
import { UserError } from './errors.ts';
import {
  DEV_CHAIN_ID,
  DEV_HARDFORKS,
  DEV_MNEMONIC,
  type DevAccount,
  type DevChainOptions,
  type DevHardfork,
  devAccounts,
  devGenesis,
} from './ingest/devChain.ts';
import { Importer, importChain, readStoredSpec } from './ingest/importer.ts';
import { importProgress } from './ingest/progress.ts';
import { toHex } from './primitives/hex.ts';
import { DevService } from './services/dev.ts';
import { openLmdbStore, storeExists } from './store/lmdb/index.ts';
import type { ChainStore } from './store/types.ts';
import { KeyFile, KeyRing } from './transport/apiKeys.ts';

const USAGE = `usage: ethtrace <command> [options]

commands:
  import --genesis genesis.json [--datadir DIR] [--no-verify-state-root] FILE.rlp [FILE.rlp ...]
      execute and verify the blocks of geth-export files and store them
  start [--datadir DIR] [--host 127.0.0.1] [--port 8545] [--api-key KEY ...] [--no-auth]
        [--workers N] [--exec-timeout MS] [--gas-cap GAS] [--max-calls N]
        [--trace-cache-mb MB] [--trace-filter-blocks N] [--max-response-mb MB] [--chain-id ID] [--hardfork FORK] [--mnemonic WORDS]
        [--block-time SECONDS]
      serve the chain in the datadir: POST /v3/<KEY> and WebSocket /ws/v3/<KEY>; on an empty
      datadir, a new dev chain (chain id 31337, the 10 test-mnemonic accounts with 10,000 ether)
      that mines each transaction as it arrives, or a block every SECONDS with --block-time
  keys create [--name NAME] | list | revoke KEY_OR_NAME  [--datadir DIR]
      manage the API keys kept (hashed) in the datadir

API keys come from --api-key, $ETHTRACE_API_KEYS (comma-separated) and the datadir's keys.

The data directory is --datadir, else $ETHTRACE_DATADIR, else ~/.local/share/ethtrace.
`;

async function importCommand(args: string[]): Promise<void> {
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    options: {
      datadir: { type: 'string' },
      genesis: { type: 'string' },
      'no-verify-state-root': { type: 'boolean', default: false },
    },
  });
  if (!values.genesis) throw new UserError('import needs --genesis genesis.json');
  if (positionals.length === 0)
    throw new UserError('import needs at least one chain file (geth export format)');
  const spec = readChainSpec(values.genesis);
  const store = await openLmdbStore(resolveDatadir(values.datadir));
  const progress = importProgress(process.stderr);
  try {
    const summary = await importChain({
      store,
      spec,
      files: positionals,
      verifyStateRoot: !values['no-verify-state-root'],
      progress,
    });
    progress.finish(summary);
  } finally {
    await store.close();
  }
}

async function startCommand(args: string[]): Promise<void> {
  const { values } = parseArgs({
    args,
    options: {
      datadir: { type: 'string' },
      host: { type: 'string', default: DEFAULT_CONFIG.host },
      port: { type: 'string', default: String(DEFAULT_CONFIG.port) },
      'api-key': { type: 'string', multiple: true, default: [] },
      'no-auth': { type: 'boolean', default: false },
      workers: { type: 'string' },
      'exec-timeout': { type: 'string' },
      'gas-cap': { type: 'string' },
      'max-calls': { type: 'string' },
      'trace-cache-mb': { type: 'string' },
      'chain-id': { type: 'string' },
      hardfork: { type: 'string' },
      mnemonic: { type: 'string' },
      'block-time': { type: 'string' },
      'trace-filter-blocks': { type: 'string' },
      'max-response-mb': { type: 'string' },
    },
  });
  const count = (flag: string, value: string | undefined, fallback: number) => {
    if (value === undefined) return fallback;
    const n = Number(value);
    if (!Number.isSafeInteger(n) || n <= 0)
      throw new UserError(`--${flag} ${value} is not a positive integer`);
    return n;
  };
  const execution = {
    ...DEFAULT_CONFIG.execution,
    workers: count('workers', values.workers, DEFAULT_CONFIG.execution.workers),
    deadlineMs: count('exec-timeout', values['exec-timeout'], DEFAULT_CONFIG.execution.deadlineMs),
  };
  const gasCap = BigInt(count('gas-cap', values['gas-cap'], Number(DEFAULT_CONFIG.traceLimits.gasCap)));
  const traceLimits = {
    ...DEFAULT_CONFIG.traceLimits,
    gasCap,
    maxCalls: count('max-calls', values['max-calls'], DEFAULT_CONFIG.traceLimits.maxCalls),
  };
  const callLimits = { ...DEFAULT_CONFIG.callLimits, gasCap };
  const cacheMb = values['trace-cache-mb'];
  if (cacheMb !== undefined && !/^[0-9]+$/.test(cacheMb))
    throw new UserError(`--trace-cache-mb ${cacheMb} is not a size in MB`);
  const replayLimits = {
    ...DEFAULT_CONFIG.replayLimits,
    ...(cacheMb === undefined ? {} : { cacheBytes: Number(cacheMb) * 1024 * 1024 }),
    maxFilterBlocks: count(
      'trace-filter-blocks',
      values['trace-filter-blocks'],
      DEFAULT_CONFIG.replayLimits.maxFilterBlocks,
    ),
  };
  const maxResponseBytes =
    values['max-response-mb'] === undefined
      ? DEFAULT_CONFIG.maxResponseBytes
      : count('max-response-mb', values['max-response-mb'], 0) * 1024 * 1024;
  const port = Number(values.port);
  if (!Number.isInteger(port) || port < 0 || port > 65535)
    throw new UserError(`--port ${values.port} is not a port number`);
  const datadir = resolveDatadir(values.datadir);
  const dev = await openDevChain(datadir, {
    chainId: values['chain-id'],
    hardfork: values.hardfork,
    mnemonic: values.mnemonic,
  });
  if (values['block-time'] !== undefined) {
    const seconds = Number(values['block-time']);
    if (!dev) throw new UserError('--block-time applies to a dev chain; this datadir holds an imported one');
    if (!(Number.isFinite(seconds) && seconds > 0))
      throw new UserError(`--block-time ${values['block-time']} is not a positive number of seconds`);
    dev.service.startInterval(seconds);
  }
  const keyFile = new KeyFile(datadir);
  const given = [...values['api-key'], ...(process.env.ETHTRACE_API_KEYS ?? '').split(',')]
    .map((k) => k.trim())
    .filter((k) => k !== '');
  let shownKey = given[0];
  if (!values['no-auth'] && given.length === 0 && keyFile.read().every((k) => k.revokedAt)) {
    // A service that accepts no key is useless: make one, and show it this once.
    shownKey = keyFile.create('default').key;
    process.stdout.write(
      `created API key "default" (shown once, kept hashed in ${keyFile.path}): ${shownKey}\n`,
    );
  }
  const keys = values['no-auth'] ? null : KeyRing.from(given, keyFile);
  const store = dev?.store ?? (await openLmdbStore(datadir, { readOnly: true }));
  const app = await buildApp(
    {
      ...DEFAULT_CONFIG,
      host: values.host,
      port,
      keys,
      execution,
      traceLimits,
      callLimits,
      replayLimits,
      maxResponseBytes,
    },
    { store, datadir, ...(dev ? { dev: dev.service } : {}) },
  );
  await app.warm();
  const { httpUrl, wsUrl } = await app.listen();
  const key = values['no-auth'] ? (shownKey ?? 'any-key') : (shownKey ?? '<API_KEY>');
  const head = await store.getHead();
  if (dev) process.stdout.write(describeDevAccounts(dev.service.accounts));
  process.stdout.write(
    `ethtrace serving ${dev ? 'dev ' : ''}chain ${app.services.chain.chainId} (head ${head?.number ?? 'none'}) from ${datadir}\n` +
      `  HTTP       ${httpUrl}/v3/${key}\n  WebSocket  ${wsUrl}/ws/v3/${key}\n` +
      (shownKey === undefined && !values['no-auth'] ? '  (use a key from `ethtrace keys create`)\n' : ''),
  );
  await new Promise<void>((resolve) => {
    const stop = () => resolve();
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
  });
  process.stdout.write('stopping\n');
  await dev?.service.stop();
  await app.close();
  await store.close();
}

const META_DEV = 'dev';

/**
 * The dev chain of a datadir: made on first start when the datadir is empty (the embedded default),
 * resumed when the datadir holds one; null for an imported chain, which is served read-only.
 */
async function openDevChain(
  datadir: string,
  flags: { chainId: string | undefined; hardfork: string | undefined; mnemonic: string | undefined },
): Promise<{ store: ChainStore; service: DevService } | null> {
  let options: DevChainOptions;
  if (storeExists(datadir)) {
    const reader = await openLmdbStore(datadir, { readOnly: true });
    const recorded = await reader.getMeta(META_DEV);
    const head = await reader.getHead();
    await reader.close();
    if (head && !recorded) return null;
    if (recorded)
      options = JSON.parse(new TextDecoder().decode(recorded), (k, v) => (k === 'chainId' ? BigInt(v) : v));
    else options = devOptions(flags);
  } else {
    options = devOptions(flags);
  }
  const store = await openLmdbStore(datadir);
  const spec = parseChainSpec(devGenesis(options), 'dev genesis');
  const existing = await store.getMeta(META_DEV);
  const importer = await Importer.open({
    store,
    spec: existing ? await storedSpec(store) : spec,
    files: [],
    verifyStateRoot: true,
  });
  if (!existing) {
    await importer.initGenesis();
    const record = JSON.stringify({ ...options, chainId: options.chainId.toString() });
    await store.putMeta(META_DEV, new TextEncoder().encode(record));
  }
  const log = (line: string) => process.stderr.write(`${line}\n`);
  return { store, service: new DevService(importer, devAccounts(options.mnemonic), log) };
}

function devOptions(flags: {
  chainId: string | undefined;
  hardfork: string | undefined;
  mnemonic: string | undefined;
}): DevChainOptions {
  const hardfork = (flags.hardfork ?? DEV_HARDFORKS[DEV_HARDFORKS.length - 1]) as DevHardfork;
  if (!DEV_HARDFORKS.includes(hardfork))
    throw new UserError(`--hardfork ${flags.hardfork}: one of ${DEV_HARDFORKS.join(', ')}`);
  if (flags.chainId !== undefined && !/^[0-9]+$/.test(flags.chainId))
    throw new UserError(`--chain-id ${flags.chainId} is not a number`);
  return {
    chainId: flags.chainId ? BigInt(flags.chainId) : DEV_CHAIN_ID,
    hardfork,
    mnemonic: flags.mnemonic ?? DEV_MNEMONIC,
  };
}

async function storedSpec(store: ChainStore) {
  return parseChainSpec(await readStoredSpec(store), 'stored genesis');
}

/** The dev accounts with their keys, as anvil prints them: they are test keys, never to hold value. */
function describeDevAccounts(accounts: readonly DevAccount[]): string {
  const lines = accounts.map((a, i) => `  (${i}) ${toHex(a.address)}  private key ${toHex(a.privateKey)}`);
  return `dev accounts (10,000 ether each; test keys, known to everyone):\n${lines.join('\n')}\n`;
}

async function keysCommand(args: string[]): Promise<void> {
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    options: { datadir: { type: 'string' }, name: { type: 'string' } },
  });
  const [action, target] = positionals;
  const file = new KeyFile(resolveDatadir(values.datadir));
  switch (action) {
    case 'create': {
      const { key, stored } = file.create(values.name);
      process.stdout.write(`${key}\n`);
      process.stderr.write(
        `created key "${stored.name}"; it is shown only now (the datadir keeps its hash)\n`,
      );
      return;
    }
    case 'list':
      for (const k of file.read()) {
        process.stdout.write(
          `${k.name}\t${k.prefix}…\tcreated ${k.createdAt}${k.revokedAt ? `\trevoked ${k.revokedAt}` : ''}\n`,
        );
      }
      return;
    case 'revoke': {
      if (!target) throw new UserError('keys revoke needs a key or a key name');
      const revoked = file.revoke(target);
      process.stdout.write(`revoked key "${revoked.name}"\n`);
      return;
    }
    default:
      throw new UserError('keys needs an action: create [--name N], list, or revoke KEY_OR_NAME');
  }
}

const commands: Record<string, (args: string[]) => Promise<void>> = {
  import: importCommand,
  start: startCommand,
  keys: keysCommand,
};

async function main(argv: string[]): Promise<number> {
  const [name, ...rest] = argv;
  if (!name || name === '--help' || name === '-h' || name === 'help') {
    process.stdout.write(USAGE);
    return name ? 0 : 2;
  }
  const command = commands[name];
  if (!command) {
    process.stderr.write(`ethtrace: unknown command "${name}"\n\n${USAGE}`);
    return 2;
  }
  try {
    await command(rest);
    return 0;
  } catch (e) {
    if (e instanceof UserError || (e as { code?: string }).code?.startsWith('ERR_PARSE_ARGS')) {
      process.stderr.write(`\nethtrace ${name}: ${(e as Error).message}\n`);
      return 1;
    }
    throw e;
  }
}

process.exitCode = await main(process.argv.slice(2));
