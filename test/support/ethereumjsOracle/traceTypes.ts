import type { EVM } from '@ethereumjs/evm';
import type { TraceTypes } from '../../../src/core/call.ts';
import type { RenderedVmTrace } from '../../../src/exec/tracing/evmVmTrace.ts';
import { ParityCallTracer, type ParityTrace } from '../../../src/exec/tracing/parity.ts';
import { buildStateDiff, type StateDiff } from '../../../src/exec/tracing/stateDiff.ts';
import type { ExecutionTracer } from './hooks.ts';
import type { OverlayStateManager } from './overlayState.ts';
import { type VmTrace, VmTracer } from './vmTrace.ts';

/** What the Parity trace types record of one call or transaction. */
export interface ParityTraces {
  trace: ParityTrace[];
  stateDiff: StateDiff | null;
  /** A tree of objects on the ethereumjs path, JSON text on src/evm's. */
  vmTrace: VmTrace | RenderedVmTrace | null;
}

/**
 * The tracers a request's trace types ask for, on one call or one transaction: the one assembly of
 * `trace`, `stateDiff` and `vmTrace` for trace_call* and the replays. Made just before the
 * execution (the state diff counts from then); `detach` must run after it whatever happened, so a
 * reused EVM runs untouched; `finish` gives the result.
 */
export class ParityTracers {
  private readonly parity: ParityCallTracer | null;
  private readonly vm: VmTracer | null;
  private readonly mark: number;

  constructor(
    private readonly types: TraceTypes,
    evm: EVM,
    private readonly state: OverlayStateManager,
  ) {
    this.parity = types.trace ? new ParityCallTracer() : null;
    this.vm = types.vmTrace ? new VmTracer(evm) : null;
    this.mark = state.mark();
  }

  /** The tracers to hand the trace hooks (with any others to run beside them). */
  tracers(): Array<ExecutionTracer | null> {
    return [this.parity, this.vm];
  }

  detach(): void {
    this.vm?.detach();
  }

  async finish(): Promise<ParityTraces> {
    return {
      trace: this.parity?.traces() ?? [],
      stateDiff: this.types.stateDiff ? buildStateDiff(await this.state.changesSince(this.mark)) : null,
      vmTrace: this.vm?.result() ?? null,
    };
  }
}
