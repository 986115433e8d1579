import type { Item } from '../lib/compare.ts';

/**
 * The HTTP edge: paths, verbs, content types, the body and batch limits. Answers are compared on
 * status, the headers a client acts on (lib/http.ts) and the body.
 */
export function httpItems(chain: string): Item[] {
  const items: Item[] = [];
  const chainId = '{"jsonrpc":"2.0","id":1,"method":"eth_chainId","params":[]}';
  const json = { 'content-type': 'application/json' };
  const add = (
    label: string,
    method: string,
    path: string,
    headers: Record<string, string>,
    body?: string | Buffer,
  ): void => {
    items.push({
      chain,
      category: 'http edge',
      method: '(http)',
      body: label,
      http: body === undefined ? { method, path, headers } : { method, path, headers, body },
    });
  };
  add('POST / (no key needed with --no-auth)', 'POST', '/', json, chainId);
  add('POST /v3/any-key', 'POST', '/v3/any-key', json, chainId);
  add('POST /v3/any-key/ (trailing slash)', 'POST', '/v3/any-key/', json, chainId);
  add('POST /v3/ (no key)', 'POST', '/v3/', json, chainId);
  add('POST /v3/a/b', 'POST', '/v3/a/b', json, chainId);
  add('POST /elsewhere', 'POST', '/elsewhere', json, chainId);
  add('POST with a query string', 'POST', '/v3/k?x=1', json, chainId);
  add('GET /v3/k', 'GET', '/v3/k', {});
  add('PUT /v3/k', 'PUT', '/v3/k', json, chainId);
  add('OPTIONS /v3/k', 'OPTIONS', '/v3/k', { origin: 'http://example.test' });
  add('GET /ws/v3/k without an upgrade', 'GET', '/ws/v3/k', {});
  add('text/plain body', 'POST', '/v3/k', { 'content-type': 'text/plain' }, chainId);
  add('no content type', 'POST', '/v3/k', {}, chainId);
  add(
    'content type with a charset',
    'POST',
    '/v3/k',
    { 'content-type': 'application/json; charset=utf-8' },
    chainId,
  );
  add('empty body', 'POST', '/v3/k', json, '');
  add('whitespace body', 'POST', '/v3/k', json, ' \n ');
  add('a UTF-8 BOM before the JSON', 'POST', '/v3/k', json, `\ufeff${chainId}`);
  add(
    'invalid UTF-8 in a string',
    'POST',
    '/v3/k',
    json,
    Buffer.concat([
      Buffer.from('{"jsonrpc":"2.0","id":"'),
      Buffer.from([0xff, 0xfe]),
      Buffer.from('","method":"eth_chainId"}'),
    ]),
  );
  const big = `{"jsonrpc":"2.0","id":1,"method":"eth_getBalance","params":["0x${'1'.repeat(5 * 1024 * 1024)}","latest"]}`;
  add('a body over 5 MiB', 'POST', '/v3/k', json, big);
  add(
    'a declared length over 5 MiB',
    'POST',
    '/v3/k',
    { ...json, 'content-length': String(6 * 1024 * 1024) },
    chainId.padEnd(6 * 1024 * 1024, ' '),
  );
  const batch = (n: number): string =>
    `[${Array.from({ length: n }, (_, i) => `{"jsonrpc":"2.0","id":${i + 5},"method":"eth_chainId"}`).join(',')}]`;
  add('a batch of 1000', 'POST', '/v3/k', json, batch(1000));
  add('a batch of 1001', 'POST', '/v3/k', json, batch(1001));
  add(
    'a batch of notifications only',
    'POST',
    '/v3/k',
    json,
    '[{"jsonrpc":"2.0","method":"eth_chainId"},{"jsonrpc":"2.0","method":"net_version"}]',
  );
  add('a notification', 'POST', '/v3/k', json, '{"jsonrpc":"2.0","method":"eth_chainId"}');
  return items;
}
