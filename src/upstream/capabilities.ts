import type { UpstreamReader } from './client.ts';
import type { Capabilities } from './store.ts';

/**
 * What the upstream offers, found once at start with one batch of probes: a method it refuses (a
 * JSON-RPC error: not found, not enabled) is a method it lacks, and ethtrace takes the slower path
 * for it. A transport fault is not an answer: it fails the start.
 */
export async function discoverCapabilities(client: UpstreamReader): Promise<Capabilities> {
  const zero = `0x${'0'.repeat(40)}`;
  const [prestate, receipts, finalized] = await client.batch([
    { method: 'debug_traceCall', params: [{ to: zero }, 'latest', { tracer: 'prestateTracer' }] },
    { method: 'eth_getBlockReceipts', params: ['latest'] },
    { method: 'eth_getBlockByNumber', params: ['finalized', false] },
  ]);
  const ok = (o: typeof prestate) => o?.ok === true && o.result !== null && o.result !== undefined;
  return { prestateTracer: ok(prestate), blockReceipts: ok(receipts), finalizedTag: ok(finalized) };
}

/** One line for the start-up output: which path each kind of read takes. */
export function describeCapabilities(c: Capabilities): string {
  return [
    c.prestateTracer
      ? 'state: prestateTracer pre-states, checked by eth_getProof'
      : 'state: eth_getProof per account and slot (no prestateTracer)',
    c.blockReceipts ? 'receipts: eth_getBlockReceipts' : 'receipts: eth_getTransactionReceipt, batched',
    c.finalizedTag ? 'finality: the upstream finalized tag' : 'finality: --finality-depth',
  ].join('; ');
}
