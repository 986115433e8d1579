import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createRequire } from 'node:module';
import {
  type DashboardSnapshot,
  type HostTotals,
  mergeSnapshots,
  RANGES,
  type RangeName,
  viewOf,
} from './snapshot.ts';
import type { DashboardSource } from './source.ts';

/** The session cookie: HttpOnly, SameSite=Strict, only sent to the dashboard's paths. */
export const COOKIE_NAME = 'ethtrace_dashboard';
/** How long a login lasts; the token's holder logs in again after it. */
const COOKIE_MAX_AGE_S = 12 * 60 * 60;
/** The login form's body is one short field. */
const MAX_FORM_BYTES = 4096;

export interface DashboardRoutesOptions {
  /** The operator token (`--operator-token`, `$ETHTRACE_OPERATOR_TOKEN`). */
  token: string;
  source: DashboardSource;
  /**
   * Every process's snapshot of the time since `since`: this process's alone unless several API
   * processes serve the port, whose snapshots the caller gathers (they are merged here).
   */
  gather?: (now: number, since: number) => Promise<DashboardSnapshot[]>;
  /**
   * With usage in a shared database (`--database`): each host's usage over the last `rangeMs`, the
   * whole service's; shown beside this host's own figures.
   */
  service?: (rangeMs: number) => Promise<HostTotals[]>;
  now?: () => number;
}

interface Asset {
  type: string;
  body: Buffer;
}

function assets(): Map<string, Asset> {
  const page = (name: string) => readFileSync(new URL(`./page/${name}`, import.meta.url));
  const uplot = (name: string) => readFileSync(createRequire(import.meta.url).resolve(`uplot/dist/${name}`));
  const js = 'text/javascript; charset=utf-8';
  const css = 'text/css; charset=utf-8';
  return new Map([
    ['dashboard.js', { type: js, body: page('dashboard.js') }],
    ['dashboard.css', { type: css, body: page('dashboard.css') }],
    ['uPlot.iife.min.js', { type: js, body: uplot('uPlot.iife.min.js') }],
    ['uPlot.min.css', { type: css, body: uplot('uPlot.min.css') }],
  ]);
}

/**
 * Headers of every dashboard answer: nothing cached (the page shows live data behind a login), no
 * script or style but the dashboard's own files (uPlot sets styles from script, which CSP allows),
 * no framing, and no Referer, so a login URL's token is not passed on.
 */
const SECURITY_HEADERS: Record<string, string> = {
  'cache-control': 'no-store',
  'content-security-policy':
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
  'referrer-policy': 'no-referrer',
};

/**
 * The operator dashboard's HTTP routes, all under `/dashboard`: the page, its assets and its data.
 * Returns the handler the transport asks first: it answers and returns true for a dashboard path,
 * and returns false for any other, which the JSON-RPC routes then serve.
 */
export function dashboardRoutes(
  options: DashboardRoutesOptions,
): (req: IncomingMessage, res: ServerResponse) => boolean {
  const files = assets();
  const index = readFileSync(new URL('./page/index.html', import.meta.url));
  const now = options.now ?? Date.now;
  // The cookie holds a MAC of the token, not the token: a leaked cookie does not reveal it, every
  // process of a cluster derives the same value, and a new token ends every session.
  const session = createHmac('sha256', options.token)
    .update('ethtrace dashboard session')
    .digest('base64url');
  const gather =
    options.gather ?? (async (at: number, since: number) => [await options.source.snapshot(at, since)]);

  const authorized = (req: IncomingMessage): boolean => {
    const cookie = cookieOf(req.headers.cookie, COOKIE_NAME);
    if (cookie !== null && sameSecret(cookie, session)) return true;
    const bearer = bearerOf(req.headers.authorization);
    return bearer !== null && sameSecret(bearer, options.token);
  };

  const login = (res: ServerResponse): void => {
    res.writeHead(303, {
      ...SECURITY_HEADERS,
      location: '/dashboard',
      'set-cookie': `${COOKIE_NAME}=${session}; Path=/dashboard; HttpOnly; SameSite=Strict; Max-Age=${COOKIE_MAX_AGE_S}`,
      'content-length': '0',
    });
    res.end();
  };

  const serve = async (req: IncomingMessage, res: ServerResponse, path: string, query: URLSearchParams) => {
    if (path === '/dashboard' || path === '/dashboard/') {
      if (req.method === 'POST') {
        const form = new URLSearchParams((await readSmall(req, MAX_FORM_BYTES)) ?? '');
        const given = form.get('token');
        return given !== null && sameSecret(given, options.token) ? login(res) : unauthorized(res, true);
      }
      if (req.method !== 'GET' && req.method !== 'HEAD') return text(res, 405, 'method not allowed\n');
      const given = query.get('token');
      if (given !== null) return sameSecret(given, options.token) ? login(res) : unauthorized(res, true);
      const bearer = bearerOf(req.headers.authorization);
      if (bearer !== null && sameSecret(bearer, options.token)) return login(res);
      if (!authorized(req)) return unauthorized(res, bearer !== null);
      res.writeHead(200, { ...SECURITY_HEADERS, 'content-type': 'text/html; charset=utf-8' });
      res.end(req.method === 'HEAD' ? undefined : index);
      return;
    }
    if (path === '/dashboard/data') {
      if (!authorized(req)) {
        res.writeHead(401, { ...SECURITY_HEADERS, 'content-type': 'application/json' });
        res.end('{"error":"log in at /dashboard with the operator token"}\n');
        return;
      }
      const range = query.get('range') ?? '1h';
      if (!Object.hasOwn(RANGES, range)) return text(res, 400, 'range is one of 15m, 1h, 1d\n');
      const at = now();
      const name = range as RangeName;
      const merged = mergeSnapshots(await gather(at, at - RANGES[name]));
      const view = viewOf(merged, name, at);
      if (options.service)
        // The database unreachable: the page says so, and shows this host's figures as ever.
        view.service = await options.service(RANGES[name]).then(
          (hosts) => ({ hosts, error: null }),
          (e: unknown) => ({ hosts: [], error: (e as Error).message }),
        );
      res.writeHead(200, { ...SECURITY_HEADERS, 'content-type': 'application/json' });
      res.end(JSON.stringify(view));
      return;
    }
    const asset = path.startsWith('/dashboard/assets/') ? files.get(path.slice(18)) : undefined;
    if (asset) {
      // The page and its files are public (they hold no data); data and the page itself are not.
      res.writeHead(200, { ...SECURITY_HEADERS, 'cache-control': 'no-cache', 'content-type': asset.type });
      res.end(asset.body);
      return;
    }
    text(res, 404, 'not found\n');
  };

  return (req, res) => {
    const url = req.url ?? '/';
    const q = url.indexOf('?');
    const path = q < 0 ? url : url.slice(0, q);
    if (path !== '/dashboard' && !path.startsWith('/dashboard/')) return false;
    serve(req, res, path, new URLSearchParams(q < 0 ? '' : url.slice(q + 1))).catch((e: unknown) => {
      if (!res.headersSent) res.writeHead(500, { 'content-type': 'text/plain' });
      res.end(`internal error: ${(e as Error).message}\n`);
    });
    return true;
  };
}

/** Equal strings, compared in constant time (as SHA-256 digests, so lengths leak nothing either). */
export function sameSecret(given: string, kept: string): boolean {
  const a = createHash('sha256').update(given).digest();
  const b = createHash('sha256').update(kept).digest();
  return timingSafeEqual(a, b);
}

function bearerOf(header: string | undefined): string | null {
  const m = header === undefined ? null : /^Bearer\s+(\S+)\s*$/i.exec(header);
  return m?.[1] ?? null;
}

function cookieOf(header: string | undefined, name: string): string | null {
  if (header === undefined) return null;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return null;
}

function text(res: ServerResponse, status: number, body: string): void {
  res.writeHead(status, { ...SECURITY_HEADERS, 'content-type': 'text/plain; charset=utf-8' });
  res.end(body);
}

/** The login page, with 401: a form that posts the token, so it never goes into a URL. */
function unauthorized(res: ServerResponse, wrong: boolean): void {
  res.writeHead(401, { ...SECURITY_HEADERS, 'content-type': 'text/html; charset=utf-8' });
  res.end(`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>ethtrace · operator dashboard</title>
<link rel="stylesheet" href="/dashboard/assets/dashboard.css">
</head>
<body class="login">
<form method="post" action="/dashboard" class="card">
<h1>ethtrace <span>operator dashboard</span></h1>
<p>${wrong ? 'That token is not the operator token.' : 'Log in with the operator token given to <code>ethtrace start --operator-token</code>.'}</p>
<input type="password" name="token" autocomplete="current-password" placeholder="operator token" autofocus required>
<button type="submit">Log in</button>
</form>
</body>
</html>
`);
}

/** A small body as text, or null past `limit` bytes. */
function readSmall(req: IncomingMessage, limit: number): Promise<string | null> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size <= limit) chunks.push(chunk);
    });
    req.on('end', () => resolve(size > limit ? null : Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}
