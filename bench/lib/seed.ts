/**
 * The seed example of trace_callMany: two value transfers (1 and 2 wei) from one sender, each
 * traced with ["trace"], on the latest block.
 */
export const SEED = {
  from: '0x7435ed30a8b4aeb0877cef0c6e8cffe834eb865f',
  to: ['0xd46e8dd67c5d32be8058bb8eb970870f07244567', '0xd46e8dd67c5d32be8058bb8eb970870f07244568'],
} as const;

/** The example's calls, as trace_callMany takes them (without the trace types). */
export function seedCalls(): Array<{ from: string; to: string; value: string }> {
  return SEED.to.map((to, i) => ({ from: SEED.from, to, value: `0x${(i + 1).toString(16)}` }));
}
