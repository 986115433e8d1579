import { randomUUID } from 'node:crypto';
import pino, { type Logger } from 'pino';
import pretty from 'pino-pretty';
import type { LogLine } from '../core/log.ts';

export type { Logger } from 'pino';

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

/**
 * Log output a reader may leave unread before lines are dropped. Synchronous writes to a pipe nobody
 * reads (a supervisor that only reads stdout) stalled the whole server once the pipe's 64 KiB filled;
 * written asynchronously, lines wait here instead, and past this they are lost rather than memory.
 */
const MAX_UNWRITTEN_LOG_BYTES = 16 * 1024 * 1024;
const LOG_WRITE_BYTES = 4096;
const LOG_FLUSH_MS = 500;

/**
 * The service's logger: JSON lines on stderr (one object a line, for a log shipper), or pino-pretty's
 * coloured lines when stderr is a terminal (a person reading). JSON lines are written asynchronously
 * (see MAX_UNWRITTEN_LOG_BYTES), 4 KiB at a time or every half second, whichever comes first, so a
 * busy server makes one write per few dozen lines rather than one each; pino flushes what is left
 * when the process exits.
 */
export function createLogger(
  options: { level?: LogLevel; destination?: NodeJS.WritableStream | number; pretty?: boolean } = {},
): Logger {
  const level = options.level ?? 'info';
  const fd = typeof options.destination === 'number' ? options.destination : 2;
  const prettyOut = options.pretty ?? (options.destination === undefined && process.stderr.isTTY === true);
  const base = { level, base: null, timestamp: pino.stdTimeFunctions.isoTime };
  if (prettyOut) return pino(base, pretty({ destination: fd, sync: true, ignore: 'pid,hostname' }));
  if (options.destination !== undefined && typeof options.destination !== 'number')
    return pino(base, options.destination);
  return pino(
    base,
    pino.destination({
      dest: fd,
      sync: false,
      minLength: LOG_WRITE_BYTES,
      periodicFlush: LOG_FLUSH_MS,
      maxLength: MAX_UNWRITTEN_LOG_BYTES,
    }),
  );
}

/**
 * The app's `log(line)` callback (src/app.ts, the services, the follower) as pino lines: what they
 * write is for an operator, at info, or at warn when the caller says the line reports a failure.
 */
export function lineLogger(logger: Logger): LogLine {
  return (line, severity) => {
    if (severity === 'warn') logger.warn(line);
    else logger.info(line);
  };
}

/**
 * An incoming `x-request-id` is kept when it is a plain token of at most 128 characters (a UUID, a
 * load balancer's trace id); anything else (spaces, quotes, control characters, a megabyte) could
 * forge log lines or bloat them, and is replaced by one of ours.
 */
const SANE_REQUEST_ID = /^[A-Za-z0-9._:/+=-]{1,128}$/;

export function requestIdOf(incoming: string | string[] | undefined): string {
  const id = Array.isArray(incoming) ? incoming[0] : incoming;
  return id !== undefined && SANE_REQUEST_ID.test(id) ? id : randomUUID();
}

/** Who sent a body, as a request line says it: never the key itself, only its name. */
export interface RequestFacts {
  id: string;
  transport: 'http' | 'ws';
  address: string;
  /** The key's name in the keys file (or `api-key:…` for a key given by flag); null without keys. */
  keyName: string | null;
}

/**
 * One log line per body (an HTTP request, a WebSocket message), at info: request id, key name,
 * transport, client address, the methods called, the HTTP status, error codes and the duration.
 * Its gate (src/rpc/envelope.ts CallGate) hears the calls; `done` writes the line once answered.
 *
 * At info because operators of a public endpoint want every request findable by its id; a line
 * costs about 2.3 µs to build and write (measured: 200,000 lines to /dev/null), and took 3–4% of the
 * main thread in a CPU profile of `ethtrace start` answering eth_chainId at 16 connections (the
 * HTTP socket writes took ten times that). `--log-level warn` drops them.
 */
export class RequestLine {
  private readonly started = performance.now();
  private readonly methods: string[] = [];
  private readonly codes: number[] = [];
  private limit: string | null = null;
  private calls = 0;

  constructor(
    private readonly logger: Logger,
    private readonly facts: RequestFacts,
  ) {}

  static enabled(logger: Logger): boolean {
    return logger.isLevelEnabled('info');
  }

  gate(): {
    admit(calls: ReadonlyArray<{ method: string }>): null;
    answered(call: { method: string }, code: number | null, ms: number): void;
    limited(limit: string): void;
  } {
    return {
      admit: () => null,
      answered: (call, code) => {
        // Bounded: a batch of a thousand calls logs its first methods and how many there were.
        if (this.methods.length < MAX_METHODS_LOGGED) this.methods.push(call.method.slice(0, 64));
        if (code !== null && this.codes.length < MAX_METHODS_LOGGED && !this.codes.includes(code))
          this.codes.push(code);
        this.calls++;
      },
      limited: (limit) => {
        this.limit = limit;
      },
    };
  }

  done(status: number): void {
    const { id, transport, address, keyName } = this.facts;
    this.logger.info(
      {
        reqId: id,
        key: keyName,
        transport,
        address,
        methods: this.methods,
        calls: this.calls,
        status,
        ...(this.codes.length > 0 ? { codes: this.codes } : {}),
        ...(this.limit !== null ? { limit: this.limit } : {}),
        ms: Math.round((performance.now() - this.started) * 100) / 100,
      },
      'request',
    );
  }
}

const MAX_METHODS_LOGGED = 20;
