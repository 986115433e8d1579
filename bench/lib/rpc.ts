import { availableParallelism, cpus, loadavg } from 'node:os';
import { type LoadResult, runLoadInChild } from './load.ts';

/** Seconds measured per cell and seconds of warm-up before (env BENCH_SECONDS, BENCH_WARMUP_SECONDS). */
export const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
export const WARMUP_SECONDS = Number(process.env.BENCH_WARMUP_SECONDS ?? 1);

/** The machine a run measured, for the report. */
export function machineLine(): string {
  return `node ${process.version}, ${availableParallelism()} cores (${cpus()[0]?.model ?? '?'}), load ${loadavg()[0]?.toFixed(2)}`;
}

/** `measure` with the run's durations. */
export function load(
  url: string,
  body: string,
  connections: number,
  serverPid?: number | null,
): Promise<LoadResult> {
  return measure(url, body, connections, {
    seconds: SECONDS,
    warmupSeconds: WARMUP_SECONDS,
    serverPid: serverPid ?? null,
  });
}

/** Progress lines on stderr with the seconds since the benchmark started. */
export function progressLog(): (line: string) => void {
  const started = performance.now();
  return (line) =>
    process.stderr.write(`[${((performance.now() - started) / 1000).toFixed(1).padStart(6)} s] ${line}\n`);
}

export const rpcBody = (method: string, params: unknown[]) =>
  JSON.stringify({ jsonrpc: '2.0', id: 1, method, params });

/** One JSON-RPC POST; a JSON-RPC error is thrown, since a benchmark of errors would measure nothing. */
export async function post(url: string, body: string): Promise<string> {
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
  const text = await res.text();
  const parsed = JSON.parse(text) as { error?: { message: string } };
  if (parsed.error) throw new Error(`${url}: ${parsed.error.message}`);
  return text;
}

/** A closed-loop load of one request, every answer checked to be as long as a first reference answer. */
export async function measure(
  url: string,
  body: string,
  connections: number,
  opts: {
    seconds: number;
    warmupSeconds: number;
    serverPid?: number | null;
    maxRequests?: number;
    timeoutMs?: number;
  },
): Promise<LoadResult> {
  const reference = await post(url, body);
  return runLoadInChild({
    url,
    body,
    connections,
    durationMs: opts.seconds * 1000,
    warmupMs: opts.warmupSeconds * 1000,
    expectBytes: Buffer.byteLength(reference),
    serverPid: opts.serverPid ?? null,
    ...(opts.maxRequests === undefined ? {} : { maxRequests: opts.maxRequests }),
    ...(opts.timeoutMs === undefined ? {} : { timeoutMs: opts.timeoutMs }),
  });
}

const ms = (x: number) => x.toFixed(x < 10 ? 2 : 1);

/** A table row: case, connections, requests/s, p50 and p99 latency. */
export function resultRow(name: string, r: LoadResult): string {
  return `${name.padEnd(44)} ${String(r.connections).padStart(5)} ${r.requestsPerSecond.toFixed(1).padStart(9)} ${ms(r.latency.p50).padStart(8)} ${ms(r.latency.p99).padStart(8)}`;
}

export const RESULT_HEADER = `${'case'.padEnd(44)} conns     req/s   p50 ms   p99 ms`;

export { ms };
