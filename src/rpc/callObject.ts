import type { BlockOverrides, CallRequest, StateOverrides, TraceTypes } from '../core/call.ts';
import { address, data, field, hash, ParamProblem, quantity, quoted, uint64 } from './params.ts';

/**
 * A JSON call object (eth_call, trace_call, trace_callMany) → CallRequest. Accepts both `data` and
 * `input`; both present and different, or `gasPrice` mixed with EIP-1559 fee fields, is an error.
 */
export function callObject(value: unknown): CallRequest {
  const o = object(value, 'call object');
  const call: CallRequest = {};
  if (o.from !== undefined && o.from !== null) call.from = field('from', () => address(o.from));
  if (o.to !== undefined) call.to = o.to === null ? null : field('to', () => address(o.to));
  for (const name of [
    'gasPrice',
    'maxFeePerGas',
    'maxPriorityFeePerGas',
    'value',
    'maxFeePerBlobGas',
  ] as const) {
    const v = o[name];
    if (v !== undefined && v !== null) call[name] = field(name, () => quantity(v));
  }
  // geth types these as hexutil.Uint64: 2^64 or more is a bad parameter, not a call to run.
  for (const name of ['gas', 'nonce'] as const) {
    const v = o[name];
    if (v !== undefined && v !== null) call[name] = field(name, () => uint64(v));
  }
  if (
    call.gasPrice !== undefined &&
    (call.maxFeePerGas !== undefined || call.maxPriorityFeePerGas !== undefined)
  ) {
    throw new ParamProblem('both gasPrice and (maxFeePerGas or maxPriorityFeePerGas) specified');
  }
  const input = o.input ?? undefined;
  const calldata = o.data ?? undefined;
  if (input !== undefined && input !== null) call.data = field('input', () => data(input));
  if (calldata !== undefined && calldata !== null) {
    const fromData = field('data', () => data(calldata));
    if (call.data && Buffer.compare(Buffer.from(call.data), Buffer.from(fromData)) !== 0) {
      throw new ParamProblem(
        'both "data" and "input" are set and not equal. Please use "input" to pass transaction call data',
      );
    }
    call.data = fromData;
  }
  if (o.type !== undefined && o.type !== null) {
    const type = field('type', () => uint64(o.type));
    if (type > 4n) throw new ParamProblem(`unsupported transaction type ${type}`);
    call.type = Number(type);
  }
  if (o.accessList !== undefined && o.accessList !== null) {
    call.accessList = array(o.accessList, 'accessList').map((entry, i) => {
      const e = object(entry, `accessList[${i}]`);
      return {
        address: field(`accessList[${i}].address`, () => address(e.address)),
        storageKeys: array(e.storageKeys ?? [], `accessList[${i}].storageKeys`).map((k, j) =>
          field(`accessList[${i}].storageKeys[${j}]`, () => hash(k)),
        ),
      };
    });
  }
  if (o.authorizationList !== undefined && o.authorizationList !== null) {
    call.authorizationList = array(o.authorizationList, 'authorizationList').map((entry, i) => {
      const a = object(entry, `authorizationList[${i}]`);
      const q = (name: string, v: unknown) => field(`authorizationList[${i}].${name}`, () => quantity(v));
      return {
        chainId: q('chainId', a.chainId),
        address: field(`authorizationList[${i}].address`, () => address(a.address)),
        nonce: q('nonce', a.nonce),
        yParity: q('yParity', a.yParity ?? a.v),
        r: q('r', a.r),
        s: q('s', a.s),
      };
    });
  }
  if (o.blobVersionedHashes !== undefined && o.blobVersionedHashes !== null) {
    call.blobVersionedHashes = array(o.blobVersionedHashes, 'blobVersionedHashes').map((h, i) =>
      field(`blobVersionedHashes[${i}]`, () => hash(h)),
    );
  }
  return call;
}

const TRACE_TYPES = new Set(['trace', 'stateDiff', 'vmTrace']);

/** Omitted, null or [] → only `output`; an unknown name is an error naming it. */
export function traceTypes(value: unknown): TraceTypes {
  if (value === undefined || value === null) return { trace: false, stateDiff: false, vmTrace: false };
  const names = array(value, 'trace types');
  for (const name of names) {
    if (typeof name !== 'string' || !TRACE_TYPES.has(name)) {
      throw new ParamProblem(
        `unrecognized trace type: ${typeof name === 'string' && name.length <= 80 ? name : quoted(name)}`,
      );
    }
  }
  return {
    trace: names.includes('trace'),
    stateDiff: names.includes('stateDiff'),
    vmTrace: names.includes('vmTrace'),
  };
}

/** geth's state override object: address → {balance, nonce, code, state | stateDiff}. */
export function stateOverrides(value: unknown): StateOverrides {
  const o = object(value, 'state overrides');
  return Object.entries(o).map(([key, raw]) => {
    const where = `state override ${key}`;
    const a = object(raw, where);
    if (a.state !== undefined && a.state !== null && a.stateDiff !== undefined && a.stateDiff !== null) {
      throw new ParamProblem(`${where}: has both 'state' and 'stateDiff'`);
    }
    const slots = (v: unknown, name: string) =>
      Object.entries(object(v, `${where}.${name}`)).map(([slot, val]): [Uint8Array, Uint8Array] => [
        field(`${where}.${name} key`, () => hash(slot)),
        field(`${where}.${name}[${slot}]`, () => hash(val)),
      ]);
    return {
      address: field(where, () => address(key)),
      override: {
        ...(a.balance !== undefined && a.balance !== null
          ? { balance: field(`${where}.balance`, () => quantity(a.balance)) }
          : {}),
        ...(a.nonce !== undefined && a.nonce !== null
          ? { nonce: field(`${where}.nonce`, () => uint64(a.nonce)) }
          : {}),
        ...(a.code !== undefined && a.code !== null
          ? { code: field(`${where}.code`, () => data(a.code)) }
          : {}),
        ...(a.state !== undefined && a.state !== null ? { state: slots(a.state, 'state') } : {}),
        ...(a.stateDiff !== undefined && a.stateDiff !== null
          ? { stateDiff: slots(a.stateDiff, 'stateDiff') }
          : {}),
        ...(a.movePrecompileToAddress !== undefined && a.movePrecompileToAddress !== null
          ? {
              movePrecompileToAddress: field(`${where}.movePrecompileToAddress`, () =>
                address(a.movePrecompileToAddress),
              ),
            }
          : {}),
      },
    };
  });
}

/**
 * The other names Erigon's and Reth's bundle overrides (eth_callMany's, debug_traceCallMany's
 * `blockOverride`) give geth's fields.
 */
const BUNDLE_ALIASES: Readonly<Record<string, string>> = {
  blockNumber: 'number',
  timestamp: 'time',
  coinbase: 'feeRecipient',
  baseFee: 'baseFeePerGas',
  random: 'prevRandao',
};

/**
 * A bundle's `blockOverride`: geth's block override object under either name of each field, with
 * `difficulty` and `blockHash` (block number → the hash BLOCKHASH answers) besides.
 */
export function bundleBlockOverrides(value: unknown): BlockOverrides {
  const o: Record<string, unknown> = { ...object(value, 'block overrides') };
  for (const [alias, name] of Object.entries(BUNDLE_ALIASES)) {
    if (o[alias] === undefined || o[alias] === null) continue;
    if (o[name] !== undefined && o[name] !== null) throw new ParamProblem(`both ${alias} and ${name} given`);
    o[name] = o[alias];
    delete o[alias];
  }
  const out = blockOverrides(o);
  if (o.difficulty !== undefined && o.difficulty !== null)
    out.difficulty = field('difficulty', () => quantity(o.difficulty));
  if (o.blockHash !== undefined && o.blockHash !== null) {
    out.blockHashes = Object.entries(object(o.blockHash, 'blockHash')).map(([key, h]) => {
      const number = field(`blockHash key ${quoted(key)}`, () =>
        /^[0-9]{1,20}$/.test(key) ? BigInt(key) : uint64(key),
      );
      return [number, field(`blockHash[${key}]`, () => hash(h))];
    });
  }
  return out;
}

/** geth's block override object. */
export function blockOverrides(value: unknown): BlockOverrides {
  const o = object(value, 'block overrides');
  const out: BlockOverrides = {};
  // geth types these as hexutil.Big, and time and gasLimit as hexutil.Uint64.
  for (const name of ['number', 'baseFeePerGas', 'blobBaseFee'] as const) {
    if (o[name] !== undefined && o[name] !== null) out[name] = field(name, () => quantity(o[name]));
  }
  for (const name of ['time', 'gasLimit'] as const) {
    if (o[name] !== undefined && o[name] !== null) out[name] = field(name, () => uint64(o[name]));
  }
  if (o.feeRecipient !== undefined && o.feeRecipient !== null)
    out.feeRecipient = field('feeRecipient', () => address(o.feeRecipient));
  if (o.prevRandao !== undefined && o.prevRandao !== null)
    out.prevRandao = field('prevRandao', () => hash(o.prevRandao));
  return out;
}

function object(value: unknown, what: string): Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw new ParamProblem(`${what} must be an object`);
  return value as Record<string, unknown>;
}

function array(value: unknown, what: string): unknown[] {
  if (!Array.isArray(value)) throw new ParamProblem(`${what} must be an array`);
  return value;
}
