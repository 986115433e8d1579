/**
 * What kind of `eth_subscription` notification a result is, from its JSON text, so that the
 * transport can charge it (src/transport/access/) without knowing which subscription it belongs to.
 * The renderers fix the shapes (src/services/subscriptions.ts): a pending transaction is its hash (a
 * JSON string) or a transaction object, a log has `logIndex`, a header has `parentHash` (and no
 * `logIndex`); every other key in these objects holds hex, so a key name cannot appear in a value.
 */
export type SubscriptionEvent =
  | { kind: 'newHeads' }
  /** `block`: the hash of the log's block, for Infura's charge per block. */
  | { kind: 'logs'; block: string }
  | { kind: 'newPendingTransactions' };

const BLOCK_HASH = '"blockHash":"';

export function subscriptionEventOf(resultJson: string): SubscriptionEvent {
  if (resultJson.startsWith('"')) return { kind: 'newPendingTransactions' };
  if (resultJson.includes('"logIndex"')) {
    const at = resultJson.indexOf(BLOCK_HASH);
    const block = at < 0 ? '' : resultJson.slice(at + BLOCK_HASH.length, at + BLOCK_HASH.length + 66);
    return { kind: 'logs', block };
  }
  if (resultJson.includes('"parentHash"')) return { kind: 'newHeads' };
  return { kind: 'newPendingTransactions' };
}
