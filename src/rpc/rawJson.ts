/**
 * A result that is already JSON text (receipts rendered at import): the envelope splices it into the
 * response as it is, so serving it costs a lookup and a write, never a parse and a re-encode.
 */
export class RawJson {
  constructor(readonly json: string | Uint8Array) {}
}
