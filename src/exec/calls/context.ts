import type { BlockHeader } from '@ethereumjs/block';
import type { ChainReader } from '../../chain/reader.ts';
import type { CallLimits } from '../../config/limits.ts';
import type { CallRequest } from '../../core/call.ts';
import type { OpListener, SimulatedCall } from '../sessionTypes.ts';

/**
 * What geth's call methods need of a session: the state after one block, and calls run on it under
 * geth's rules. EvmCallSession offers it (and the tests' oracle, test/support/ethereumjsOracle/session.ts).
 */
export interface CallRunner {
  readonly baseFee: bigint | undefined;
  account(address: Uint8Array): Promise<{ balance: bigint; nonce: bigint; code: Uint8Array }>;
  simulate(
    call: CallRequest,
    index: number,
    tracer: null,
    options: { dialect: 'geth'; isolated?: boolean; onOp?: OpListener },
  ): Promise<SimulatedCall>;
  /** The fork's precompiles, by address. */
  precompileAddresses(): Uint8Array[];
}

/** What geth's call methods run with: the chain, the limits, the block and a session on its state. */
export interface CallContext<Session extends CallRunner = CallRunner> {
  chain: ChainReader;
  limits: CallLimits;
  header: BlockHeader;
  session: Session;
}
