/**
 * An error caused by what the user gave us (a bad file, a bad flag, a chain that does not verify).
 * The CLI prints its message without a stack and exits non-zero; anything else is a bug.
 */
export class UserError extends Error {
  override name = 'UserError';
}

/**
 * The failures a request can meet, in the service's own terms: what went wrong, never how a protocol
 * says it. src/rpc/errors.ts is the one place that gives each kind its JSON-RPC code and HTTP status.
 * A DomainError crosses between threads as `{kind, message, data}` (see serializeError).
 */
export type DomainErrorKind =
  | 'invalid argument'
  | 'not found'
  | 'failed'
  | 'limit exceeded'
  | 'busy'
  | 'execution timeout'
  | 'reverted'
  | 'response too large'
  | 'transaction rejected'
  | 'too many subscriptions'
  | 'unavailable'
  | 'upstream'
  | 'simulation rejected'
  | 'internal';

export abstract class DomainError extends Error {
  abstract readonly kind: DomainErrorKind;
  /**
   * The abuse limit that refused the request (a name of src/config/limits.ts LIMIT_NAMES), so its
   * refusals are counted by name; set with `refusedBy`. Kinds that are always one limit's (a busy
   * pool, a response too large) are named by the envelope from their kind instead.
   */
  abuseLimit: string | undefined;

  constructor(
    message: string,
    /** Details a client may act on (a revert's output, a suggested range); plain data. */
    readonly data?: unknown,
  ) {
    super(message);
  }
}

/** `error`, marked as the refusal of the abuse limit `limit`. */
export function refusedBy<E extends DomainError>(limit: string, error: E): E {
  error.abuseLimit = limit;
  return error;
}

/** A parameter the method cannot take: malformed, out of range, contradicting another. */
export class InvalidArgument extends DomainError {
  readonly kind = 'invalid argument';
}

/** What the request names (a block, a transaction, a filter) is not there. */
export class NotFound extends DomainError {
  readonly kind = 'not found';
}

/** A well-formed request the method cannot carry out: a call that fails its checks, a chain that refuses it. */
export class RequestFailed extends DomainError {
  readonly kind = 'failed';
}

/** The request asks for more than one request may (a block range, a result count). */
export class LimitExceeded extends DomainError {
  readonly kind = 'limit exceeded';
}

/** Too much work is waiting already; the same request may succeed a moment later. */
export class Busy extends DomainError {
  readonly kind = 'busy';
}

/** The request's EVM work did not finish within its deadline. */
export class ExecutionTimeout extends DomainError {
  readonly kind = 'execution timeout';
  constructor(message = 'execution timeout') {
    super(message);
  }
}

/** A call that reverted, with the output it reverted with. */
export class Reverted extends DomainError {
  readonly kind = 'reverted';
  constructor(
    message: string,
    readonly output: Uint8Array,
  ) {
    super(message, output);
  }
}

/**
 * An answer larger than the server sends (`limit` bytes). Raised in a worker as soon as a tracer's
 * output passes the limit, so the trace stops growing, or by the envelope for a whole batch.
 */
export class ResponseTooLarge extends DomainError {
  readonly kind = 'response too large';
  constructor(
    readonly limit: number,
    message = `response too large: the answer would exceed ${limit} bytes; ask for less (fewer calls or blocks, no vmTrace, a struct logger limit)`,
  ) {
    super(message);
  }
}

/** A transaction the node refuses to accept (funds, fees): Infura's own kind of refusal. */
export class TransactionRejected extends DomainError {
  readonly kind = 'transaction rejected';
}

/** A connection holds as many subscriptions as it may. */
export class TooManySubscriptions extends DomainError {
  readonly kind = 'too many subscriptions';
}

/**
 * A source the request needs cannot answer now: the upstream node is down, too slow, or answered
 * something that failed its check. The same request may succeed later.
 */
export class Unavailable extends DomainError {
  readonly kind = 'unavailable';
}

/**
 * The upstream node refused a request it was passed (a revert, an invalid transaction): its own
 * JSON-RPC error, carried as data ({code, message, data}) so the client gets what the node said.
 */
export class UpstreamError extends DomainError {
  readonly kind = 'upstream';
  constructor(readonly upstream: { code: number; message: string; data?: unknown }) {
    super(upstream.message, upstream);
  }
}

/**
 * Why eth_simulateV1 refuses a request as a whole, each with its own code in the execution-apis
 * spec (src/rpc/errors.ts maps them).
 */
export type SimulationFault =
  | 'nonce too low'
  | 'nonce too high'
  | 'fee cap below base fee'
  | 'intrinsic gas'
  | 'insufficient funds'
  | 'block gas limit reached'
  | 'block number order'
  | 'block timestamp order'
  | 'sender not an account'
  | 'init code too large'
  | 'client limit'
  | 'invalid fee fields'
  | 'invalid transaction';

/** An eth_simulateV1 refused for a reason its spec gives a code of its own. */
export class SimulationRejected extends DomainError {
  readonly kind = 'simulation rejected';
  constructor(
    readonly fault: SimulationFault,
    message: string,
  ) {
    // The fault travels as data across threads; the wire answer carries only its code.
    super(message, fault);
  }
}

/** Our fault (a crashed worker, a bug): the client learns nothing but that; the cause is logged. */
export class InternalError extends DomainError {
  readonly kind = 'internal';
  constructor(message = 'internal error', options?: { cause?: unknown }) {
    super(message);
    if (options?.cause !== undefined) this.cause = options.cause;
  }
}

// The cases a caller branches on, each its own class under its kind (as reth's EthApiError has a
// variant per case): code that must tell one failure from another of the same kind asks
// `instanceof`, never the message's text, which is for people and may be reworded.

/** The block header a request names is not in the chain. */
export class HeaderNotFound extends NotFound {
  static by(selector: 'hash' | 'number'): HeaderNotFound {
    return new HeaderNotFound(selector === 'hash' ? 'header for hash not found' : 'header not found');
  }
}

/** A block a job was given is gone: the chain was rewound (a reorg, `evm_revert`) under the job. */
export class ChainRewound extends NotFound {
  static during(block?: string): ChainRewound {
    const which = block === undefined ? '' : `${block} `;
    return new ChainRewound(`block ${which}not found: the chain was rewound while it was traced`);
  }
}

/**
 * An upstream answer that failed its check (a wrong hash, a malformed field): unlike the upstream
 * being down or slow, it does not pass by asking again.
 */
export class UpstreamAnswerInvalid extends Unavailable {}

/** The cases that keep their class across a thread boundary (serializeDomainError). */
const CASES = { HeaderNotFound, ChainRewound, UpstreamAnswerInvalid } as const;
type CaseName = keyof typeof CASES;

function caseOf(e: DomainError): CaseName | undefined {
  for (const [name, cls] of Object.entries(CASES) as Array<[CaseName, (typeof CASES)[CaseName]]>)
    if (e instanceof cls) return name;
  return undefined;
}

/** A DomainError as plain data, to cross a thread boundary by structured clone. */
export interface SerializedDomainError {
  kind: DomainErrorKind;
  message: string;
  data?: unknown;
  /** The case's class (CASES), when it is one. */
  case?: CaseName;
}

export function serializeDomainError(e: DomainError): SerializedDomainError {
  const serialized: SerializedDomainError = { kind: e.kind, message: e.message };
  if (e.data !== undefined) serialized.data = e.data;
  const name = caseOf(e);
  if (name !== undefined) serialized.case = name;
  return serialized;
}

const REVIVE: Record<DomainErrorKind, (message: string, data: unknown) => DomainError> = {
  'invalid argument': (m, d) => new InvalidArgument(m, d),
  'not found': (m, d) => new NotFound(m, d),
  failed: (m, d) => new RequestFailed(m, d),
  'limit exceeded': (m, d) => new LimitExceeded(m, d),
  busy: (m, d) => new Busy(m, d),
  'execution timeout': (m) => new ExecutionTimeout(m),
  reverted: (m, d) => new Reverted(m, d instanceof Uint8Array ? d : new Uint8Array()),
  'response too large': (m) => new ResponseTooLarge(Number.NaN, m),
  'transaction rejected': (m, d) => new TransactionRejected(m, d),
  'too many subscriptions': (m, d) => new TooManySubscriptions(m, d),
  unavailable: (m, d) => new Unavailable(m, d),
  upstream: (m, d) => new UpstreamError(isUpstreamError(d) ? d : { code: -32603, message: m }),
  'simulation rejected': (m, d) =>
    new SimulationRejected(typeof d === 'string' ? (d as SimulationFault) : 'invalid transaction', m),
  internal: (m) => new InternalError(m),
};

function isUpstreamError(d: unknown): d is { code: number; message: string; data?: unknown } {
  return typeof d === 'object' && d !== null && typeof (d as { code?: unknown }).code === 'number';
}

/** The error `serializeDomainError` describes, as its own class again. */
export function reviveDomainError(e: SerializedDomainError): DomainError {
  return e.case === undefined ? REVIVE[e.kind](e.message, e.data) : new CASES[e.case](e.message, e.data);
}

/** Most characters of an error logged: its stack, or a message quoting a client's megabyte number. */
const MAX_LOGGED_CHARS = 2_000;

/** An error as a log line: its stack, cut to a bounded length. */
export function describeForLog(e: unknown): string {
  const text = e instanceof Error ? (e.stack ?? `${e.name}: ${e.message}`) : String(e);
  return text.length <= MAX_LOGGED_CHARS
    ? text
    : `${text.slice(0, MAX_LOGGED_CHARS)}… (${text.length} chars)`;
}
