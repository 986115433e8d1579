/**
 * Conformance cases that cannot pass, each with the reason, keyed by case name
 * (`<method>/<file without .io>`). The runner still runs them: it fails when a listed case passes
 * (so the list stays true) and when an entry names no fixture file (so it does not rot).
 *
 * Keep it empty unless a difference is deliberate and documented (our profile in
 * reference/rpc-semantics.md Part 1 choosing another behaviour than geth's, say). A case that fails
 * because the code is wrong or unfinished belongs in a fix, not here.
 */
export const KNOWN_DIFFERENCES: Readonly<Record<string, string>> = {};
