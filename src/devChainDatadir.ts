import {
  DEV_CHAIN_ID,
  DEV_HARDFORKS,
  DEV_MNEMONIC,
  type DevChainOptions,
  type DevHardfork,
  devAccounts,
  devGenesis,
} from './chain/devChain.ts';
import { parseChainSpec } from './chain/genesis.ts';
import { checkSchema, readStoredSpec } from './chain/storedSpec.ts';
import { UserError } from './core/errors.ts';
import type { LogLine } from './core/log.ts';
import { ChainWriter } from './ingest/chainWriter.ts';
import { DevService } from './services/dev/index.ts';
import { checkStore } from './store/lmdb/check.ts';
import { openLmdbStore, storeExists } from './store/lmdb/index.ts';
import type { ChainStore } from './store/types.ts';
import { UPSTREAM_CHAIN_META } from './upstream/open.ts';

// The dev chain of `ethtrace start` on an empty datadir or one that holds a dev chain: made, or
// resumed with the options it was made with (src/service.ts opens it).

const META_DEV = 'dev';

/**
 * The dev chain of a datadir: made on first start when the datadir is empty (the embedded default),
 * resumed when the datadir holds one; null for an imported chain, which is served read-only.
 *
 * The store is opened for writing from the start: the genesis block is committed in one transaction
 * with the records saying what chain it is, and LMDB runs one write transaction at a time across
 * processes, so when `start` and `import` initialise an empty datadir at once exactly one makes the
 * chain. If that is an import, this start serves the imported chain.
 */
export async function openDevChain(
  datadir: string,
  flags: DevFlags,
  log: LogLine,
): Promise<{ store: ChainStore; service: DevService } | null> {
  const store = await openLmdbStore(datadir);
  try {
    await checkStore(store, datadir);
    await checkSchema(store, datadir);
    if ((await store.getMeta(UPSTREAM_CHAIN_META)) !== null)
      throw new UserError(`${datadir} caches the chain of an upstream node: start it with --upstream`);
    for (let attempt = 0; ; attempt++) {
      const head = await store.getHead();
      const recorded = await store.getMeta(META_DEV);
      if (head && !recorded) {
        refuseDevFlags(flags, `${datadir}, which holds an imported chain`);
        await store.close();
        return null;
      }
      if (recorded) {
        const options = recordedOptions(recorded);
        checkDevFlags(options, flags, datadir);
        const spec = await readStoredSpec(store);
        if (spec === null) throw new Error('a dev chain without its genesis spec');
        return { store, service: devService(await ChainWriter.open(store, spec), options, log) };
      }
      const options = devOptions(flags);
      const spec = parseChainSpec(devGenesis(options), 'dev genesis');
      try {
        const writer = await ChainWriter.open(store, spec);
        const record = JSON.stringify({ ...options, chainId: options.chainId.toString() });
        await writer.initGenesis([[META_DEV, new TextEncoder().encode(record)]]);
        return { store, service: devService(writer, options, log) };
      } catch (e) {
        // Another process made a chain here since the look above: look again, once.
        if (attempt > 0 || (await store.getHead()) === null) throw e;
      }
    }
  } catch (e) {
    await store.close();
    throw e;
  }
}

function devService(writer: ChainWriter, options: DevChainOptions, log: LogLine): DevService {
  return new DevService(writer, devAccounts(options.mnemonic), log);
}

function recordedOptions(record: Uint8Array): DevChainOptions {
  return JSON.parse(new TextDecoder().decode(record), (k, v) => (k === 'chainId' ? BigInt(v) : v));
}

export interface DevFlags {
  chainId: string | undefined;
  hardfork: string | undefined;
  mnemonic: string | undefined;
}

export function devOptions(flags: DevFlags): DevChainOptions {
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

/**
 * A dev chain keeps the options it was made with; a flag saying otherwise would be silently ignored
 * (anvil's `--chain-id` on a loaded state overrides it, but here the genesis, and so every block,
 * depends on these), so it is refused.
 */
function checkDevFlags(recorded: DevChainOptions, flags: DevFlags, datadir: string): void {
  const differs: string[] = [];
  if (
    flags.chainId !== undefined &&
    !(/^[0-9]+$/.test(flags.chainId) && BigInt(flags.chainId) === recorded.chainId)
  )
    differs.push(`--chain-id ${flags.chainId} (it has ${recorded.chainId})`);
  if (flags.hardfork !== undefined && flags.hardfork !== recorded.hardfork)
    differs.push(`--hardfork ${flags.hardfork} (it has ${recorded.hardfork})`);
  // The mnemonic itself is not echoed: it may not be the public test one.
  if (flags.mnemonic !== undefined && flags.mnemonic !== recorded.mnemonic)
    differs.push('--mnemonic (it was made with another)');
  if (differs.length > 0)
    throw new UserError(
      `the dev chain in ${datadir} was made with other options: ${differs.join(', ')}; leave these flags out to resume it, or give a new --datadir for a new chain`,
    );
}

export function refuseDevFlags(flags: DevFlags, holder: string): void {
  const given = Object.entries({
    '--chain-id': flags.chainId,
    '--hardfork': flags.hardfork,
    '--mnemonic': flags.mnemonic,
  })
    .filter(([, v]) => v !== undefined)
    .map(([k]) => k);
  if (given.length > 0)
    throw new UserError(
      `${given.join(', ')} apply to a new dev chain, not to ${holder}: leave them out, or give an empty --datadir`,
    );
}

/**
 * `--processes` serves an imported chain, and not a dev chain (one pool and one miner, in one
 * process) — nor an empty datadir, which would become one.
 */
export async function refuseDevChain(datadir: string): Promise<void> {
  const refusal = `--processes applies to an imported, followed or upstream chain: a dev chain has one transaction pool and one miner, in one process`;
  if (!storeExists(datadir)) throw new UserError(`${refusal} (${datadir} is empty, and would become one)`);
  const store = await openLmdbStore(datadir, { readOnly: true });
  try {
    if ((await store.getMeta(META_DEV)) !== null) throw new UserError(`${refusal} (${datadir} holds one)`);
  } finally {
    await store.close();
  }
}
