import type { EVM } from '@ethereumjs/evm';
import { Address } from '@ethereumjs/util';
import type { GethTracerConfig, StructLoggerOptions } from '../../../../src/core/traceConfig.ts';
import type { ExecutionTracer } from '../hooks.ts';

export type { GethTracerConfig, StructLoggerOptions };

/** What geth knows of a transaction when it starts tracing it (OnTxStart) and ends it (OnTxEnd). */
export interface TxContext {
  from: Uint8Array;
  /** The recipient, or for a creation the address the transaction creates. */
  to: Uint8Array;
  creation: boolean;
  value: bigint;
  gasLimit: bigint;
  coinbase: Uint8Array;
  /** EIP-7702 authorities the transaction names (recovered; invalid ones left out). */
  authorities: Uint8Array[];
}

export interface TxOutcome {
  /** Gas the receipt says the transaction used (refunds and the EIP-7623 floor applied). */
  gasUsed: bigint;
}

/**
 * One geth tracer on one transaction. It sees frames through the trace hooks; `attach` connects what
 * else it needs on the EVM (step listener, wrapped opcodes) and `detach` undoes it, so a reused EVM
 * runs untouched afterwards. `detach` must be called right after the transaction, before the state
 * moves on: tracers that report state read it then. `result` formats once the receipt is known.
 */
export interface GethTracer extends ExecutionTracer {
  attach(evm: EVM): void;
  detach(): void;
  result(outcome: TxOutcome): Promise<unknown>;
}

export interface AccountState {
  balance: bigint;
  nonce: bigint;
  code: Uint8Array;
}

/**
 * Reads state as it is at the moment of the call, though the answer comes later. This holds for the
 * overlay state (../overlayState.ts) the EVMs here run on: a read of an account or slot the
 * overlay holds is taken before its first `await`, and anything else comes from the flat history of
 * the parent block, which never changes. Tracers rely on it to read state from synchronous EVM
 * events without stalling the EVM (geth reads the StateDB inside its hooks).
 */
export interface StateReader {
  account(address: Uint8Array): Promise<AccountState>;
  storage(address: Uint8Array, slot: Uint8Array): Promise<Uint8Array>;
}

interface StateLike {
  getAccount(address: Address): Promise<{ balance: bigint; nonce: bigint } | undefined>;
  getCode(address: Address): Promise<Uint8Array>;
  getStorage(address: Address, slot: Uint8Array): Promise<Uint8Array>;
}

export function stateReader(evm: EVM): StateReader {
  const state = evm.stateManager as unknown as StateLike;
  return {
    account(address) {
      const at = new Address(address);
      const account = state.getAccount(at);
      const code = state.getCode(at);
      return Promise.all([account, code]).then(([a, c]) => ({
        balance: a?.balance ?? 0n,
        nonce: a?.nonce ?? 0n,
        code: a ? c : new Uint8Array(),
      }));
    },
    storage: (address, slot) => state.getStorage(new Address(address), slot),
  };
}

/** Swallows a rejection here (it is awaited, and reported, by `result`): no unhandled rejection if the replay fails first. */
export function settled<T>(promise: Promise<T>): Promise<T> {
  promise.catch(() => {});
  return promise;
}
