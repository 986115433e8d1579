import { Agent, request as httpRequest } from 'node:http';

/**
 * One HTTP exchange with a server, as raw as the comparison needs it: the status, the headers a
 * client could act on, and the body's exact bytes (decoded as UTF-8 only after they are complete).
 */

export interface HttpShape {
  method: string;
  /** Path and query, e.g. `/v3/any-key`. */
  path: string;
  headers: Record<string, string>;
  /** Sent as is; absent: no body. */
  body?: string | Buffer;
}

export interface Answer {
  status: number;
  /** The compared headers, `name: value` lines in a fixed order. */
  headers: string;
  body: string;
  /** A transport failure (reset, timeout) instead of an answer: compared like a body. */
  failure?: string;
}

/**
 * Headers an answer is compared on. Date and connection handling (keep-alive, close) are left out:
 * they depend on the clock and on the client, not on what the service answers.
 */
const COMPARED_HEADERS = [
  'content-type',
  'access-control-allow-origin',
  'access-control-allow-methods',
  'access-control-allow-headers',
  'access-control-max-age',
  'allow',
  'www-authenticate',
];

/** Kept-alive sockets, enough for the concurrency the runner uses. */
const agent = new Agent({ keepAlive: true, maxSockets: 64 });

/** An answer's bytes beyond this are dropped from the comparison text (and the difference says so). */
const MAX_ANSWER_BYTES = 256 * 1024 * 1024;

export function postJson(base: URL, body: string, timeoutMs: number): Promise<Answer> {
  return send(
    base,
    { method: 'POST', path: base.pathname, headers: { 'content-type': 'application/json' }, body },
    timeoutMs,
  );
}

/** Sends `shape` to the server at `base` (its host and port). */
export function send(base: URL, shape: HttpShape, timeoutMs: number): Promise<Answer> {
  return new Promise((resolve) => {
    let settled = false;
    const done = (answer: Answer): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve(answer);
    };
    const body = shape.body === undefined ? undefined : Buffer.from(shape.body);
    const headers: Record<string, string> = { ...shape.headers };
    if (body !== undefined && headers['content-length'] === undefined) {
      headers['content-length'] = String(body.byteLength);
    }
    const req = httpRequest(
      {
        host: base.hostname,
        port: base.port,
        method: shape.method,
        path: shape.path,
        headers,
        agent,
      },
      (res) => {
        const chunks: Buffer[] = [];
        let size = 0;
        res.on('data', (chunk: Buffer) => {
          size += chunk.byteLength;
          if (size <= MAX_ANSWER_BYTES) chunks.push(chunk);
        });
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          done({
            status: res.statusCode ?? 0,
            headers: COMPARED_HEADERS.flatMap((name) => {
              const value = res.headers[name];
              return value === undefined ? [] : [`${name}: ${String(value)}`];
            }).join('\n'),
            body: size > MAX_ANSWER_BYTES ? `${text}… (${size} bytes in all)` : text,
          });
        });
        res.on('error', (err) => done(failed(err)));
      },
    );
    const timer = setTimeout(() => {
      req.destroy(new Error(`no answer within ${timeoutMs} ms`));
    }, timeoutMs);
    req.on('error', (err) => done(failed(err)));
    if (body !== undefined) req.write(body);
    req.end();
  });
}

function failed(err: Error & { code?: string }): Answer {
  return { status: 0, headers: '', body: '', failure: err.code ?? err.message };
}

/** The text two answers are compared on: equal texts are byte-identical answers. */
export function answerKey(a: Answer): string {
  return `${a.status}\n${a.headers}\n${a.failure === undefined ? '' : `transport failure: ${a.failure}\n`}\n${a.body}`;
}

export function closeAgent(): void {
  agent.destroy();
}
