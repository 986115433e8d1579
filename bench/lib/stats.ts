/** Latency statistics over one measured window. */

/** Nearest-rank percentile of an ascending-sorted list; `p` in [0, 100]. */
export function percentile(sorted: ArrayLike<number>, p: number): number {
  if (sorted.length === 0) return Number.NaN;
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length, Math.max(1, rank)) - 1] as number;
}

export interface LatencySummary {
  count: number;
  p50: number;
  p99: number;
  mean: number;
  max: number;
}

export function summarize(samples: readonly number[]): LatencySummary {
  const sorted = Float64Array.from(samples).sort();
  const sum = sorted.reduce((s, x) => s + x, 0);
  return {
    count: sorted.length,
    p50: percentile(sorted, 50),
    p99: percentile(sorted, 99),
    mean: sorted.length === 0 ? Number.NaN : sum / sorted.length,
    max: sorted.length === 0 ? Number.NaN : (sorted[sorted.length - 1] as number),
  };
}
