import type { RenderedVmTrace } from './evmVmTrace.ts';
import type { ParityTrace } from './parity.ts';
import type { StateDiff } from './stateDiff.ts';

/** What the Parity trace types record of one call or transaction. */
export interface ParityTraces {
  trace: ParityTrace[];
  stateDiff: StateDiff | null;
  /** Rendered as JSON text as the EVM runs (src/exec/tracing/evmVmTrace.ts). */
  vmTrace: RenderedVmTrace | null;
}
