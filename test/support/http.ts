/** An HTTP answer to a JSON POST: status, headers, the text, and the text parsed (null if not JSON). */
export interface JsonAnswer {
  status: number;
  headers: Headers;
  text: string;
  // biome-ignore lint/suspicious/noExplicitAny: JSON-RPC answers of every shape
  body: any;
}

/** POSTs `body` as JSON, as a client of the service would, and reads the whole answer. */
export async function postJson(
  url: string,
  body: unknown,
  headers: Record<string, string> = {},
): Promise<JsonAnswer> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });
  const text = await res.text();
  let parsed: unknown = null;
  try {
    parsed = JSON.parse(text);
  } catch {}
  return { status: res.status, headers: res.headers, text, body: parsed };
}
