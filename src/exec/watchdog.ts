import type { StepTracer, StepView } from '../evm/hooks.ts';

// A call run on the thread that answers requests (src/exec/client.ts InlineCallsClient) must not
// hold that thread for long: the watchdog stops it once its time is up, or before an op that could
// take long by itself, and the call runs again on a worker thread from the start. The EVM has no
// clock of its own: the watchdog listens to its steps.

/** The run was stopped by its watchdog; nothing of it counts (src/evm/state.ts drops the transaction). */
export class Interrupted extends Error {
  constructor() {
    super('interrupted: the call runs on a worker instead');
    this.name = 'Interrupted';
  }
}

/** Bytes one op may hash, copy or log before the call is left to a worker (about 50 µs of work). */
const HEAVY_BYTES = 16_384n;
/** Gas a call to a precompile may hand on before it is left to a worker (a pairing check of 2). */
const HEAVY_PRECOMPILE_GAS = 100_000n;
/** The clock is read every this many steps. */
const CLOCK_EVERY = 64;

/** Where an op finds its size (from the top of the stack), for the ops whose time grows with it. */
const SIZE_AT = new Int8Array(256);
SIZE_AT[0x20] = 2; // KECCAK256 offset size
SIZE_AT[0x37] = 3; // CALLDATACOPY dest offset size
SIZE_AT[0x39] = 3; // CODECOPY
SIZE_AT[0x3c] = 4; // EXTCODECOPY address dest offset size
SIZE_AT[0x3e] = 3; // RETURNDATACOPY
SIZE_AT[0x5e] = 3; // MCOPY dest src size
for (let op = 0xa0; op <= 0xa4; op++) SIZE_AT[op] = 2; // LOGn offset size
const CALLS = new Set([0xf1, 0xf2, 0xf4, 0xfa]);
const LAST_PRECOMPILE = 0xffffn;

export class Watchdog implements StepTracer {
  private steps = 0;

  /** `deadline` in performance.now() milliseconds. */
  constructor(private readonly deadline: number) {}

  step(view: StepView): void {
    const op = view.opcode;
    const sizeAt = SIZE_AT[op] as number;
    if (sizeAt !== 0 && view.sp >= sizeAt && (view.stack[view.sp - sizeAt] as bigint) > HEAVY_BYTES)
      throw new Interrupted();
    if (
      CALLS.has(op) &&
      view.sp >= 2 &&
      (view.stack[view.sp - 2] as bigint) <= LAST_PRECOMPILE &&
      (view.stack[view.sp - 1] as bigint) > HEAVY_PRECOMPILE_GAS
    )
      throw new Interrupted();
    if (++this.steps % CLOCK_EVERY === 0 && performance.now() > this.deadline) throw new Interrupted();
  }
}
