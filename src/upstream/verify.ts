/**
 * Upstream mode's verification library: an upstream node's JSON answers (geth, Reth, Erigon, anvil,
 * another ethtrace) → checked domain values. Nothing an upstream says is served or stored unless
 * checked here where a check is possible; a malformed answer or a failed check is `Unavailable`
 * (-32002 to the client) with a message naming what failed and both values:
 * `upstream answer failed verification: block 5 (0x…) receipts root 0x… is not the header's 0x…`.
 *
 * - blockFromRpc / headerFromRpc (block.ts, header.ts): blocks and headers against their hash.
 * - receiptsFromRpc (receipts.ts): a block's receipts against its header, rendered as served.
 * - accountFromProof (proof.ts): eth_getProof against a state root, and code against the proof.
 *
 * What no answer alone can show is left to the caller: that a hash is the chain's (the hash asked
 * for, or a child's parentHash, must come from a trusted place), the header rules against the parent,
 * and what only execution gives (state root, gas used, requests hash).
 */
export { blockFromRpc } from './block.ts';
export { type ForkRules, headerFromRpc } from './header.ts';
export { accountFromProof } from './proof.ts';
export { receiptsFromRpc } from './receipts.ts';
