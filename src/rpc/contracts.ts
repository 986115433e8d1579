import { RLP } from '@ethereumjs/rlp';

/**
 * Which contract addresses a call queries, for a key's contract allow-list (src/transport/access/):
 * method knowledge, so it lives beside the methods and not in the transport. Pure.
 *
 * The methods are those Infura checks against its contract allow-list (eth_call, eth_estimateGas,
 * eth_getLogs, eth_getBalance, eth_getCode, eth_getStorageAt, eth_getTransactionCount), plus the
 * other methods that run a call as eth_call does (eth_createAccessList, trace_call, trace_callMany,
 * eth_simulateV1, debug_traceCall, eth_callMany, debug_traceCallMany, eth_callBundle). A call's state
 * overrides count too: each overridden account is queried, and an
 * override that replaces code (or moves a precompile) makes the call run code of the client's own,
 * which can read any account, so no list allows it.
 */

/** Methods whose first parameter is the account queried. */
const ACCOUNT_FIRST = new Set([
  'eth_getBalance',
  'eth_getCode',
  'eth_getStorageAt',
  'eth_getTransactionCount',
]);
/** Methods whose first parameter is a call object, whose `to` is the contract run. */
const CALL_FIRST = new Set([
  'eth_call',
  'eth_estimateGas',
  'eth_createAccessList',
  'trace_call',
  'debug_traceCall',
]);

/**
 * Where each method that runs calls takes geth's state overrides: eth_call & co. as the third
 * parameter, trace_call as the fourth, trace_callMany and debug_traceCall inside their options.
 */
const OVERRIDES_OF: Readonly<Record<string, (params: readonly unknown[]) => unknown>> = {
  eth_call: (p) => p[2],
  eth_estimateGas: (p) => p[2],
  eth_createAccessList: (p) => p[2],
  trace_call: (p) => p[3],
  trace_callMany: (p) => field(p[2], 'stateOverrides'),
  eth_simulateV1: (p) => simulatedOverrides(p[0]),
  debug_traceCall: (p) => field(p[2], 'stateOverrides'),
  eth_callMany: (p) => p[2],
  debug_traceCallMany: (p) => field(p[2], 'stateOverrides'),
};

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
  if (method === 'eth_getLogs') return logAddresses(list[0]);
  let targets: string[];
  if (CALL_FIRST.has(method)) targets = addressList([field(list[0], 'to')]);
  else if (method === 'trace_callMany') {
    const calls = list[0];
    if (!Array.isArray(calls) || calls.length === 0) return [];
    targets = addressList(calls.map((pair) => (Array.isArray(pair) ? field(pair[0], 'to') : undefined)));
  } else if (method === 'eth_simulateV1') {
    const calls = simulatedBlocks(list[0]).flatMap((block) => {
      const c = field(block, 'calls');
      return Array.isArray(c) ? c : [];
    });
    if (calls.length === 0) return [];
    targets = addressList(calls.map((call) => field(call, 'to')));
  } else if (method === 'eth_callMany' || method === 'debug_traceCallMany') {
    targets = bundleTargets(list[0]);
  } else if (method === 'eth_callBundle') {
    targets = signedTargets(field(list[0], 'txs'));
  } else return null;
  const overridden = overriddenAccounts(OVERRIDES_OF[method]?.(list));
  if (targets.length === 0 || overridden === null) return [];
  return [...targets, ...overridden];
}

/** Every call's `to` in Erigon's and Reth's bundles; [] when one names none (or no call is given). */
function bundleTargets(bundles: unknown): string[] {
  if (!Array.isArray(bundles)) return [];
  const calls = bundles.flatMap((bundle) => {
    const list = field(bundle, 'transactions');
    return Array.isArray(list) ? list : [undefined];
  });
  if (calls.length === 0) return [];
  return addressList(calls.map((call) => field(call, 'to')));
}

/**
 * Every signed transaction's recipient (eth_callBundle), read from its RLP without checking it (its
 * chain id, its signature: the method refuses a bad one before anything runs); [] when one creates
 * a contract or does not decode.
 */
function signedTargets(txs: unknown): string[] {
  if (!Array.isArray(txs) || txs.length === 0) return [];
  const out: string[] = [];
  for (const raw of txs) {
    const to = typeof raw === 'string' ? recipient(raw) : null;
    if (to === null) return [];
    out.push(to);
  }
  return out;
}

/** Where `to` sits in each transaction type's field list (legacy, 2930, 1559, 4844, 7702). */
const TO_FIELD: readonly number[] = [3, 4, 5, 5, 5];

function recipient(raw: string): string | null {
  if (!/^0[xX]([0-9a-fA-F]{2})+$/.test(raw)) return null;
  const bytes = Buffer.from(raw.slice(2), 'hex');
  const type = (bytes[0] ?? 0) < 0x80 ? (bytes[0] ?? 0) : 0;
  let fields: unknown;
  try {
    fields = RLP.decode(type === 0 ? bytes : bytes.subarray(1));
  } catch {
    // Not RLP at all: names nothing a list could allow.
    return null;
  }
  // A blob transaction as sent carries its blobs: [tx, blobs, commitments, proofs].
  if (type === 3 && Array.isArray(fields) && Array.isArray(fields[0])) fields = fields[0];
  const index = TO_FIELD[type];
  const to = index === undefined || !Array.isArray(fields) ? undefined : fields[index];
  return to instanceof Uint8Array && to.length === 20 ? `0x${Buffer.from(to).toString('hex')}` : null;
}

/**
 * The accounts a state override object touches, lower-case; null when it sets code (`code`, or
 * `movePrecompileToAddress`, which puts a precompile's code at another address), or names an account
 * that is not an address. Absent overrides touch nothing; a value that is not an object is refused
 * by the method's parameter parser before anything runs, so it touches nothing either.
 */
function overriddenAccounts(overrides: unknown): string[] | null {
  if (typeof overrides !== 'object' || overrides === null || Array.isArray(overrides)) return [];
  const touched: string[] = [];
  for (const [account, override] of Object.entries(overrides)) {
    if (!ADDRESS.test(account)) return null;
    if (present(field(override, 'code')) || present(field(override, 'movePrecompileToAddress'))) return null;
    touched.push(account.toLowerCase());
  }
  return touched;
}

/** eth_simulateV1's blocks ([] when its options are not an object with a list of them). */
function simulatedBlocks(options: unknown): unknown[] {
  const blocks = field(options, 'blockStateCalls');
  return Array.isArray(blocks) ? blocks : [];
}

/**
 * eth_simulateV1's state overrides, every block's merged into one object of accounts; a block's that
 * is not an object makes the whole request refused (an account that is not an address).
 */
function simulatedOverrides(options: unknown): unknown {
  const merged: Record<string, unknown> = {};
  for (const block of simulatedBlocks(options)) {
    const overrides = field(block, 'stateOverrides');
    if (overrides === undefined || overrides === null) continue;
    if (typeof overrides !== 'object' || Array.isArray(overrides)) return { '': {} };
    for (const [account, override] of Object.entries(overrides)) {
      // An account named twice keeps a code override of either block.
      const earlier = merged[account];
      merged[account] =
        present(field(earlier, 'code')) || present(field(earlier, 'movePrecompileToAddress'))
          ? earlier
          : override;
    }
  }
  return merged;
}

/** Whether an override field is given (geth reads null as absent). */
function present(value: unknown): boolean {
  return value !== undefined && value !== null;
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
