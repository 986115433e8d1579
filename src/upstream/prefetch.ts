import type { Block } from '@ethereumjs/block';
import type { Common } from '@ethereumjs/common';
import type { JSONTx, TypedTransaction } from '@ethereumjs/tx';
import type { BlockOverrides, CallRequest, StateOverrides } from '../core/call.ts';
import { metElsewhere } from '../core/caught.ts';
import { UpstreamError } from '../core/errors.ts';
import { quantityToHex, toHex } from '../primitives/hex.ts';
import type { RpcOutcome } from './client.ts';
import type { StateKey, UpstreamStore } from './store.ts';

// The system contracts a block's processing reads before its transactions, which no trace of a
// transaction names: EIP-4788's beacon roots and EIP-2935's block hashes (addresses from the EIPs).
const BEACON_ROOTS_ADDRESS = '0x000f3df6d732807ef1319fb7b8bb8522d0beac02';
const HISTORY_STORAGE_ADDRESS = '0x0000f90827f1c53a10cb7a02335b175320002935';

/**
 * Reads the state a request will need into the cache before its EVM work starts, in a few round
 * trips rather than one per account or slot: the upstream's prestateTracer names every account and
 * slot a call (or each transaction of a block) touches, in one batch; their values then come from
 * one batch of eth_getProof, checked against the block's state root (UpstreamStore.fetchState). What
 * the local run reads beyond that (a chained call that takes another branch) is read when it is
 * reached. Without a prestateTracer upstream, only what a block names itself is read ahead (its
 * senders, recipients, fee recipient and system contracts).
 *
 * A block's pre-state comes from each transaction traced as a call on the parent's state, all in one
 * batch of debug_traceCall, rather than from the upstream's trace of the whole block
 * (debug_traceBlockByHash): measured on anvil for a block of 200 transactions, 24–29 ms against
 * 3.7–4.9 s (and 4.3–4.7 s for one debug_traceTransaction each), naming the same 212 accounts and
 * slots. A transaction that reads what an earlier one of the block wrote may touch more there than
 * on the parent's state: that is read when the replay reaches it. An upstream that traces no call
 * at the parent (its state pruned, say) is asked for its trace of the block instead.
 */
export class UpstreamPrefetch {
  constructor(private readonly store: UpstreamStore) {}

  /** The state the calls read on top of block `blockHash` (each call traced alone on its state). */
  async calls(
    blockHash: Uint8Array,
    calls: readonly CallRequest[],
    overrides: { stateOverrides?: StateOverrides; blockOverrides?: BlockOverrides } = {},
    alsoRead?: (common: Common) => readonly Uint8Array[],
  ): Promise<void> {
    const traced = this.store.capabilities.prestateTracer && calls.length > 0;
    // The block's rules (its header, which the job reads anyway) while the upstream traces.
    const rules = alsoRead ? this.store.rulesOf(blockHash) : Promise.resolve(null);
    metElsewhere(rules);
    let prestates: unknown[] = [];
    if (traced) {
      const config: Record<string, unknown> = { tracer: 'prestateTracer' };
      if (overrides.stateOverrides) config.stateOverrides = stateOverridesJson(overrides.stateOverrides);
      if (overrides.blockOverrides) config.blockOverrides = blockOverridesJson(overrides.blockOverrides);
      const at = { blockHash: toHex(blockHash) };
      const outcomes = await this.store.client.batch(
        calls.map((call) => ({ method: 'debug_traceCall', params: [callJson(call), at, config] })),
      );
      prestates = outcomes.map(result);
    }
    const common = await rules;
    const also = common && alsoRead ? named(alsoRead(common)) : {};
    if (!traced && Object.keys(also).length === 0) return;
    await this.store.fetchState(blockHash, keysOf([...prestates, also]));
  }

  /**
   * The state before the block's transactions (its parent's), for a replay of the block; with the
   * accounts `alsoRead` says the engine reads on the block's rules whatever it runs.
   */
  async block(blockHash: Uint8Array, alsoRead?: (common: Common) => readonly Uint8Array[]): Promise<void> {
    const block = await this.store.block(blockHash);
    if (!block || block.header.number === 0n) return;
    const parentHash = block.header.parentHash;
    // The parent's header (its state root, which every proof is checked against) is read while
    // the upstream traces, not after.
    const parentHeader = this.store.getHeader(parentHash).catch(() => null);
    const senders = block.transactions.map((tx) => tx.getSenderAddress().toString());
    const prestates =
      this.store.capabilities.prestateTracer && block.transactions.length > 0
        ? await this.prestates(block, senders)
        : [];
    await parentHeader;
    await this.store.fetchState(
      parentHash,
      keysOf([...prestates, namedBy(block, senders), named(alsoRead?.(block.common) ?? [])]),
    );
  }

  /** Each transaction's pre-state, as a call on the parent's state; else the upstream's block trace. */
  private async prestates(block: Block, senders: readonly string[]): Promise<unknown[]> {
    const at = { blockHash: toHex(block.header.parentHash) };
    const outcomes = await this.store.client.batch(
      block.transactions.map((tx, i) => ({
        method: 'debug_traceCall',
        params: [txCallJson(tx, senders[i] as string), at, { tracer: 'prestateTracer' }],
      })),
    );
    const traced = outcomes.filter((o) => o.ok).map(result);
    if (traced.length > 0) return traced;
    try {
      const traces = await this.store.client.request<unknown>('debug_traceBlockByHash', [
        toHex(block.hash()),
        { tracer: 'prestateTracer' },
      ]);
      return Array.isArray(traces)
        ? traces.map((t) =>
            typeof t === 'object' && t !== null ? (t as { result?: unknown }).result : undefined,
          )
        : [];
    } catch (e) {
      // Refused too: the replay reads what it reaches.
      if (e instanceof UpstreamError) return [];
      throw e;
    }
  }
}

/**
 * A transaction as a call of its sender for the upstream's tracer, fees and nonce left out: on the
 * parent's state a later transaction's nonce is not yet its sender's, and without a gas price a
 * call is not refused for funds that earlier transactions of the block bring.
 */
function txCallJson(tx: TypedTransaction, from: string): Record<string, unknown> {
  const json: JSONTx = tx.toJSON();
  const out: Record<string, unknown> = { from, gas: json.gasLimit, value: json.value, input: json.data };
  if (json.to !== undefined) out.to = json.to;
  if (json.accessList !== undefined && json.accessList.length > 0) out.accessList = json.accessList;
  if (json.authorizationList !== undefined) out.authorizationList = json.authorizationList;
  return out;
}

/**
 * What the block names itself, in prestateTracer's shape: its senders and recipients, its fee
 * recipient, and the system contracts its processing reads before the transactions (those the
 * rules of its fork call).
 */
function namedBy(block: Block, senders: readonly string[]): Record<string, object> {
  const named: Record<string, object> = {};
  for (const sender of senders) named[sender] = {};
  for (const tx of block.transactions) if (tx.to) named[tx.to.toString()] = {};
  named[block.header.coinbase.toString()] = {};
  const common = block.common;
  if (common.isActivatedEIP(4788) && block.header.parentBeaconBlockRoot) named[BEACON_ROOTS_ADDRESS] = {};
  if (common.isActivatedEIP(2935)) named[HISTORY_STORAGE_ADDRESS] = {};
  return named;
}

/** Accounts in prestateTracer's shape. */
function named(addresses: readonly Uint8Array[]): Record<string, object> {
  return Object.fromEntries(addresses.map((address) => [toHex(address), {}]));
}

function result(outcome: RpcOutcome): unknown {
  return outcome.ok ? outcome.result : undefined;
}

/** The accounts and slots named by prestateTracer answers ({address: {storage: {slot: value}}}). */
function keysOf(prestates: readonly unknown[]): StateKey[] {
  const byAddress = new Map<string, Set<string>>();
  for (const prestate of prestates) {
    if (typeof prestate !== 'object' || prestate === null) continue;
    for (const [address, account] of Object.entries(prestate as Record<string, unknown>)) {
      if (!/^0x[0-9a-fA-F]{40}$/.test(address)) continue;
      const key = address.toLowerCase();
      const slots = byAddress.get(key) ?? new Set<string>();
      byAddress.set(key, slots);
      const storage = (account as { storage?: unknown } | null)?.storage;
      if (typeof storage === 'object' && storage !== null) {
        for (const slot of Object.keys(storage))
          if (/^0x[0-9a-fA-F]{64}$/.test(slot)) slots.add(slot.toLowerCase());
      }
    }
  }
  return [...byAddress].map(([address, slots]) => ({
    address: Buffer.from(address.slice(2), 'hex'),
    slots: [...slots].map((slot) => Buffer.from(slot.slice(2), 'hex')),
  }));
}

/** A call as a JSON call object, for the upstream's own tracer. */
function callJson(call: CallRequest): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (call.from) out.from = toHex(call.from);
  if (call.to) out.to = toHex(call.to);
  for (const name of [
    'gas',
    'gasPrice',
    'maxFeePerGas',
    'maxPriorityFeePerGas',
    'value',
    'nonce',
    'maxFeePerBlobGas',
  ] as const) {
    const v = call[name];
    if (v !== undefined) out[name] = quantityToHex(v);
  }
  if (call.data) out.input = toHex(call.data);
  if (call.type !== undefined) out.type = quantityToHex(call.type);
  if (call.accessList)
    out.accessList = call.accessList.map((e) => ({
      address: toHex(e.address),
      storageKeys: e.storageKeys.map(toHex),
    }));
  if (call.blobVersionedHashes) out.blobVersionedHashes = call.blobVersionedHashes.map(toHex);
  if (call.authorizationList)
    out.authorizationList = call.authorizationList.map((a) => ({
      chainId: quantityToHex(a.chainId),
      address: toHex(a.address),
      nonce: quantityToHex(a.nonce),
      yParity: quantityToHex(a.yParity),
      r: quantityToHex(a.r),
      s: quantityToHex(a.s),
    }));
  return out;
}

function stateOverridesJson(overrides: StateOverrides): Record<string, unknown> {
  const slots = (entries: Array<[Uint8Array, Uint8Array]>) =>
    Object.fromEntries(entries.map(([slot, value]) => [toHex(slot), toHex(value)]));
  return Object.fromEntries(
    overrides.map(({ address, override }) => [
      toHex(address),
      {
        ...(override.balance !== undefined ? { balance: quantityToHex(override.balance) } : {}),
        ...(override.nonce !== undefined ? { nonce: quantityToHex(override.nonce) } : {}),
        ...(override.code !== undefined ? { code: toHex(override.code) } : {}),
        ...(override.state ? { state: slots(override.state) } : {}),
        ...(override.stateDiff ? { stateDiff: slots(override.stateDiff) } : {}),
      },
    ]),
  );
}

function blockOverridesJson(o: BlockOverrides): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const name of ['number', 'time', 'gasLimit', 'baseFeePerGas', 'blobBaseFee'] as const) {
    const v = o[name];
    if (v !== undefined) out[name] = quantityToHex(v);
  }
  if (o.feeRecipient) out.feeRecipient = toHex(o.feeRecipient);
  if (o.prevRandao) out.prevRandao = toHex(o.prevRandao);
  return out;
}
