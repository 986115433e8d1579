import { join } from 'node:path';
import { readChainSpec } from '../../src/chain/genesis.ts';
import type { LimitOverrides } from '../../src/config/limits.ts';
import { importChain } from '../../src/ingest/importer.ts';
import { openLmdbStore } from '../../src/store/lmdb/index.ts';
import { type Anvil, startAnvil } from './anvil.ts';
import { tempDir } from './cli.ts';
import { exportChain } from './exportChain.ts';
import { type RunningServer, startServer } from './server.ts';
import { buildTraceWorkload, type TraceWorkload } from './traceWorkload.ts';

/** A Parity trace entry as both servers print it. */
export type TraceEntry = {
  type: string;
  action: Record<string, unknown>;
  result?: Record<string, unknown> | null;
  error?: string;
  subtraces: number;
  traceAddress: number[];
  [key: string]: unknown;
};

/** anvil's error strings that are Rust enum names, and the Parity string we print for the same halt. */
const ANVIL_ERROR_NAMES: Record<string, string> = {
  StackUnderflow: 'Stack underflow',
  StateChangeDuringStaticCall: 'Mutable Call In Static Context',
  CallNotAllowedInsideStatic: 'Mutable Call In Static Context',
  CreateCollision: 'Contract address collision',
};

/**
 * Rules 1–3 of docs/tracing.md, bringing one of anvil's entries to our profile. Rule 3 needs our
 * entry at the same place in the trace; anything these rules do not cover must be equal.
 */
export function normaliseAnvilEntry(entry: TraceEntry, ours: TraceEntry | undefined): TraceEntry {
  const out: TraceEntry = { ...entry, action: { ...entry.action } };
  // Rule 1: halted frames have no `result` key in anvil; the profile gives `result: null`.
  if (out.error !== undefined && out.result === undefined) out.result = null;
  // Rule 2: some halts are printed as Rust names instead of Parity strings.
  const renamed = out.error === undefined ? undefined : ANVIL_ERROR_NAMES[out.error];
  if (renamed) out.error = renamed;
  // Rule 3: a SELFDESTRUCT of an older contract to itself comes out with the frame's fields (or
  // zeros); ours names the contract as both address and beneficiary, as OpenEthereum does.
  if (
    out.type === 'suicide' &&
    ours?.type === 'suicide' &&
    ours.action.address === ours.action.refundAddress &&
    out.action.address !== ours.action.address
  ) {
    out.action = { ...ours.action };
  }
  return out;
}

export interface TraceWorkloadServers {
  anvil: Anvil;
  workload: TraceWorkload;
  /** Our server over the same chain, exported from anvil and imported without state-root checks. */
  server: RunningServer;
  /** The datadir `server` reads, for more servers over the same chain. */
  datadir: string;
  close(): Promise<void>;
}

/** anvil with the trace workload mined, and our server over the same chain: the diff suites' setup. */
export async function serveTraceWorkload(limits: LimitOverrides = {}): Promise<TraceWorkloadServers> {
  const work = tempDir('ethtrace-diff-');
  const anvil = await startAnvil();
  try {
    const workload = await buildTraceWorkload(anvil);
    const chain = await exportChain(anvil, work.path);
    const datadir = join(work.path, 'data');
    const store = await openLmdbStore(datadir);
    try {
      await importChain({
        store,
        spec: readChainSpec(chain.genesisPath),
        files: [chain.rlpPath],
        verifyStateRoot: false,
      });
    } finally {
      await store.close();
    }
    const server = await startServer(datadir, { limits });
    return {
      anvil,
      workload,
      server,
      datadir,
      async close() {
        await server.close();
        await anvil.stop();
        work.cleanup();
      },
    };
  } catch (e) {
    await anvil.stop();
    work.cleanup();
    throw e;
  }
}

/**
 * A mined transaction as a call. The fee fields are left out on purpose: the calls run in the parent
 * block's environment (docs/tracing.md), whose base fee can exceed the fee cap the transaction
 * paid in its own block; a call that pays nothing sees a zero base fee, and no workload contract
 * reads GASPRICE or BASEFEE, so the traces are unaffected.
 */
export function asCall(tx: Record<string, unknown>): Record<string, unknown> {
  const call: Record<string, unknown> = { from: tx.from, gas: tx.gas, value: tx.value, input: tx.input };
  if (tx.to) call.to = tx.to;
  if (Array.isArray(tx.accessList) && tx.accessList.length > 0) call.accessList = tx.accessList;
  if (Array.isArray(tx.authorizationList)) {
    call.authorizationList = tx.authorizationList;
    call.type = '0x4';
  }
  return call;
}
