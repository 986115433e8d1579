import type { Item } from '../lib/compare.ts';
import type { BlockInfo, ChainContext, Hex, RpcTx } from './context.ts';

/**
 * Requests generated from a chain: every block and transaction read every way the method table
 * allows, traced by every tracer and trace type, re-run as calls on its parent block (plain, with
 * each way of pricing, with state and block overrides), plus logs, trace filters, state reads at
 * several blocks, fees and the constant methods. The order is fixed, so two runs send the same list.
 */

type Params = readonly unknown[];

export const TRACE_TYPE_SETS: readonly (readonly string[])[] = [
  ['trace'],
  ['stateDiff'],
  ['vmTrace'],
  ['trace', 'stateDiff'],
  ['trace', 'vmTrace'],
  ['stateDiff', 'vmTrace'],
  ['trace', 'stateDiff', 'vmTrace'],
];
const ALL_TRACE_TYPES = ['trace', 'stateDiff', 'vmTrace'];
/**
 * Per transaction, each trace type alone and all three; the pairs are replayed per block. A
 * vmTrace of a gas-burning loop runs to 25 MB, so every extra set costs seconds on such a chain.
 */
const TX_TRACE_TYPE_SETS: readonly (readonly string[])[] = [
  ['trace'],
  ['stateDiff'],
  ['vmTrace'],
  ALL_TRACE_TYPES,
];

/** geth trace configs; `undefined` sends no config at all (the struct logger's defaults). */
type TraceConfig = Record<string, unknown> | undefined;
const CALL_TRACER: TraceConfig = { tracer: 'callTracer' };
const CALL_TRACER_WITH_LOG: TraceConfig = { tracer: 'callTracer', tracerConfig: { withLog: true } };
const CALL_TRACER_TOP: TraceConfig = { tracer: 'callTracer', tracerConfig: { onlyTopCall: true } };
const PRESTATE: TraceConfig = { tracer: 'prestateTracer' };
const PRESTATE_DIFF: TraceConfig = { tracer: 'prestateTracer', tracerConfig: { diffMode: true } };

/** debug_traceBlockByNumber: the struct logger with its options, then every tracer and flag. */
const BLOCK_TRACE_CONFIGS: readonly TraceConfig[] = [
  undefined,
  { disableStack: true, disableStorage: true, enableReturnData: true },
  { enableMemory: true, limit: 50 },
  { limit: 5 },
  CALL_TRACER,
  CALL_TRACER_WITH_LOG,
  CALL_TRACER_TOP,
  PRESTATE,
  PRESTATE_DIFF,
  { tracer: 'noopTracer' },
];
/** debug_traceBlockByHash goes through the same tracers; a few suffice to see the hash lookup. */
const BLOCK_BY_HASH_CONFIGS: readonly TraceConfig[] = [undefined, CALL_TRACER_WITH_LOG, PRESTATE_DIFF];
/** debug_traceTransaction: each tracer (and the struct logger with memory, once). */
const TX_TRACE_CONFIGS: readonly TraceConfig[] = [
  undefined,
  { enableMemory: true, enableReturnData: true, limit: 30 },
  CALL_TRACER,
  CALL_TRACER_WITH_LOG,
  CALL_TRACER_TOP,
  PRESTATE,
  PRESTATE_DIFF,
];

const BIG_BALANCE: Hex = `0x${(10n ** 30n).toString(16)}`;
const ONE_WORD: Hex = `0x${'00'.repeat(31)}01`;
const SLOT_ZERO: Hex = `0x${'00'.repeat(32)}`;
const UNKNOWN_HASH: Hex = `0x${'11'.repeat(32)}`;
const FRESH_ADDRESS: Hex = `0x${'5a'.repeat(20)}`;

const hex = (n: number | bigint): Hex => `0x${n.toString(16)}`;

export class Builder {
  readonly items: Item[] = [];
  private id = 1;

  constructor(readonly chain: string) {}

  add(category: string, method: string, params?: Params, opts: { randomResult?: boolean } = {}): void {
    const fields: Record<string, unknown> = { jsonrpc: '2.0', id: this.id++, method };
    if (params !== undefined) fields.params = params;
    const item: Item = { chain: this.chain, category, method, body: JSON.stringify(fields) };
    if (opts.randomResult) item.randomResult = true;
    this.items.push(item);
  }
}

/** A mined transaction as a call: its sender, recipient, gas, value, input, access and authorization lists. */
export function asCall(tx: RpcTx): Record<string, unknown> {
  const call: Record<string, unknown> = { from: tx.from, gas: tx.gas, value: tx.value, input: tx.input };
  if (tx.to) call.to = tx.to;
  if (Array.isArray(tx.accessList) && tx.accessList.length > 0) call.accessList = tx.accessList;
  if (Array.isArray(tx.authorizationList)) {
    call.authorizationList = tx.authorizationList;
    call.type = '0x4';
  }
  return call;
}

function stateOverrides(tx: RpcTx): Record<string, unknown> {
  const o: Record<string, unknown> = { [tx.from]: { balance: BIG_BALANCE } };
  if (tx.to && tx.to !== tx.from) o[tx.to] = { stateDiff: { [SLOT_ZERO]: ONE_WORD } };
  return o;
}

function blockOverrides(block: BlockInfo): Record<string, unknown> {
  return {
    number: hex(block.number),
    time: hex(block.timestamp + 7n),
    gasLimit: '0x2faf080',
    baseFeePerGas: '0x0',
    feeRecipient: `0x${'c0'.repeat(20)}`,
    prevRandao: `0x${'00'.repeat(31)}2a`,
  };
}

export function generatedItems(chain: string, ctx: ChainContext): Item[] {
  const b = new Builder(chain);
  blockItems(b, ctx);
  txItems(b, ctx);
  callItems(b, ctx);
  logItems(b, ctx);
  traceFilterItems(b, ctx);
  stateItems(b, ctx);
  feeAndConstantItems(b, ctx);
  missingItems(b, ctx);
  if (ctx.signers.length === 0) readOnlyDevItems(b, ctx);
  return b.items;
}

function blockItems(b: Builder, ctx: ChainContext): void {
  for (const block of ctx.blocks) {
    const n = hex(block.number);
    const h = block.hash;
    for (const full of [false, true]) {
      b.add('blocks', 'eth_getBlockByNumber', [n, full]);
      b.add('blocks', 'eth_getBlockByHash', [h, full]);
    }
    b.add('blocks', 'eth_getBlockReceipts', [n]);
    b.add('blocks', 'eth_getBlockReceipts', [h]);
    b.add('blocks', 'eth_getBlockTransactionCountByNumber', [n]);
    b.add('blocks', 'eth_getBlockTransactionCountByHash', [h]);
    for (const m of ['debug_getRawHeader', 'debug_getRawBlock', 'debug_getRawReceipts']) {
      b.add('blocks', m, [n]);
      b.add('blocks', m, [h]);
    }
    b.add('block traces', 'trace_block', [n]);
    for (const types of TRACE_TYPE_SETS) b.add('block traces', 'trace_replayBlockTransactions', [n, types]);
    for (const config of BLOCK_TRACE_CONFIGS) {
      b.add('block traces', 'debug_traceBlockByNumber', config === undefined ? [n] : [n, config]);
    }
    for (const config of BLOCK_BY_HASH_CONFIGS) {
      b.add('block traces', 'debug_traceBlockByHash', config === undefined ? [h] : [h, config]);
    }
  }
  const mid = ctx.blocks[Math.floor(ctx.head / 2)];
  for (const tag of ['latest', 'earliest', 'pending', 'safe', 'finalized']) {
    b.add('blocks', 'eth_getBlockByNumber', [tag, false]);
    b.add('blocks', 'eth_getBlockReceipts', [tag]);
    b.add('block traces', 'trace_block', [tag]);
  }
  if (mid) {
    b.add('blocks', 'eth_getBlockReceipts', [{ blockHash: mid.hash }]);
    b.add('blocks', 'eth_getBlockReceipts', [{ blockNumber: hex(mid.number) }]);
    b.add('blocks', 'eth_getBlockByNumber', [mid.number, false]);
    b.add('blocks', 'eth_getBlockByNumber', [String(mid.number), false]);
    b.add('block traces', 'debug_traceBlockByNumber', ['latest', CALL_TRACER]);
  }
}

function txItems(b: Builder, ctx: ChainContext): void {
  for (const block of ctx.blocks) {
    for (const [i, tx] of block.txs.entries()) {
      const h = tx.hash;
      b.add('transactions', 'eth_getTransactionByHash', [h]);
      b.add('transactions', 'eth_getTransactionByBlockHashAndIndex', [block.hash, hex(i)]);
      b.add('transactions', 'eth_getTransactionByBlockNumberAndIndex', [hex(block.number), hex(i)]);
      b.add('transactions', 'eth_getTransactionReceipt', [h]);
      b.add('transactions', 'eth_getRawTransactionByHash', [h]);
      b.add('transactions', 'debug_getRawTransaction', [h]);
      b.add('tx traces', 'trace_transaction', [h]);
      for (const indices of [['0x0'], ['0x1'], ['0x0', '0x1'], [2]])
        b.add('tx traces', 'trace_get', [h, indices]);
      for (const types of TX_TRACE_TYPE_SETS) b.add('tx traces', 'trace_replayTransaction', [h, types]);
      // geth traces a transaction by replaying the block up to it, so in a big block the cost
      // grows with the index: past the first few, every tracer only for a sample (the block's
      // traces above cover each transaction with every tracer anyway).
      const everyTracer = block.txs.length <= BIG_BLOCK_TXS || sampled(i, block.txs.length);
      for (const config of everyTracer ? TX_TRACE_CONFIGS : [undefined]) {
        b.add('tx traces', 'debug_traceTransaction', config === undefined ? [h] : [h, config]);
      }
    }
    // One index past the end of each block.
    b.add('transactions', 'eth_getTransactionByBlockNumberAndIndex', [
      hex(block.number),
      hex(block.txs.length),
    ]);
  }
}

/** Blocks with more transactions than this have only a sample of them traced with every tracer. */
const BIG_BLOCK_TXS = 12;

/** The first four indices, the last, and one in eight of the rest. */
function sampled(index: number, count: number): boolean {
  return index < 4 || index === count - 1 || index % 8 === 0;
}

function callItems(b: Builder, ctx: ChainContext): void {
  for (const block of ctx.blocks) {
    if (block.number === 0 || block.txs.length === 0) continue;
    const parent = hex(block.number - 1);
    const calls = block.txs.map(asCall);
    b.add('calls', 'trace_callMany', [calls.map((c) => [c, ALL_TRACE_TYPES]), parent]);
    const first = block.txs[0] as RpcTx;
    b.add('calls', 'trace_callMany', [
      calls.map((c) => [c, ['trace']]),
      parent,
      { stateOverrides: stateOverrides(first), blockOverrides: blockOverrides(block) },
    ]);
    for (const tx of block.txs) {
      const c = asCall(tx);
      const so = stateOverrides(tx);
      const bo = blockOverrides(block);
      const gasPrice = { ...c, gasPrice: tx.gasPrice ?? '0x1' };
      const tipOnly = { ...c, maxPriorityFeePerGas: tx.maxPriorityFeePerGas ?? tx.gasPrice ?? '0x1' };
      const { gas: _gas, ...noGas } = c;
      b.add('calls', 'eth_call', [c, parent]);
      b.add('calls', 'eth_call', [gasPrice, parent]);
      b.add('calls', 'eth_call', [tipOnly, parent]);
      if (tx.maxFeePerGas !== undefined) {
        b.add('calls', 'eth_call', [
          { ...c, maxFeePerGas: tx.maxFeePerGas, maxPriorityFeePerGas: tx.maxPriorityFeePerGas },
          parent,
        ]);
      }
      b.add('calls', 'eth_call', [c, parent, so]);
      b.add('calls', 'eth_call', [c, parent, null, bo]);
      b.add('calls', 'eth_call', [c, hex(block.number)]);
      b.add('calls', 'eth_estimateGas', [c, parent]);
      b.add('calls', 'eth_estimateGas', [noGas, parent]);
      b.add('calls', 'eth_estimateGas', [gasPrice, parent]);
      b.add('calls', 'eth_estimateGas', [tipOnly, parent]);
      b.add('calls', 'eth_estimateGas', [c, parent, so]);
      b.add('calls', 'eth_estimateGas', [c, parent, null, bo]);
      b.add('calls', 'eth_createAccessList', [c, parent]);
      b.add('calls', 'eth_createAccessList', [gasPrice, parent]);
      b.add('calls', 'eth_createAccessList', [c, parent, so]);
      b.add('calls', 'debug_traceCall', [c, parent]);
      b.add('calls', 'debug_traceCall', [c, parent, CALL_TRACER_WITH_LOG]);
      b.add('calls', 'debug_traceCall', [c, parent, PRESTATE_DIFF]);
      b.add('calls', 'debug_traceCall', [
        c,
        parent,
        { tracer: 'callTracer', stateOverrides: so, blockOverrides: bo },
      ]);
      b.add('calls', 'trace_call', [c, ALL_TRACE_TYPES, parent]);
      b.add('calls', 'trace_call', [c, ['trace'], parent, so, bo]);
      const raw = ctx.raw.get(tx.hash);
      if (raw !== undefined) {
        b.add('calls', 'trace_rawTransaction', [raw, ALL_TRACE_TYPES, parent]);
        b.add('calls', 'trace_rawTransaction', [raw, ['trace']]);
      }
    }
  }
  b.add('calls', 'trace_callMany', [[], 'latest']);
}

/** At most `max` items of `list`, spread evenly over it. */
export function spread<T>(list: readonly T[], max: number): T[] {
  if (list.length <= max) return [...list];
  return Array.from({ length: max }, (_, i) => list[Math.floor((i * list.length) / max)] as T);
}

function logItems(b: Builder, ctx: ChainContext): void {
  const head = hex(ctx.head);
  const logs = ctx.blocks.flatMap((block) => block.receipts.flatMap((r) => r.logs));
  const addresses = [...new Set(logs.map((l) => l.address))];
  const topics = [0, 1, 2, 3].map((i) => [
    ...new Set(logs.flatMap((l) => (l.topics[i] === undefined ? [] : [l.topics[i] as Hex]))),
  ]);
  for (const block of ctx.blocks) {
    b.add('logs', 'eth_getLogs', [{ fromBlock: hex(block.number), toBlock: hex(block.number) }]);
    if (block.receipts.some((r) => r.logs.length > 0))
      b.add('logs', 'eth_getLogs', [{ blockHash: block.hash }]);
  }
  b.add('logs', 'eth_getLogs', [{}]);
  b.add('logs', 'eth_getLogs', [{ fromBlock: 'earliest', toBlock: 'latest' }]);
  b.add('logs', 'eth_getLogs', [{ fromBlock: '0x0', toBlock: head }]);
  b.add('logs', 'eth_getLogs', [{ fromBlock: hex(Math.floor(ctx.head / 2)), toBlock: 'pending' }]);
  b.add('logs', 'eth_getLogs', [{ fromBlock: head, toBlock: '0x0' }]);
  b.add('logs', 'eth_getLogs', [{ fromBlock: '0x0', toBlock: hex(ctx.head + 10) }]);
  const whole = { fromBlock: '0x0', toBlock: 'latest' };
  for (const a of spread(addresses, 30)) {
    b.add('logs', 'eth_getLogs', [{ ...whole, address: a }]);
    b.add('logs', 'eth_getLogs', [{ ...whole, address: [a, FRESH_ADDRESS] }]);
  }
  for (const [i, list] of topics.entries()) {
    for (const t of spread(list, 20)) {
      const position: (Hex | null)[] = Array.from({ length: i }, () => null);
      b.add('logs', 'eth_getLogs', [{ ...whole, topics: [...position, t] }]);
    }
    if (list.length >= 2) {
      const position: (Hex | null)[] = Array.from({ length: i }, () => null);
      b.add('logs', 'eth_getLogs', [{ ...whole, topics: [...position, spread(list, 3)] }]);
    }
  }
  const [a0] = addresses;
  const [t0] = topics[0] ?? [];
  if (a0 !== undefined && t0 !== undefined) {
    b.add('logs', 'eth_getLogs', [{ ...whole, address: a0, topics: [t0] }]);
    b.add('logs', 'eth_getLogs', [{ ...whole, address: a0, topics: [null, null, null, null] }]);
  }
  b.add('logs', 'eth_getLogs', [{ ...whole, topics: [UNKNOWN_HASH] }]);
  b.add('logs', 'eth_getLogs', [{ blockHash: UNKNOWN_HASH }]);
}

function traceFilterItems(b: Builder, ctx: ChainContext): void {
  const from = Math.max(0, ctx.head - 99);
  const range = { fromBlock: hex(from), toBlock: hex(ctx.head) };
  for (let start = 0; start <= ctx.head; start += 100) {
    b.add('trace_filter', 'trace_filter', [
      { fromBlock: hex(start), toBlock: hex(Math.min(ctx.head, start + 99)) },
    ]);
  }
  b.add('trace_filter', 'trace_filter', [{ fromBlock: 'earliest', toBlock: 'latest' }]);
  b.add('trace_filter', 'trace_filter', [{}]);
  for (const after of [0, 1, 5, 20, 100]) {
    for (const count of [1, 3, 10]) b.add('trace_filter', 'trace_filter', [{ ...range, after, count }]);
  }
  b.add('trace_filter', 'trace_filter', [{ ...range, after: '0x2', count: '0x4' }]);
  const addresses = spread(ctx.addresses, 40);
  for (const a of addresses) {
    b.add('trace_filter', 'trace_filter', [{ ...range, fromAddress: [a] }]);
    b.add('trace_filter', 'trace_filter', [{ ...range, toAddress: [a] }]);
  }
  for (let i = 0; i + 1 < Math.min(addresses.length, 20); i += 2) {
    const x = addresses[i] as Hex;
    const y = addresses[i + 1] as Hex;
    b.add('trace_filter', 'trace_filter', [
      { ...range, fromAddress: [x], toAddress: [y], mode: 'intersection' },
    ]);
    b.add('trace_filter', 'trace_filter', [{ ...range, fromAddress: [x, y], toAddress: [y], mode: 'union' }]);
    b.add('trace_filter', 'trace_filter', [
      { ...range, fromAddress: [x], toAddress: [y], after: 1, count: 2 },
    ]);
  }
  b.add('trace_filter', 'trace_filter', [{ fromBlock: hex(ctx.head), toBlock: '0x0' }]);
  b.add('trace_filter', 'trace_filter', [{ fromBlock: '0x0', toBlock: hex(ctx.head + 150) }]);
}

function stateItems(b: Builder, ctx: ChainContext): void {
  const h = ctx.head;
  const numbers = [
    ...new Set([0, 1, Math.floor(h / 4), Math.floor(h / 2), Math.floor((3 * h) / 4), h - 1, h]),
  ]
    .filter((n) => n >= 0 && n <= h)
    .map(hex);
  const mid = ctx.blocks[Math.floor(h / 2)] as BlockInfo;
  const tags = ['latest', 'earliest', 'pending', 'safe', 'finalized'];
  const objects = [
    { blockHash: mid.hash },
    { blockNumber: hex(mid.number) },
    { blockHash: mid.hash, requireCanonical: true },
  ];
  const addresses = [...spread(ctx.addresses, 40), FRESH_ADDRESS];
  for (const a of addresses) {
    for (const at of [...numbers, ...tags, ...objects]) b.add('state', 'eth_getBalance', [a, at]);
    for (const at of [...numbers, 'latest', 'pending']) b.add('state', 'eth_getTransactionCount', [a, at]);
    for (const at of [...numbers, 'latest']) b.add('state', 'eth_getCode', [a, at]);
    b.add('state', 'eth_getBalance', [a]);
    const slots = [SLOT_ZERO, ...spread(ctx.slots.get(a) ?? [], 4)];
    const unique = [...new Set(slots)];
    for (const slot of unique) {
      for (const at of [...numbers, 'latest']) b.add('state', 'eth_getStorageAt', [a, slot, at]);
    }
    b.add('state', 'eth_getStorageAt', [a, '0x0', 'latest']);
    for (const at of [hex(mid.number), hex(h), 'latest']) {
      b.add('state', 'eth_getProof', [a, unique, at]);
      b.add('state', 'eth_getStorageValues', [{ [a]: unique }, at]);
    }
    b.add('state', 'eth_getProof', [a, [], 'earliest']);
  }
  const several = Object.fromEntries(
    spread(ctx.addresses, 5).map((a) => [a, [SLOT_ZERO, ...spread(ctx.slots.get(a) ?? [], 2)]]),
  );
  b.add('state', 'eth_getStorageValues', [several, 'latest']);
  b.add('state', 'eth_getStorageValues', [several]);
}

function feeAndConstantItems(b: Builder, ctx: ChainContext): void {
  const mid = hex(Math.floor(ctx.head / 2));
  for (const count of ['0x1', '0x4', 20, '0x400']) {
    for (const newest of ['latest', mid, 'pending', 'earliest']) {
      b.add('fees & constants', 'eth_feeHistory', [count, newest, [10, 50, 90]]);
    }
  }
  b.add('fees & constants', 'eth_feeHistory', ['0x5', 'latest', []]);
  b.add('fees & constants', 'eth_feeHistory', ['0x5', 'latest']);
  b.add('fees & constants', 'eth_feeHistory', ['0x5', 'latest', [0, 25, 50, 75, 100]]);
  b.add('fees & constants', 'eth_feeHistory', ['0x0', 'latest', []]);
  for (const m of [
    'eth_gasPrice',
    'eth_maxPriorityFeePerGas',
    'eth_blobBaseFee',
    'eth_baseFee',
    'eth_blockNumber',
    'eth_chainId',
    'eth_syncing',
    'net_version',
    'web3_clientVersion',
    'eth_accounts',
    'txpool_status',
    'txpool_content',
  ]) {
    b.add('fees & constants', m, []);
  }
  b.add('fees & constants', 'txpool_contentFrom', [ctx.addresses[0] ?? FRESH_ADDRESS]);
  // Socket-only methods over HTTP.
  b.add('fees & constants', 'eth_subscribe', ['newHeads']);
  b.add('fees & constants', 'eth_unsubscribe', ['0x1']);
}

/** Blocks and transactions that do not exist, and indices past the end. */
function missingItems(b: Builder, ctx: ChainContext): void {
  for (const n of [hex(ctx.head + 1), hex(ctx.head + 1000)]) {
    for (const m of [
      'eth_getBlockByNumber',
      'eth_getBlockReceipts',
      'eth_getBlockTransactionCountByNumber',
      'debug_getRawBlock',
      'trace_block',
      'debug_traceBlockByNumber',
    ]) {
      b.add('missing', m, m === 'eth_getBlockByNumber' ? [n, false] : [n]);
    }
    b.add('missing', 'trace_replayBlockTransactions', [n, ['trace']]);
    b.add('missing', 'eth_getBalance', [FRESH_ADDRESS, n]);
    b.add('missing', 'eth_call', [{ to: FRESH_ADDRESS }, n]);
  }
  for (const m of [
    'eth_getBlockByHash',
    'eth_getBlockTransactionCountByHash',
    'debug_traceBlockByHash',
    'eth_getTransactionByHash',
    'eth_getTransactionReceipt',
    'eth_getRawTransactionByHash',
    'debug_getRawTransaction',
    'trace_transaction',
    'debug_traceTransaction',
  ]) {
    b.add('missing', m, m === 'eth_getBlockByHash' ? [UNKNOWN_HASH, false] : [UNKNOWN_HASH]);
  }
  b.add('missing', 'trace_get', [UNKNOWN_HASH, ['0x0']]);
  b.add('missing', 'trace_replayTransaction', [UNKNOWN_HASH, ['trace']]);
  b.add('missing', 'eth_getTransactionByBlockHashAndIndex', [UNKNOWN_HASH, '0x0']);
  b.add('missing', 'eth_getBlockReceipts', [{ blockHash: UNKNOWN_HASH }]);
}

/** Every dev method with well-formed parameters: an imported chain refuses them (read-only). */
function readOnlyDevItems(b: Builder, ctx: ChainContext): void {
  const a = ctx.addresses[0] ?? FRESH_ADDRESS;
  const firstTx = ctx.blocks.flatMap((block) => block.txs)[0];
  const raw = firstTx === undefined ? undefined : ctx.raw.get(firstTx.hash);
  const calls: Array<[string, Params]> = [
    ['evm_mine', []],
    ['evm_mine', [{ timestamp: 2_000_000_000, blocks: 1 }]],
    ['anvil_mine', [1]],
    ['hardhat_mine', []],
    ['evm_snapshot', []],
    ['anvil_snapshot', []],
    ['evm_revert', ['0x1']],
    ['anvil_revert', ['0x1']],
    ['evm_increaseTime', [10]],
    ['anvil_increaseTime', ['0xa']],
    ['evm_setNextBlockTimestamp', [2_000_000_000]],
    ['anvil_setNextBlockTimestamp', ['0x77359400']],
    ['anvil_setBalance', [a, '0x1']],
    ['hardhat_setBalance', [a, '0x1']],
    ['anvil_setNonce', [a, '0x1']],
    ['hardhat_setNonce', [a, 1]],
    ['anvil_setCode', [a, '0x00']],
    ['hardhat_setCode', [a, '0x00']],
    ['anvil_setStorageAt', [a, SLOT_ZERO, ONE_WORD]],
    ['hardhat_setStorageAt', [a, SLOT_ZERO, ONE_WORD]],
    ['eth_sendTransaction', [{ from: a, to: FRESH_ADDRESS, value: '0x1' }]],
    ['eth_sign', [a, '0xdeadbeef']],
    ['personal_sign', ['0xdeadbeef', a]],
    [
      'eth_signTypedData_v4',
      [a, { types: { EIP712Domain: [] }, primaryType: 'EIP712Domain', domain: {}, message: {} }],
    ],
  ];
  if (raw !== undefined) calls.push(['eth_sendRawTransaction', [raw]]);
  for (const [m, params] of calls) b.add('dev methods (read-only chain)', m, params);
}
