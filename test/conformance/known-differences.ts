/**
 * Conformance cases that cannot pass, each with the reason, keyed by case name
 * (`<method>/<file without .io>`). The runner still runs them: it fails when a listed case passes
 * (so the list stays true) and when an entry names no fixture file (so it does not rot).
 *
 * Keep it empty unless a difference is deliberate and documented (docs/tracing.md choosing another
 * behaviour than geth's, say). A case that fails because the code is wrong or unfinished belongs in
 * a fix, not here.
 */
const READ_ONLY_IMPORTED_CHAIN =
  'ethtrace serves an imported (verified) chain read-only; transactions are accepted only by a dev chain, so sending to the imported conformance chain is refused (-32000). The pending pool of issue 6 will revisit this.';

const GENESIS_TRACE =
  'geth refuses to trace genesis (no parent state); ethtrace answers [] for it, as Reth and anvil do and as its own trace_block does, because an indexer (ponder) retries a -32000 at block 0 forever. docs/tracing.md records the choice.';

export const KNOWN_DIFFERENCES: Readonly<Record<string, string>> = {
  'txpool_content/get-content': `${READ_ONLY_IMPORTED_CHAIN} Its shape check expects the transactions those sends would have pooled.`,
  'debug_traceBlockByNumber/trace-genesis': GENESIS_TRACE,
  'debug_traceBlockByHash/trace-genesis': GENESIS_TRACE,
  'eth_sendRawTransaction/send-access-list-transaction': READ_ONLY_IMPORTED_CHAIN,
  'eth_sendRawTransaction/send-blob-tx': READ_ONLY_IMPORTED_CHAIN,
  'eth_sendRawTransaction/send-dynamic-fee-access-list-transaction': READ_ONLY_IMPORTED_CHAIN,
  'eth_sendRawTransaction/send-dynamic-fee-transaction': READ_ONLY_IMPORTED_CHAIN,
  'eth_sendRawTransaction/send-legacy-transaction': READ_ONLY_IMPORTED_CHAIN,
};

/**
 * Methods with fixtures that the service does not offer, each with the reason. The runner fails when
 * a method with fixtures is missing from both the method table and this list, and when an entry
 * here is offered after all or has no fixtures: offering a method, or a new fixture method arriving,
 * changes the list on purpose.
 */
export const NOT_OFFERED: Readonly<Record<string, string>> = {
  eth_capabilities: 'not implemented yet: the ranges of history (state, logs, receipts) a node serves.',
  testing_buildBlockV1:
    "geth's testing namespace builds a block from given transactions for client tests; not part of a public RPC service.",
};
