import { UserError } from './errors.ts';

/**
 * A URL as it may appear in logs, errors and stats: no credentials, query or fragment, and path
 * segments that look like API keys (20 or more letters, digits, - or _) shown as `***`.
 */
export function redactUrl(url: string): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new UserError(`URL ${JSON.stringify(url.slice(0, 40))} is not a URL`);
  }
  const path = parsed.pathname
    .split('/')
    .map((segment) => (/^[A-Za-z0-9_-]{20,}$/.test(segment) ? '***' : segment))
    .join('/');
  return `${parsed.protocol}//${parsed.host}${path === '/' ? '' : path}`;
}
