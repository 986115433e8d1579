import type { EVM } from '@ethereumjs/evm';
import { Address } from '@ethereumjs/util';
import type { GethTracerConfig, StructLoggerOptions } from '../../../../src/core/traceConfig.ts';
import type {
  AccountState,
  StateReader,
  TxContext,
  TxOutcome,
} from '../../../../src/exec/tracing/geth/types.ts';
import type { ExecutionTracer } from '../hooks.ts';

// The tracer types the src/evm tracers use, shared: the oracle differs in how it runs, not in what it reports.
export type { AccountState, GethTracerConfig, StateReader, StructLoggerOptions, TxContext, TxOutcome };

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
