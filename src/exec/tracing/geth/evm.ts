import type { ForkRules } from '../../../evm/forks.ts';
import type { EvmTracer } from '../../../evm/hooks.ts';
import type { WorldState } from '../../../evm/state.ts';
import { addressBytes } from '../../../evm/words.ts';
import { adaptTracer } from '../evmAdapter.ts';
import { CallTracer } from './callTracer.ts';
import { EvmStructLogger } from './evmStructLogger.ts';
import { PrestateTracer } from './prestateTracer.ts';
import type { GethTracerConfig, TxContext, TxOutcome } from './types.ts';

/**
 * One geth tracer on one transaction run by the EVM of src/evm. Made as the transaction starts (a
 * prestateTracer reads the accounts geth's OnTxStart reads then); `finish` right after it, before
 * the state moves on (geth's OnTxEnd); `result` once the receipt is known.
 */
export interface EvmGethTracer {
  /** The EVM's hooks it listens to; null for none. */
  readonly tracer: EvmTracer | null;
  finish(): void;
  result(outcome: TxOutcome): Promise<unknown>;
}

/** The tracer a debug_trace* request names, for one transaction on src/evm. */
export function createEvmGethTracer(
  config: GethTracerConfig,
  tx: TxContext,
  world: WorldState,
  rules: ForkRules,
): EvmGethTracer {
  switch (config.tracer) {
    case 'structLogger': {
      const logger = new EvmStructLogger(config.options, world, rules);
      return {
        tracer: logger.tracer,
        finish() {},
        result: async (outcome) => logger.result(outcome),
      };
    }
    case 'callTracer': {
      const calls = new CallTracer(tx, config);
      const tracer = adaptTracer(calls, world);
      if (config.withLog)
        tracer.log = (address, topics, data) => calls.log(addressBytes(address), topics, data);
      return { tracer, finish() {}, result: (outcome) => calls.result(outcome) };
    }
    case 'prestateTracer': {
      const prestate = new PrestateTracer(tx, config);
      return {
        tracer: prestate.evmTracer(world, rules),
        finish: () => prestate.finish(),
        result: () => prestate.result(),
      };
    }
    case 'noopTracer':
      return { tracer: null, finish() {}, result: async () => ({}) };
  }
}
