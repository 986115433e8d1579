/**
 * Which contract addresses a call queries, for a key's contract allow-list (src/transport/access/):
 * method knowledge, so it lives beside the methods and not in the transport. Pure.
 *
 * The methods are those Infura checks against its contract allow-list (eth_call, eth_estimateGas,
 * eth_getLogs, eth_getBalance, eth_getCode, eth_getStorageAt, eth_getTransactionCount), plus the
 * calls of trace_call and trace_callMany, which run contracts as eth_call does.
 */

/** Methods whose first parameter is the account queried. */
const ACCOUNT_FIRST = new Set([
  'eth_getBalance',
  'eth_getCode',
  'eth_getStorageAt',
  'eth_getTransactionCount',
]);
/** Methods whose first parameter is a call object, whose `to` is the contract run. */
const CALL_FIRST = new Set(['eth_call', 'eth_estimateGas', 'trace_call']);

const ADDRESS = /^0[xX][0-9a-fA-F]{40}$/;

/**
 * The addresses `method` queries with `params`, lower-case: null when a contract allow-list does not
 * apply to the method. An empty list means the call names no contract the list could allow (a call
 * without `to`, a log filter without `address`, or a parameter that is not an address), and a key
 * with a contract allow-list refuses it: the call could reach any contract.
 */
export function contractsOf(method: string, params: unknown): string[] | null {
  const list = Array.isArray(params) ? params : [];
  if (ACCOUNT_FIRST.has(method)) return addressList([list[0]]);
  if (CALL_FIRST.has(method)) return addressList([field(list[0], 'to')]);
  if (method === 'eth_getLogs') return logAddresses(list[0]);
  if (method === 'trace_callMany') {
    const calls = list[0];
    if (!Array.isArray(calls) || calls.length === 0) return [];
    return addressList(calls.map((pair) => (Array.isArray(pair) ? field(pair[0], 'to') : undefined)));
  }
  return null;
}

/** A log filter's `address`: one address or a list; absent, null or empty queries every contract. */
function logAddresses(filter: unknown): string[] {
  const address = field(filter, 'address');
  if (Array.isArray(address)) return address.length === 0 ? [] : addressList(address);
  return addressList([address]);
}

/** Every value as a lower-case address, or [] as soon as one is not an address. */
function addressList(values: readonly unknown[]): string[] {
  const out: string[] = [];
  for (const v of values) {
    if (typeof v !== 'string' || !ADDRESS.test(v)) return [];
    out.push(v.toLowerCase());
  }
  return out;
}

function field(value: unknown, name: string): unknown {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return undefined;
  return (value as Record<string, unknown>)[name];
}

/** Whether `text` is an address (for the allow-list's entries). */
export function isAddress(text: string): boolean {
  return ADDRESS.test(text);
}
