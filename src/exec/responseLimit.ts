// The answer-size bound as the tracers see it. A worker runs one job at a time, so the bound of the
// job running is module state: the pool's worker sets it before each job (src/exec/pool/worker.ts),
// and the tracers whose output grows with the work (vmTrace and geth's struct logger per opcode,
// Parity traces and callTracer per frame) charge what they record. Past the bound the trace stops
// at once with OutputLimitExceeded, instead of growing a tree of hundreds of megabytes only to be
// refused once rendered; the pool's worker turns it into ResponseTooLarge, so nothing here knows wire codes.
// Charges are lower estimates of the rendered JSON: the exact check is made on the rendered answer.
// Outside a worker (tests, the in-process runner) there is no bound.

/** A job's output passed its bound; the job stops. */
export class OutputLimitExceeded extends Error {
  override name = 'OutputLimitExceeded';
  constructor(readonly limit: number) {
    super(`output over ${limit} bytes`);
  }
}

let limit = Number.POSITIVE_INFINITY;
let used = 0;

/** Starts a job's budget: `bytes` of output, or none. */
export function limitOutput(bytes: number | undefined): void {
  limit = bytes ?? Number.POSITIVE_INFINITY;
  used = 0;
}

/** Counts `bytes` of output recorded; throws OutputLimitExceeded once the job's total passes its bound. */
export function chargeOutput(bytes: number): void {
  used += bytes;
  if (used > limit) throw new OutputLimitExceeded(limit);
}
