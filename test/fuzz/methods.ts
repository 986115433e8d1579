import fc from 'fast-check';
import * as k from './kinds.ts';

/**
 * Every method of src/rpc/methods/index.ts with the kind of each parameter position, as
 * src/rpc/methods/<ns>/<method>.ts parses it. The suite checks that this table names exactly the
 * methods the table serves, so a new method is fuzzed from the day it is added.
 */

export interface ParamSpec {
  kind: k.Kind;
  optional?: true;
}

export interface MethodSpec {
  params: ParamSpec[];
  /** Codes a well-formed request may also get: an undecodable raw transaction is -32602 in Reth. */
  validAlsoCodes?: number[];
  /** Over HTTP the method answers -32601 whatever its params (eth_subscribe needs a socket). */
  socketOnly?: true;
  /** Well-formed parameter lists when they depend on each other (eth_subscribe's options). */
  validParams?: (ctx: k.FuzzContext) => fc.Arbitrary<unknown[]>;
  /** Malformed lists, with the position the malformation is at. */
  invalidParams?: (ctx: k.FuzzContext) => fc.Arbitrary<{ position: number; bad: k.Bad; params: unknown[] }>;
}

const req = (kind: k.Kind): ParamSpec => ({ kind });
const opt = (kind: k.Kind): ParamSpec => ({ kind, optional: true });

const none: MethodSpec = { params: [] };
const stateRead = (kind?: k.Kind): MethodSpec => ({
  params: [req(k.address), ...(kind ? [req(kind)] : []), opt(k.block)],
});
const callLike: MethodSpec = {
  params: [req(k.callObject), opt(k.block), opt(k.stateOverrides), opt(k.blockOverrides)],
};

// A range whose fromBlock is after its toBlock: -32602 in Reth (InvalidBlockRangeParams), -32000 in
// geth; either names the problem.
const RANGE_CODES = [-32602];
// A well-formed new filter past the filters one connection, key or server may hold (README, Limits).
const FILTER_LIMIT = -32005;

// Dev-method bounds: well-formed values stay small so the dev chain keeps working through the run
// (mining many blocks or moving time by years would be a load test, not a parameter test).
const MAX_MINED = 3;
const MAX_TIME_STEP = 86_400;
// 2033: after the dev chain's clock. A block timestamp is a uint64, so 2^64 must be refused; 2^40
// (year 36,812) is a valid timestamp past every scheduled fork of the dev chain, which has none ahead.
const MAX_TIMESTAMP = 2_000_000_000;
const TIME_PAST_U64: Array<[string, unknown]> = [['2^64 seconds', `0x${(2n ** 64n).toString(16)}`]];
// anvil takes a nonce or a balance as a hex string or a JSON integer; a nonce is a uint64 (EIP-2681).
const NONCE = k.devNumber(1000, [['nonce of 2^64', `0x${(2n ** 64n).toString(16)}`]]);
// The same for a balance, a uint256.
const BALANCE = k.devNumber(1_000_000, [
  ['balance of 2^256', `0x${(2n ** 256n).toString(16)}`],
  ['balance above 2^256', `0x${(2n ** 256n * 4096n + 7n).toString(16)}`],
]);

const subscribeLogs = (ctx: k.FuzzContext) => k.logFilter.valid(ctx).map((f): unknown[] => ['logs', f]);

const eth_subscribe: MethodSpec = {
  params: [req(k.opaqueId), opt(k.opaqueId)],
  socketOnly: true,
  validParams: (ctx) =>
    fc.oneof(
      fc.constant<unknown[]>(['newHeads']),
      subscribeLogs(ctx),
      fc.constant<unknown[]>(['logs']),
      fc.boolean().map((full): unknown[] => ['newPendingTransactions', full]),
    ),
  invalidParams: (ctx) =>
    fc.oneof(
      fc.constantFrom<unknown>(5, {}, [], true).map((name) => ({
        position: 0,
        bad: { label: 'subscription name not a string', value: name },
        params: [name],
      })),
      k.logFilter.invalid(ctx).map((bad) => ({ position: 1, bad, params: ['logs', bad.value] })),
      fc.constantFrom<unknown>('yes', 5, {}, []).map((v) => ({
        position: 1,
        bad: { label: 'newPendingTransactions option not a boolean', value: v },
        params: ['newPendingTransactions', v],
      })),
    ),
};

export const METHOD_SPECS: Record<string, MethodSpec> = {
  // blocks and transactions
  eth_getBlockByNumber: { params: [req(k.block), req(k.bool)] },
  eth_getBlockByHash: { params: [req(k.hash), req(k.bool)] },
  eth_getBlockTransactionCountByNumber: { params: [req(k.block)] },
  eth_getBlockTransactionCountByHash: { params: [req(k.hash)] },
  eth_getTransactionByHash: { params: [req(k.hash)] },
  eth_getTransactionByBlockNumberAndIndex: { params: [req(k.block), req(k.index)] },
  eth_getTransactionByBlockHashAndIndex: { params: [req(k.hash), req(k.index)] },
  eth_getTransactionReceipt: { params: [req(k.hash)] },
  eth_getRawTransactionByHash: { params: [req(k.hash)] },
  eth_getUncleCountByBlockHash: { params: [req(k.hash)] },
  eth_getUncleCountByBlockNumber: { params: [req(k.block)] },
  eth_getUncleByBlockHashAndIndex: { params: [req(k.hash), req(k.index)] },
  eth_getUncleByBlockNumberAndIndex: { params: [req(k.block), req(k.index)] },
  eth_getBlockReceipts: { params: [req(k.block)] },
  debug_chainConfig: none,
  debug_getRawHeader: { params: [req(k.debugBlock)] },
  debug_getRawBlock: { params: [req(k.debugBlock)] },
  debug_getRawReceipts: { params: [req(k.debugBlock)] },
  debug_getRawTransaction: { params: [req(k.hash)] },
  // state
  eth_getBalance: stateRead(),
  eth_getCode: stateRead(),
  eth_getTransactionCount: stateRead(),
  eth_getStorageAt: stateRead(k.storageKey),
  eth_getProof: stateRead(k.storageKeys),
  eth_getStorageValues: { params: [req(k.slotRequests), opt(k.block)] },
  // logs and fees
  eth_getLogs: { params: [req(k.logFilter)], validAlsoCodes: RANGE_CODES },
  eth_feeHistory: {
    params: [
      req(
        k.devNumber(20, [
          ['block count 2^64', '18446744073709551616'],
          ['block count above 64 bits in hex', `0x1${'0'.repeat(16)}`],
        ]),
      ),
      req(k.block),
      opt({
        valid: () =>
          fc
            .uniqueArray(fc.integer({ min: 0, max: 100 }), { maxLength: 3 })
            .map((a) => a.sort((x, y) => x - y)),
        invalid: () =>
          fc.constantFrom(
            { label: 'percentiles not a list', value: 'x' },
            { label: 'a percentile above 100', value: [101] },
            { label: 'percentiles decreasing', value: [50, 10] },
            { label: 'a percentile as a string', value: ['50'] },
          ),
      }),
    ],
  },
  eth_baseFee: none,
  eth_blobBaseFee: none,
  eth_gasPrice: none,
  eth_maxPriorityFeePerGas: none,
  // tracing
  trace_call: {
    params: [
      req(k.callObject),
      opt(k.traceTypes),
      opt(k.block),
      opt(k.stateOverrides),
      opt(k.blockOverrides),
    ],
  },
  trace_callMany: { params: [req(k.callManyCalls), opt(k.block), opt(k.callManyOptions)] },
  trace_rawTransaction: { params: [req(k.data), opt(k.traceTypes), opt(k.block)], validAlsoCodes: [-32602] },
  trace_replayTransaction: { params: [req(k.hash), req(k.traceTypes)] },
  trace_replayBlockTransactions: { params: [req(k.block), req(k.traceTypes)] },
  trace_transaction: { params: [req(k.hash)] },
  trace_block: { params: [req(k.block)] },
  trace_get: { params: [req(k.hash), req(k.traceIndices)] },
  trace_filter: { params: [req(k.traceFilter)], validAlsoCodes: RANGE_CODES },
  debug_traceTransaction: { params: [req(k.hash), opt(k.traceConfig)] },
  debug_traceBlockByNumber: { params: [req(k.debugBlock), opt(k.traceConfig)] },
  debug_traceBlockByHash: { params: [req(k.hash), opt(k.traceConfig)] },
  debug_traceCall: { params: [req(k.callObject), opt(k.block), opt(k.traceCallConfig)] },
  debug_traceCallMany: { params: [req(k.callBundles), opt(k.stateContext), opt(k.bundleTraceConfig)] },
  // calls
  eth_call: callLike,
  eth_estimateGas: callLike,
  eth_callMany: {
    params: [req(k.callBundles), opt(k.stateContext), opt(k.stateOverrides), opt(k.timeoutMs)],
  },
  eth_callBundle: { params: [req(k.signedBundle)], validAlsoCodes: [-32602] },
  eth_createAccessList: { params: [req(k.callObject), opt(k.block), opt(k.stateOverrides)] },
  // A call the simulated block cannot include is refused with the spec's codes: -380xx (nonce,
  // fees, funds, intrinsic gas, the block's gas) and -32602 for a tip above the fee cap.
  eth_simulateV1: {
    params: [req(k.simulateOptions), opt(k.block)],
    validAlsoCodes: [-38010, -38011, -38012, -38013, -38014, -38015, -38025, -32602],
  },
  // dev chain
  eth_accounts: none,
  eth_sendRawTransaction: { params: [req(k.data)], validAlsoCodes: [-32602] },
  eth_sendTransaction: { params: [req(k.sendCall)] },
  eth_sign: { params: [req(k.address), req(k.data)] },
  personal_sign: { params: [req(k.data), req(k.address)] },
  eth_signTypedData_v4: { params: [req(k.address), req(k.typedData)] },
  txpool_status: none,
  txpool_content: none,
  txpool_contentFrom: { params: [req(k.address)] },
  evm_mine: { params: [opt(k.mineOptions)] },
  anvil_mine: { params: [opt(k.devNumber(MAX_MINED)), opt(k.devNumber(60))] },
  hardhat_mine: { params: [opt(k.devNumber(MAX_MINED)), opt(k.devNumber(60))] },
  evm_snapshot: none,
  anvil_snapshot: none,
  evm_revert: { params: [req(k.devNumber(50))] },
  anvil_revert: { params: [req(k.devNumber(50))] },
  evm_increaseTime: { params: [req(k.devNumber(MAX_TIME_STEP, TIME_PAST_U64))] },
  anvil_increaseTime: { params: [req(k.devNumber(MAX_TIME_STEP, TIME_PAST_U64))] },
  // A timestamp in the past is an execution error; one past a uint64 must be refused.
  evm_setNextBlockTimestamp: { params: [req(k.devNumber(MAX_TIMESTAMP, TIME_PAST_U64))] },
  anvil_setNextBlockTimestamp: { params: [req(k.devNumber(MAX_TIMESTAMP, TIME_PAST_U64))] },
  anvil_setBalance: { params: [req(k.address), req(BALANCE)] },
  hardhat_setBalance: { params: [req(k.address), req(BALANCE)] },
  anvil_setNonce: { params: [req(k.address), req(NONCE)] },
  hardhat_setNonce: { params: [req(k.address), req(NONCE)] },
  anvil_setCode: { params: [req(k.address), req(k.data)] },
  hardhat_setCode: { params: [req(k.address), req(k.data)] },
  anvil_setStorageAt: { params: [req(k.address), req(k.hash), req(k.hash)] },
  hardhat_setStorageAt: { params: [req(k.address), req(k.hash), req(k.hash)] },
  // filters and subscriptions
  eth_subscribe,
  eth_unsubscribe: { params: [req(k.opaqueId)], socketOnly: true },
  eth_newFilter: { params: [req(k.logFilter)], validAlsoCodes: [...RANGE_CODES, FILTER_LIMIT] },
  eth_newBlockFilter: { params: [], validAlsoCodes: [FILTER_LIMIT] },
  eth_newPendingTransactionFilter: { params: [], validAlsoCodes: [FILTER_LIMIT] },
  eth_getFilterChanges: { params: [req(k.opaqueId)] },
  eth_getFilterLogs: { params: [req(k.opaqueId)] },
  eth_uninstallFilter: { params: [req(k.opaqueId)] },
  // the rest
  eth_blockNumber: none,
  eth_chainId: none,
  eth_config: none,
  eth_syncing: none,
  net_version: none,
  web3_clientVersion: none,
};
