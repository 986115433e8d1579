import assert from 'node:assert/strict';

/** One JSON-RPC call over HTTP; a JSON-RPC error is thrown as an Error carrying its `code`. */
export async function rpc<T>(url: string, method: string, params: unknown[] = []): Promise<T> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
  });
  const body = (await res.json()) as { result?: T; error?: { code: number; message: string } };
  if (body.error) throw Object.assign(new Error(body.error.message), { code: body.error.code });
  return body.result as T;
}

/** The JSON-RPC error of a call expected to fail. */
export async function rpcFailure(
  url: string,
  method: string,
  params: unknown[] = [],
): Promise<{ code: number; message: string }> {
  return rpc(url, method, params).then(
    () => assert.fail(`${method} was expected to fail`),
    (e: Error & { code: number }) => ({ code: e.code, message: e.message }),
  );
}
