// The answer-size bound as the tracers see it. A worker runs one job at a time, so the bound of the
// job running is module state: the pool's worker sets it before each job (src/exec/pool/worker.ts)
// and the tracers whose output grows with every opcode (vmTrace, geth's struct logger) charge what
// they record. Past the bound the trace stops at once with ResponseTooLarge, instead of growing a
// tree of hundreds of megabytes only to be refused once rendered. Charges are lower estimates of
// the rendered JSON: the exact check is made on the rendered answer. Outside a worker (tests, the
// in-process runner) there is no bound.
import { ResponseTooLarge } from '../rpc/errors.ts';

let limit = Number.POSITIVE_INFINITY;
let used = 0;

/** Starts a job's budget: `bytes` of output, or none. */
export function limitOutput(bytes: number | undefined): void {
  limit = bytes ?? Number.POSITIVE_INFINITY;
  used = 0;
}

/** Counts `bytes` of output recorded; throws ResponseTooLarge once the job's total passes its bound. */
export function chargeOutput(bytes: number): void {
  used += bytes;
  if (used > limit) throw new ResponseTooLarge(limit);
}
