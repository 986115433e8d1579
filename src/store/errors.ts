/**
 * `commitBlock` refused a block that does not extend the head (a gap, a repeated number) or that is
 * already stored; nothing of it was written. Ingest treats this as a race or a reorg to resolve.
 */
export class CommitRejectedError extends Error {
  override readonly name = 'CommitRejectedError';
}
