import type { BlockOverrides, CallRequest, StateOverrides } from '../core/call.ts';
import { quantityToHex, toHex } from '../primitives/hex.ts';
import type { RpcOutcome } from './client.ts';
import type { StateKey, UpstreamStore } from './store.ts';

/**
 * Reads the state a request will need into the cache before its EVM work starts, in a few round
 * trips rather than one per account or slot: the upstream's prestateTracer names every account and
 * slot a call (or each transaction of a block) touches, in one batch; their values then come from
 * one batch of eth_getProof, checked against the block's state root (UpstreamStore.fetchState). What
 * the local run reads beyond that (a chained call that takes another branch) is read when it is
 * reached. Without a prestateTracer upstream, nothing is prefetched.
 */
export class UpstreamPrefetch {
  constructor(private readonly store: UpstreamStore) {}

  /** The state the calls read on top of block `blockHash` (each call traced alone on its state). */
  async calls(
    blockHash: Uint8Array,
    calls: readonly CallRequest[],
    overrides: { stateOverrides?: StateOverrides; blockOverrides?: BlockOverrides } = {},
  ): Promise<void> {
    if (!this.store.capabilities.prestateTracer || calls.length === 0) return;
    const config: Record<string, unknown> = { tracer: 'prestateTracer' };
    if (overrides.stateOverrides) config.stateOverrides = stateOverridesJson(overrides.stateOverrides);
    if (overrides.blockOverrides) config.blockOverrides = blockOverridesJson(overrides.blockOverrides);
    const at = { blockHash: toHex(blockHash) };
    const outcomes = await this.store.client.batch(
      calls.map((call) => ({ method: 'debug_traceCall', params: [callJson(call), at, config] })),
    );
    await this.store.fetchState(blockHash, keysOf(outcomes.map(result)));
  }

  /** The state before the block's transactions (its parent's), for a replay of the block. */
  async block(blockHash: Uint8Array): Promise<void> {
    if (!this.store.capabilities.prestateTracer) return;
    const block = await this.store.block(blockHash);
    if (!block || block.header.number === 0n || block.transactions.length === 0) return;
    const traces = await this.store.client.request<unknown>('debug_traceBlockByHash', [
      toHex(blockHash),
      { tracer: 'prestateTracer' },
    ]);
    const prestates = Array.isArray(traces)
      ? traces.map((t) =>
          typeof t === 'object' && t !== null ? (t as { result?: unknown }).result : undefined,
        )
      : [];
    await this.store.fetchState(block.header.parentHash, keysOf(prestates));
  }
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
