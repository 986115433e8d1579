/**
 * A result that is already JSON text (receipts rendered at import, traces rendered in a worker): the
 * envelope splices it into the response as it is, so serving it costs a lookup and a write, never a
 * parse and a re-encode. Several pieces (one per transaction, say) are written one after another.
 */
export class RawJson {
  constructor(readonly json: string | Uint8Array | ReadonlyArray<string | Uint8Array>) {}

  /** A JSON array of pieces already encoded: written as they are, with the brackets and commas between. */
  static array(pieces: readonly Uint8Array[]): RawJson {
    const chunks: Array<string | Uint8Array> = ['['];
    for (const [i, piece] of pieces.entries()) {
      if (i > 0) chunks.push(',');
      chunks.push(piece);
    }
    chunks.push(']');
    return new RawJson(chunks);
  }

  chunks(): Array<string | Uint8Array> {
    return typeof this.json === 'string' || this.json instanceof Uint8Array ? [this.json] : [...this.json];
  }
}
