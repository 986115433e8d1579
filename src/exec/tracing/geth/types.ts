import { metElsewhere } from '../../../core/caught.ts';
import type { GethTracerConfig, StructLoggerOptions } from '../../../core/traceConfig.ts';

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

export interface AccountState {
  balance: bigint;
  nonce: bigint;
  code: Uint8Array;
}

/**
 * Reads state as it is at the moment of the call, though the answer may come later (on src/evm it is
 * read at once from the world state: PrestateTracer.evmTracer). Tracers rely on it to read state
 * from the EVM's hooks as geth reads the StateDB inside its own.
 */
export interface StateReader {
  account(address: Uint8Array): Promise<AccountState>;
  storage(address: Uint8Array, slot: Uint8Array): Promise<Uint8Array>;
}

/** Swallows a rejection here (it is awaited, and reported, by `result`): no unhandled rejection if the replay fails first. */
export function settled<T>(promise: Promise<T>): Promise<T> {
  return metElsewhere(promise);
}
