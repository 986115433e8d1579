import type { TypedTransaction } from '@ethereumjs/tx';
import { quantityToHex, toHex } from '../../../primitives/hex.ts';
import { formatTransaction } from '../../../wire/transaction.ts';
import { address, required } from '../../params.ts';
import type { Services } from '../../services.ts';
import { method } from '../define.ts';

type Grouped = Record<string, Record<string, unknown>>;

/** geth's txpool layout: sender → nonce (decimal) → transaction. */
function group(txs: TypedTransaction[], show: (tx: TypedTransaction) => unknown): Grouped {
  const out: Grouped = {};
  for (const tx of txs) {
    const sender = toHex(tx.getSenderAddress().bytes);
    out[sender] ??= {};
    (out[sender] as Record<string, unknown>)[tx.nonce.toString()] = show(tx);
  }
  return out;
}

async function content(
  services: Services,
): Promise<{ pending: TypedTransaction[]; queued: TypedTransaction[] }> {
  return services.dev ? services.dev.poolContent() : { pending: [], queued: [] };
}

// An imported chain has no pool: its answers are empty.
export const txpool_status = method([], async (_args, { services }) => {
  const { pending, queued } = await content(services);
  return { pending: quantityToHex(BigInt(pending.length)), queued: quantityToHex(BigInt(queued.length)) };
});

export const txpool_content = method([], async (_args, { services }) => {
  const { pending, queued } = await content(services);
  const show = (tx: TypedTransaction) => formatTransaction(tx, null);
  return { pending: group(pending, show), queued: group(queued, show) };
});

export const txpool_contentFrom = method([required(address)], async ([who], { services }) => {
  const { pending, queued } = await content(services);
  const from = (tx: TypedTransaction) => Buffer.compare(tx.getSenderAddress().bytes, who) === 0;
  const show = (tx: TypedTransaction) => formatTransaction(tx, null);
  // geth answers one sender's transactions by nonce, without the sender level.
  const byNonce = (txs: TypedTransaction[]) =>
    Object.fromEntries(txs.filter(from).map((tx) => [tx.nonce.toString(), show(tx)]));
  return { pending: byNonce(pending), queued: byNonce(queued) };
});
