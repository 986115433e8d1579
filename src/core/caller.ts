/**
 * Who sent a request, for the bounds a service keeps per client (src/services/filters.ts): the API
 * key of its URL and the connection it came on. Identity only; the transport fills it in.
 */
export interface Caller {
  /** The API key; null when the server runs without keys (every client then shares one space). */
  key: string | null;
  /** The client's connection (its WebSocket, or the TCP socket of an HTTP request); compared by identity. */
  connection: object;
}
